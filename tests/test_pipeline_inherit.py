"""A later split inherits every parser setting of its folder: ``--spacy-model``,
``--label-map`` and ``--tokenizer parser`` as ``--stanza-package`` already was."""

from __future__ import annotations

import json

import pytest
from builders import write_pair
from helpers import run_cli

from synprep.config import DataConfig, differences
from synprep.errors import ConfigError

JA = ["今日は良い天気です。", "私は東京に住んでいます。", "猫が好きです。", "明日は雨が降るでしょう。"]


def test_a_later_split_inherits_spacy_model_and_parser_tokenizer(tmp_path):
    from synprep.shards import open_split

    out = tmp_path / "out"
    src, tgt = write_pair(tmp_path, "train", "ja", "en", JA)
    run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "ja", "-t", "en", "--out", str(out),
            "--parser", "spacy", "--spacy-model", "ja_ginza", "--tokenizer", "parser", "--no-clean", "--merges", "30",
            "--no-cache")
    saved = json.loads((out / "pipeline.json").read_text())
    assert (saved["parser"], saved["spacy_model"], saved["tokenizer"]) == ("spacy", "ja_ginza", "parser")
    assert "label_map" not in saved  # left out while unset, as in every folder made before
    # the later split names neither the model nor the tokenizer: both come from the folder
    vsrc, vtgt = write_pair(tmp_path, "valid", "ja", "en", JA[::-1])
    proc = run_cli("pipeline", "--src", str(vsrc), "--tgt", str(vtgt), "--out", str(out), "--split", "valid",
                   "--no-cache", check=False)
    assert proc.returncode == 0, proc.stderr
    train_sig = open_split(out, "train")[0].attrs["signature"]
    assert open_split(out, "valid")[0].attrs["signature"] == train_sig and "ja_ginza" in train_sig
    tok = (out / "text" / "valid.tok.ja").read_text(encoding="utf-8").splitlines()
    assert ["".join(t.split()) for t in tok] == JA[::-1]  # GiNZA's words, every character
    assert len(tok[0].split()) > 1  # split into words (Moses would leave a Japanese line whole)


def test_a_different_value_is_refused_naming_the_field():
    old = DataConfig.of(src_lang="ja", tgt_lang="en", parser="spacy", spacy_model="ja_ginza", tokenizer="parser")
    assert differences(old, old.replace(spacy_model="other")) == [
        'spacy_model: the folder has "ja_ginza", this run "other"']
    assert differences(old, old.replace(tokenizer="moses")) == ['tokenizer: the folder has "parser", this run "moses"']
    # a folder made before the fields existed recorded none of them: they are not compared there
    before = DataConfig.from_dict({k: v for k, v in DataConfig.of(src_lang="de", tgt_lang="en").to_dict().items()})
    assert differences(before, before.replace(tokenizer="parser")) == []
    with pytest.raises(ConfigError, match="tokenizer must be one of moses, parser"):
        DataConfig.of(tokenizer="spacy")


def test_default_folders_keep_their_pipeline_json():
    d = DataConfig.of(src_lang="de", tgt_lang="en").to_dict()
    assert not {"tokenizer", "spacy_model", "label_map"} & set(d)
    assert DataConfig.from_dict(d) == DataConfig.of(src_lang="de", tgt_lang="en")
