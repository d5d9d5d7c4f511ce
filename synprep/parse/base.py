"""What every parser backend shares: its picklable specification, its interface, failure isolation.

A backend is a :class:`ParserBackend` subclass registered in :data:`synprep.parse.registry.PARSER_BACKENDS`
(name → ``"module:Class"``, imported lazily); :class:`ParserSpec` names it and carries every option.
"""

from __future__ import annotations

import hashlib
import logging
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, replace
from typing import Any, ClassVar, NamedTuple

from synprep.constants import MAX_WORD_CHARS
from synprep.defaults import PARSE_DEFAULTS
from synprep.errors import ConfigError
from synprep.parse.config import ParseConfig, spec_fields
from synprep.parse.registry import PARSER_BACKENDS, parser_names
from synprep.types import ParsedSentence

log = logging.getLogger(__name__)

#: the registered parser names (:data:`synprep.parse.registry.PARSER_BACKENDS` is the source)
PARSERS = parser_names()


def backend_option(default: Any, flag: str) -> Any:
    """A backend-specific runtime field of :class:`ParserSpec` (a folder, a server address): the option that
    sets it on the command line. It never changes the parses, so it is never recorded (metadata ``runtime``);
    a backend's folder settings are fields of :class:`~synprep.parse.config.ParseConfig`.

    Args:
        default: the field's default (what every backend that does not read it must keep).
        flag: its command-line option (``--stanza-dir``).
    """
    return field(default=default, metadata={"option": flag, "runtime": True})


def plugin_option(default: Any, *, help: str, spec: str | None = None, alias: str | None = None,
                  type: Any = None, metavar: str | None = None) -> Any:
    """A field of a backend's :attr:`ParserBackend.Options` dataclass: one command-line option.

    The option is ``--NAME-FIELD`` (the backend's registry name, then the field, ``_`` → ``-``:
    ``--corenlp-endpoint``), generated for every command that takes ``--parser``
    (:func:`synprep.cli.common.backend_plugin_options`); its value reaches the backend in its
    :class:`ParserSpec` (:meth:`ParserSpec.backend_options`).

    Args:
        default: the value when the option is not given.
        help: the option's help text.
        spec: the :class:`ParserSpec` field that carries the value (the built-in backends' runtime options:
            ``dir``, ``corenlp_endpoint``, ``timeout``); None: carried in the parse section's ``parser_options``
            (``ParserSpec.plugin_options``). A built-in backend's folder settings are fields of
            :class:`~synprep.parse.config.ParseConfig` instead (metadata ``spec``).
        alias: an older spelling of the option that keeps working (``--timeout``).
        type: the click type (default: from ``default``).
        metavar: the help's placeholder.
    """
    return field(default=default, metadata={"help": help, "spec": spec, "alias": alias, "type": type,
                                            "metavar": metavar})


class PluginOption(NamedTuple):
    """One generated command-line option of a parser backend (:func:`plugin_options`)."""

    backend: str
    field: str
    param: str  # the click parameter name: NAME_FIELD
    flags: tuple[str, ...]  # --NAME-FIELD, then the alias
    default: Any
    help: str
    type: Any
    metavar: str | None
    spec: str | None


def plugin_options(names: tuple[str, ...] | None = None) -> list[PluginOption]:
    """The command-line options of the registered backends (each backend's :attr:`ParserBackend.Options`),
    in registry and field order. Imports the backends' modules (not their parsers' libraries)."""
    out = []
    for name in parser_names() if names is None else names:
        opts = backend_class(name).Options
        for f in fields(opts) if opts is not None else ():
            flag = f"--{name}-{f.name}".replace("_", "-")
            out.append(PluginOption(name, f.name, f"{name}_{f.name}", (flag, *([f.metadata["alias"]] if f.metadata.get(
                "alias") else [])), f.default if f.default is not MISSING else None, f.metadata.get("help", ""),
                f.metadata.get("type"), f.metadata.get("metavar"), f.metadata.get("spec")))
    return out

#: LDD entries with P(head, rel) below this are dropped (SPEC.md §4; synprep.defaults)
DEFAULT_LDD_THRESHOLD = PARSE_DEFAULTS.ldd_threshold
#: stanza is known to hang or run out of memory on sentences of 400+ words (synprep.defaults)
DEFAULT_MAX_WORDS = PARSE_DEFAULTS.max_words
#: part of every parser identity (so of every cache key): bump it whenever synprep's conversion
#: of a parser's output changes, so that no cache entry made the old way is reused
PARSE_SCHEMA = 2

