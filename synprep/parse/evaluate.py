"""Parser evaluation: UAS / LAS of a system CoNLL-U file against gold, with stanza's own scorer.

The scoring is the CoNLL 2018 shared task evaluation script as stanza ships it
(``stanza.models.common.utils.ud_scores``, which stanza 1.15 takes from ``udtools.udeval``; older
stanza releases had it as ``stanza.utils.conll18_ud_eval``) — not our own code. Scores are F1 × 100;
on gold tokenization precision = recall = F1.

:func:`evaluate_parser` parses the gold file's own words (UD syntactic words, one gold sentence =
one sentence, no sentence splitting) and writes a system file with the gold file's exact token
lines (multiword ranges, MISC) where only UPOS, HEAD and DEPREL are the parser's, so the scorer's
tokenization alignment is trivially the identity.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from synprep.errors import InputError
from synprep.parse.base import ParserSpec, ParseStats
from synprep.parse.cache import ParseCache
from synprep.parse.conllu_io import read_conllu
from synprep.textio import PathLike, atomic_write, display_name, iter_lines
from synprep.types import ParsedLine

METRICS = ("Words", "UPOS", "UAS", "LAS")


def evaluate_conllu(system: PathLike, gold: PathLike) -> dict[str, float]:
    """UAS, LAS, UPOS and word-segmentation F1 (× 100) of ``system`` against ``gold``.

    Raises:
        InputError: the scorer rejects a file (different text, malformed lines ...).
    """
    from stanza.models.common.utils import ud_scores
    from udtools.udeval import UDError

    try:
        ev = ud_scores(str(gold), str(system))
    except UDError as e:
        cause = e.__cause__ or e
        raise InputError(f"CoNLL 2018 scorer: {e}: {cause}", display_name(system)) from None
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


def evaluate_parser(
    spec: ParserSpec,
    gold: PathLike,
    *,
    jobs: int = 1,
    cache: ParseCache | None = None,
    system_out: PathLike | None = None,
    stats: ParseStats | None = None,
) -> dict[str, float]:
    """Parse the gold file's words with ``spec`` and score the result (see the module docstring).

    Args:
        spec: the parser. gold: a gold CoNLL-U file.
        jobs, cache: as in :func:`synprep.parse.parse_lines`.
        system_out: also keep the system CoNLL-U file here.

    Returns:
        ``{"UAS", "LAS", "UPOS", "Words", "gold_words", "sentences", "failed"}``.
    """
    from synprep.parse.run import parse_lines

    gold_lines = list(read_conllu(gold, words="syntactic"))
    words = [pl.words for pl in gold_lines]
    parsed = parse_lines(words, spec, cache=cache, jobs=jobs, ssplit=False, stats=stats)
    if system_out is not None:
        path = Path(system_out)
        with atomic_write(path) as f:
            failed = write_like_gold(gold, parsed, f)
        scores = evaluate_conllu(path, gold)
    else:
        fd, tmp = tempfile.mkstemp(suffix=".conllu")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                failed = write_like_gold(gold, parsed, f)
            scores = evaluate_conllu(tmp, gold)
        finally:
            os.unlink(tmp)
    scores["sentences"] = float(len(gold_lines))
    scores["failed"] = float(failed)
    return scores
