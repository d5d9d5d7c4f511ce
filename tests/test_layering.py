"""Layering: no import cycle among synprep's modules (type-only and function-level
imports counted), stage modules without the application's configuration, light imports, and the pure
moves that broke the cycles (one tree primitive, the Moses escape table)."""

from __future__ import annotations

import ast
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import synprep

ROOT = Path(synprep.__file__).resolve().parent.parent


def module_graph(root: Path, package: str = "synprep") -> dict[str, set[str]]:
    """Module → the package's modules it imports, read with ``ast`` from every ``*.py`` under ``root/package``:
    every ``import``/``from ... import`` anywhere in the file (inside functions and ``if TYPE_CHECKING:``
    blocks too); ``from pkg import mod`` is an edge to ``pkg.mod`` when that is a module."""
    mods: dict[str, Path] = {}
    for p in sorted((root / package).rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [resolve(a.name) for a in node.names if a.name.split(".")[0] == package]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                if base.split(".")[0] != package:
                    continue
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else resolve(base) for a in node.names]
            edges[m] |= {t for t in targets if t is not None and t != m}
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle ``[a, b, ..., a]``, or None (depth-first search, sorted for a stable report)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        stack.append(v)
        for w in sorted(edges[v]):
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        stack.pop()
        state[v] = 2
        return None

    for v in sorted(edges):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return None


def test_synprep_has_no_import_cycle():
    cycle = find_cycle(module_graph(ROOT))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_counts_type_only_and_function_level_imports(tmp_path):
    pkg = tmp_path / "toypkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toypkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import g\n")
    (pkg / "c.py").write_text("import toypkg.a\n")
    edges = module_graph(tmp_path, "toypkg")
    assert edges["toypkg.a"] == {"toypkg.sub.b"} and edges["toypkg.sub.b"] == {"toypkg.c"}
    assert find_cycle(edges) == ["toypkg.a", "toypkg.sub.b", "toypkg.c", "toypkg.a"]
    (pkg / "c.py").write_text("")
    assert find_cycle(module_graph(tmp_path, "toypkg")) is None


#: the stage packages: they take their defaults from synprep.defaults, never from the application's
#: configuration (synprep.config, whose DataConfig reads the same defaults)
STAGES = ("synprep.parse", "synprep.text", "synprep.features", "synprep.subword", "synprep.shards", "synprep.train")


def test_stage_modules_do_not_import_the_application_config():
    edges = module_graph(ROOT)
    bad = sorted(m for m, out in edges.items() if m.startswith(STAGES) and "synprep.config" in out)
    assert bad == []


def test_data_config_defaults_are_the_stage_defaults():
    from synprep.config import DEFAULTS
    from synprep.defaults import CLEAN_DEFAULTS, PARSE_DEFAULTS, SHARD_DEFAULTS
    from synprep.parse import DEFAULT_LDD_THRESHOLD, DEFAULT_MAX_WORDS
    from synprep.parse.options import ParseOptions
    from synprep.parse.run import DEFAULT_BATCH_SIZE

    for group in (CLEAN_DEFAULTS, PARSE_DEFAULTS, SHARD_DEFAULTS):
        for name, value in vars(group).items():
            assert DEFAULTS.flat()[name] == value, name
    assert (DEFAULT_MAX_WORDS, DEFAULT_LDD_THRESHOLD, DEFAULT_BATCH_SIZE, ParseOptions().config.batch_size) == (250, 0.01, 64, 64)
    assert (DEFAULTS.text.ratio, DEFAULTS.text.min_len, DEFAULTS.text.max_len, DEFAULTS.shards.shard_size) == (
        1.5, 1, 175, 10000)


#: measured (2 loaded cores, python -X importtime): torch 3.3 s, sacremoses 0.9 s, nltk 0.8 s,
#: h5py 0.44 s; stanza and spaCy pull torch / their models. `synprep --help` imports every command
#: module for its one-line help, some of which read shards (h5py): only torch, stanza and spaCy are
#: refused there.
HEAVY = ("torch", "stanza", "spacy")