#: a spec's keyword → its :class:`ParseConfig` field, where the two names differ (the others are the same)
_CONFIG_NAMES = {"name": "parser", "plugin_options": "parser_options"}


@dataclass(frozen=True, init=False)
class ParserSpec:
    """Everything needed to build a parser, small and picklable (sent to every worker): the folder's parse
    section whole, and what a run adds to it.

    Built as ``ParserSpec(config, lang=...)``, or with the section's settings as keywords
    (``ParserSpec(name="stanza", lang="de", package="synprep", max_words=60)``: ``name``, ``package``,
    ``plugin_options`` for its ``parser``, ``stanza_package``, ``parser_options``); they read as attributes.
    Settings given beside ``config`` change those of ``config`` (so ``dataclasses.replace(spec, device="cpu")``
    is ``spec`` on the CPU).

    Attributes:
        config: the parse section (:class:`~synprep.parse.config.ParseConfig`), whole.
        lang: language code (``en``, ``de``).
        dir: stanza resource directory; None = stanza's own default (``~/stanza_resources`` or
            ``$STANZA_RESOURCES_DIR``).
        constituency: run the constituency model where the language has one (False when the
            user supplies trees with ``--trees``).
        corenlp_endpoint: URL of the CoreNLP server (``corenlp`` only).
        timeout: seconds one CoreNLP request may take before it fails (``corenlp`` only).

    Raises:
        ConfigError: unknown parser or device, an option the chosen backend does not read set to a
            non-default value (it would have no effect), or a backend's own check failing.
        TypeError: a keyword that is neither a field nor a setting of the section.
    """

    config: ParseConfig = field(default_factory=ParseConfig)
    lang: str = "en"
    dir: str | None = backend_option(None, "--stanza-dir")
    constituency: bool = True
    corenlp_endpoint: str = backend_option("http://localhost:9000", "--corenlp-endpoint")
    timeout: float = backend_option(60.0, "--timeout")

    def __init__(self, config: ParseConfig | None = None, **kwargs: Any) -> None:
        own = {f.name: f for f in fields(ParserSpec) if f.name != "config"}
        settings = {_CONFIG_NAMES.get(k, spec_fields().get(k, k)): v for k, v in kwargs.items() if k not in own}
        if settings:  # the section's settings, on top of the given section (dataclasses.replace(spec, device=...))
            unknown = sorted(set(settings) - {f.name for f in fields(ParseConfig)})
            if unknown:
                raise TypeError(f"ParserSpec: unknown keyword {', '.join(unknown)}")
            base = {} if config is None else {f.name: getattr(config, f.name) for f in fields(ParseConfig)}
            merged = {**base, **settings}
            _check_plugin_options(merged.get("parser", "stanza"), merged.get("parser_options", ()))
            config = ParseConfig(**merged)
        object.__setattr__(self, "config", ParseConfig() if config is None else config)
        for name, f in own.items():
            object.__setattr__(self, name, kwargs.get(name, f.default))
        self._check()

    @property
    def name(self) -> str:
        """The registered parser (:data:`synprep.parse.registry.PARSER_BACKENDS`): the section's ``parser``."""
        return self.config.parser

    @property
    def package(self) -> str | None:
        """The stanza package; None = stanza's default package for the language."""
        return self.config.stanza_package

    @property
    def device(self) -> str:
        """``cpu`` or ``cuda``: part of the parse's identity (:func:`synprep.parse.run.parser_identity`)."""
        return self.config.device

    @property
    def max_words(self) -> int:
        """Sentences longer than this are recorded as failures, never parsed."""
        return self.config.max_words

    @property
    def ldd_threshold(self) -> float:
        """LDD entries below this probability are dropped (0 keeps every entry)."""
        return self.config.ldd_threshold

    @property
    def spacy_model(self) -> str | None:
        """Installed spaCy pipeline package name (``ja_ginza``) or a pipeline folder (``spacy`` only)."""
        return self.config.spacy_model

    @property
    def label_map(self) -> str | None:
        """A TSV file ``MODEL_LABEL<TAB>UD_LABEL`` mapping a model's non-UD labels to UD (``spacy`` only)."""
        return self.config.label_map

    @property
    def plugin_options(self) -> tuple[tuple[str, Any], ...]:
        """The section's ``parser_options``: the given plugin options, ``(("NAME_FIELD", value), ...)``."""
        return self.config.parser_options

    def _check(self) -> None:
        backend = backend_class(self.name)  # ConfigError for an unknown name
        if self.device not in backend.devices:
            raise ConfigError(f"--parser {self.name} cannot run on {self.device} (it runs on {', '.join(backend.devices)})")
        for name, (flag, default) in backend_settings().items():
            if name not in backend.options and getattr(self, name) != default:
                raise ConfigError(f"{flag} has no effect with --parser {self.name}")
        _check_plugin_options(self.name, self.plugin_options)
        backend.check_spec(self)

    def recorded(self) -> dict[str, Any]:
        """The settings that decide the parses, as the shards' parser configuration records them (its
        ``name``, ``lang``, ``package``, ``constituency``, ``max_words``, ``ldd_threshold``; ``device``,
        ``spacy_model``, ``label_map`` and ``plugin_options`` only when not at their defaults, as in the
        folders made before each existed); the runtime settings (:func:`backend_option` ``runtime``) never."""
        out = {"name": self.name, "lang": self.lang, "package": self.package, "device": self.device,
               "constituency": self.constituency, "max_words": self.max_words, "ldd_threshold": self.ldd_threshold,
               "spacy_model": self.spacy_model, "label_map": self.label_map, "plugin_options": self.plugin_options}
        for name, default in _OMIT_DEFAULT.items():
            if out[name] == default:
                del out[name]
        return out

    def with_config(self, **changes: Any) -> ParserSpec:
        """This spec with ``changes`` to its parse section (``spec.with_config(ssplit=False)``).

        Raises:
            ConfigError: a changed value out of the section's bounds, or one the backend does not read.
        """
        return replace(self, config=replace(self.config, **changes))

    def backend_options(self) -> Any:
        """The chosen backend's :attr:`ParserBackend.Options` with this spec's values (None: it has none)."""
        opts = backend_class(self.name).Options
        if opts is None:
            return None
        given = {key[len(self.name) + 1:]: value for key, value in self.plugin_options}
        return opts(**{f.name: getattr(self, f.metadata["spec"]) if f.metadata.get("spec") else given.get(f.name, f.default)
                       for f in fields(opts)})


