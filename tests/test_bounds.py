"""Memory stays bounded for any input line.

* A word longer than :data:`synprep.constants.MAX_WORD_CHARS` characters is never given to a parser:
  the line is dropped as ``parse:word_too_long`` (counted in the manifest and ``dropped.tsv``) in
  every split, and ``synprep parse`` writes it as a failed line. Parsed, a 100 KB token in a valid line
  would cost stanza 1.2 GB on a 2-core machine and 21 GB on a larger one.
* ``--max-words`` applies to imported CoNLL-U parses too: a longer sentence is dropped
  (``parse:too_long``) before any feature array (the per-sentence W×W masks) is built. A 100k-word
  imported sentence took 19 GB, then a traceback.

Peak memory is the child's own ``VmHWM`` (tests/test_hostile_shards.py:run_measured, which also
caps the address space at 3 GB so that a regression fails instead of filling the machine).
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import SAMPLE_DATA, run_cli
from test_hostile_shards import run_measured

from synprep.constants import MAX_WORD_CHARS
from synprep.parse.base import error_kind
from synprep.shards import Manifest, check_dir

#: what a pipeline run on one valid split may use, stanza's models included
PEAK_LIMIT_MB = 1024


def codes_and_vocab(tmp_path: Path) -> tuple[Path, Path]:
    from synprep.text.bpe import apply_bpe_stream, learn_bpe
    from synprep.textio import iter_lines
    from synprep.vocab import Vocab

    codes, bpe, vocab = tmp_path / "codes", tmp_path / "bpe.txt", tmp_path / "dict.txt"
    learn_bpe([SAMPLE_DATA / "train.de", SAMPLE_DATA / "train.en"], 200, codes)
    lines = [*iter_lines(SAMPLE_DATA / "train.de"), *iter_lines(SAMPLE_DATA / "train.en")]
    bpe.write_text("\n".join(apply_bpe_stream(lines, codes)) + "\n")
    Vocab.build([bpe]).save(vocab)
    return codes, vocab


def test_a_100kb_token_in_a_valid_line_is_dropped_with_bounded_memory(stanza_dir, tmp_path):
    src, tgt = tmp_path / "valid.de", tmp_path / "valid.en"
    token = "".join(chr(ord("a") + (i * 7) % 26) for i in range(100_000))
    src.write_text(f"Das ist gut .\nEin {token} Haus .\nHallo Welt .\n")
    tgt.write_text("That is good .\nA house .\nHello world .\n")
    codes, vocab = codes_and_vocab(tmp_path)
    out = tmp_path / "out"
    proc, peak = run_measured("pipeline", "--split", "valid", "--src", str(src), "--tgt", str(tgt), "-s", "de",
                              "-t", "en", "--out", str(out), "--codes", str(codes), "--vocab", str(vocab),
                              "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    assert peak < PEAK_LIMIT_MB, f"pipeline --split valid peaked at {peak:.0f} MB"
    assert check_dir(out).ok
    entry = Manifest.load(out).split("valid")
    assert entry.pairs == 2 and entry.dropped["parse:word_too_long"] == 1
    assert entry.dropped_lines == [[2, "parse:word_too_long",
                                    f"word 2 has 100000 characters (more than max_word_chars={MAX_WORD_CHARS})"]]
    rows = (out / "text" / "valid.dropped.tsv").read_text().splitlines()
    assert rows[1].split("\t")[:2] == ["2", "parse:word_too_long"]
    assert "parse:word_too_long 1" in proc.stderr  # the split's summary line


def test_parse_refuses_a_word_over_the_bound(stanza_dir, tmp_path):
    long = "x" * (MAX_WORD_CHARS + 1)
    proc = run_cli("parse", "-l", "de", "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep",
                   "--no-cache", input=f"Das ist gut .\nEin {long} Haus .\n{'y' * MAX_WORD_CHARS} .\n")
    blocks = proc.stdout.strip().split("\n\n")
    assert len(blocks) == 3
    assert "# error" in blocks[1] and f"word 2 has {MAX_WORD_CHARS + 1} characters" in blocks[1]
    assert "# error" not in blocks[0] and "# error" not in blocks[2]  # exactly the bound is parsed
    assert error_kind(f"word 2 has 1001 characters (more than max_word_chars={MAX_WORD_CHARS})") == "word_too_long"


def conllu_sentence(n: int, word: str = "w") -> str:
    return "".join(f"{j + 1}\t{word}{j % 10}\t_\tX\t_\t_\t{0 if j == 0 else 1}\t{'dep' if j else 'root'}\t_\t_\n"
                   for j in range(n)) + "\n"


def test_max_words_applies_to_imported_parses(tmp_path):
    src, tgt, conllu = tmp_path / "s", tmp_path / "t", tmp_path / "c.conllu"
    src.write_text(" ".join(f"w{j % 10}" for j in range(6)) + "\n" + " ".join(f"w{j % 10}" for j in range(5)) + "\n")
    tgt.write_text("a b\nc d\n")
    conllu.write_text(conllu_sentence(6) + conllu_sentence(5))
    out = tmp_path / "out"
    run_cli("annotate", "--src", str(src), "--tgt", str(tgt), "--parser", "conllu", "--conllu", str(conllu), "-s",
            "de", "-t", "en", "--out", str(out), "--max-words", "5")
    assert json.loads((out / "pipeline.json").read_text())["max_words"] == 5
    m = Manifest.load(out)
    assert m.split("train").dropped_lines == [[1, "parse:too_long", "sentence 1 has 6 words (more than max_words=5)"]]
    assert m.config["parser"] == {"name": "conllu", "ssplit": True, "max_words": 5}
    assert check_dir(out).ok


def test_a_huge_imported_sentence_is_dropped_with_bounded_memory(tmp_path):
    """100k words in one imported sentence (the default --max-words 250), and a 100 KB word: dropped,
    never a W×W array."""
    n = 100_000
    src, tgt, conllu = tmp_path / "s", tmp_path / "t", tmp_path / "c.conllu"
    words = " ".join(f"w{j % 10}" for j in range(n))
    long = "z" * 100_000
    src.write_text(f"w0 w1\n{words}\nw0 {long}\n")
    tgt.write_text("a\nb\nc\n")
    conllu.write_text(conllu_sentence(2) + conllu_sentence(n) + f"1\tw0\t_\tX\t_\t_\t0\troot\t_\t_\n"
                      f"2\t{long}\t_\tX\t_\t_\t1\tdep\t_\t_\n\n")
    out = tmp_path / "out"
    from synprep.vocab import Vocab

    Vocab.build([src, tgt]).save(tmp_path / "dict.txt")
    proc, peak = run_measured("annotate", "--src", str(src), "--tgt", str(tgt), "--parser", "conllu", "--conllu",
                              str(conllu), "-s", "de", "-t", "en", "--out", str(out), "--split", "valid",
                              "--vocab", str(tmp_path / "dict.txt"))
    assert proc.returncode == 0, proc.stderr
    assert peak < PEAK_LIMIT_MB, f"annotate peaked at {peak:.0f} MB"
    lines = Manifest.load(out).split("valid").dropped_lines
    assert [x[:2] for x in lines] == [[2, "parse:too_long"], [3, "parse:word_too_long"]]
    assert check_dir(out).ok


def many_piece_lines(tmp_path: Path, lines: int, words: int, pieces: int) -> list[str]:
    """``annotate --parser conllu`` arguments for ``lines`` pairs of ``words`` words of ``pieces`` random
    two-letter BPE pieces a side (what BPE makes of base64 or minified code: a piece or two a character)."""
    import random
    import string

    rng = random.Random(0)

    def line() -> list[list[str]]:
        return [["".join(rng.choices(string.ascii_lowercase, k=2)) for _ in range(pieces)] for _ in range(words)]

    src, tgt = [line() for _ in range(lines)], [line() for _ in range(lines)]
    bpe = lambda ws: " ".join(" ".join(p + "@@" for p in w[:-1]) + " " + w[-1] for w in ws)  # noqa: E731
    (tmp_path / "s").write_text("".join(bpe(x) + "\n" for x in src))
    (tmp_path / "t").write_text("".join(bpe(x) + "\n" for x in tgt))
    (tmp_path / "c.conllu").write_text("".join(
        "".join(f"{j + 1}\t{''.join(w)}\t_\tX\t_\t_\t{j}\t{'dep' if j else 'root'}\t_\t_\n" for j, w in enumerate(x))
        + "\n" for x in src))
    from synprep.vocab import Vocab

    Vocab.build([tmp_path / "s", tmp_path / "t"]).save(tmp_path / "dict.txt")
    return ["annotate", "--src", str(tmp_path / "s"), "--tgt", str(tmp_path / "t"), "--parser", "conllu", "--conllu",
            str(tmp_path / "c.conllu"), "-s", "de", "-t", "en", "--out", str(tmp_path / "out"), "--split", "valid",
            "--vocab", str(tmp_path / "dict.txt"), "--no-language-check"]


#: peak Python and NumPy memory (tracemalloc) a piece of a shard may take while ``annotate`` builds, writes and
#: checks it, in bytes. Measured (2-core machine): 33; 86 with each piece of a shard's block a string of its
#: own, 66 with the check widening the whole shard at once (``invariants.WINDOW_ELEMENTS`` unbounded)
BYTES_PER_PIECE = 50


def test_a_shard_of_many_piece_lines_holds_a_pointer_per_piece(tmp_path):
    import tracemalloc

    args = many_piece_lines(tmp_path, lines=40, words=250, pieces=40)
    n_pieces = 2 * 40 * 250 * 40
    tracemalloc.start()
    try:
        run_cli(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert Manifest.load(tmp_path / "out").split("valid").pairs == 40
    assert peak / n_pieces < BYTES_PER_PIECE, f"{peak / n_pieces:.0f} bytes a piece ({peak >> 20} MB)"
