"""The views of a run's one configuration (:class:`synprep.pipeline.config.DataConfig`): what each stage reads, and
what the folder records.

A run is given one :class:`~synprep.pipeline.config.DataConfig` (every setting that determines the folder) and
one :class:`Runtime` (where the work runs; never part of the output). Everything else is read from
them here, never rebuilt by hand elsewhere:

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
from synprep.subword.config import SubwordConfig
from synprep.text.config import TextConfig


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


#: the configuration's fields that only the text stage of ``synprep pipeline`` reads (annotate has none:
#: its folders record their defaults): the text section's but lowercase and the language check, and the
#: subword section's, by saved name
TEXT_FIELDS = tuple([f.name for f in dataclasses.fields(TextConfig) if f.name not in ("lowercase", "language_check")]
                    + [f.metadata.get("saved", f.name) for f in dataclasses.fields(SubwordConfig)])


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
