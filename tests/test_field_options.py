"""An option declared once, on its section field, gives the command's option, its ``--help`` line, the
bound click enforces and the section's own bound check."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import click
import pytest
from click.testing import CliRunner
from helpers import run_cli

from synprep.cli.fields import field_option, with_field_options
from synprep.cli.parse import parse_cmd
from synprep.cli.pipeline import annotate_cmd, pipeline_cmd
from synprep.cli.shards import shard_cmd
from synprep.cli.subword import spm_learn_cmd
from synprep.cli.text import bpe_learn_cmd, clean_cmd, tokenize_cmd
from synprep.config import SECTIONS, DataConfig, option_fields
from synprep.constants import MAX_SHARD_PAIRS
from synprep.errors import ConfigError
from synprep.settings import check_bounds, option
from synprep.subword.config import SubwordConfig
from synprep.text.config import TextConfig


@dataclass(frozen=True)
class ToySection:
    """A section with one option of each kind, each declared in one field."""

    toy_width: int = field(default=3, metadata=option("Toy width of the test section.", low=1, high=9))
    toy_ratio: float = field(default=1.5, metadata=option("Toy ratio.", low=0, low_open=True))
    toy_mode: str = field(default="a", metadata=option("Toy mode.", choices=("a", "b")))
    toy_on: bool = field(default=False, metadata=option("Toy switch."))
    toy_check: bool = field(default=True, metadata=option("Skip the toy check.", param="no_toy_check",
                                                           negated=True))
    undeclared: int = 0  # no option

    def __post_init__(self) -> None:
        check_bounds(self)


@click.command("toy")
@with_field_options(ToySection)
def toy_cmd(**params):
    click.echo(repr(sorted(params.items())))


def _run(*args: str):
    return CliRunner().invoke(toy_cmd, list(args), terminal_width=200)


def test_help_line_is_the_fields_declaration():
    lines = _run("--help").output.splitlines()
    width = next(line for line in lines if "--toy-width" in line)
    assert width.split() == ["--toy-width", "INTEGER", "RANGE", "Toy", "width", "of", "the", "test", "section.",
                             "[default:", "3;", "1<=x<=9]"]
    assert any("--toy-on / --no-toy-on" in line for line in lines)
    assert any("--no-toy-check / --toy-check" in line for line in lines)
    assert any("--toy-ratio FLOAT > 0" in line for line in lines)
    assert [line.split()[0] for line in lines if line.strip().startswith(("--toy", "--no-toy"))] == \
        ["--toy-width", "--toy-ratio", "--toy-mode", "--toy-on", "--no-toy-check"]
    assert "undeclared" not in "\n".join(lines)


def test_values_and_flags_reach_the_command():
    result = _run("--toy-width", "9", "--toy-mode", "b", "--toy-on", "--no-toy-check")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == repr(sorted({"toy_width": 9, "toy_ratio": 1.5, "toy_mode": "b",
                                                 "toy_on": True, "no_toy_check": True}.items()))


@pytest.mark.parametrize(("args", "message"), [
    (("--toy-width", "0"), "0 is not in the range 1<=x<=9"),
    (("--toy-width", "10"), "10 is not in the range 1<=x<=9"),
    (("--toy-ratio", "0"), "0.0 is not in the range x>0"),
    (("--toy-mode", "c"), "'c' is not one of 'a', 'b'"),
])
def test_the_command_refuses_what_the_field_bounds_refuse(args, message):
    result = _run(*args)
    assert result.exit_code == 2 and message in result.output


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"toy_width": 0}, "toy_width must be in \\[1, 9\\], got 0"),
    ({"toy_width": 10}, "toy_width must be in \\[1, 9\\], got 10"),
    ({"toy_ratio": 0.0}, "toy_ratio must be > 0, got 0.0"),
    ({"toy_mode": "c"}, "toy_mode must be one of a, b, got 'c'"),
])
def test_the_section_refuses_the_same_values(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ToySection(**kwargs)


def test_a_configuration_file_is_held_to_the_commands_bounds():
    # --shard-size's upper bound (what a reader accepts) is the section's: a configuration file cannot pass it
    assert DataConfig.of(shard_size=MAX_SHARD_PAIRS).shards.shard_size == MAX_SHARD_PAIRS
    with pytest.raises(ConfigError, match=f"shard_size must be in \\[1, {MAX_SHARD_PAIRS}\\], got {MAX_SHARD_PAIRS + 1}"):
        DataConfig.of(shard_size=MAX_SHARD_PAIRS + 1)
    with pytest.raises(ConfigError, match="merges must be >= 1, got 0"):
        DataConfig.of(merges=0)
    with pytest.raises(ConfigError, match="ldd_threshold must be in \\[0, 1\\], got 1.5"):  # as every version said it
        DataConfig.of(ldd_threshold=1.5)
    with pytest.raises(ConfigError, match="subword must be one of bpe, spm, hf, got 'wordpiece'"):  # its saved name
        DataConfig.of(subword="wordpiece")


#: shard's own options of the same names (it reads no DataConfig): the BPE text's case, a one-way switch, a
#: vocabulary split that defaults to the folder's, required languages
SHARD_OWN = {("shard", name) for name in ("lowercase", "language_check", "vocab_split", "src_lang", "tgt_lang")}


def test_every_declared_section_field_is_its_commands_option():
    # pipeline, annotate, parse and shard carry the generated option of each declared field they take: the same
    # help and the same click type as the field's own (none typed a second time by hand)
    commands = {"pipeline": pipeline_cmd, "annotate": annotate_cmd, "parse": parse_cmd, "shard": shard_cmd}
    seen = set()
    for section in (DataConfig, *SECTIONS.values()):
        for f in dataclasses.fields(section):
            if "help" not in f.metadata:
                continue
            expected = field_option(f)
            for name, cmd in commands.items():
                param = next((p for p in cmd.params if p.name == expected.name), None)
                if param is not None and (name, f.name) not in SHARD_OWN:
                    seen.add((name, f.name))
                    # --parser: the command's own choices (the registered backends; conllu where parses are imported)
                    kind = expected.type if f.name != "parser" else param.type
                    assert (param.opts, param.secondary_opts, param.help, repr(param.type), param.default) == \
                        (expected.opts, expected.secondary_opts, expected.help, repr(kind),
                         expected.default), (name, f.name)
    assert {f for cmd, f in seen if cmd == "pipeline"} == {
        "scheme", "merges", "vocab_size", "tokenized", "lowercase", "fairseq_compat", "tokenizer", "ratio", "min_len",
        "max_len", "language_check", "parser", "stanza_package", "spacy_model", "label_map", "device", "ssplit",
        "max_words", "batch_size", "ldd_threshold", "shard_size", "vocab_split", "src_lang", "tgt_lang"}
    assert {f for cmd, f in seen if cmd == "parse"} == {
        "tokenizer", "parser", "stanza_package", "spacy_model", "label_map", "device", "ssplit", "max_words", "batch_size",
        "ldd_threshold"}
    assert {f for cmd, f in seen if cmd == "shard"} >= {"shard_size", "ldd_threshold"}
    # and each generated parameter is the one resolve_config reads into its field
    generated = {field_option(f).name for section in (DataConfig, *SECTIONS.values())
                 for f in dataclasses.fields(section) if "help" in f.metadata}
    assert generated <= {param for param, _, _ in option_fields()} and "subword" in generated


#: the line tools' options that are text- and subword-stage fields: (command, section, field, the command's further
#: names for it: ``bpe learn`` keeps subword-nmt's ``-s``/``--symbols``)
LINE_TOOL_FIELDS = [
    (tokenize_cmd, TextConfig, "lowercase", ()),
    (tokenize_cmd, TextConfig, "fairseq_compat", ()),
    (tokenize_cmd, TextConfig, "tokenizer", ()),
    (clean_cmd, TextConfig, "ratio", ()),
    (clean_cmd, TextConfig, "min_len", ()),
    (clean_cmd, TextConfig, "max_len", ()),
    (bpe_learn_cmd, SubwordConfig, "merges", ("-s", "--symbols")),
    (spm_learn_cmd, SubwordConfig, "vocab_size", ()),
]


@pytest.mark.parametrize(("cmd", "section", "name", "aliases"), LINE_TOOL_FIELDS,
                         ids=[f"{c.name}-{n}" for c, _, n, _ in LINE_TOOL_FIELDS])
def test_a_line_tools_option_is_its_fields(cmd, section, name, aliases):
    # the same help, click type (bounds), default and names as pipeline's option of the field, plus the aliases
    expected = field_option(next(f for f in dataclasses.fields(section) if f.name == name))
    param = next(p for p in cmd.params if p.name == expected.name)
    assert (param.help, repr(param.type), param.default, param.secondary_opts) == \
        (expected.help, repr(expected.type), expected.default, expected.secondary_opts)
    assert sorted(param.opts) == sorted([*expected.opts, *aliases])
    pipeline_param = next(p for p in pipeline_cmd.params if p.name == expected.name)
    assert (pipeline_param.help, pipeline_param.default) == (param.help, param.default)


def test_bpe_learn_takes_its_merges_by_every_name_and_refuses_what_the_field_refuses(tmp_path):
    text = tmp_path / "train.txt"
    text.write_text("the river runs by the other river\n" * 5, encoding="utf-8")
    codes = []
    for flag in ("-s", "--symbols", "--merges"):
        result = run_cli("bpe", "learn", str(text), flag, "2", "-o", str(tmp_path / f"codes{flag}"))
        codes.append((tmp_path / f"codes{flag}").read_text(encoding="utf-8"))
        assert "subword-nmt" in result.stderr
    assert codes[0] == codes[1] == codes[2] and len(codes[0].splitlines()) == 3  # version line + 2 merges
    refused = run_cli("bpe", "learn", str(text), "-s", "0", check=False)
    assert refused.returncode == 2 and "0 is not in the range x>=1" in refused.stderr
