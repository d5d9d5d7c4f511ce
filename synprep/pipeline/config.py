"""The data side's one configuration: every setting that determines an output folder, and its default.

:class:`DataConfig` is to ``synprep pipeline`` / ``annotate`` what :class:`synprep.train.config.TrainConfig`
is to the trainer: the one input of :func:`synprep.pipeline.run_pipeline` and
:func:`synprep.pipeline.run_annotate`. It composes the sections each stage owns, in the stage's package: the text
stage's settings (:class:`synprep.text.config.TextConfig`), the subword scheme's
(:class:`synprep.subword.config.SubwordConfig`), the parser's with its backend's options
(:class:`synprep.parse.config.ParseConfig`) and the shards' (:class:`synprep.shards.config.ShardConfig`); its saved form is flat (one key per field, as every earlier
version wrote it), mapped to the sections in one place (:data:`FLAT`). Its defaults are the stages' own
(:mod:`synprep.defaults`, which the stage modules read: they never import this module). The command line reads its options into it through
the fields' metadata (:func:`option_fields`); the text stage's options, the parse stage's options and the
parser's :class:`~synprep.parse.base.ParserSpec`, ``OUT/pipeline.json``, the manifest's guard and the
shards' ``config`` are views of it, read here (:func:`parse_options`, :func:`recorded`, :func:`guard`,
:func:`shard_config`). A saved configuration of an older format version is read through one :data:`MIGRATIONS` step per version (:func:`migrate`).

A folder's configuration is saved as ``OUT/pipeline.json`` (:meth:`DataConfig.to_json`). A later
run into the folder (the next split, or a resume) starts from it: an option that is not given is
inherited (``--split valid`` needs no ``--merges``), an option given with another value is refused
naming the field (:func:`differences`). ``synprep pipeline --config FILE`` starts from FILE
instead (a saved ``OUT/pipeline.json``, or a JSON object of some of the fields below).

What is *not* here never changes the output: where the work runs (``-j``, ``--backend``), the
stanza resource directory, the device, the parse cache; and what is given per split (the input
files, ``--split``, ``--clean/--no-clean``, ``--codes``, ``--vocab``, ``--conllu``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synprep.errors import ConfigError, InputError
from synprep.parse.config import ParseConfig, spec_fields
from synprep.parse.options import ParseOptions, Runtime
from synprep.parse.registry import parse_source_class
from synprep.settings import option
from synprep.shards.config import ShardConfig
from synprep.subword.config import SubwordConfig
from synprep.text.config import TextConfig

#: the ``format`` of a saved configuration (``OUT/pipeline.json``); version 1 is the earlier
#: layout without it (read by :meth:`DataConfig.from_dict`)
CONFIG_FORMAT = "synprep-data-config"
CONFIG_VERSION = 3  # 3: the parse's device kind (``device``); absent in 2 = cpu (:data:`MIGRATIONS`)
MODES = ("pipeline", "annotate")


#: the configuration's sections: attribute of :class:`DataConfig` → its type
SECTIONS = {"text": TextConfig, "subword": SubwordConfig, "parse": ParseConfig, "shards": ShardConfig}


@dataclass(frozen=True)
class DataConfig:
    """Every setting that determines a data folder (defaults: fairseq's IWSLT14 recipe, SPEC.md §1), in
    sections: ``text`` (:class:`TextConfig`), ``subword`` (:class:`SubwordConfig`), ``parse``
    (:class:`ParseConfig`, the backend's options included) and ``shards`` (:class:`ShardConfig`). Where
    the work runs (``-j``, the cache, the device's runtime options) is not here:
    :class:`synprep.parse.options.Runtime`.

    Attributes:
        mode: ``pipeline`` (raw or tokenized text) or ``annotate`` (BPE'd text).
        src_lang: the source language code (the source side is parsed).
        tgt_lang: the target language code; may equal ``src_lang``.

    The saved form (``pipeline.json``, :meth:`to_dict`) is flat: one key per field, named as the
    field (or by its metadata ``saved``: ``subword.scheme`` is ``subword``), as earlier versions wrote
    it; :data:`FLAT` maps each saved name to its section, the one place the two forms meet. The flat
    names are also the command line's and the refusals' (:func:`differences`); :meth:`of` and
    :meth:`replace` take them. A field's metadata is its command-line schema (:func:`option_fields`):
    ``param``, the click parameter that sets it (default: the saved name; None: no option);
    ``negated``, a flag that sets it to False; ``spec``, the :class:`~synprep.parse.base.ParserSpec`
    field it is; ``optional``, added within version 3: saved only when it is not at its default
    (:data:`OMIT_DEFAULT`).
    """

    mode: str = field(default="pipeline", metadata={"param": None})  # the command, not an option
    src_lang: str = field(default="", metadata=option("Source language (parsed).", short="s", flag="source-lang",
                                                      metavar="LANG"))
    tgt_lang: str = field(default="", metadata=option("Target language.", short="t", flag="target-lang",
                                                      metavar="LANG"))
    text: TextConfig = field(default_factory=TextConfig)
    subword: SubwordConfig = field(default_factory=SubwordConfig)
    parse: ParseConfig = field(default_factory=ParseConfig)
    shards: ShardConfig = field(default_factory=ShardConfig)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        for name, kind in SECTIONS.items():
            if not isinstance(getattr(self, name), kind):
                raise ConfigError(f"{name} must be a {kind.__name__}, got {getattr(self, name)!r}")

    # --- the flat form: the saved names ------------------------------------------------------------

    @classmethod
    def of(cls, **flat: Any) -> DataConfig:
        """The configuration of these fields by their flat (saved) names, the others at their defaults:
        ``DataConfig.of(src_lang="de", tgt_lang="en", batch_size=16)``.

        Raises:
            ConfigError: an unknown name or a bad value.
        """
        return cls().replace(**flat)

    def replace(self, **changes: Any) -> DataConfig:
        """A copy with ``changes``, by flat (saved) name (``batch_size=16``) or by section
        (``parse=ParseConfig(...)``). ``subword`` is both: a :class:`SubwordConfig` replaces the section, a
        string its scheme (the saved field ``subword``).

        Raises:
            ConfigError: an unknown name or a bad value.
        """
        top = {k: changes.pop(k) for k in list(changes)
               if k in _TOP and (k not in SECTIONS or isinstance(changes[k], SECTIONS[k]))}
        unknown = sorted(set(changes) - set(FLAT))
        if unknown:
            raise ConfigError(f"unknown field(s) {', '.join(unknown)} (known: {', '.join(FLAT)})")
        for section in SECTIONS:
            mine = {FLAT[k][1]: v for k, v in changes.items() if FLAT[k][0] == section}
            if mine:
                top[section] = dataclasses.replace(top.get(section, getattr(self, section)), **mine)
        return dataclasses.replace(self, **top)

    def flat(self) -> dict[str, Any]:
        """Every field by its flat (saved) name, as Python values (``parser_options`` a tuple)."""
        return {name: getattr(getattr(self, section), attr) if section else getattr(self, attr)
                for name, (section, attr) in FLAT.items()}

    # --- reading and writing ------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The saved fields, flat; those of :data:`OMIT_DEFAULT` only when set (earlier folders' files are
        unchanged)."""
        d = {k: v for k, v in self.flat().items() if k not in OMIT_DEFAULT or v != OMIT_DEFAULT[k]}
        if "parser_options" in d:
            d["parser_options"] = dict(self.parse.parser_options)
        return {"format": CONFIG_FORMAT, "version": CONFIG_VERSION, **d}

    def to_json(self) -> str:
        """The ``OUT/pipeline.json`` text (sorted keys, one field per line)."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "configuration") -> DataConfig:
        """Read a saved configuration: this version's, the earlier ``pipeline.json`` layout, or a
        partial object (the fields it leaves out keep their defaults).

        Raises:
            ConfigError: an unknown field, a value of the wrong type, another format or a newer version.
        """
        d = migrate(d, where)
        values = {k: v for k, v in d.items() if k not in ("format", "version")}
        unknown = sorted(set(values) - set(FLAT))
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(FLAT)})")
        defaults = cls().flat()
        for k, v in values.items():
            default = defaults[k]
            if k in ("stanza_package", "spacy_model", "label_map"):
                ok = v is None or isinstance(v, str)
            elif k == "parser_options":
                ok = isinstance(v, dict) and all(isinstance(x, str | int | float | bool) for x in v.values())
                values[k] = tuple(sorted(v.items())) if ok else v
            elif isinstance(default, bool):
                ok = isinstance(v, bool)
            elif isinstance(default, int):
                ok = isinstance(v, int) and not isinstance(v, bool)
            elif isinstance(default, float):
                ok = isinstance(v, int | float) and not isinstance(v, bool)
                values[k] = float(v)
            else:
                ok = isinstance(v, str)
            if not ok:
                raise ConfigError(f"{where}: {k} must be of the type of its default {default!r}, got {v!r}")
        return cls.of(**values)

    @classmethod
    def load(cls, path: str | Path) -> DataConfig:
        """Read ``path`` (``OUT/pipeline.json`` or a hand-written JSON object).

        Raises:
            InputError: missing or not JSON.
            ConfigError: see :meth:`from_dict`.
        """
        p = Path(path)
        try:
            d = json.loads(p.read_text(encoding="utf-8-sig"))
        except FileNotFoundError:
            raise InputError("no such file", str(p)) from None
        except IsADirectoryError:
            raise InputError("is a directory, not a configuration file", str(p)) from None
        except (ValueError, UnicodeDecodeError) as e:
            raise InputError(f"not JSON: {e}", str(p)) from None
        if not isinstance(d, dict):
            raise InputError("not a JSON object", str(p))
        return cls.from_dict(d, str(p))


def _flat_fields() -> dict[str, tuple[str | None, dataclasses.Field]]:
    """Saved name → (section or None for a top-level field, the dataclass field): the one flat↔nested map."""
    out: dict[str, tuple[str | None, dataclasses.Field]] = {}
    for f in dataclasses.fields(DataConfig):
        if f.name in SECTIONS:
            out.update({g.metadata.get("saved", g.name): (f.name, g) for g in dataclasses.fields(SECTIONS[f.name])})
        else:
            out[f.name] = (None, f)
    return out


_FIELDS = _flat_fields()
#: the saved (flat) name of every field → (its section, or None for a top-level field; its attribute there):
#: ``batch_size`` → ``("parse", "batch_size")``, ``subword`` → ``("subword", "scheme")``
FLAT = {name: (section, f.name) for name, (section, f) in _FIELDS.items()}
#: the top-level attributes of :class:`DataConfig` (fields and sections)
_TOP = {f.name for f in dataclasses.fields(DataConfig)}
#: the defaults, for the command-line options and the library's keyword arguments
DEFAULTS = DataConfig()
#: the fields added within version 3 (metadata ``optional``), by saved name: saved only when not at their
#: default, so the ``pipeline.json`` of a folder made before each existed keeps its bytes
OMIT_DEFAULT = {name: f.default for name, (_, f) in _FIELDS.items() if f.metadata.get("optional")}


def option_fields() -> list[tuple[str, str, bool]]:
    """``(click parameter, saved field name, negated)`` for every field a command-line option sets (the
    fields' metadata, :class:`DataConfig`): what ``synprep pipeline``/``annotate`` read into the
    configuration (:meth:`DataConfig.replace` takes them)."""
    return [(f.metadata.get("param", name), name, bool(f.metadata.get("negated")))
            for name, (_, f) in _FIELDS.items() if f.metadata.get("param", name) is not None]


# --- older formats: one step per version ---------------------------------------------------------------


def _v1_to_v2(d: dict[str, Any]) -> dict[str, Any]:
    """Version 1 (no ``format``: the manifest's ``config`` layout, the parser's settings nested)."""
    return {"format": CONFIG_FORMAT, "version": 2, **_from_v1(d)}


def _v2_to_v3(d: dict[str, Any]) -> dict[str, Any]:
    """Version 2 has no ``device``: its folders were made on the CPU (the field's default)."""
    return {**d, "version": 3}


#: version → the function that reads a configuration of that version as the next one
MIGRATIONS = {1: _v1_to_v2, 2: _v2_to_v3}


def migrate(d: dict[str, Any], where: str = "configuration") -> dict[str, Any]:
    """A saved configuration of any version, as this version's dictionary (one :data:`MIGRATIONS` step
    per version). A JSON object without ``format`` and ``version`` is this version's (a hand-written
    partial configuration) unless it has the version-1 layout (a ``parser`` object).

    Raises:
        ConfigError: another format, or a version newer than :data:`CONFIG_VERSION`.
    """
    if d.get("format", CONFIG_FORMAT) != CONFIG_FORMAT:
        raise ConfigError(f"{where}: format {d.get('format')!r} is not a synprep data configuration")
    version = 1 if "format" not in d and isinstance(d.get("parser"), dict) else d.get("version", CONFIG_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ConfigError(f"{where}: configuration version {version!r} is not a version (1..{CONFIG_VERSION})")
    if version > CONFIG_VERSION:
        raise ConfigError(f"{where}: configuration version {version!r} is newer than this synprep reads "
                          f"({CONFIG_VERSION}): update synprep")
    while version < CONFIG_VERSION:
        d = MIGRATIONS[version](d)
        version = d["version"]
    return d


def _from_v1(d: dict[str, Any]) -> dict[str, Any]:
    """The fields of an earlier ``pipeline.json`` (the manifest's ``config`` layout, no ``format``)."""
    parser = d["parser"]
    out: dict[str, Any] = {
        "mode": d.get("mode", "pipeline"), "src_lang": d.get("src_lang", ""), "tgt_lang": d.get("tgt_lang", ""),
        "lowercase": bool(d.get("lowercase", False)), "fairseq_compat": bool(d.get("fairseq_compat", False)),
        "parser": parser.get("name", "stanza"), "ssplit": bool(parser.get("ssplit", True)),
    }
    if d.get("tokenizer") == "given" and out["mode"] == "pipeline":
        out["tokenized"] = True
    for key in ("merges", "ldd_threshold", "shard_size", "subword", "vocab_size"):
        if key in d:
            out[key] = d[key]
    for key, name in (("package", "stanza_package"), ("max_words", "max_words"), ("batch_size", "batch_size")):
        if key in parser:
            out[name] = parser[key]
    return out


def differences(old: DataConfig, new: DataConfig) -> list[str]:
    """``field: the folder has X, this run Y`` for every field that differs (a parser option by its own name,
    ``parser_options.toy_label``). A field of :data:`OMIT_DEFAULT` that the folder has at its default is not
    compared: a folder made before the field existed did not record it (the manifest's guard still
    compares what its shards were made with); ``parser_options`` always is (it holds only values that
    differ from their defaults, so an empty one is a setting too)."""
    out = []
    flat_old, flat_new = old.flat(), new.flat()
    for name in FLAT:
        a, b = flat_old[name], flat_new[name]
        if a == b or (name in OMIT_DEFAULT and a == OMIT_DEFAULT[name] and name != "parser_options"):
            continue  # parser_options holds the values that differ from the backend's defaults: () is all of them
        if name == "parser_options":
            da, db = dict(a), dict(b)
            out += [f"parser_options.{k}: the folder has {json.dumps(da.get(k))}, this run {json.dumps(db.get(k))}"
                    for k in sorted(set(da) | set(db)) if da.get(k) != db.get(k)]
        else:
            out.append(f"{name}: the folder has {json.dumps(a)}, this run {json.dumps(b)}")
    return out


# --- the run's views: what the parse stage reads, and the forms the folder saves --------------------------
# ``OUT/pipeline.json`` (:func:`recorded`), the manifest's guard (:func:`guard`) and the shards' ``config``
# (:func:`shard_config`) keep the layouts earlier versions wrote (a field added later appears only when it is
# set), so folders made then resume and read unchanged.


#: the configuration's fields that only the text stage of ``synprep pipeline`` reads (annotate has none:
#: its folders record their defaults): the text section's but lowercase and the language check, and the
#: subword section's, by saved name
TEXT_FIELDS = tuple([f.name for f in dataclasses.fields(TextConfig) if f.name not in ("lowercase", "language_check")]
                    + [f.metadata.get("saved", f.name) for f in dataclasses.fields(SubwordConfig)])


def parse_options(config: DataConfig, runtime: Runtime, trees: str | None = None) -> ParseOptions:
    """The parse stage's run of ``config`` (:meth:`ParseOptions.of <synprep.parse.options.ParseOptions.of>`:
    its parse section whole, the source language, the text stage's lowercasing).

    Args:
        trees: the user's trees file (``--trees``): the parser's constituency model is then not run.

    Raises:
        ConfigError: an option the chosen backend does not read (:class:`~synprep.parse.base.ParserSpec`).
    """
    return ParseOptions.of(config.parse, config.src_lang, runtime, trees=trees, lowercase=config.text.lowercase)


def recorded(config: DataConfig, runs_parser: bool) -> DataConfig:
    """``OUT/pipeline.json``: ``config`` with the fields its command does not read at their defaults (an
    ``annotate`` folder has no text stage: :data:`TEXT_FIELDS`; imported parses have no parser settings:
    the device, the backend's options), as earlier versions recorded them."""
    unread = set(TEXT_FIELDS) if config.mode == "annotate" else set()
    if not runs_parser:
        unread |= {"device", "parser_options", *spec_fields().values()}
    defaults = DataConfig().flat()
    return config.replace(**{name: defaults[name] for name in unread})


def guard(config: DataConfig, parse: ParseOptions, *, tok: str | None = None, scheme: Any = None,
          parse_src: bool = False) -> dict[str, Any]:
    """The manifest's ``config``: what every split of the folder shares (checked by
    :func:`synprep.pipeline.record.manifest_for`), in the layout earlier versions wrote.

    Args:
        tok: ``synprep pipeline``: the tokenizer's signature name (``sacremoses-0.2.0``, ``given``).
        scheme: ``synprep pipeline``: the subword scheme class.
        parse_src: ``annotate --parse-src``.
    """
    shared: dict[str, Any] = {"mode": config.mode, "src_lang": config.src_lang, "tgt_lang": config.tgt_lang}
    if config.mode == "pipeline":
        shared.update({"tokenizer": tok, "lowercase": config.text.lowercase,
                       "fairseq_compat": config.text.fairseq_compat, "merges": config.subword.merges})
    shared.update({"parser": parse.to_dict(), "ldd_threshold": config.parse.ldd_threshold,
                   "shard_size": config.shards.shard_size})
    if scheme is not None and scheme.reads_raw:  # only then: folders made before schemes existed keep theirs
        del shared["merges"]
        shared["subword"] = scheme.name
        if scheme.size_option is not None:
            shared["vocab_size"] = config.subword.vocab_size
    if config.mode == "annotate" and config.text.lowercase:  # only when set: older folders keep their configuration
        shared["lowercase"] = True
    if parse_src:  # the same: every split of the folder then gives the parser's words
        shared["parse_src"] = True
    # as the manifest reads back (JSON: a backend's plugin_options tuple is a list there), so that a later
    # split compares equal values as equal
    return dict(json.loads(json.dumps(shared)))


def shard_config(shared: dict[str, Any], config: DataConfig, split: str, *, vocab_sha256: str,
                 input_sha: dict[str, str], facts: dict[str, Any] | None = None) -> dict[str, Any]:
    """The shards' ``config`` attribute (stored as sorted JSON): the folder's guard, the split, ``facts``
    (``synprep pipeline``: the subword model's digests and the cleaning, what the split's run found), its
    inputs' digests (``annotate``: the source's; both: CoNLL-U, trees, ``--parse-src``), and
    ``language_check`` / ``src_tokens`` only when not at their defaults."""
    digests = {f"{role}_sha256": digest for role, digest in input_sha.items()
               if role not in ("src", "tgt") or (role == "src" and config.mode == "annotate")}
    out: dict[str, Any] = {**shared, "split": split, **(facts or {}), "vocab_sha256": vocab_sha256, **digests}
    if config.mode == "pipeline" and not parse_runs(config):
        out["src_tokens"] = "conllu"
    if not config.text.language_check:
        out["language_check"] = False
    return out


def parse_runs(config: DataConfig) -> bool:
    """Whether the configuration's parser runs (False: the parses are imported)."""
    return bool(parse_source_class(config.parse.parser).runs_parser)
