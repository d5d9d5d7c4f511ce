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

from synprep.escape import unescape
from synprep.report.agreement import piece_words
from synprep.report.stats import read_lines_at, text_file
from synprep.shards.manifest import Manifest
from synprep.shards.reader import load_vocab, open_split
from synprep.text.langid import (
    CONFIDENT,
    EXAMPLE_LINES,
    MIN_VOTES,
    MINORITY_SHARE,
    UNSPACED,
    detect_language,
    language_key,
)

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
#: share of a split's input lines dropped (any reason) from which it is flagged
DROP_SHARE_THRESHOLD = 0.10
#: lines sampled per split and side for the language and case checks
SAMPLE_LINES = 200
#: configuration keys a non-train split should share with the train split (how the text was made)
SAME_AS_TRAIN = ("bpe_codes_sha256", "subword_model_sha256", "lowercase", "tokenizer", "fairseq_compat")


def sample_text(folder: Path, split: str, manifest: Manifest, attrs: dict[str, Any],
                n: int = SAMPLE_LINES) -> dict[str, Any]:
    """``n`` pairs spread evenly over the split (:func:`spread`; every pair of a smaller split): their source
    words as the parser read them and their target lines, with where they came from. A sample of the first
    pairs alone missed a corpus whose second half was swapped.

    The source words are the shards' stored words (what the parser read: ``--parse-src``'s cased words,
    the CoNLL-U's, or the words the pieces rebuild); shards written before words were stored give
    ``OUT/text/SPLIT.words.L`` when the folder keeps it, else the words rebuilt from the pieces. The
    target lines are ``OUT/text/SPLIT.tok.L``'s (Moses escapes undone) when the folder keeps it, else
    the pieces' text.

    Returns:
        ``{"src": [...], "src_from": str, "src_cased": bool, "tgt": [...], "tgt_from": str, "lines": [...]}``:
        words joined by spaces; ``lines`` the 1-based input line of each pair; ``src_cased`` is False when
        the only source text at hand was lowercased before the parser's words were made (pieces of a
        ``--lowercase`` or ``--parse-src`` folder written before words were stored), so case cannot be judged.
    """
    src_lang, tgt_lang = attrs.get("src_lang"), attrs.get("tgt_lang")
    same = bool(src_lang) and src_lang == tgt_lang
    cfg = attrs.get("config") or {}
    out: dict[str, Any] = {"src": [], "src_from": "", "src_cased": True, "tgt": [], "tgt_from": "", "lines": []}
    readers = open_split(folder, split, manifest=manifest)
    if not readers:
        return out
    vocab = load_vocab(folder, readers[0].attrs)
    scheme = str(attrs.get("subword") or "bpe")
    stored: list[str] = []
    rebuilt: list[str] = []
    pieces_tgt: list[str] = []
    total = sum(len(r) for r in readers)
    chosen = spread(total, n)
    start = 0
    for reader in readers:
        for i in (k - start for k in chosen if start <= k < start + len(reader)):
            rec = reader[i]
            out["lines"].append(int(reader.lines[i]))
            words = reader.words(i)
            if words is not None:
                stored.append(" ".join(words))
            rebuilt.append(" ".join(piece_words(vocab.decode(rec.src_ids), rec.word_index, scheme)))
            pieces = vocab.decode(rec.tgt_ids)
            pieces_tgt.append(" ".join(pieces).replace("@@ ", "").replace("\u2581", " ").replace("\u0120", " "))
        start += len(reader)
        reader.close()
    words_file = text_file(folder, split, "words", "src", src_lang, same)
    if stored and len(stored) == len(rebuilt):
        out["src"], out["src_from"] = stored, "the words the parser read, stored in the shards"
    elif words_file is not None and total <= n:  # the file's head is the sample only when the sample is all
        out["src"], out["src_from"] = _head(words_file, len(rebuilt)), f"text/{words_file.name}"
    else:
        out["src"], out["src_from"] = rebuilt, "the words rebuilt from the shards' source pieces"
        out["src_cased"] = not (cfg.get("lowercase", False) or cfg.get("parse_src", False))
    tok = text_file(folder, split, "tok", "tgt", tgt_lang, same)
    at = read_lines_at(tok, set(out["lines"]), limit=10_000) if tok is not None else {}
    if tok is not None and len(at) == len(set(out["lines"])):
        out["tgt"], out["tgt_from"] = [unescape(at[k]) for k in out["lines"]], f"text/{tok.name}"
    else:
        out["tgt"], out["tgt_from"] = pieces_tgt, "the shards' target pieces"
    return out


