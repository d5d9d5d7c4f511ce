"""stanza: pretokenized POS, dependencies with their labeled distribution (LDD), constituency.

The pipeline is ``stanza.Pipeline(lang, dir, package, processors="tokenize,pos,lemma,depparse
[,constituency]", tokenize_pretokenized=True, lemma_use_identity=True, download_method=None)``:
the words are never re-tokenized (SPEC.md §1), nothing is ever downloaded while parsing
(``synprep models download`` is the one place that calls ``stanza.download``). Constituency runs
only where the resources hold a model for the language (the German ``synprep`` package has none:
``tree`` is None there and the features stage derives trees from the dependencies, SPEC.md §4).

LDD (SPEC.md §4) in the same pass as the parse: :meth:`StanzaParser.parse` drives the POS and
depparse models itself — the same batches and forward calls that stanza's ``POSProcessor`` and
``DepparseProcessor`` make, on inputs built from the words (:mod:`synprep.parse.stanza_inputs`; stanza's
Document, tokenize and lemma processors where that does not apply, and for constituency), with
stanza 1.15's label lookup and tree decoding reproduced fast (:mod:`synprep.parse.stanza_decode`,
:mod:`synprep.parse.mst`: the same results) — and keeps
the two score tensors that forward already returns: the log-softmax over heads ``[B, N+1, N+1]``
(row = dependent, column = head, 0 = ROOT; built from ``forward_scores``) and the log-softmax over
relations ``[B, N+1, N+1, R]``. So the network runs once per sentence. Then, for dependent ``i``
(1-based) and head ``j`` (0 = root)::

    P(head = j, rel = r | i) = softmax_j(head scores[i, :n+1])[j] * softmax_r(rel scores[i, j])[r]

The head softmax is renormalized over the sentence's own ``n+1`` candidates: stanza's log-softmax
runs over the padded batch width, so its raw row also gives some mass to padding positions (and
would depend on the batch a sentence lands in). Entries ``>= ldd_threshold`` are kept.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synprep.constants import DEVICES
from synprep.errors import ConfigError
from synprep.lazy import lazy_module
from synprep.parse.base import (
    ParserBackend,
    ParserSpec,
    plugin_option,
)
from synprep.parse.stanza_resources import (  # noqa: F401 - download_hint, file_hash, BASE/MODEL_PROCESSORS: their old home
    BASE_PROCESSORS,
    MODEL_PROCESSORS,
    StanzaResources,
    download_hint,
    file_hash,
    resolve_resources,
    stanza_identity,
    stanza_short_identity,
)
from synprep.signature import package_version

if TYPE_CHECKING:
    from synprep.parse.stanza_decode import DecodeContext, SentenceScores
    from synprep.parse.stanza_inputs import InputBuilder
    from synprep.types import ParsedSentence

log = logging.getLogger(__name__)

# the stanza helpers import numpy (and the decoder numba), and every command that builds the backends' options
# (tokenize, bpe) imports this module: they load on first use (StanzaParser.__init__ loads them all)
_decode = lazy_module("synprep.parse.stanza_decode")
_forward = lazy_module("synprep.parse.stanza_forward")
_inputs = lazy_module("synprep.parse.stanza_inputs")
_trees = lazy_module("synprep.parse.trees")
_mst = lazy_module("synprep.parse.mst")

#: names of :mod:`synprep.parse.stanza_decode` still read from here (their earlier home)
_MOVED = ("fast_decoder_available", "ldd_argmax", "reverse_ldd")


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_decode, name)


def _tree(constituency: Any, words: list[str]) -> str:
    """stanza's constituency tree of ``words`` as synprep writes it (leaves checked against the words)."""
    return _trees.tree_to_str(_trees.match_leaves(_trees.parse_tree(str(constituency)), words))


@dataclass(frozen=True)
class StanzaOptions:
    """``--stanza-dir`` (synprep.parse.base.plugin_option); the package, a folder setting, is the parse
    section's ``stanza_package`` (``--stanza-package``)."""

    dir: str | None = plugin_option(None, spec="dir", metavar="DIR", help="stanza resource directory (default: stanza's own).")


