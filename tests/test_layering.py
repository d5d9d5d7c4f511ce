"""Layering: the package's import contracts (import-linter's floors, forbidden imports and no cycles; every import
counts, inside functions and type-only ones too) hold and refuse a planted upward import; light imports; and the
pure moves that broke the cycles (one tree primitive, the Moses escape table)."""

from __future__ import annotations

import ast
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import synprep

ROOT = Path(synprep.__file__).resolve().parent.parent


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter (what ``make lint`` runs) over the ``synprep`` package under ``root``, with the contracts of
    ``root/pyproject.toml``: exit status 0 when every contract is kept."""
    code = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    return subprocess.run([sys.executable, "-c", code, "--no-cache", "--no-logo"], cwd=root, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(root)}, timeout=120)


def test_the_package_keeps_its_import_contracts():
    out = lint_imports(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    for contract in ("floors: a module imports its own floor", "the stages take their defaults from synprep.defaults",
                     "the trainer reads shards", "no import cycle among the modules"):
        assert contract in out.stdout
    assert "4 kept, 0 broken" in out.stdout


def test_a_planted_upward_import_breaks_the_floors(tmp_path):
    """A copy of the package with a parser module importing a shard module inside a function (a lazy import) and
    a text module importing a feature module for its types only: import-linter names both, and fails."""
    shutil.copytree(ROOT / "synprep", tmp_path / "synprep", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    assert lint_imports(tmp_path).returncode == 0  # the copy as it is keeps the contracts
    with open(tmp_path / "synprep" / "parse" / "cache.py", "a", encoding="utf-8") as f:
        f.write("\n\ndef _planted():\n    from synprep.shards import schema\n\n    return schema\n")
    with open(tmp_path / "synprep" / "text" / "clean.py", "a", encoding="utf-8") as f:
        f.write("\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from synprep.features.line import LineFeatures\n")
    out = lint_imports(tmp_path)
    assert out.returncode == 1, out.stdout
    assert "synprep.parse is not allowed to import synprep.shards" in out.stdout
    assert "synprep.parse.cache -> synprep.shards.schema" in out.stdout
    assert "synprep.text is not allowed to import synprep.features" in out.stdout
    assert "synprep.text.clean -> synprep.features.line" in out.stdout
    assert "floors: a module imports its own floor and the floors below, never one above BROKEN" in out.stdout


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


@pytest.mark.parametrize("package, light, heavy", [
    ("synprep.shards", "synprep.shards.config", "h5py"),
    ("synprep.pipeline", "synprep.pipeline.config", "synprep.pipeline.run"),
    ("synprep.parse", "synprep.parse.config", "synprep.parse.run"),
])
def test_a_packages_public_names_are_imported_on_first_use(package, light, heavy):
    """synprep.shards, synprep.pipeline and synprep.parse import a public name's module when the name is first read (one
    helper, :func:`synprep.lazy.lazy_names`): their configuration module imports without it."""
    probe = (f"import sys, importlib\nimport {light}\nassert {heavy!r} not in sys.modules\n"
             f"pkg = importlib.import_module({package!r})\n"
             "names = {n: getattr(pkg, n) for n in pkg.__all__}\n"
             f"assert {heavy!r} in sys.modules\n"
             "assert all(vars(pkg)[n] is v for n, v in names.items())\n"
             "try:\n    pkg.no_such_name\nexcept AttributeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == f"module {package!r} has no attribute 'no_such_name'"


def test_a_lazy_module_runs_on_first_use_and_reads_from_the_module_an_import_gives():
    """:func:`synprep.lazy.lazy_module` (the stanza backend's numpy helpers): nothing of the module runs until an
    attribute is read, not even when something walks the loaded modules (``inspect.getmodule``, as torch and spaCy
    do); then its names are the ones ``import`` gives."""
    probe = ("import inspect, sys\nfrom synprep.lazy import lazy_module\n"
             "m = lazy_module('synprep.parse.trees')\n"
             "inspect.getmodule(inspect)\n"
             "assert 'numpy' not in sys.modules and 'synprep.parse.trees' not in sys.modules\n"
             "tree = m.tree_to_str(m.parse_tree('(ROOT (NN a))'))\n"
             "assert 'numpy' in sys.modules\n"
             "import synprep.parse.trees as t\n"
             "assert m.tree_to_str is t.tree_to_str\n"
             "print(tree)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == "(ROOT (NN a))"


def test_bpe_apply_imports_no_numpy_and_no_joblib(shared_data, tmp_path):
    """``synprep bpe apply`` at one worker, start to end, imports neither numpy nor joblib (subword-nmt's
    apply-bpe imports neither): the parse stage's options and the parser backends' modules, which every text
    command reads for its options, load them only when a parse runs."""
    prepared = shared_data / "iwslt14_de-en" / "fairseq_prepared"
    out = tmp_path / "out"
    args = ["-q", "bpe", "apply", "-c", str(prepared / "code"), "-i", str(prepared / "tmp" / "valid.de"), "-o", str(out)]
    loaded = set(_imported(f"from synprep.cli import main; main({args!r})"))
    assert out.read_bytes() == (prepared / "valid.de").read_bytes()
    assert "subword_nmt" in loaded and [m for m in ("numpy", "joblib", *HEAVY) if m in loaded] == []


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
    assert "sacremoses" not in _imported("from synprep.escape import escape, unescape; escape('a & b')")


def test_escape_table_is_sacremoses_table():
    from sacremoses import MosesDetokenizer, MosesTokenizer

    from synprep import escape as esc

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


def test_test_modules_import_their_helpers_under_one_name_and_never_conftest():
    """pytest loads ``conftest.py`` itself; a test module that imports it (or a helper module under two names,
    ``helpers`` and ``tests.helpers``) loads a second copy of it, with its own module-level state."""
    tests = ROOT / "tests"
    local = {p.stem for p in tests.glob("*.py")}
    spellings: dict[str, set[str]] = {}
    for p in sorted(tests.glob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            for name in names:
                stem = name.removeprefix("tests.")
                if stem in local:
                    spellings.setdefault(stem, set()).add(name)
                    assert stem != "conftest", f"{p.name} imports conftest ({name}): import it from tests/helpers.py"
    assert {"helpers", "builders", "pipeline_runs"} <= set(spellings)
    assert {stem: names for stem, names in spellings.items() if len(names) > 1} == {}
