"""Parser backends as plugins: one Registry helper, options declared as a dataclass on
the backend and generated for every command that takes --parser, a toy backend driven through pipeline."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli

from synprep.errors import ConfigError
from synprep.parse.base import ParserSpec, plugin_options
from synprep.registry import Registry
from synprep.types import DEPRELS

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SAMPLE = ROOT / "sample_data"


def test_registry_lookup_error_and_runtime_registration():
    reg: Registry = Registry("widget", {"a": "json:dumps"})
    assert reg.load("a") is json.dumps and reg.names() == ("a",)
    with pytest.raises(ConfigError, match=r"^unknown widget 'b'; choose one of a$"):
        reg.load("b")
    reg.register("b", "json:loads")
    assert reg.load("b") is json.loads and reg.names() == ("a", "b")
    with pytest.raises(ValueError, match="module:attribute"):
        reg.register("c", "json.loads")


def test_the_six_tables_are_registries():
    from synprep.cli import COMMANDS
    from synprep.export import EXPORTERS
    from synprep.parse.registry import PARSE_SOURCES, PARSER_BACKENDS
    from synprep.subword import SCHEMES
    from synprep.train.sources import SOURCES

    for table in (COMMANDS, EXPORTERS, PARSE_SOURCES, PARSER_BACKENDS, SCHEMES, SOURCES):
        assert isinstance(table, Registry)
        with pytest.raises(ConfigError, match=f"^unknown {table.kind} 'nope'; choose one of "):
            table.load("nope")


def test_backend_options_follow_one_prefix_rule_with_the_old_spellings_kept():
    from synprep.cli.common import backend_params
    from synprep.cli.parse import parse_cmd

    # the runtime ones from the backends' Options, the folder settings from the parse section's fields
    assert {o.param: o.flags for o in plugin_options()} == {
        "stanza_dir": ("--stanza-dir",), "corenlp_endpoint": ("--corenlp-endpoint",),
        "corenlp_timeout": ("--corenlp-timeout", "--timeout")}
    flags = {p.name: tuple(p.opts) for p in parse_cmd.params if p.name in backend_params()}
    assert flags == {
        "stanza_dir": ("--stanza-dir",), "stanza_package": ("--stanza-package",),
        "corenlp_endpoint": ("--corenlp-endpoint",), "corenlp_timeout": ("--corenlp-timeout", "--timeout"),
        "spacy_model": ("--spacy-model",), "spacy_label_map": ("--spacy-label-map", "--label-map"),
    }


@pytest.mark.parametrize("command", ["parse", "pipeline", "annotate"])
def test_help_lists_every_backend_option(command):
    out = run_cli(command, "--help").stdout
    for flag in ("--stanza-dir", "--stanza-package", "--corenlp-endpoint", "--corenlp-timeout", "--timeout",
                 "--spacy-model", "--spacy-label-map", "--label-map"):
        assert flag in out, (command, flag)


@pytest.mark.parametrize("command, runner", [("pipeline", "run_pipeline"), ("annotate", "run_annotate")])
@pytest.mark.parametrize("timeout_flag", ["--corenlp-timeout", "--timeout"])
def test_corenlp_options_reach_the_parser_spec(tmp_path, monkeypatch, command, runner, timeout_flag):
    import synprep.pipeline
    from synprep.cli import cli

    seen = {}

    class Stop(Exception):
        pass

    real = inspect.signature(getattr(synprep.pipeline, runner))

    def capture(*args, **kwargs):  # the library entry point: record what the CLI built, write nothing
        given = real.bind(*args, **kwargs).arguments
        seen["spec"] = synprep.pipeline.parse_options(given["config"], given["runtime"]).spec
        raise Stop

    monkeypatch.setattr(synprep.pipeline, runner, capture)
    src, tgt = SAMPLE / "train.de", SAMPLE / "train.en"
    result = CliRunner().invoke(cli, [command, "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en",
                                      "--out", str(tmp_path / "out"), "--parser", "corenlp",
                                      "--corenlp-endpoint", "http://corenlp.example:9001", timeout_flag, "7.5"])
    assert isinstance(result.exception, Stop), result.output
    spec = seen["spec"]
    assert (spec.name, spec.corenlp_endpoint, spec.timeout) == ("corenlp", "http://corenlp.example:9001", 7.5)
    assert spec.backend_options().endpoint == "http://corenlp.example:9001"


def test_other_backends_options_are_refused():
    proc = run_cli("parse", "-l", "en", "--corenlp-timeout", "5", input="a b\n", check=False)
    assert proc.returncode == 2 and "--corenlp-timeout/--timeout has no effect with --parser stanza" in proc.stderr
    with pytest.raises(ConfigError, match="--toy-label has no effect with --parser stanza"):
        ParserSpec(name="stanza", plugin_options=(("toy_label", "obj"),))


TOY = """
import sys
from synprep.parse.registry import PARSER_BACKENDS
PARSER_BACKENDS.register("toy", "toy_parser:ToyParser")  # the one registry line
from synprep.cli import main
main(sys.argv[1:])
"""


def _synprep_with_toy(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)])}
    return subprocess.run([sys.executable, "-c", TOY, *args], capture_output=True, text=True, env=env, input=input)


def test_a_toy_backends_option_reaches_synprep_parse():
    # parse hands the chosen backend's option to the spec in its parse section (parser_options)
    proc = _synprep_with_toy("parse", "-l", "de", "--parser", "toy", "--toy-label", "obj", "--no-cache",
                             input="das ist gut .\n")
    assert proc.returncode == 0, proc.stderr
    assert [line.split("\t")[7] for line in proc.stdout.splitlines() if line[:1].isdigit()] == ["root", "obj", "obj", "obj"]
    proc = _synprep_with_toy("parse", "-l", "de", "--toy-label", "obj", "--no-cache", input="das ist gut .\n")
    assert proc.returncode == 2 and "--toy-label has no effect with --parser stanza" in proc.stderr


def test_a_toy_backend_with_one_option_runs_through_pipeline(tmp_path):
    from synprep.shards import open_split

    src, tgt = tmp_path / "train.de", tmp_path / "train.en"
    src.write_text("".join((SAMPLE / "train.de").read_text().splitlines(keepends=True)[:12]))
    tgt.write_text("".join((SAMPLE / "train.en").read_text().splitlines(keepends=True)[:12]))
    out = tmp_path / "out"
    common = ["pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--merges", "50",
              "--parser", "toy", "--no-cache"]
    proc = _synprep_with_toy(*common, "--out", str(out), "--toy-label", "obj")
    assert proc.returncode == 0, proc.stderr
    assert "--toy-label" in _synprep_with_toy("pipeline", "--help").stdout
    obj, root = DEPRELS.index("obj"), DEPRELS.index("root")
    recs = [r for shard in open_split(out, "train") for r in shard]
    assert len(recs) == 12
    for r in recs:  # a chain per sentence: one root each, every other arc labelled by the option
        assert (r.deprel == root).sum() == len(r.sent_start) and set(r.deprel.tolist()) <= {obj, root}
    assert any((r.deprel == obj).any() for r in recs)
    parser = open_split(out, "train")[0].attrs["config"]["parser"]
    assert parser["name"] == "toy" and parser["plugin_options"] == [["toy_label", "obj"]]
    # its default, on another folder: the option decides the arcs
    proc = _synprep_with_toy(*common, "--out", str(tmp_path / "plain"))
    assert proc.returncode == 0, proc.stderr
    dep = DEPRELS.index("dep")
    assert any((r.deprel == dep).any() for shard in open_split(tmp_path / "plain", "train") for r in shard)
    # another backend's option is refused by name
    proc = _synprep_with_toy(*common, "--out", str(tmp_path / "bad"), "--spacy-model", "x")
    assert proc.returncode == 2 and "--spacy-model has no effect with --parser toy" in proc.stderr