@contextlib.contextmanager
def _no_training_optimizers() -> Iterator[None]:
    """While stanza builds the pipeline, skip the optimizers its POS and depparse trainers make for training.

    ``Trainer.__init__`` calls ``stanza.models.common.utils.get_split_optimizer`` even to predict; the first
    ``torch.optim`` optimizer imports ``torch._dynamo`` (and sympy): about 1.4 s of CPU per process — per
    worker — that parsing never uses (the optimizers only serve ``Trainer.update``/``save``). A model with
    BERT parameters keeps stanza's own call (its ``bert_finetuning`` flag is read from the optimizers' names).
    The function is restored on exit; one pipeline is built at a time under the switch (a lock: two threads
    building at once must not restore each other's stand-in).
    """
    from stanza.models.common import utils

    with _OPTIMIZER_SWITCH:
        real = getattr(utils, "get_split_optimizer", None)
        if real is None:  # another stanza: build the pipeline as it does
            yield
            return

        def skip(name: str, model: Any, *args: Any, **kwargs: Any) -> Any:
            if any(n.startswith("bert_model.") for n, _ in model.named_parameters()):
                return real(name, model, *args, **kwargs)
            return {}

        utils.get_split_optimizer = skip
        try:
            yield
        finally:
            utils.get_split_optimizer = real


_OPTIMIZER_SWITCH = threading.Lock()


