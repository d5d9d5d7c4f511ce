"""The report's flags: what in a folder looks wrong, each with its evidence and the fix.

A flag is a dict ``{"id", "split", "message", "evidence", "fix"}``. Thresholds are module constants
(docs/report.md states them). The checks read only the numbers :mod:`synprep.report.stats` collected,
the shards' configuration, and a sample of the source words the parser read (``OUT/text/SPLIT.words.L``
when the folder keeps it, else the words rebuilt from the first pairs' pieces when they were not
lowercased).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from synprep.shards.manifest import Manifest
from synprep.text.langid import MIN_VOTES, base_code, detect_language

#: share of pieces that are <unk> above which a split is flagged
UNK_RATE_THRESHOLD = 0.01
#: share of flat trees (sentences of >= FLAT_MIN_WORDS words, every word on the root) above which a split is flagged
FLAT_SHARE_THRESHOLD = 0.15
#: share of the most frequent UPOS tag above which a split is flagged (NOUN is ~20 % in UD German/English)
UPOS_SHARE_THRESHOLD = 0.35
#: below this share of sampled lines with an upper-case letter (among lines with cased letters) the
#: source text counts as lowercased (true-cased text: most lines start with a capital)
CASED_LINE_SHARE = 0.05
#: the language-id flag needs at least this share of sampled lines in the detected language
LANG_SHARE = 0.5
#: lines sampled per split and side for the language and case checks
SAMPLE_LINES = 200
#: configuration keys a non-train split should share with the train split (how the text was made)
SAME_AS_TRAIN = ("bpe_codes_sha256", "subword_model_sha256", "lowercase", "tokenizer", "fairseq_compat")


def sample_text(folder: Path, split: str, manifest: Manifest, attrs: dict[str, Any],
                n: int = SAMPLE_LINES) -> dict[str, Any]:
    """Up to ``n`` source lines as the parser read them and ``n`` target lines, with where they came from.

    Returns:
        ``{"src": [...], "src_from": str, "src_cased": bool, "tgt": [...], "tgt_from": str}``:
        ``src_cased`` is False when the only source text at hand was lowercased by the pipeline
        (``--lowercase`` without a words file), so case cannot be judged.
    """
    from synprep.report.agreement import piece_words
    from synprep.report.stats import text_file
    from synprep.shards.reader import load_vocab, open_split

    src_lang, tgt_lang = attrs.get("src_lang"), attrs.get("tgt_lang")
    same = bool(src_lang) and src_lang == tgt_lang
    out: dict[str, Any] = {"src": [], "src_from": "", "src_cased": True, "tgt": [], "tgt_from": ""}
    words = text_file(folder, split, "words", "src", src_lang, same)
    if words is not None:
        out["src"] = _head(words, n)
        out["src_from"] = f"text/{words.name}"
    tok = text_file(folder, split, "tok", "tgt", tgt_lang, same)
    if tok is not None:
        out["tgt"] = _head(tok, n)
        out["tgt_from"] = f"text/{tok.name}"
    if out["src"] and out["tgt"]:
        return out
    readers = open_split(folder, split, manifest=manifest)
    if not readers:
        return out
    vocab = load_vocab(folder, readers[0].attrs)
    scheme = str(attrs.get("subword") or "bpe")
    src, tgt = [], []
    for reader in readers:
        for rec in reader:
            src.append(" ".join(piece_words(vocab.decode(rec.src_ids), rec.word_index, scheme)))
            pieces = vocab.decode(rec.tgt_ids)
            tgt.append(" ".join(pieces).replace("@@ ", "").replace("\u2581", " ").replace("\u0120", " "))
            if len(src) >= n:
                break
        reader.close()
        if len(src) >= n:
            break
    if not out["src"]:
        out["src"], out["src_from"] = src, "the shards' source pieces"
        out["src_cased"] = not (attrs.get("config") or {}).get("lowercase", False)
    if not out["tgt"]:
        out["tgt"], out["tgt_from"] = tgt, "the shards' target pieces"
    return out


def _head(path: Path, n: int) -> list[str]:
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            out.append(line.rstrip("\n"))
            if len(out) >= n:
                break
    return out


def cased_share(lines: list[str]) -> tuple[float, int]:
    """``(share, n)``: of the ``n`` lines with a cased letter, the share with an upper-case one."""
    n = up = 0
    for line in lines:
        if any(c.lower() != c.upper() for c in line):
            n += 1
            up += any(c.isupper() for c in line)
    return (up / n if n else 1.0), n


def _flag(kind: str, split: str, message: str, evidence: str, fix: str) -> dict[str, str]:
    return {"id": kind, "split": split, "message": message, "evidence": evidence, "fix": fix}


def split_flags(split: str, s: dict[str, Any], sample: dict[str, Any], train: dict[str, Any] | None,
                languages: bool = True) -> list[dict[str, str]]:
    """The flags of one split from its numbers ``s`` (:func:`synprep.report.stats.split_stats`), its text
    ``sample`` (:func:`sample_text`) and the train split's numbers (None when there is no train split)."""
    flags = []
    src_lang, tgt_lang = s.get("src_lang") or "", s.get("tgt_lang") or ""
    if languages:
        for side, lang, lines, where in (("source", src_lang, sample["src"], sample["src_from"]),
                                         ("target", tgt_lang, sample["tgt"], sample["tgt_from"])):
            guess = detect_language(lines, sample=len(lines) or 1)  # the page's sample, every line of it
            if (guess.sample >= MIN_VOTES and guess.lang and lang and guess.lang != base_code(lang)
                    and guess.share >= LANG_SHARE):
                flags.append(_flag(
                    "language", split, f"the {side} side looks like {guess.lang!r}, not {lang!r}",
                    f"py3langid classifies {guess.share:.0%} of {guess.sample} sampled lines ({where}) as {guess.lang!r}",
                    f"check the files given as --src/--tgt and the -s/-t codes; a {side} parsed in the wrong language "
                    "gives flat, PROPN-heavy trees"))
    share, n = cased_share(sample["src"])
    if sample["src_cased"] and n >= 10 and share < CASED_LINE_SHARE:
        flags.append(_flag(
            "lowercased", split, "the source text the parser read is lowercased",
            f"{share:.1%} of {n} sampled lines ({sample['src_from']}) have an upper-case letter",
            "give the parser true-cased text (the raw corpus, not fairseq's lowercased prepare output) and lowercase "
            "after parsing with `pipeline --lowercase`"))
    cfg = s.get("config") or {}
    if split != "train" and train is not None:
        tcfg = train.get("config") or {}
        cleaned = sum(v for k, v in s["dropped"].items() if k.startswith("clean:") and k != "clean:empty")
        if cfg.get("clean") and cleaned:
            flags.append(_flag(
                "cleaned-like-train", split, f"split {split!r} was cleaned like a train split",
                f"{cleaned} of {s['input_lines']} lines dropped by length/ratio cleaning (clean = true)",
                f"evaluate on every line: re-run this split with `pipeline --split {split} --no-clean`"))
        differ = [k for k in SAME_AS_TRAIN if k in cfg and k in tcfg and cfg[k] != tcfg[k]]
        if differ:
            flags.append(_flag(
                "unlike-train", split, f"split {split!r} was made unlike the train split: {', '.join(differ)} differ",
                "; ".join(f"{k}: {str(cfg[k])[:16]} here, {str(tcfg[k])[:16]} in train" for k in differ),
                "re-run this split into the train split's folder without --codes/--spm-model/--lowercase "
                "overrides (later splits reuse the train split's codes and settings)"))
    for side in ("src", "tgt"):
        u = s["unk"][side]
        if u["rate"] > UNK_RATE_THRESHOLD:
            flags.append(_flag(
                "unk-rate", split, f"high <unk> rate on the {'source' if side == 'src' else 'target'} side",
                f"{u['count']} of {u['pieces']} pieces ({u['rate']:.2%}) are <unk> (threshold "
                f"{UNK_RATE_THRESHOLD:.0%})",
                "pieces the train split never had become <unk>: learn the codes/vocabulary on more (or more "
                "similar) training text or with fewer merges, and never pass a --vocab from another corpus"))
    flat = s["flat_trees"]
    if flat["eligible"] >= 20 and flat["share"] > FLAT_SHARE_THRESHOLD:
        flags.append(_flag(
            "flat-trees", split, "many flat trees (every word attached to the root word)",
            f"{flat['sentences']} of {flat['eligible']} sentences of >= {flat['min_words']} words ({flat['share']:.1%}; "
            f"threshold {FLAT_SHARE_THRESHOLD:.0%})",
            "check the parser's language (-s) and model, and that the source text is true-cased running text"))
    top = s["upos_top"]
    if top["tag"] and top["share"] > UPOS_SHARE_THRESHOLD and sum(s["upos"].values()) >= 200:
        flags.append(_flag(
            "dominant-upos", split, f"one UPOS tag dominates: {top['tag']}",
            f"{top['share']:.1%} of the words are {top['tag']} (threshold {UPOS_SHARE_THRESHOLD:.0%})",
            "a wrong-language or lowercased parse tags most words PROPN/NOUN: check -s, the model and the casing"))
    ud = s.get("ud")
    if ud and ud.get("flagged"):
        most = ", ".join(f"{m['tag']} {m['here']:.1%} vs {m['treebank']:.1%}" for m in ud["upos_most_different"])
        flags.append(_flag(
            "ud-divergence", split, f"the UPOS distribution is far from the UD treebank's ({', '.join(ud['files'])})",
            f"Jensen-Shannon divergence {ud['upos_js_bits']:.3f} bits > {ud['threshold_js_bits']} (total variation "
            f"{ud['upos_tv']:.1%}); most different: {most}",
            "check the parser's language and model and the source text's casing; a domain far from the treebank's "
            "also raises it (then the flag is expected)"))
    return flags

