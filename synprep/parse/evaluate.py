"""Parser evaluation: UAS / LAS of a system CoNLL-U file against gold, with the CoNLL 2018 scorer.

The scoring is the CoNLL 2018 shared task evaluation script as the UD project maintains it on PyPI
(``udtools.udeval``: ``load_conllu_file`` + ``evaluate``; stanza's ``ud_scores`` wraps the same
module) — not our own code. It aligns system and gold words on their characters, so a system with
its own tokenization is scored correctly (CoNLL 2018 semantics: UAS/LAS are F1 over aligned words).
Scores are F1 × 100; on gold tokenization precision = recall = F1.

:func:`evaluate_parser` has two modes. ``tokenize="gold"``: parse the gold file's own words (UD
syntactic words, one gold sentence = one sentence, no sentence splitting) and write a system file with
the gold file's exact token lines (multiword ranges, MISC) where only UPOS, HEAD and DEPREL are the
parser's, so the scorer's alignment is the identity. ``tokenize="parser"``: segment each gold
sentence's ``# text`` with the parser's own tokenizer (``--tokenizer parser``, e.g. GiNZA's Sudachi),
parse those words, and let the scorer align them to the gold words (the ``Words`` F1 then measures
the segmentation).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from synprep.errors import ConfigError, InputError
from synprep.parse.base import ParserSpec, ParseStats, backend_class
from synprep.parse.cache import ParseCache
from synprep.parse.conllu_io import read_conllu
from synprep.parse.options import Parallel, ParseRun
from synprep.parse.run import parse_lines
from synprep.textio import PathLike, atomic_write, display_name, iter_lines
from synprep.types import ParsedLine

METRICS = ("Words", "UPOS", "UAS", "LAS")


def evaluate_conllu(system: PathLike, gold: PathLike) -> dict[str, float]:
    """UAS, LAS, UPOS and word-segmentation F1 (× 100) of ``system`` against ``gold``.

    Raises:
        InputError: the scorer rejects a file (different text, malformed lines ...).
    """
    from udtools.udeval import UDError, evaluate, load_conllu_file

    try:
        ev = evaluate(load_conllu_file(str(gold)), load_conllu_file(str(system)))
    except UDError as e:
        cause = e.__cause__ or e
        reason = f"{e}: {cause}" if cause is not e else str(e)
        raise InputError(f"CoNLL 2018 scorer: {' '.join(reason.split())}", display_name(system)) from None  # one line
    out = {m: 100.0 * ev[m].f1 for m in METRICS}
    out["gold_words"] = float(ev["Words"].gold_total)
    return out


def write_like_gold(gold: PathLike, parsed: Iterable[ParsedLine], out: IO[str]) -> int:
    """Write the gold file with UPOS/HEAD/DEPREL of each word replaced by the parse's.

    LEMMA, XPOS, FEATS and DEPS are blanked (``_``), empty nodes dropped, multiword ranges and
    MISC kept. A sentence the parser failed on is written as a chain (word 1 = root, word i
    attached to word i-1, relation ``dep``) so that it counts as (almost entirely) wrong.

    Returns:
        the number of failed sentences.
    """
    it = iter(parsed)
    failed = 0
    block: list[str] = []

    def flush() -> None:
        nonlocal failed
        if not block:
            return
        pl = next(it, None)
        if pl is None:
            raise InputError("fewer parses than gold sentences", display_name(gold))
        if pl.error is not None:
            failed += 1
            sent = None
        else:
            (sent,) = pl.sentences
        k = 0
        for text in block:
            cols = text.split("\t")
            if text.startswith("#") or len(cols) != 10:
                out.write(text + "\n")
                continue
            if "." in cols[0]:
                continue
            if "-" in cols[0]:
                out.write(text + "\n")
                continue
            k += 1
            if sent is None:
                upos, head, rel = "X", str(k - 1), ("root" if k == 1 else "dep")
            else:
                upos, head, rel = sent.upos[k - 1], str(sent.heads[k - 1]), sent.deprels[k - 1]
            out.write("\t".join([cols[0], cols[1], "_", upos, "_", "_", head, rel, "_", cols[9]]) + "\n")
        out.write("\n")
        block.clear()

    for text in iter_lines(gold):
        if text.strip():
            block.append(text)
        else:
            flush()
    flush()
    return failed


def gold_texts(gold: PathLike) -> list[str]:
    """The ``# text`` of every sentence of a CoNLL-U file, in order.

    Raises:
        InputError: ``FILE:LINE`` of a sentence without ``# text``.
    """
    out: list[str] = []
    text: str | None = None
    start = 0
    for lineno, line in enumerate(iter_lines(gold), 1):
        if not line.strip():
            if start:
                if text is None:
                    raise InputError("sentence without '# text = ...' (needed to tokenize it)", display_name(gold), start)
                out.append(text)
            text, start = None, 0
            continue
        start = start or lineno
        if line.startswith("# text = "):
            text = line[len("# text = "):]
    if start:
        if text is None:
            raise InputError("sentence without '# text = ...' (needed to tokenize it)", display_name(gold), start)
        out.append(text)
    return out


def write_own_tokens(parsed: Iterable[ParsedLine], words: list[list[str]], out: IO[str]) -> int:
    """Write parses as plain CoNLL-U with their own words, one sentence block per sentence; a failed line
    as a chain of its ``words`` (word 1 = root, word i attached to i-1, ``dep``) so that it counts as
    wrong. Returns the number of failed lines."""
    failed = 0
    for pl, line_words in zip(parsed, words, strict=True):
        sents = [(s.words, s.upos, s.heads, s.deprels) for s in pl.sentences]
        if pl.error is not None:
            failed += 1
            n = len(line_words)
            sents = [(line_words, ["X"] * n, list(range(n)), ["root"] + ["dep"] * (n - 1))] if n else []
        for ws, upos, heads, rels in sents:
            for k, (w, u, h, r) in enumerate(zip(ws, upos, heads, rels, strict=True), 1):
                out.write("\t".join([str(k), w, "_", u, "_", "_", str(h), r, "_", "_"]) + "\n")
            out.write("\n")
    return failed


def evaluate_parser(
    spec: ParserSpec,
    gold: PathLike,
    *,
    jobs: int = 1,
    cache: ParseCache | None = None,
    system_out: PathLike | None = None,
    stats: ParseStats | None = None,
    tokenize: str = "gold",
    limit: int | None = None,
) -> dict[str, float]:
    """Parse the gold file's words (or text) with ``spec`` and score the result (see the module docstring).

    Args:
        spec: the parser.
        gold: a gold CoNLL-U file.
        jobs: as in :func:`synprep.parse.parse_lines`.
        cache: as in :func:`synprep.parse.parse_lines`.
        system_out: also keep the system CoNLL-U file here.
        tokenize: ``"gold"`` (the gold words) or ``"parser"`` (the parser's tokenizer on ``# text``).
        limit: score only the first ``limit`` sentences (a shorter gold file is written beside the system file).

    Returns:
        ``{"UAS", "LAS", "UPOS", "Words", "gold_words", "sentences", "failed"}``.

    Raises:
        ConfigError: an unknown ``tokenize``, or a parser without a tokenizer.
        InputError: see :func:`evaluate_conllu`, :func:`gold_texts`.
    """
    if tokenize not in ("gold", "parser"):
        raise ConfigError(f"tokenize must be 'gold' or 'parser', got {tokenize!r}")
    with tempfile.TemporaryDirectory(prefix="synprep-eval-") as tmpdir:
        if limit is not None:
            blocks = Path(gold).read_text(encoding="utf-8").strip().split("\n\n")[:limit]
            short = Path(tmpdir) / "gold.conllu"
            short.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
            gold = short
        gold_lines = list(read_conllu(gold, words="syntactic"))
        if tokenize == "gold":
            words = [pl.words for pl in gold_lines]
        else:
            tok = backend_class(spec.name).tokenizer(spec)
            words = [tok(text) for text in gold_texts(gold)]
        parsed = parse_lines(words, ParseRun(spec.with_config(ssplit=False), cache=cache, par=Parallel(jobs=jobs), stats=stats))
        path = Path(system_out) if system_out is not None else Path(tmpdir) / "system.conllu"
        with atomic_write(path) as f:
            failed = write_like_gold(gold, parsed, f) if tokenize == "gold" else write_own_tokens(parsed, words, f)
        scores = evaluate_conllu(path, gold)
    scores["sentences"] = float(len(gold_lines))
    scores["failed"] = float(failed)
    return scores