def spread(total: int, n: int) -> list[int]:
    """``min(n, total)`` distinct pair indices (0-based) spread evenly over ``0..total-1``, increasing."""
    if total <= n:
        return list(range(total))
    return [k * total // n for k in range(n)]


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


def language_flags(split: str, src_lang: str, tgt_lang: str, sample: dict[str, Any]) -> list[dict[str, str]]:
    """The language flags of one split's ``sample`` (:func:`sample_text`): a side mostly in another language
    (``language``), and a side with at least :data:`~synprep.text.langid.MINORITY_SHARE` of its lines
    confidently in the other side's language (``language-minority``: swapped pairs, mixed lines). Each
    side is read as its language is written (:func:`~synprep.text.langid.as_written`: word-segmented
    Chinese joined) and related codes are one language (:func:`~synprep.text.langid.language_key`)."""
    flags = []
    for side, lang, other, lines, where in (("source", src_lang, tgt_lang, sample["src"], sample["src_from"]),
                                            ("target", tgt_lang, src_lang, sample["tgt"], sample["tgt_from"])):
        guess = detect_language(lines, sample=len(lines) or 1, lang=lang or None)  # every line of the sample
        if guess.sample < MIN_VOTES or not guess.lang or not lang:
            continue
        if guess.lang != language_key(lang) and guess.share >= LANG_SHARE:
            flags.append(_flag(
                "language", split, f"the {side} side looks like {guess.lang!r}, not {lang!r}",
                f"py3langid classifies {guess.share:.0%} of {guess.sample} sampled lines ({where}) as {guess.lang!r}",
                f"check the files given as --src/--tgt and the -s/-t codes; a {side} parsed in the wrong language "
                "gives flat, PROPN-heavy trees"))
            continue
        if not other or language_key(other) == language_key(lang):
            continue
        found = guess.confident_in(other)
        if len(found) >= MINORITY_SHARE * guess.sample:
            at = [sample["lines"][i] for i in found] if len(sample.get("lines", ())) == len(lines) else \
                [i + 1 for i in found]
            flags.append(_flag(
                "language-minority", split,
                f"{len(found) / guess.sample:.0%} of the {side} lines are in {language_key(other)!r}, the other "
                "side's language",
                f"py3langid gives {len(found)} of {guess.sample} sampled lines ({where}) {language_key(other)!r} with "
                f"probability >= {CONFIDENT:g} (threshold {MINORITY_SHARE:.0%}): lines "
                + ", ".join(map(str, at[:EXAMPLE_LINES])) + (", ..." if len(at) > EXAMPLE_LINES else ""),
                "swapped pairs or lines in both languages: check how the corpus was aligned and remove those pairs "
                "before preparing it (the pipeline's language check warns with the same lines)"))
    return flags


def _lowercased_fix(cfg: dict[str, Any]) -> str:
    if cfg.get("mode") == "annotate" and not cfg.get("parse_src"):
        return ("the parser read the words rebuilt from lowercased pieces: re-run annotate with `--parse-src FILE`, "
                "the cased tokenized source the pieces were made from (`synprep iwslt14` keeps it as "
                "tmp/SPLIT.cased.L); the pieces stay as they are")
    if cfg.get("parse_src"):
        return "the `--parse-src` file is lowercased: give annotate the cased tokenized source the pieces were made from"
    return ("give the parser true-cased text (the raw corpus, not fairseq's lowercased prepare output) and lowercase "
            "after parsing with `pipeline --lowercase`; for lowercased pieces made elsewhere, `annotate --parse-src "
            "FILE` gives the parser their cased words")


def _drop_fix(reason: str, cfg: dict[str, Any], src_lang: str, tgt_lang: str) -> str:
    unspaced = [x for x in (src_lang, tgt_lang) if x and language_key(x) in UNSPACED]
    if reason == "clean:ratio":
        why = (f"{' and '.join(unspaced)} is written without spaces: its tokenizer's units make its side of a pair "
               "several times longer or shorter than a spaced language's" if unspaced
               else "one side has many more tokens than the other")
        ratio = (cfg.get("clean_bounds") or [1.5])[0]
        return (f"most drops are the token-count ratio (--ratio {ratio:g}): {why}; raise `--ratio` "
                "(e.g. --ratio 3) or run with `--no-clean`, after checking the example lines below are real pairs")
    if reason == "clean:too_long":
        return "most drops are lines over --max-len tokens: raise `--max-len`, or run with `--no-clean`"
    if reason == "clean:too_short":
        return "most drops are lines under --min-len tokens: lower `--min-len`, or run with `--no-clean`"
    if reason == "clean:word_too_long":
        return "most drops hold a token over 1000 characters: is the text tokenized? (`--no-clean` keeps them)"
    if reason == "clean:empty":
        return "most drops have an empty side: check that --src and --tgt are the two sides of one corpus"
    return (f"most drops are {reason}: see the example lines below and text/SPLIT.dropped.tsv (each line with its "
            "reason)")


def drop_warning(split: str, dropped: dict[str, int], input_lines: int, cfg: dict[str, Any]) -> str | None:
    """The run's own line on a split that dropped at least :data:`DROP_SHARE_THRESHOLD` of its input lines
    (the report's ``many-dropped`` flag): the share, the reasons by count and the fix; None below it.

    Args:
        split: the split's name.
        dropped: reason → dropped lines.
        input_lines: the split's input lines.
        cfg: the folder's configuration as the manifest holds it (``src_lang``, ``tgt_lang``, ``clean_bounds``).
    """
    n = sum(dropped.values())
    if not input_lines or n / input_lines < DROP_SHARE_THRESHOLD:
        return None
    reasons = sorted(((k, v) for k, v in dropped.items() if v), key=lambda kv: (-kv[1], kv[0]))
    fix = _drop_fix(reasons[0][0], cfg, str(cfg.get("src_lang") or ""), str(cfg.get("tgt_lang") or ""))
    return (f"warning: {split}: {n / input_lines:.1%} of the input lines were dropped ("
            + ", ".join(f"{k} {v}" for k, v in reasons) + f"; text/{split}.dropped.tsv lists them): {fix}")


def _flag(kind: str, split: str, message: str, evidence: str, fix: str) -> dict[str, str]:
    return {"id": kind, "split": split, "message": message, "evidence": evidence, "fix": fix}


def split_flags(split: str, s: dict[str, Any], sample: dict[str, Any], train: dict[str, Any] | None,
                languages: bool = True) -> list[dict[str, str]]:
    """The flags of one split from its numbers ``s`` (:func:`synprep.report.stats.split_stats`), its text
    ``sample`` (:func:`sample_text`) and the train split's numbers (None when there is no train split)."""
    flags = []
    src_lang, tgt_lang = s.get("src_lang") or "", s.get("tgt_lang") or ""
    cfg = s.get("config") or {}
    if languages:
        flags += language_flags(split, src_lang, tgt_lang, sample)
    share, n = cased_share(sample["src"])
    if sample["src_cased"] and n >= 10 and share < CASED_LINE_SHARE:
        flags.append(_flag(
            "lowercased", split, "the source text the parser read is lowercased",
            f"{share:.1%} of {n} sampled lines ({sample['src_from']}) have an upper-case letter",
            _lowercased_fix(cfg)))
    cleaned_like_train = False
    if split != "train" and train is not None:
        tcfg = train.get("config") or {}
        cleaned = sum(v for k, v in s["dropped"].items() if k.startswith("clean:") and k != "clean:empty")
        if cfg.get("clean") and cleaned:
            cleaned_like_train = True
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
    dropped = sum(s["dropped"].values())
    if not cleaned_like_train and s["input_lines"] and dropped / s["input_lines"] >= DROP_SHARE_THRESHOLD:
        top = max(sorted(s["dropped"]), key=lambda k: s["dropped"][k])
        flags.append(_flag(
            "many-dropped", split, f"{dropped / s['input_lines']:.1%} of the input lines were dropped",
            f"{dropped} of {s['input_lines']} lines (threshold {DROP_SHARE_THRESHOLD:.0%}): "
            + ", ".join(f"{k} {v}" for k, v in sorted(s["dropped"].items(), key=lambda kv: (-kv[1], kv[0])) if v)
            + " (examples under Dropped lines)",
            _drop_fix(top, cfg, src_lang, tgt_lang)))
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

