"""The report as one self-contained HTML page: inline CSS, figures as ``data:`` PNG, no script, no network."""

from __future__ import annotations

import html
from typing import Any

from synprep import __version__

CSS = """
body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;margin:1.2em 2em;color:#222;max-width:1250px}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:1.6em}
h3{font-size:1.02em;margin-bottom:.3em}
table{border-collapse:collapse;margin:.4em 0 1em 0;font-size:.86em}
td,th{border:1px solid #d0d0d0;padding:2px 7px;text-align:right;vertical-align:top}
th{background:#f1f1f1} td.l,th.l{text-align:left}
code,.mono{font-family:DejaVu Sans Mono,monospace;font-size:.85em;word-break:break-all}
.flag{border-left:5px solid #c0392b;background:#fdf0ee;padding:.35em .8em;margin:.45em 0}
.ok{border-left:5px solid #2e8b57;background:#eef8f1;padding:.35em .8em}
.note{color:#555;font-size:.85em} .missing{border:1px dashed #999;padding:.6em;color:#444;background:#fafafa}
img.figure{max-width:100%;display:block;margin:.3em 0 1em 0}
div.wide{overflow-x:auto;margin:.3em 0 1em 0} div.wide img.pair{max-width:none;display:block}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f} %"


def _table(head: list[str], rows: list[list[Any]], left: tuple[int, ...] = (0,)) -> str:
    """A table; the columns in ``left`` are left-aligned (text), the others right-aligned (numbers)."""
    th = "".join(f'<th class="{"l" if i in left else ""}">{_e(h)}</th>' for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(f'<td class="{"l" if i in left else ""}">{c}</td>' for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def _img(src: str | None, alt: str, missing: str | None) -> str:
    if src:
        return f'<img class="figure" alt="{_e(alt)}" src="{src}">'
    return f'<div class="missing">{html.escape(missing or "no data to draw", quote=False)}</div>'


def _pair_img(src: str | None, alt: str, missing: str | None) -> str:
    """An example pair at its natural size (the size ``show --png`` draws), scrolling sideways when wider
    than the page, never scaled down."""
    if src:
        return f'<div class="wide"><img class="pair" alt="{_e(alt)}" src="{src}"></div>'
    return _img(None, alt, missing)


def _overview(report: dict[str, Any]) -> str:
    rows = []
    for name, s in report["splits"].items():
        dropped = sum(s["dropped"].values())
        lw, lp, lt = s["lengths"]["src_words"], s["lengths"]["src_pieces"], s["lengths"]["tgt_pieces"]
        tw = s["lengths"]["tgt_words"]
        rows.append([_e(name), s["input_lines"], s["pairs"], dropped, s["sentences"],
                     f"{lw['mean']:.1f} / {lw['median']} / {lw['max']}", f"{lp['mean']:.1f} / {lp['median']} / {lp['max']}",
                     f"{tw['mean']:.1f} / {tw['median']} / {tw['max']}", f"{lt['mean']:.1f} / {lt['median']} / {lt['max']}",
                     f"{s['pieces_per_word']['mean']:.3f}", f"{s['sentences_per_line']['mean']:.3f}",
                     _pct(s["unk"]["src"]["rate"], 2), _pct(s["unk"]["tgt"]["rate"], 2),
                     _pct(s["vocab_coverage"]["src"]["share"]), _pct(s["vocab_coverage"]["tgt"]["share"])])
    return _table(["split", "input lines", "pairs", "dropped", "sentences", "src words mean/median/max",
                   "src pieces", "tgt words", "tgt pieces", "pieces per word", "sentences per line",
                   "src <unk>", "tgt <unk>", "src vocab types seen", "tgt vocab types seen"], rows)


def _drops(report: dict[str, Any]) -> str:
    parts = []
    for name, s in report["splits"].items():
        reasons = [(r, n) for r, n in s["dropped"].items() if n]
        if not reasons:
            parts.append(f"<p><b>{_e(name)}</b>: no line dropped ({s['input_lines']} input lines, {s['pairs']} pairs)</p>")
            continue
        rows = []
        for r, n in reasons:
            ex = "<br>".join(f"line {d['line']}: {_e(d['detail'])}" + (f" — <span class=mono>{_e(d['src'][:120])}</span>"
                                                                        if d["src"] else "")
                             for d in s["drop_examples"].get(r, []))
            rows.append([_e(r), n, _pct(n / s["input_lines"]) if s["input_lines"] else "-", ex])
        parts.append(f"<h3>{_e(name)}</h3>" + _table(["reason", "lines", "share", "examples (line: detail — source)"],
                                                     rows, left=(0, 3)))
    align = [(n, s["subword_alignment"]) for n, s in report["splits"].items() if s["subword_alignment"]]
    if align:
        keys = sorted({k for _, a in align for k in a})
        parts.append("<h3>subword alignment rules applied (spm/hf)</h3>"
                     + _table(["split", *keys], [[_e(n), *[a.get(k, 0) for k in keys]] for n, a in align]))
    return "".join(parts)


def _syntax(report: dict[str, Any]) -> str:
    rows = []
    for name, s in report["splits"].items():
        ud = s.get("ud")
        rows.append([_e(name), _e(s.get("tree_source")), f"{s['tree_depth']['mean']:.2f}",
                     f"{s['dependency_length']['mean']:.2f}", _pct(s["non_projective"]["sentence_share"]),
                     _pct(s["non_projective"]["arc_share"], 2), _pct(s["flat_trees"]["share"]),
                     f"{s['upos_top']['tag']} {_pct(s['upos_top']['share'])}",
                     f"{s['gaps']['cnf']['mean']:.2f} / {s['gaps']['nary']['mean']:.2f}",
                     f"{s['ldd']['entropy_bits']['mean']:.3f}", _pct(s["ldd"]["argmax_not_head_share"], 2),
                     f"{ud['upos_js_bits']:.3f} / {_pct(ud['upos_tv'])}" if ud else "-",
                     f"{ud['deprel_js_bits']:.3f} / {_pct(ud['deprel_tv'])}" if ud else "-"])
    ref = report.get("ud_reference")
    note = (f"<p class=note>UD reference: {_e(', '.join(ref['files']))} ({ref['words']} words); divergence = "
            "Jensen-Shannon (bits) / total variation.</p>" if ref else
            "<p class=note>No UD treebank for this language (give one with --ud FILE.conllu).</p>")
    return _table(["split", "tree source", "tree depth", "dependency length", "non-projective sentences",
                   "non-projective arcs", "flat trees", "top UPOS", "word gap cnf / nary", "LDD entropy (bits)",
                   "LDD argmax ≠ head", "UPOS vs UD", "deprel vs UD"], rows) + note


def _flags(report: dict[str, Any]) -> str:
    if not report["flags"]:
        return '<div class="ok">No flag: nothing in the checks below looks wrong.</div>'
    return "".join(f'<div class="flag"><b>{_e(f["split"])}: {_e(f["message"])}</b><br>evidence: {_e(f["evidence"])}'
                   f"<br>fix: {_e(f['fix'])}</div>" for f in report["flags"])


def _against(report: dict[str, Any], fig: str | None, missing: str | None) -> str:
    a = report.get("against")
    if not a:
        return ""
    rows, worst = [], []
    for name, s in a["splits"].items():
        sc = s["scores"] or {}
        rows.append([_e(name), s["compared"], s["different_words"], s["only_here"], s["only_other"],
                     *(f"{sc[m]:.2f}" if sc else "-" for m in ("UAS", "LAS", "UPOS"))])
        for w in s["worst"]:
            worst.append([_e(name), w["line"], w["words"], w["differ"], "<br>".join(_e(d) for d in w["diffs"])])
    out = (f"<h2>Agreement with {_e(a['folder'])}</h2><p class=note>{_e(a['signature'])}<br>CoNLL 2018 scorer "
           "(udtools), this folder as system, the other as reference; lines with different words are not scored.</p>"
           + _table(["split", "lines compared", "different words", "only here", "only there", "UAS", "LAS", "UPOS"], rows)
           + (_img(fig, "agreement", missing) if fig or missing else ""))
    if worst:
        out += "<h3>lines that differ most (word: head/deprel here vs there)</h3>" + _table(
            ["split", "line", "words", "words differing", "first differences"], worst, left=(0, 4))
    return out


def render(report: dict[str, Any], figs: dict[str, Any], missing: str | None) -> str:
    """The page's HTML text (``figs`` from :mod:`synprep.report.figures`; ``missing`` replaces them when None)."""
    first = next(iter(report["splits"].values()))
    examples = figs.get("examples") or []
    ex_html = "".join(f"<h3>{_e(e['title'])}</h3>" + _pair_img(e["png"], f"pair {e['index']}", missing)
                      for e in examples)
    if not examples:
        ex_html = _img(None, "examples", missing or "no example")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>synprep report: {_e(report['folder'])}</title>
<style>{CSS}</style></head><body>
<h1>synprep report: {_e(report['folder'])}</h1>
<p class=note>source {_e(first.get('src_lang'))} → target {_e(first.get('tgt_lang'))}; subword {_e(first.get('subword'))};
tree source {_e(first.get('tree_source'))}<br>signature <code>{_e(report['signature'])}</code><br>
synprep {_e(__version__)}; collected in {report['seconds']:.2f} s</p>
<h2>Flags</h2>{_flags(report)}
<h2>Splits</h2>{_overview(report)}
<p class=note>Lengths: mean / median / max. Words: the parser's words on the source side, the pieces' word markers
on the target side. Vocabulary types seen: share of the vocabulary's pieces that occur on that side.</p>
{_img(figs.get('lengths'), 'length histograms', missing)}
<h2>Dropped lines</h2>{_drops(report)}
<h2>Syntax (source side)</h2>{_syntax(report)}
{_img(figs.get('labels'), 'UPOS and relation distributions', missing)}
{_img(figs.get('syntax'), 'tree depth, dependency length, distances, LDD entropy', missing)}
{_against(report, figs.get('agreement'), missing)}
<h2>Example pairs (as <code>synprep show --png</code> draws them)</h2>{ex_html}
</body></html>
"""
