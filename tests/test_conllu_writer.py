"""The CoNLL-U writer's fast path against its definition: the batched float32 strings (``format_probs``)
against numpy's Dragon4 (``format_prob``), and ``write_conllu`` against the ``conllu`` library's serializer
of a ``TokenList`` built from the same parses (the reference), on real stanza parses."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from conllu.models import Metadata, Token, TokenList
from conllu.parser import DEFAULT_FIELDS
from helpers import run_cli

from synprep.parse import ParserSpec, parse_lines
from synprep.parse.conllu_io import _one_line, format_prob, format_probs, read_conllu, write_conllu
from synprep.parse.options import ParseRun
from synprep.text.escape import unescape_tokens
from synprep.types import ParsedLine, ParsedSentence, SparseLDD
from tests.test_conllu_io import example_lines

# --- the reference: the writer before the fast path (conllu's TokenList.serialize, one format_prob per entry) ---


def reference_block(sent: ParsedSentence, line: int) -> str:
    meta = Metadata()
    meta["line"] = str(line)
    meta["text"] = " ".join(sent.words)
    if sent.tree:
        meta["constituency"] = _one_line(sent.tree)
        if sent.tree_source and sent.tree_source != "constituency":
            meta["tree_source"] = sent.tree_source
    if sent.ldd is not None:
        ldd = sent.ldd
        meta["ldd_threshold"] = format_prob(ldd.threshold)
        meta["ldd"] = " ".join(f"{int(d)},{int(h)},{r},{format_prob(p)}"
                               for d, h, r, p in zip(ldd.dep, ldd.head, ldd.rel, ldd.prob, strict=True))
    tokens = []
    for i, (w, u, h, d) in enumerate(zip(sent.words, sent.upos, sent.heads, sent.deprels, strict=True), 1):
        tok = Token(dict.fromkeys(DEFAULT_FIELDS))
        tok.update(id=i, form=w, upos=u or None, head=int(h), deprel=d)
        tokens.append(tok)
    return TokenList(tokens, meta).serialize()


def reference_write(lines: list[ParsedLine]) -> str:
    out = []
    for pl in lines:
        if pl.error is not None or not pl.sentences:
            meta = Metadata()
            meta["line"] = str(pl.line)
            meta["error"] = _one_line(pl.error or "empty line") or "unknown error"
            out.append(TokenList([], meta).serialize())
        else:
            out += [reference_block(s, pl.line) for s in pl.sentences]
    return "".join(out)


def written(lines: list[ParsedLine]) -> str:
    buf = io.StringIO()
    assert write_conllu(lines, buf) == len(lines)
    return buf.getvalue()


# --- the float32 strings ---


def f32(bits: np.ndarray) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def edge_values() -> np.ndarray:
    one_ulp = np.arange(-3, 4, dtype=np.int64)
    powers = np.float32(2.0) ** np.arange(-149, 128, dtype=np.float64)  # every power of two, subnormals included
    around = (powers.astype(np.float32).view(np.uint32).astype(np.int64)[:, None] + one_ulp).ravel()
    around = around[(around > 0) & (around < 0x7F800000)]
    nine_digits = [0.99979335, 0.100000024, 0.30000001, 1.00000012, 0.0123456791, 16777217.0]
    ties = np.arange(1, 4097, dtype=np.float64) / 4096  # exact short decimals ending in 5 (k/2^12)
    special = [0.0, -0.0, 1.0, 1e-8, 1e-4, 9.99e-5, 1e-5, 1e-6, 1e-7, 0.01, 0.5, 1 / 3, 2.0 / 3,
               1e15, 1e16, 1e17, 123456.0, 1e7, np.finfo(np.float32).max, np.finfo(np.float32).tiny,
               np.finfo(np.float32).smallest_subnormal, 2 * np.finfo(np.float32).smallest_subnormal]
    return np.concatenate([np.asarray(special + nine_digits, np.float32), f32(around), ties.astype(np.float32),
                           np.arange(0, 2**24 + 64, 2**16, dtype=np.float32)])


def test_format_probs_edge_values_match_numpy():
    a = edge_values()
    assert len(a) > 6000
    assert format_probs(a) == [format_prob(x) for x in a]
    # the forms the LDD comment documents: no exponent, no trailing ".0", the shortest float32 round trip
    assert format_probs(np.array([1.0, 0.0, -0.0, 1e-8, 0.99979335, 3.4028235e38], np.float32)) == [
        "1", "0", "-0", "0.00000001", "0.99979335", "340282350000000000000000000000000000000"]
    assert format_probs(np.array([np.nan, np.inf], np.float32)) == ["nan", "inf"]
    assert format_probs(np.zeros(0, np.float32)) == []
    assert format_probs(np.array([0.25, 0.1], np.float64)) == ["0.25", "0.1"]  # cast to float32 first


def test_format_probs_random_bit_patterns_match_numpy():
    rng = np.random.default_rng(17)
    probs = f32(rng.integers(0, 0x3F800001, 100_000))  # every float32 in [0, 1] equally likely
    finite = f32(rng.integers(0, 0x7F800000, 50_000))  # any non-negative finite float32
    uniform = rng.random(100_000).astype(np.float32)  # the digits mostly 8-9 long
    for a in (probs, finite, uniform):
        out = format_probs(a)
        assert out == [format_prob(x) for x in a]
        assert all(np.float32(s) == x for s, x in zip(out[:2000], a[:2000], strict=True))


# --- whole output ---


def test_write_conllu_matches_the_conllu_serializer_on_built_lines():
    lines = example_lines()
    odd = ParsedSentence(words=["a", "b"], upos=["", "NOUN"], heads=[0, 1], deprels=["root", ""],
                         ldd=SparseLDD(np.array([1, 2], np.int32), np.array([0, 1], np.int32), ["root", "dep"],
                                       np.array([1.0, 3e-7], np.float32), 0.0))  # fmt: skip
    lines += [ParsedLine(5, [odd]), ParsedLine(6, error="   ")]
    text = written(lines)
    assert text == reference_write(lines)
    assert "1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\tNOUN\t_\t_\t1\t\t_\t_\n" in text
    assert "# ldd = 1,0,root,1 2,1,dep,0.0000003\n" in text and "# error = unknown error\n" in text


def iwslt_lines(shared_data: Path, n: int) -> list[list[str]]:
    path = shared_data / "iwslt14_de-en" / "fairseq_prepared" / "tmp" / "test.de"
    with open(path, encoding="utf-8") as f:
        return [unescape_tokens(next(f).split()) for _ in range(n)]


@pytest.mark.slow
def test_real_parses_write_the_same_bytes_as_the_conllu_serializer(stanza_dir, shared_data):
    words = iwslt_lines(shared_data, 160) + [[]]  # an empty line: an error block
    spec = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep", max_words=60)
    lines = list(parse_lines(words, ParseRun(spec)))
    assert sum(len(pl.sentences) for pl in lines) >= 160 and lines[-1].error == "empty line"
    n_entries = sum(len(s.ldd.prob) for pl in lines for s in pl.sentences)
    assert n_entries > 15_000
    assert written(lines) == reference_write(lines)
    # every LDD entry (threshold 0): probabilities down to the smallest float32s, 0 and 1 included
    spec0 = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep", ldd_threshold=0.0)
    lines0 = list(parse_lines(words[:12], ParseRun(spec0)))
    probs = np.concatenate([s.ldd.prob for pl in lines0 for s in pl.sentences])
    assert probs.min() < 1e-6  # values numpy writes positionally, orjson with an exponent
    assert written(lines0) == reference_write(lines0)


@pytest.mark.slow
def test_synprep_parse_output_is_the_reference_writers(stanza_dir, shared_data, tmp_path):
    src = tmp_path / "in.tok"
    lines = (shared_data / "iwslt14_de-en" / "fairseq_prepared" / "tmp" / "test.en").read_text("utf-8")
    src.write_text("".join(lines.splitlines(keepends=True)[:25]) + "\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    run_cli("parse", "-l", "en", "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", "--no-cache",
            "-i", str(src), "-o", str(out))
    text = out.read_text("utf-8")
    parsed = list(read_conllu(out))
    assert len(parsed) == 26 and parsed[-1].error == "empty line"
    assert any(s.tree for pl in parsed for s in pl.sentences)
    # the old writer, given what the command wrote (float32 strings read back exactly), writes the same bytes
    assert reference_write(parsed) == text
