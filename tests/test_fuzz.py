"""Fuzzing the tree and CoNLL-U readers and ``synprep check``.

Property: only synprep's own errors (``InputError`` and the other ``SynprepError`` subclasses)
or a ``CheckReport`` with a violation — never another exception type, never a hang. What a
reader returns is well formed (a CoNLL-U sentence is always a tree). The inputs are described in
tests/fuzz_strategies.py; ``python benchmarks/fuzz.py`` runs the same targets much longer.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import small_folder
from fuzz_strategies import (
    check_conllu_bytes,
    check_damaged_folder,
    check_hostile_folder,
    check_mrg_bytes,
    check_tree_text,
    conllu_bytes,
    no_hang,
    read_blocks,
    tree_texts,
)
from helpers import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synprep.errors import InputError
from synprep.parse.conllu_io import read_conllu

FUZZ = settings(deadline=None, suppress_health_check=list(HealthCheck), database=None)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """One folder per test module; each example overwrites its file there."""
    return tmp_path_factory.mktemp("fuzz")


@settings(FUZZ, max_examples=3000)
@given(text=tree_texts)
def test_tree_reader(text):
    with no_hang():
        check_tree_text(text)


@settings(FUZZ, max_examples=600)
@given(data=st.one_of(st.binary(max_size=200), tree_texts.map(lambda t: t.replace(" (", "\n (").encode("utf-8",
                                                                                                         "replace"))))
def test_mrg_reader(scratch, data):
    with no_hang():
        check_mrg_bytes(data, scratch / "f.mrg")


@pytest.fixture(scope="module")
def ud_blocks(shared_data: Path) -> list[list[str]]:
    """Real sentence blocks: German GSD (multiword tokens: zum, im, ...) and English EWT."""
    return (read_blocks(shared_data / "ud/de_gsd-ud-dev.conllu", 300)
            + read_blocks(shared_data / "ud/en_ewt-ud-dev.conllu", 300))


def test_unmutated_blocks_read_back(ud_blocks, tmp_path):
    """The fuzzer's seeds are valid: every chosen block reads as one sentence."""
    data = "\n\n".join("\n".join(b) for b in ud_blocks[:50]) + "\n"
    assert check_conllu_bytes(data.encode("utf-8"), tmp_path / "x.conllu") == 100  # 50 in each word mode


@settings(FUZZ, max_examples=2000)
@given(data=st.data())
def test_conllu_reader(ud_blocks, scratch, data):
    raw = data.draw(st.one_of(conllu_bytes(ud_blocks), st.binary(max_size=300)), label="bytes")
    with no_hang():
        check_conllu_bytes(raw, scratch / "f.conllu")


def test_conllu_cycle_is_named(ud_blocks, tmp_path):
    """A 2-cycle put into a real sentence is an InputError naming the cycle and its line."""
    block = [line.split("\t") for line in ud_blocks[0]]
    words = [r for r in block if len(r) == 10 and r[0].isdigit()]
    words[1][6], words[2][6] = words[2][0], words[1][0]
    p = tmp_path / "c.conllu"
    p.write_text("\n".join("\t".join(r) for r in block) + "\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="cycle through words") as e:
        list(read_conllu(p))
    assert e.value.path == str(p) and e.value.line is not None


@pytest.fixture(scope="module")
def valid_folder(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("valid") / "out"
    small_folder(base)
    assert run_cli("check", str(base)).returncode == 0
    return base


@settings(FUZZ, max_examples=400)
@given(data=st.data())
def test_check_on_damaged_folders(valid_folder, scratch, data):
    with no_hang():
        check_damaged_folder(valid_folder, scratch / "damaged", data)


def test_check_cli_on_a_damaged_folder_is_one_line(valid_folder, tmp_path):
    """Through the command line: exit != 0, the violation named, no traceback."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(valid_folder, out)
    (out / "manifest.json").write_text('{"format": "synprep-shard", "format_version": 1, "vocab": 5}')
    proc = run_cli("check", str(out), check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "manifest.json" in proc.stderr + proc.stdout


@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_readers_on_hostile_shards(valid_folder, scratch, data):
    """train/show/check on a shard with hostile declared sizes or damaged metadata: SynprepError only,
    and the process's memory never jumps (a hostile shard can declare gigabytes)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with no_hang():
        check_hostile_folder(valid_folder, scratch / "hostile", data)
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grew_mb < 300, f"peak RSS grew by {grew_mb:.0f} MB"
