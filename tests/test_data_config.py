"""``DataConfig`` is the input: one ``migrate()`` step per old format version, a later
split inherits every field of its folder (parser options included), a different value is refused naming
the field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from synprep.config import CONFIG_FORMAT, CONFIG_VERSION, FLAT, MIGRATIONS, DataConfig, differences, migrate
from synprep.errors import ConfigError

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SAMPLE = ROOT / "sample_data"

#: today's configuration of the folders below (what every old version must migrate to)
TODAY = DataConfig.of(src_lang="de", tgt_lang="en", lowercase=True, merges=1000, stanza_package="synprep",
                   batch_size=16, shard_size=50)
#: one saved configuration per old version, as that version wrote it for TODAY's settings
OLD = {
    # version 1: no format, the manifest's config layout (the parser's settings nested, the tokenizer's name)
    1: {"fairseq_compat": False, "ldd_threshold": 0.01, "lowercase": True, "merges": 1000, "mode": "pipeline",
        "parser": {"batch_size": 16, "constituency": True, "identity": "stanza-1.15.0/de/synprep/abc", "lang": "de",
                   "ldd_threshold": 0.01, "max_words": 250, "name": "stanza", "package": "synprep", "ssplit": True},
        "shard_size": 50, "src_lang": "de", "tgt_lang": "en", "tokenizer": "sacremoses-0.2.0"},
    # version 2: today's layout without the device (made on the CPU)
    2: {"format": CONFIG_FORMAT, "version": 2, "mode": "pipeline", "src_lang": "de", "tgt_lang": "en",
        "tokenized": False, "lowercase": True, "fairseq_compat": False, "merges": 1000, "subword": "bpe",
        "vocab_size": 8000, "ratio": 1.5, "min_len": 1, "max_len": 175, "parser": "stanza",
        "stanza_package": "synprep", "ssplit": True, "max_words": 250, "batch_size": 16, "ldd_threshold": 0.01,
        "shard_size": 50},
}


def test_every_old_version_has_a_sample_and_a_step():
    assert set(OLD) == set(MIGRATIONS) == set(range(1, CONFIG_VERSION))


@pytest.mark.parametrize("version", sorted(OLD))
def test_migrate_an_old_version_gives_todays_configuration(version, tmp_path):
    d = migrate(json.loads(json.dumps(OLD[version])))
    assert d["version"] == CONFIG_VERSION and d["format"] == CONFIG_FORMAT  # every step applied
    assert DataConfig.from_dict(d).to_json() == TODAY.to_json()  # saved again: today's bytes
    path = tmp_path / "pipeline.json"
    path.write_text(json.dumps(OLD[version]))
    assert DataConfig.load(path) == TODAY


def test_migrate_refuses_other_formats_and_versions():
    with pytest.raises(ConfigError, match="newer than this synprep reads"):
        migrate({"format": CONFIG_FORMAT, "version": CONFIG_VERSION + 1})
    with pytest.raises(ConfigError, match="is not a version"):
        migrate({"format": CONFIG_FORMAT, "version": 0})
    with pytest.raises(ConfigError, match="not a synprep data configuration"):
        migrate({"format": "other"})
    assert migrate({"merges": 5}) == {"merges": 5}  # a hand-written partial configuration is this version's


def test_parser_options_are_saved_only_when_given():
    cfg = DataConfig.of(src_lang="de", tgt_lang="en", parser="toy", parser_options=(("toy_label", "obj"),))
    d = cfg.to_dict()
    assert d["parser_options"] == {"toy_label": "obj"} and d["version"] == CONFIG_VERSION
    assert DataConfig.from_dict(d) == cfg
    assert "parser_options" not in DataConfig.of(src_lang="de", tgt_lang="en").to_dict()  # earlier folders' bytes
    with pytest.raises(ConfigError, match="not an option of --parser stanza"):
        DataConfig.of(parser_options=(("toy_label", "obj"),))


# --- a later split inherits every field, a different value is refused naming it --------------------------

#: a value other than the default for every field a command-line option sets (a new field fails
#: test_every_field_has_another_value until it is given one here)
OTHER: dict[str, object] = {
    "src_lang": "fr", "tgt_lang": "it", "tokenized": True, "lowercase": True, "fairseq_compat": True, "merges": 123,
    "subword": "spm", "vocab_size": 321, "ratio": 2.5, "min_len": 2, "max_len": 99, "parser": "corenlp",
    "stanza_package": "gsd", "tokenizer": "parser", "spacy_model": "ja_ginza", "label_map": "map.tsv",
    "parser_options": (("stanza_extra", 2),), "device": "cuda", "ssplit": False, "max_words": 77, "batch_size": 7,
    "ldd_threshold": 0.2, "shard_size": 33, "vocab_split": "valid", "language_check": False,
}
FIELDS = [name for name in FLAT if name != "mode"]  # by saved name; mode: the command's


def test_every_field_has_another_value():
    assert sorted(OTHER) == sorted(FIELDS)


def test_the_configuration_is_nested_in_typed_sections_and_saved_flat():
    from synprep.config import ParseConfig, ShardConfig, SubwordConfig, TextConfig

    cfg = DataConfig.of(**{**OTHER, "parser": "stanza"})  # every field at another value
    assert (type(cfg.text), type(cfg.subword), type(cfg.parse), type(cfg.shards)) == (
        TextConfig, SubwordConfig, ParseConfig, ShardConfig)
    assert (cfg.text.tokenizer, cfg.subword.scheme, cfg.parse.batch_size, cfg.parse.parser_options,
            cfg.shards.vocab_split) == ("parser", "spm", 7, (("stanza_extra", 2),), "valid")
    d = cfg.to_dict()  # flat: one key per field, by the names pipeline.json has always had
    assert set(d) == set(FLAT) | {"format", "version"} and not {"text", "parse", "shards"} & set(d)
    assert (d["subword"], d["batch_size"], d["parser_options"]) == ("spm", 7, {"stanza_extra": 2})
    assert DataConfig.from_dict(json.loads(cfg.to_json())) == cfg
    assert cfg.replace(parse=ParseConfig(batch_size=8)).parse == ParseConfig(batch_size=8)  # a whole section
    assert cfg.replace(subword="bpe").subword == SubwordConfig(merges=123, scheme="bpe", vocab_size=321)
    with pytest.raises(ConfigError, match="batch_size must be >= 1, got 0"):  # named as the user sees it
        DataConfig.of(batch_size=0)
    with pytest.raises(ConfigError, match="unknown field.s. text"):
        DataConfig.of(text={"lowercase": True})


def _resolve(out: Path, args: list[str]) -> DataConfig:
    """The configuration ``synprep pipeline ARGS --out OUT`` resolves (the CLI's one place that builds it)."""
    from synprep.cli.pipeline import pipeline_cmd, resolve_config

    ctx = pipeline_cmd.make_context("pipeline", ["--tgt", "t.en", "--out", str(out), *args])
    with ctx:
        return resolve_config("pipeline", str(out), None, ctx.params)


@pytest.mark.parametrize("field", FIELDS)
def test_a_later_split_inherits_every_field_of_its_folder(field, tmp_path):
    value = OTHER[field]
    parser = "stanza" if field == "parser_options" else None  # the option belongs to the folder's parser
    folder = DataConfig.of(src_lang="de", tgt_lang="en").replace(**{field: value}, **({"parser": parser} if parser else {}))
    out = tmp_path / "out"
    out.mkdir()
    (out / "pipeline.json").write_text(folder.to_json())
    cfg = _resolve(out, ["--split", "valid"])  # names none of the folder's settings
    assert cfg.flat()[field] == value
    assert differences(DataConfig.load(out / "pipeline.json"), cfg) == []


@pytest.mark.parametrize("field", FIELDS)
def test_a_different_value_is_refused_naming_the_field(field):
    run = DataConfig.of(src_lang="de", tgt_lang="en")  # each field left at its default ...
    folder = run.replace(**{field: OTHER[field]})  # ... where the folder has another value
    name = "parser_options.stanza_extra" if field == "parser_options" else field
    assert [d.split(": the folder has ")[0] for d in differences(folder, run)] == [name]


# --- the toy backend's option through real runs (tests/toy_parser.py) ---------------------------------------

TOY = """
import sys
from synprep.parse.registry import PARSER_BACKENDS
PARSER_BACKENDS.register("toy", "toy_parser:ToyParser")
from synprep.cli import main
main(sys.argv[1:])
"""


def _synprep_with_toy(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)])}
    return subprocess.run([sys.executable, "-c", TOY, *args], capture_output=True, text=True, env=env)


