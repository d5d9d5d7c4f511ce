"""The views of a run's one configuration (:class:`synprep.pipeline.config.DataConfig`): what each stage reads, and
what the folder records.

A run is given one :class:`~synprep.pipeline.config.DataConfig` (every setting that determines the folder) and
one :class:`Runtime` (where the work runs; never part of the output). Everything else is read from
them here, never rebuilt by hand elsewhere:

* :func:`text_options`: the text stage's :class:`TextOptions`;
* :func:`parse_options`: the parse stage's :class:`~synprep.parse.options.ParseOptions` and the
  parser's :class:`~synprep.parse.base.ParserSpec` (the backend's options included);
* :func:`recorded`: ``OUT/pipeline.json`` (the fields a run of the command can set);
* :func:`guard`: the manifest's ``config`` (what every split of the folder must share);
* :func:`shard_config`: the shards' ``config`` attribute (the guard plus the split's own facts).

The manifest's guard and the shards' ``config`` keep the layouts earlier versions wrote (a field
added later appears only when it is set), so folders made then resume and read unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from synprep.errors import ConfigError
from synprep.parse.options import Parallel, ParseOptions
from synprep.pipeline.config import DEFAULTS, DataConfig, spec_fields


@dataclass
class Runtime:
    """Where and how the work runs: never part of the output, so not in the configuration.

    Attributes:
        par: the workers (``-j``, ``--backend``, ``--scheduler``).
        cache: the parse cache file, or None for no cache (``--cache``, ``--no-cache``).
        parser: the parser backend's runtime options, by :class:`~synprep.parse.base.ParserSpec` field
            (those declared ``runtime``: ``dir`` (``--stanza-dir``), ``corenlp_endpoint``, ``timeout``).

    Raises:
        ConfigError: a ``parser`` key that is not a runtime field of the parser specification.
    """

    par: Parallel = field(default_factory=Parallel)
    cache: str | None = None
    parser: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from synprep.parse.base import ParserSpec

        runtime = {f.name for f in dataclasses.fields(ParserSpec) if f.metadata.get("runtime")}
        unknown = sorted(set(self.parser) - runtime)
        if unknown:
            raise ConfigError(f"Runtime.parser: {', '.join(unknown)} (not a runtime setting of the parser; "
                              f"known: {', '.join(sorted(runtime))}; the others are DataConfig fields)")


@dataclass
class TextOptions:
    """The text stage's settings (:func:`text_options`: the configuration's fields of the same names).

    Attributes:
        tokenized: the input is already Moses-tokenized and escaped (``pipeline --tokenized``): it
            is used as it is (escapes kept for BPE and the shards; the parser sees the unescaped words).
        lowercase: lowercase after tokenizing (the parser still sees the cased words).
        fairseq_compat: the old perl tokenizer's final-period rule (``synprep tokenize --fairseq-compat``).
        clean: clean this split (None: the train split only, as fairseq's recipes do; other splits
            only lose pairs with an empty side). The one setting given per split.
        ratio: clean-corpus-n.perl bounds.
        min_len: clean-corpus-n.perl bounds.
        max_len: clean-corpus-n.perl bounds.
        merges: BPE merge operations when the codes are learned (``--subword bpe``).
        subword: the subword scheme (:data:`synprep.subword.SCHEMES`): ``bpe`` segments the
            tokenized text; ``spm``/``hf`` segment the raw text and align by character offsets.
        vocab_size: the SentencePiece vocabulary size when a model is learned (``--subword spm``).
        tokenizer: ``moses`` (sacremoses) or ``parser``: the source side's words come from the parser's own
            tokenizer (:mod:`synprep.text.parser_tokenize`; Japanese with ja_ginza); the target side stays Moses.
    """

    tokenized: bool = DEFAULTS.text.tokenized
    lowercase: bool = DEFAULTS.text.lowercase
    fairseq_compat: bool = DEFAULTS.text.fairseq_compat
    clean: bool | None = None
    ratio: float = DEFAULTS.text.ratio
    min_len: int = DEFAULTS.text.min_len
    max_len: int = DEFAULTS.text.max_len
    merges: int = DEFAULTS.subword.merges
    subword: str = DEFAULTS.subword.scheme
    vocab_size: int = DEFAULTS.subword.vocab_size
    tokenizer: str = DEFAULTS.text.tokenizer


#: the configuration's fields that only the text stage of ``synprep pipeline`` reads (annotate has none:
#: its folders record their defaults)
TEXT_FIELDS = tuple(f.name for f in dataclasses.fields(TextOptions) if f.name not in ("clean", "lowercase"))


def text_options(config: DataConfig, clean: bool | None = None) -> TextOptions:
    """The text stage's view of ``config``; ``clean``: the split's ``--clean/--no-clean`` (None: the default)."""
    flat = config.flat()  # TextOptions' fields are the saved names of the text and subword sections' fields
    return TextOptions(clean=clean, **{f.name: flat[f.name] for f in dataclasses.fields(TextOptions)
                                       if f.name != "clean"})


def parse_options(config: DataConfig, runtime: Runtime, trees: str | None = None) -> ParseOptions:
    """The parse stage's view of ``config``: the parser's specification (its folder settings from
    ``config``, its runtime ones from ``runtime``), or none for imported parses (``--parser conllu``).

    Args:
        trees: the user's trees file (``--trees``): the parser's constituency model is then not run.

    Raises:
        ConfigError: an option the chosen backend does not read (:class:`~synprep.parse.base.ParserSpec`).
    """
    from synprep.parse.registry import parse_source_class

    spec, p = None, config.parse
    if parse_source_class(p.parser).runs_parser:
        from synprep.parse.base import ParserSpec

        spec = ParserSpec(name=p.parser, lang=config.src_lang, device=p.device,
                          constituency=trees is None, max_words=p.max_words, ldd_threshold=p.ldd_threshold,
                          plugin_options=p.parser_options, **runtime.parser,
                          **{name: getattr(p, f) for name, f in spec_fields().items()})
    return ParseOptions(parser=p.parser, spec=spec, ssplit=p.ssplit, batch_size=p.batch_size,
                        cache=runtime.cache, trees=trees, lowercase=config.text.lowercase,
                        max_words=None if spec is not None else p.max_words)


def recorded(config: DataConfig, runs_parser: bool) -> DataConfig:
    """``OUT/pipeline.json``: ``config`` with the fields its command does not read at their defaults (an
    ``annotate`` folder has no text stage: :data:`TEXT_FIELDS`; imported parses have no parser settings:
    the device, the backend's options), as earlier versions recorded them."""
    unread = set(TEXT_FIELDS) if config.mode == "annotate" else set()
    if not runs_parser:
        unread |= {"device", "parser_options", *spec_fields().values()}
    defaults = DEFAULTS.flat()
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
    shared.update({"parser": parse.config(), "ldd_threshold": config.parse.ldd_threshold,
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
    from synprep.parse.registry import parse_source_class

    return bool(parse_source_class(config.parse.parser).runs_parser)
