"""Must show 3: tokenize → clean → learn BPE → apply through the CLI on real raw TED text."""

from __future__ import annotations

import re

from helpers import run_cli


def test_ted_toy_through_the_cli(shared_data, tmp_path):
    toy = shared_data / "ted_toy"
    n_input = 1000
    for lang in ("de", "en"):
        run_cli("tokenize", "-l", lang, "--lowercase", "-i", str(toy / f"train.{lang}"),
                "-o", str(tmp_path / f"tok.{lang}"))
        assert (tmp_path / f"tok.{lang}").read_bytes().count(b"\n") == n_input
    proc = run_cli("clean", str(tmp_path / "tok.de"), str(tmp_path / "tok.en"), "--ratio", "1.5", "--min-len", "1",
                   "--max-len", "175", "-o", str(tmp_path / "clean"), "--report", str(tmp_path / "dropped.tsv"))
    kept = (tmp_path / "clean.de").read_text(encoding="utf-8").splitlines()
    assert len(kept) == len((tmp_path / "clean.en").read_text(encoding="utf-8").splitlines())
    rows = (tmp_path / "dropped.tsv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == "line\treason\tsrc_tokens\ttgt_tokens"
    dropped = [r.split("\t") for r in rows[1:]]
    # every input line is accounted for: kept + dropped = input, each dropped line named once
    assert len(kept) + len(dropped) == n_input
    assert len({int(d[0]) for d in dropped}) == len(dropped)
    assert all(1 <= int(d[0]) <= n_input for d in dropped)
    m = re.search(r"clean: input (\d+), kept (\d+), dropped (\d+)", proc.stderr)
    assert m and tuple(map(int, m.groups())) == (n_input, len(kept), len(dropped))
    # the ratio rule did the dropping here (no empty or over-long pairs in ted_toy)
    assert dropped and all(d[1] == "ratio" for d in dropped)
    assert all(max(int(d[2]) / int(d[3]), int(d[3]) / int(d[2])) > 1.5 for d in dropped)

    run_cli("bpe", "learn", "-s", "2000", str(tmp_path / "clean.de"), str(tmp_path / "clean.en"),
            "-o", str(tmp_path / "code"))
    assert (tmp_path / "code").read_text(encoding="utf-8").startswith("#version: 0.2\n")
    for lang in ("de", "en"):
        run_cli("bpe", "apply", "-c", str(tmp_path / "code"), "-i", str(tmp_path / f"clean.{lang}"),
                "-o", str(tmp_path / f"bpe.{lang}"), "-j", "2")
        pieces = (tmp_path / f"bpe.{lang}").read_text(encoding="utf-8").splitlines()
        assert [p.replace("@@ ", "") for p in pieces] == (tmp_path / f"clean.{lang}").read_text(
            encoding="utf-8").splitlines()
        assert any("@@ " in p for p in pieces)