#: the recorded settings left out at their default (:meth:`ParserSpec.recorded`), as folders made before each existed
#: have them (a CPU parse's too: the device kind is part of the parse, GPU and CPU floats differ)
_OMIT_DEFAULT: dict[str, Any] = {"device": "cpu", "spacy_model": None, "label_map": None, "plugin_options": ()}


def _check_plugin_options(name: str, options: tuple[tuple[str, Any], ...]) -> None:
    """Each of ``options`` (``(NAME_FIELD, value)``) is a field of backend ``name``'s :attr:`ParserBackend.Options`.

    Raises:
        ConfigError: ``--NAME-FIELD has no effect with --parser NAME``.
    """
    backend = backend_class(name)
    own = {f.name for f in fields(backend.Options)} if backend.Options is not None else set()
    for key, _ in options:
        if not key.startswith(f"{name}_") or key[len(name) + 1:] not in own:
            raise ConfigError(f"--{key.replace('_', '-')} has no effect with --parser {name}")


def backend_settings() -> dict[str, tuple[str, Any]]:
    """The backend-specific settings of a :class:`ParserSpec` (its runtime fields, :func:`backend_option`, and
    the section's backend fields, metadata ``spec``), by attribute: ``(command-line option, default)``."""
    out = {f.name: (f.metadata["option"], f.default) for f in fields(ParserSpec) if "option" in f.metadata}
    for f in fields(ParseConfig):
        if "spec" in f.metadata:
            out[f.metadata["spec"]] = (f"--{(f.metadata.get('flag') or f.name).replace('_', '-')}", f.default)
    return out