class StanzaParser(ParserBackend):
    """A loaded stanza pipeline that returns :class:`ParsedSentence` with LDD (registry name ``stanza``).

    Args:
        spec: the parser specification (``name == "stanza"``).
        device: torch device for this process (``"cpu"``, ``"cuda"``, ``"cuda:1"``); None
            follows ``spec.device``.

    Raises:
        ConfigError: models missing (see :func:`resolve_resources`) or a non-graph depparse
            model (LDD needs stanza's biaffine graph parser).
    """

    name = "stanza"
    has_scores = True
    options = ("dir", "package")
    Options = StanzaOptions
    devices = DEVICES
    libraries = ("torch", "stanza")

    @classmethod
    def identity(cls, spec: ParserSpec) -> str:
        """:func:`stanza_identity`."""
        return stanza_identity(spec)

    @classmethod
    def probe(cls) -> dict[str, Any]:
        """The languages in stanza's resource directory ($STANZA_RESOURCES_DIR or stanza's default)."""
        if package_version("stanza") == "?":
            return {"installed": False}
        from pathlib import Path

        from stanza.resources.common import DEFAULT_MODEL_DIR

        folder = Path(os.environ.get("STANZA_RESOURCES_DIR") or DEFAULT_MODEL_DIR)
        langs = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
        return {"installed": True, "version": package_version("stanza"), "resources": str(folder), "languages": langs}

    @classmethod
    def short_identity(cls, identity: str) -> str:
        """:func:`stanza_short_identity` (``stanza-1.15.0/synprep/en+const#1a2b3c4d``)."""
        return stanza_short_identity(identity)

    @classmethod
    def signature_name(cls, spec: ParserSpec) -> str:
        """``stanza-VERSION/LANG/PACKAGE`` (as the pipeline signature always wrote it)."""
        return f"stanza-{package_version('stanza')}/{spec.lang}/{spec.package or 'default'}"

    def __init__(self, spec: ParserSpec, device: str | None = None):
        import stanza
        from stanza.models.depparse.model import EnsembleGraphParser, GraphParser

        super().__init__(spec, device)
        self.resources = resolve_resources(spec)
        device = device or spec.device
        with _no_training_optimizers():  # parsing never trains: ~1.4 s CPU less per process
            self.nlp = stanza.Pipeline(
                self.resources.lang,
                dir=self.resources.dir,
                package=self.resources.package,
                processors=",".join(self.resources.processors),
                tokenize_pretokenized=True,
                lemma_use_identity=True,
                download_method=None,
                use_gpu=device.startswith("cuda"),
                device=device,
                # stanza's INFO lines would repeat once per worker: keep them for -vv (DEBUG)
                logging_level="INFO" if logging.getLogger("synprep").isEnabledFor(logging.DEBUG) else "WARN",
            )
        self.depparse = self.nlp.processors["depparse"]
        model = self.depparse.trainer.model
        if not isinstance(model, (GraphParser, EnsembleGraphParser)):
            raise ConfigError(f"the depparse model is a {type(model).__name__}; LDD needs stanza's graph parser")
        vocab = self.depparse.vocab["deprel"]
        from stanza.models.common.vocab import VOCAB_PREFIX_SIZE

        self.relations = vocab.unmap(list(range(VOCAB_PREFIX_SIZE, len(vocab))))
        self.last_loader: Any = None  # the DataLoader of the latest depparse_batches call
        pos = self.nlp.processors["pos"]
        #: builds the models' inputs from the words (:mod:`synprep.parse.stanza_inputs`); None: stanza's loaders
        self.inputs: InputBuilder | None = (None if _inputs.unsupported_reason(pos, self.depparse)
                                             else _inputs.InputBuilder(pos, self.depparse))
        self._fallback_logged: str | None = None
        if _decode.fast_decoder_available():  # the compiled decoder's code loaded with the models, not in the first batch
            _mst.warm()  # loads numba (compiles): not needed to import this module

    @property
    def inputs_fallback(self) -> str | None:
        """Why the models' inputs come from stanza's Document, ``Dataset`` and ``DataLoader`` now (None: from
        :attr:`inputs`): :func:`~synprep.parse.stanza_inputs.unsupported_reason` of the loaded models'
        configuration (read at every :meth:`forward`), or ``inputs`` set to None."""
        reason = _inputs.unsupported_reason(self.nlp.processors["pos"], self.depparse)
        if reason is None and self.inputs is None:
            return "synprep's input building is switched off"
        return reason

    @property
    def has_constituency(self) -> bool:
        return self.resources.has_constituency

    def parse(self, sentences: list[list[str]]) -> list[ParsedSentence]:
        """Parse sentences (word lists) in one stanza document: :meth:`forward`, then the decode stage.

        Returns:
            one :class:`ParsedSentence` per sentence: words as given, UPOS, 1-based heads
            (0 = root), UD relations, the constituency tree (leaves == words) or None, and the
            sparse LDD (``threshold = spec.ldd_threshold``).

        Raises:
            RuntimeError / ValueError: stanza failed, or changed the words (never expected).
        """
        ctx = self.decode_context()
        return [ctx.decode(s) for s in self.forward(sentences)]

    def decode_context(self) -> DecodeContext:
        """What the decode stage needs besides the scores (picklable: sent along with them to a CPU worker)."""
        dp = self.depparse
        return _decode.DecodeContext(dp.vocab["deprel"], self.relations, bool(dp.config.get("resolve_head_constraints", True)),
                             bool(dp.trainer.args.get("reversed", False)), self.spec.ldd_threshold)

    def forward(self, sentences: list[list[str]]) -> list[SentenceScores]:
        """The models' part of :meth:`parse` (the part that runs on a GPU): POS, depparse scores, constituency.

        stanza's tokenize (pretokenized) and lemma (identity) processors, the POS model
        (:func:`~synprep.parse.stanza_forward.pos_stage` on stanza 1.15, else stanza's processor), the
        depparse model's forward (:func:`~synprep.parse.stanza_forward.depparse_scores`) and the
        constituency processor, over the same batches as stanza's Pipeline. Nothing is decoded:
        :meth:`DecodeContext.decode` turns each result into a :class:`ParsedSentence`.

        Returns:
            one :class:`SentenceScores` per sentence, in order.

        Raises:
            RuntimeError / ValueError: stanza failed, or changed the words (never expected).
        """
        if not sentences:
            return []
        reason = self.inputs_fallback
        if reason is None and all(sentences):
            return self._forward_words(sentences)
        if reason is not None and reason != self._fallback_logged:
            log.info("stanza: %s: the models' inputs come from stanza's Document and loaders", reason)
            self._fallback_logged = reason
        return self._forward_doc(sentences)

    def _forward_words(self, sentences: list[list[str]]) -> list[SentenceScores]:
        """:meth:`forward` with the models' inputs built from the words (:mod:`synprep.parse.stanza_inputs`).

        A Document is built only for the constituency processor (which reads it), tagged as
        :func:`~synprep.parse.stanza_forward.pos_stage` tags it.
        """
        from stanza.models.common import doc as sdoc

        assert self.inputs is not None
        fw = _forward.forward_words(self.nlp.processors["pos"], self.depparse, self.inputs, sentences,
                           with_labels=not self.decode_context().resolve)
        if fw is None:
            return self._forward_doc(sentences)
        starts = fw.starts.tolist()
        upos = fw.upos.tolist()
        trees: list = [None] * len(sentences)
        if self.has_constituency:
            doc = self.nlp([list(s) for s in sentences], processors="tokenize")
            doc.set([sdoc.UPOS, sdoc.XPOS, sdoc.FEATS], [list(x) for x in zip(upos, fw.xpos.tolist(), fw.feats.tolist(), strict=True)])
            doc = self.nlp(self.nlp(doc, processors="lemma"), processors="constituency")
            for k, (words, sent) in enumerate(zip(sentences, doc.sentences, strict=True)):
                if [w.text for w in sent.words] != list(words):
                    raise ValueError(f"stanza changed the words: {words!r} -> {[w.text for w in sent.words]!r}")
                if sent.constituency is not None:
                    trees[k] = _tree(sent.constituency, list(words))
        return [_decode.SentenceScores(list(words), upos[starts[k]:starts[k + 1]], trees[k], head, labels, rel)
                for k, (words, (head, labels, rel)) in enumerate(zip(sentences, fw.scores, strict=True))]

    def _forward_doc(self, sentences: list[list[str]]) -> list[SentenceScores]:
        """:meth:`forward` through stanza's Document, POS ``Dataset`` and depparse ``DataLoader`` (the reference;
        used where :attr:`inputs_fallback` names a reason, or for an empty sentence)."""
        if _decode.stanza_reproduced():  # stanza 1.15: its POS processor, with the label lookups vectorized
            doc = self.nlp([list(s) for s in sentences], processors="tokenize")
            self._pos(doc)
            doc = self.nlp(doc, processors="lemma")
        else:
            doc = self.nlp([list(s) for s in sentences], processors="tokenize,pos,lemma")
        scores = _forward.depparse_scores(self.depparse, doc, with_labels=not self.decode_context().resolve)
        if self.has_constituency:
            doc = self.nlp(doc, processors="constituency")
        out = []
        for words, sent, (head, labels, rel) in zip(sentences, doc.sentences, scores, strict=True):
            got = [w.text for w in sent.words]
            if got != list(words):
                raise ValueError(f"stanza changed the words: {words!r} -> {got!r}")
            tree = None
            if self.has_constituency and sent.constituency is not None:
                tree = _tree(sent.constituency, list(words))
            out.append(_decode.SentenceScores(list(words), [w.upos for w in sent.words], tree, head, labels, rel))
        return out

    def _pos(self, doc) -> None:
        """:func:`~synprep.parse.stanza_forward.pos_stage` with this pipeline's POS processor."""
        _forward.pos_stage(self.nlp.processors["pos"], doc)

    def depparse_batches(self, doc):
        """:func:`~synprep.parse.stanza_forward.depparse_batches` (the loader kept as ``self.last_loader``):
        ``(scores, sentlens, orig_idx)`` per batch."""
        self.last_loader, batches = _forward.depparse_batches(self.depparse, doc)
        return batches