def _imported(code: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    probe = (f"import sys\ntry:\n    {code}\nexcept SystemExit:\n    pass\n"
             "import json; print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code, heavy", [
    ("import synprep.parse", (*HEAVY, "h5py")),
    ("from synprep.cli import main; main(['--help'])", HEAVY),
    ("from synprep.cli import main; main(['pipeline', '--help'])", (*HEAVY, "h5py")),
    ("from synprep.cli import main; main(['annotate', '--help'])", (*HEAVY, "h5py")),
])
def test_light_imports(code, heavy):
    loaded = set(_imported(code))
    assert "synprep" in loaded
    assert [m for m in heavy if m in loaded] == []


def test_a_default_train_config_imports_no_torch():
    loaded = _imported("from synprep.train.config import TrainConfig, model_elements; c = TrainConfig(); "
                       "c.describe(); model_elements(c, 1000); TrainConfig(syntax='pure', syntax_source='set')")
    assert "torch" not in loaded and "synprep" in loaded


def test_every_source_runs_the_configuration_side_it_registers():
    from synprep.train.sources import SOURCES, source_class, spec_class

    for name in SOURCES:
        spec, cls = spec_class(name), source_class(name)
        assert spec.name == name and issubclass(cls, spec) and cls.__module__ != spec.__module__
        assert "torch" not in spec.__module__


def test_escaping_does_not_import_sacremoses():
    assert "sacremoses" not in _imported("from synprep.text.escape import escape, unescape; escape('a & b')")


def test_escape_table_is_sacremoses_table():
    from sacremoses import MosesDetokenizer, MosesTokenizer

    from synprep.text import escape as esc

    tok, detok = MosesTokenizer(lang="en"), MosesDetokenizer(lang="en")
    # sacremoses' own substitutions, as regex pattern → replacement
    assert {r.pattern.replace("\\", ""): s for r, s in tok.MOSES_ESCAPE_XML_REGEXES} == \
        {c: e for e, c in esc.MOSES_ESCAPES.items()}
    assert {r.pattern: s for r, s in detok.MOSES_UNESCAPE_XML_REGEXES} == esc._UNESCAPE
    rng = random.Random(19)
    alphabet = ["&", "|", "<", ">", "'", '"', "[", "]", ";", "#", "a", "b", " ", "1", "2", "4", "9",
                *esc._UNESCAPE, "&amp;", "&amp;lt;", "&#12", "&bar", "ü"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert esc.escape(text) == tok.escape_xml(text), text
        assert esc.unescape(text) == (detok.unescape_xml(text) if "&" in text else text), text
        assert esc.unescape(esc.escape(text)) == text


def test_one_parse_tree_with_the_strict_error():
    from synprep.errors import InputError
    from synprep.features import distance
    from synprep.parse import trees
    from synprep.tree import TreeError, parse_tree

    assert trees.parse_tree is parse_tree and distance.parse_tree is parse_tree
    for bad, reason in (("(S (NP x)", "1 unclosed '('"), ("(S (X a)) (S (X b))", "expected one tree, found 2"),
                        ("(S (X a)) tail", "text outside brackets")):
        with pytest.raises(TreeError) as e:
            parse_tree(bad, "trees.txt", 7)
        assert isinstance(e.value, InputError) and isinstance(e.value, ValueError)
        assert str(e.value).startswith("trees.txt:7: bad bracketed tree: ") and reason in str(e.value)
        with pytest.raises(TreeError, match="bad bracketed tree"):  # the features' path: the same error
            distance.cnf_gaps(bad)
    # the features read a tree as written (no normalization: an empty element is a word there)
    assert distance.nary_gaps("(S (NP (-NONE- *)) (VP (V x)))").tolist() == [1]
    assert trees.tree_to_str(parse_tree("(S (NP (-NONE- *)) (VP (V x)))")) == "(ROOT (S (VP (V x))))"