class ParserBackend(ABC):
    """A parser backend: what synprep knows about one parser, and the parser once loaded.

    Class level (cheap, loads no model): :meth:`identity` (cache key prefix and signature),
    :meth:`short_identity`, :meth:`signature_name`, :meth:`check_spec`, :meth:`tokenizer`.
    Instance level (one per worker process, built by :func:`synprep.parse.run.make_parser`):
    :meth:`parse` takes sentences as word lists (Moses tokens, unescaped) and returns one
    :class:`ParsedSentence` per sentence whose ``words`` are exactly the given words (never
    re-tokenized, SPEC.md §1); it raises on failure (the caller isolates the failing sentence,
    :func:`parse_isolated`). :meth:`close` frees what the parser holds (a server, a GPU).

    Register a subclass in :data:`synprep.parse.registry.PARSER_BACKENDS`.

    Attributes:
        name: the registry name.
        has_scores: True when :meth:`parse` fills ``ldd`` from the parser's arc scores; False: ``ldd`` is None
            and the features use one-hot rows (SPEC.md §4).
        options: the backend-specific :class:`ParserSpec` settings it reads (:func:`backend_settings`: its
            runtime fields and the parse section's backend fields, each with its command-line option; the others
            must keep their defaults, and their options are refused; derived from :attr:`Options` when not set).
        devices: the devices it can run on.
        Options: the backend's command-line options, a dataclass of :func:`plugin_option` fields
            (``--NAME-FIELD`` on every command that takes ``--parser``); the backend reads them with
            ``spec.backend_options()``. A new backend with options is one module and one line in
            :data:`synprep.parse.registry.PARSER_BACKENDS`.
        has_trees: the backend can run a constituency model (spaCy: never; stanza: when the language's
            package has one, which its identity's ``processors`` name).
        libraries: the Python modules its parser imports when it loads (stanza: torch, stanza), which the
            parse workers' warm-up imports first to time them apart from the models' load
            (:mod:`synprep.parse.warming`); empty: not timed apart.
    """

    name: ClassVar[str] = ""
    has_scores: ClassVar[bool] = False
    has_trees: ClassVar[bool] = True
    options: ClassVar[tuple[str, ...]] = ()
    devices: ClassVar[tuple[str, ...]] = ("cpu",)
    libraries: ClassVar[tuple[str, ...]] = ()
    #: the backend's command-line options: a dataclass of :func:`plugin_option` fields, or None
    Options: ClassVar[Any] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.Options is not None:
            if not is_dataclass(cls.Options):
                raise TypeError(f"{cls.__name__}.Options must be a dataclass")
            if "options" not in vars(cls):  # the ParserSpec fields it reads follow from its Options
                cls.options = tuple(f.metadata["spec"] for f in fields(cls.Options) if f.metadata.get("spec"))

    spec: ParserSpec

    def __init__(self, spec: ParserSpec, device: str | None = None):
        self.spec = spec

    @classmethod
    def probe(cls) -> dict[str, Any]:
        """What is installed for this parser, for ``synprep info`` (cheap: loads no model).

        Returns:
            JSON-ready values; ``installed``: True, False, or None when the backend cannot tell.
        """
        return {"installed": None}

    @classmethod  # noqa: B027 - an optional hook, empty by default
    def check_spec(cls, spec: ParserSpec) -> None:
        """Refuse a spec this backend cannot run (cheap, no model loaded); raises ConfigError."""

    @classmethod
    @abstractmethod
    def identity(cls, spec: ParserSpec) -> str:
        """``NAME|...``: everything that determines the parses (cache key prefix); loads no model.

        Two specs with equal identities give identical parses. Raises ConfigError (models missing).
        """

    @classmethod
    def short_identity(cls, identity: str) -> str:
        """Compact form for the signature line: ``NAME/LANG#DIGEST`` (digest of the whole identity)."""
        fields_, kv = identity_fields(identity)
        return f"{fields_[0]}/{kv.get('lang', '?')}#{identity_digest(identity)}"

    @classmethod
    def signature_name(cls, spec: ParserSpec) -> str:
        """The pipeline signature's ``parser:`` field (cheap: no file is hashed)."""
        return f"{spec.name}/{spec.lang}"

    @classmethod
    def tokenizer(cls, spec: ParserSpec) -> Callable[[str], list[str]]:
        """A function raw text → words with this parser's own tokenizer (``--tokenizer parser``).

        Raises:
            ConfigError: the backend has no tokenizer of its own.
        """
        raise ConfigError(f"--parser {cls.name} has no tokenizer of its own: use --tokenizer moses")

    @abstractmethod
    def parse(self, sentences: list[list[str]]) -> list[ParsedSentence]:
        """Parse a batch of sentences (word lists); one :class:`ParsedSentence` each, words unchanged."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing to free
        """Free what the loaded parser holds (server, GPU memory); the parser is unusable after."""


#: the interface :func:`parse_isolated` and the workers use (kept for older imports)
Parser = ParserBackend


def backend_class(name: str) -> type[ParserBackend]:
    """The backend class registered under ``name`` in :data:`synprep.parse.registry.PARSER_BACKENDS`
    (its module imported on first use).

    Raises:
        ConfigError: no such parser (the message lists the registered ones).
    """
    cls: type[ParserBackend] = PARSER_BACKENDS.load(name)
    return cls


def backend_for_identity(identity: str) -> type[ParserBackend] | None:
    """The backend whose identities start with ``NAME|`` (None for an identity no backend made)."""
    name = identity.split("|", 1)[0]
    return backend_class(name) if name in PARSER_BACKENDS else None


def identity_fields(identity: str) -> tuple[list[str], dict[str, str]]:
    """An identity's ``|``-separated fields, and its ``key=value`` fields after the name and version."""
    fields_ = identity.split("|")
    return fields_, dict(f.split("=", 1) for f in fields_[2:] if "=" in f)