def test_a_later_split_inherits_the_parser_option_and_refuses_another_naming_it(tmp_path):
    from synprep.shards import open_split

    out = tmp_path / "out"
    for split in ("train", "valid", "test"):
        for lang in ("de", "en"):
            (tmp_path / f"{split}.{lang}").write_text(
                "".join((SAMPLE / f"train.{lang}").read_text().splitlines(keepends=True)[:8]))

    def run(split: str, *extra: str) -> subprocess.CompletedProcess:
        return _synprep_with_toy("pipeline", "--src", str(tmp_path / f"{split}.de"), "--tgt",
                                 str(tmp_path / f"{split}.en"), "--out", str(out), "--split", split, "--no-cache",
                                 *extra)

    proc = run("train", "-s", "de", "-t", "en", "--merges", "50", "--parser", "toy", "--toy-label", "obj")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "pipeline.json").read_text())["parser_options"] == {"toy_label": "obj"}
    proc = run("valid")  # neither the parser nor its option named: both the folder's
    assert proc.returncode == 0, proc.stderr
    obj = __import__("synprep.types", fromlist=["DEPRELS"]).DEPRELS.index("obj")
    assert any((r.deprel == obj).any() for shard in open_split(out, "valid") for r in shard)
    proc = run("test", "--toy-label", "nsubj")
    assert proc.returncode == 2, proc.stderr
    assert 'parser_options.toy_label: the folder has "obj", this run "nsubj"' in proc.stderr
    assert not list(out.glob("test.*.h5")) and not (out / "text" / "test.tok.de").exists()


def test_a_new_default_folder_keeps_the_pipeline_json_bytes_of_earlier_versions():
    """Version 3 as synprep wrote it before the configuration became the input: no new key, same bytes."""
    assert DataConfig.of(src_lang="de", tgt_lang="en").to_json() == (
        '{\n  "batch_size": 64,\n  "device": "cpu",\n  "fairseq_compat": false,\n  "format": "synprep-data-config",\n'
        '  "ldd_threshold": 0.01,\n  "lowercase": false,\n  "max_len": 175,\n  "max_words": 250,\n  "merges": 10000,\n'
        '  "min_len": 1,\n  "mode": "pipeline",\n  "parser": "stanza",\n  "ratio": 1.5,\n  "shard_size": 10000,\n'
        '  "src_lang": "de",\n  "ssplit": true,\n  "stanza_package": null,\n  "subword": "bpe",\n  "tgt_lang": "en",\n'
        '  "tokenized": false,\n  "version": 3,\n  "vocab_size": 8000\n}\n')
