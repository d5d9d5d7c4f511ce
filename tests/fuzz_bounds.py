"""Hypothesis properties of the input bounds, shared by tests/test_fuzz_bounds.py and benchmarks/fuzz.py.

* :func:`check_imported_lines`: ``annotate --parser conllu`` (in process) on imported parses with
  huge sentences (up to 100k words) and long words (up to 100 KB): a line is stored, or dropped as
  ``parse:too_long`` / ``parse:word_too_long`` exactly when its first offending sentence says so;
  the folder passes ``check``; never a traceback, never a W×W array of an unbounded sentence.
* :func:`check_parsed_long_tokens`: the parser stage (:func:`synprep.parse.run.parse_block`, real
  stanza) on lines with tokens around and far beyond :data:`~synprep.constants.MAX_WORD_CHARS`:
  such a line is a ``word_too_long`` failure and never reaches the parser; the others are parsed.
* :func:`check_value_damage`: one value of a valid folder's shard replaced in place (same dtype),
  the manifest re-sealed: the reader (``open_split``, what ``train``/``show``/``export`` use) accepts
  the split exactly when ``check`` does, and reads every pair it accepted; otherwise a one-line
  ``InputError`` naming the shard.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import numpy as np
from builders import reseal
from hypothesis import strategies as st

from synprep.constants import MAX_WORD_CHARS

#: sentence lengths (words) around and far beyond the default --max-words (250)
SENTENCE_WORDS = st.integers(1, 8) | st.sampled_from([249, 250, 251, 1000, 10_000, 100_000])
#: word lengths (characters) around and far beyond MAX_WORD_CHARS
WORD_CHARS = st.integers(1, 6) | st.sampled_from([MAX_WORD_CHARS - 1, MAX_WORD_CHARS, MAX_WORD_CHARS + 1,
                                                  10_000, 100_000])


def _expected_reason(sentences: list[list[str]], max_words: int) -> str | None:
    for s in sentences:
        if len(s) > max_words:
            return "parse:too_long"
        if any(len(w) > MAX_WORD_CHARS for w in s):
            return "parse:word_too_long"
    return None


def _sentence(data, line: int, k: int) -> list[str]:
    n = data.draw(SENTENCE_WORDS, label=f"line {line} sentence {k} words")
    words = [f"w{j % 7}" for j in range(n)]
    if data.draw(st.booleans(), label="a long word"):
        at = data.draw(st.integers(0, n - 1), label="at")
        words[at] = "x" * data.draw(WORD_CHARS, label="chars")
    return words


def check_imported_lines(out: Path, data) -> str:
    """Annotate 1-3 imported lines into a fresh ``out``; returns the kind (the drop reasons seen)."""
    from synprep.config import DataConfig
    from synprep.pipeline import SplitInputs, run_annotate
    from synprep.shards import check_dir

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    lines = [[_sentence(data, i, k) for k in range(data.draw(st.integers(1, 2), label="sentences"))]
             for i in range(data.draw(st.integers(1, 3), label="lines"))]
    with open(out / "s", "w") as s, open(out / "t", "w") as t, open(out / "c.conllu", "w") as c:
        for i, line in enumerate(lines, 1):
            s.write(" ".join(w for sent in line for w in sent) + "\n")
            t.write("a b\n")
            for sent in line:  # '# line = N' groups: a line of several sentences, as `synprep parse` writes it
                c.write(f"# line = {i}\n")
                c.writelines(f"{j + 1}\t{w}\t_\tX\t_\t_\t{0 if j == 0 else 1}\t{'dep' if j else 'root'}\t_\t_\n"
                             for j, w in enumerate(sent))
                c.write("\n")
    folder = out / "out"
    m = run_annotate(SplitInputs(src=str(out / "s"), tgt=str(out / "t"), conllu=str(out / "c.conllu")), folder,
                     DataConfig.of(src_lang="de", tgt_lang="en", parser="conllu"))
    report = check_dir(folder)
    assert report.ok, report.summary()
    got = {int(x[0]): x[1] for x in m.split("train").dropped_lines}
    want = {i + 1: r for i, line in enumerate(lines) if (r := _expected_reason(line, 250)) is not None}
    assert got == want, (got, want)
    assert m.split("train").pairs == len(lines) - len(want)
    return "+".join(sorted(set(want.values()))) or "stored"


def check_parsed_long_tokens(spec, data) -> str:
    """Parse 1-3 lines with stanza (``spec``); returns the kind."""
    from synprep.parse.options import Parallel, ParseRun
    from synprep.parse.run import parse_block

    lines = []
    for _ in range(data.draw(st.integers(1, 3), label="lines")):
        words = ["Das", "ist", "ein", "Haus", "."]
        if data.draw(st.booleans(), label="a long token"):
            words[data.draw(st.integers(0, 4), label="at")] = "".join(
                chr(97 + (i * 7) % 26) for i in range(data.draw(WORD_CHARS, label="chars")))
        lines.append(words)
    parsed = parse_block(lines, ParseRun(spec, par=Parallel(jobs=1)))
    kinds = set()
    for words, p in zip(lines, parsed, strict=True):
        if any(len(w) > MAX_WORD_CHARS for w in words):
            assert p.error is not None and "max_word_chars" in p.error and not p.sentences, p.error
            kinds.add("word_too_long")
        else:
            assert p.error is None and p.words == words, p.error
            kinds.add("parsed")
    return "+".join(sorted(kinds))


#: values written over one element (cast to the dataset's dtype; those it cannot hold are skipped)
_VALUES = st.sampled_from([0, 1, 2, 3, 4, 7, 250, 255, 998, 999, 1000, 1001, 65535, 2**31 - 1]) | st.integers(0, 300)


def check_value_damage(base: Path, folder: Path, data) -> str:
    """One value of one shard's dataset replaced, the manifest re-sealed; returns the dataset's name."""
    from synprep.errors import InputError
    from synprep.shards import SplitReader, check_dir, open_split
    from synprep.shards.schema import FIELDS

    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(base, folder)
    shards = sorted(folder.glob("*.h5"))
    shard = data.draw(st.sampled_from(shards), label="shard")
    name = data.draw(st.sampled_from([fl.name for fl in FIELDS] + ["line"]), label="dataset")
    with h5py.File(shard, "r+") as f:
        a = f[name][()]
        if a.size == 0:
            return "empty"
        k = data.draw(st.integers(0, a.size - 1), label="element")
        v = data.draw(_VALUES | st.floats(allow_nan=True, allow_infinity=True) if a.dtype.kind == "f" else _VALUES,
                      label="value")
        if a.dtype.kind in "iu" and not np.iinfo(a.dtype).min <= v <= np.iinfo(a.dtype).max:
            return "unrepresentable"
        with np.errstate(over="ignore"):  # float16: a large float becomes inf, a value check rejects
            a[k] = v
        f[name][...] = a
    reseal(folder)
    split = shard.name.split(".")[0]
    report = check_dir(folder)
    try:
        readers = open_split(folder, split)
    except InputError as e:
        assert "\n" not in str(e), str(e)
        assert not report.ok, f"the reader refused what check accepts: {e}"
        assert e.path in (str(shard), str(folder), str(folder / "manifest.json")), e.path
        return name
    with SplitReader(readers) as r:
        n = sum(1 for _ in r)
    assert report.ok or report.violation is not None and not report.violation.file.startswith(split + "."), (
        f"the reader accepted what check refuses: {report.summary()}")
    assert n == report.pairs.get(split, n)
    return name