def identity_digest(identity: str) -> str:
    """First 8 hex digits of the sha256 of an identity string."""
    return hashlib.sha256(identity.encode()).hexdigest()[:8]


def parse_isolated(parser: Parser, sentences: list[list[str]]) -> list[ParsedSentence | str]:
    """Parse a batch; if it raises, retry its sentences one at a time to isolate the bad ones.

    Returns:
        one item per sentence: its parse, or the reason (str) the parser failed on it.
    """
    if not sentences:
        return []
    try:
        return list(parser.parse(sentences))
    except Exception as e:  # any parser failure is recorded, never fatal
        if len(sentences) == 1:
            return [_reason(e)]
        log.info("parser failed on a batch of %d sentences (%s); retrying one at a time", len(sentences), _reason(e))
    out: list[ParsedSentence | str] = []
    for s in sentences:
        try:
            out.extend(parser.parse([s]))
        except Exception as e:
            out.append(_reason(e))
    return out


#: what :func:`error_kind` returns
ERROR_KINDS = ("empty", "too_long", "word_too_long", "failed")


def error_kind(reason: str) -> str:
    """Classify a line's parse error message: ``"empty"``, ``"too_long"``, ``"word_too_long"`` or ``"failed"``.

    The messages are synprep's own (:func:`~synprep.parse.run.parse_block`: ``empty line``,
    ``sentence 2 has 300 words (more than max_words=250)``, ``word 3 has 1200 characters (more than
    max_word_chars=1000)``, ``parser failed: ...``) or any
    ``# error`` text of an imported CoNLL-U file; anything else is a failure.
    """
    if reason == "empty line":
        return "empty"
    if not reason.startswith("parser failed") and "max_words" in reason:
        return "too_long"
    if not reason.startswith("parser failed") and "max_word_chars" in reason:
        return "word_too_long"
    return "failed"


def _reason(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


@dataclass
class ParseStats:
    """Counts of one :func:`~synprep.parse.run.parse_lines` run (filled in as lines are yielded).

    Attributes:
        lines: lines yielded.
        sentences: sentences in successfully parsed lines.
        cache_hits: of those, the sentences found in the cache.
        repeats: of those, the sentences that repeat one parsed earlier in the same block (a
            sentence is parsed once per block, however often it occurs).
        parsed: unique sentences sent to the parser (failed lines' sentences included).
        failed_lines: lines yielded with an error.
        reasons: error kind → count of lines.

    ``sentences == cache_hits + repeats + fresh`` (:attr:`fresh`).
    """

    lines: int = 0
    sentences: int = 0
    cache_hits: int = 0
    repeats: int = 0
    parsed: int = 0
    failed_lines: int = 0
    reasons: Counter = field(default_factory=Counter)

    @property
    def fresh(self) -> int:
        """Sentences of successfully parsed lines that the parser parsed in this run (first occurrences)."""
        return self.sentences - self.cache_hits - self.repeats

    def summary(self) -> str:
        """``8 lines: 9 sentences (2 from the cache, 6 by the parser, 1 repeated), 1 failed line``."""
        return (f"{self.lines} lines: {self.sentences} sentences ({self.cache_hits} from the cache, {self.fresh} by "
                f"the parser, {self.repeats} repeated), {self.failed_lines} failed lines")


def bound_error(sentences: list[tuple[str, ...]] | list[list[str]], max_words: int) -> str | None:
    """Why a line's sentences may not be parsed or imported, or None: a sentence of more than
    ``max_words`` words (kind ``too_long``), or a word of more than
    :data:`~synprep.constants.MAX_WORD_CHARS` characters (kind ``word_too_long``).

    Checked before any parser or feature sees the line, so memory stays bounded for any input line
    (the features build per-sentence W×W masks; stanza's character models grow with a word's length).
    """
    k = 0
    for n, s in enumerate(sentences, 1):
        if len(s) > max_words:
            return f"sentence {n} has {len(s)} words (more than max_words={max_words})"
        for w in s:
            k += 1
            if len(w) > MAX_WORD_CHARS:
                return f"word {k} has {len(w)} characters (more than max_word_chars={MAX_WORD_CHARS})"
    return None
