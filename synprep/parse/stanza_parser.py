"""stanza: pretokenized POS, dependencies with their labeled distribution (LDD), constituency.

The pipeline is ``stanza.Pipeline(lang, dir, package, processors="tokenize,pos,lemma,depparse
[,constituency]", tokenize_pretokenized=True, lemma_use_identity=True, download_method=None)``:
the words are never re-tokenized (SPEC.md §1), nothing is ever downloaded while parsing
(``synprep models download`` is the one place that calls ``stanza.download``). Constituency runs
only where the resources hold a model for the language (the German ``synprep`` package has none:
``tree`` is None there and the features stage derives trees from the dependencies, SPEC.md §4).

LDD (SPEC.md §4) in the same pass as the parse: :meth:`StanzaParser.parse` runs stanza's own
processors for tokenize/lemma and constituency, but drives the POS and depparse models itself — the
same batches and forward calls that stanza's ``POSProcessor`` and ``DepparseProcessor`` make, with
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

import functools
import hashlib
import logging
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from synprep.errors import ConfigError
from synprep.parse.base import (
    PARSE_SCHEMA,
    ParserBackend,
    ParserSpec,
    identity_digest,
    identity_fields,
    plugin_option,
)
from synprep.parse.stanza_decode import decode_batch, fast_decoder_available, stanza_reproduced, unmap_ids
from synprep.parse.trees import match_leaves, parse_tree, tree_to_str
from synprep.signature import package_version
from synprep.types import ParsedSentence, SparseLDD

log = logging.getLogger(__name__)

#: the processors synprep asks for; lemma is the identity (the depparse models were trained on it)
BASE_PROCESSORS = ("tokenize", "pos", "lemma", "depparse")
#: processors whose model files make up the parser identity
MODEL_PROCESSORS = ("pos", "depparse", "constituency")


@dataclass(frozen=True)
class StanzaResources:
    """Where a spec's models are, resolved the way ``stanza.Pipeline`` resolves them.

    Attributes:
        dir: the resource directory. lang: the language code after stanza's aliasing.
        package: the package name asked for (``default`` when none was).
        processors: the processors to load, in pipeline order.
        files: ``(config key, path)`` of every model file those processors read.
    """

    dir: str
    lang: str
    package: str
    processors: tuple[str, ...]
    files: tuple[tuple[str, str], ...]

    @property
    def has_constituency(self) -> bool:
        return "constituency" in self.processors


def resolve_resources(spec: ParserSpec) -> StanzaResources:
    """Resolve a spec's model files without loading any model (cheap; used for the identity).

    Raises:
        ConfigError: no ``resources.json`` in the directory, the language or package is unknown
            there, or a pos/depparse model file is missing (the message says how to download).
    """
    from stanza.pipeline.core import (
        add_dependencies,
        build_default_config,
        maintain_processor_list,
        process_pipeline_parameters,
    )
    from stanza.resources.common import DEFAULT_MODEL_DIR, load_resources_json

    model_dir = str(spec.dir) if spec.dir else DEFAULT_MODEL_DIR
    package = spec.package or "default"
    hint = f"run: synprep models download {spec.lang}" + (f" --dir {spec.dir}" if spec.dir else "") + (
        f" --package {spec.package}" if spec.package else ""
    )
    if not os.path.isfile(os.path.join(model_dir, "resources.json")):
        raise ConfigError(f"no stanza resources in {model_dir} (resources.json missing); {hint}")

    def config_for(processors: str) -> tuple[str, dict]:
        lang, mdir, pkg, procs = process_pipeline_parameters(spec.lang, model_dir, package, processors)
        resources = load_resources_json(mdir)
        if lang in resources and "alias" in resources[lang]:
            lang = resources[lang]["alias"]
        if lang not in resources:
            from synprep.parse.langcode import iso_code, wrong_code_message

            wrong = wrong_code_message(spec.lang)  # -s ger: name the code, never a download of 'ger'
            if wrong is not None:
                raise ConfigError(wrong)
            if iso_code(spec.lang) is None:
                raise ConfigError(f"{spec.lang!r} is not a language code: give its ISO 639-1 code (de, en, ja, ...)")
            raise ConfigError(f"stanza resources in {model_dir} have no language {spec.lang!r}; {hint}")
        load_list = maintain_processor_list(resources, lang, pkg, procs, maybe_add_mwt=False)
        load_list = add_dependencies(resources, lang, load_list)
        return lang, build_default_config(resources, lang, mdir, load_list)

    want = list(BASE_PROCESSORS)
    attempts = [want + ["constituency"], want] if spec.constituency else [want]
    for k, procs_try in enumerate(attempts):
        try:
            lang, config = config_for(",".join(procs_try))
            break
        except ConfigError:
            raise
        except Exception as e:  # stanza raises assorted errors for unknown packages/processors
            if k + 1 < len(attempts):
                continue  # no constituency for this language/package: go on without it
            raise ConfigError(f"stanza cannot resolve {spec.lang}/{package} in {model_dir}: {e}; {hint}") from None
    for proc in ("pos", "depparse"):
        path = config.get(f"{proc}_model_path")
        if not path or not os.path.isfile(path):
            where = f" at {path}" if path else f" in {model_dir}"
            raise ConfigError(f"no stanza {proc} model for {spec.lang}/{package}{where}; {hint}")
    procs = list(want)
    if spec.constituency and os.path.isfile(str(config.get("constituency_model_path", ""))):
        procs.append("constituency")
    files = []
    seen = set()
    for proc in MODEL_PROCESSORS:
        if proc not in procs:
            continue
        for key, value in sorted(config.items()):
            if key.startswith(proc + "_") and key.endswith("_path") and isinstance(value, str) and os.path.isfile(value):
                if value not in seen:
                    seen.add(value)
                    files.append((key, value))
    return StanzaResources(model_dir, lang, package, tuple(procs), tuple(files))


@functools.lru_cache(maxsize=64)
def _file_hash(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()[:16]


def file_hash(path: str) -> str:
    """First 16 hex digits of a file's sha256 (memoized per process on path, size and mtime)."""
    st = os.stat(path)
    return _file_hash(os.path.realpath(path), st.st_size, st.st_mtime_ns)


def stanza_identity(spec: ParserSpec) -> str:
    """The parser identity string: the cache key prefix and the signature's parser field.

    ``stanza|VERSION|lang=..|package=..|processors=pos,depparse[,constituency]|ldd=THRESHOLD|
    KEY=SHA ...`` with the sha256 (16 hex digits) of every model file read (pos, depparse,
    constituency and their pretrained vectors / charlms). Two specs with equal identities give
    identical parses. The device kind is appended by :func:`synprep.parse.run.parser_identity`
    (``|device=cuda``; CPU and GPU scores differ slightly).

    Raises:
        ConfigError: see :func:`resolve_resources`.
    """
    res = resolve_resources(spec)
    parts = [
        "stanza",
        package_version("stanza"),
        f"lang={res.lang}",
        f"package={res.package}",
        "processors=" + ",".join(p for p in res.processors if p in MODEL_PROCESSORS),
        f"ldd={spec.ldd_threshold!r}",
        f"schema={PARSE_SCHEMA}",
    ]
    parts += [f"{key}={file_hash(path)}" for key, path in res.files]
    return "|".join(parts)


def short_identity(identity: str) -> str:
    """Compact form of a stanza identity for the signature line: ``stanza-1.15.0/synprep/en+const#1a2b3c4d``
    (the digest covers the whole identity). Any backend's: :func:`synprep.parse.run.short_identity`.
    """
    fields, kv = identity_fields(identity)
    digest = identity_digest(identity)
    const = "+const" if "constituency" in kv.get("processors", "") else ""
    device = f"@{kv['device']}" if "device" in kv else ""  # a GPU parse: stanza-1.15.0/synprep/de@cuda#...
    return f"{fields[0]}-{fields[1]}/{kv.get('package', '?')}/{kv.get('lang', '?')}{const}{device}#{digest}"


@dataclass(frozen=True)
class StanzaOptions:
    """``--stanza-dir``, ``--stanza-package`` (synprep.parse.base.plugin_option)."""

    dir: str | None = plugin_option(None, spec="dir", metavar="DIR", help="stanza resource directory (default: stanza's own).")
    package: str | None = plugin_option(None, spec="package", metavar="NAME", help="stanza package (default: stanza's default).")


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
    devices = ("cpu", "cuda")

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
        """:func:`short_identity` (``stanza-1.15.0/synprep/en+const#1a2b3c4d``)."""
        return short_identity(identity)

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

    @property
    def has_constituency(self) -> bool:
        return self.resources.has_constituency

    def parse(self, sentences: list[list[str]]) -> list[ParsedSentence]:
        """Parse sentences (word lists) in one stanza document.

        Returns:
            one :class:`ParsedSentence` per sentence: words as given, UPOS, 1-based heads
            (0 = root), UD relations, the constituency tree (leaves == words) or None, and the
            sparse LDD (``threshold = spec.ldd_threshold``).

        Raises:
            RuntimeError / ValueError: stanza failed, or changed the words (never expected).
        """
        if not sentences:
            return []
        if stanza_reproduced():  # stanza 1.15: its POS processor, with the label lookups vectorized
            doc = self.nlp([list(s) for s in sentences], processors="tokenize")
            self._pos(doc)
            doc = self.nlp(doc, processors="lemma")
        else:
            doc = self.nlp([list(s) for s in sentences], processors="tokenize,pos,lemma")
        ldds = self._depparse(doc)
        if self.has_constituency:
            doc = self.nlp(doc, processors="constituency")
        out = []
        for words, sent, ldd in zip(sentences, doc.sentences, ldds, strict=True):
            got = [w.text for w in sent.words]
            if got != list(words):
                raise ValueError(f"stanza changed the words: {words!r} -> {got!r}")
            tree = None
            if self.has_constituency and sent.constituency is not None:
                t = match_leaves(parse_tree(str(sent.constituency)), list(words))
                tree = tree_to_str(t)
            out.append(
                ParsedSentence(
                    words=list(words),
                    upos=[w.upos for w in sent.words],
                    heads=[int(w.head) for w in sent.words],
                    deprels=[w.deprel for w in sent.words],
                    tree=tree,
                    tree_source="constituency" if tree else None,
                    ldd=ldd,
                )
            )
        return out

    def _pos(self, doc) -> None:
        """stanza 1.15's ``POSProcessor.process``: the same batches and forward, labels looked up per batch.

        stanza's ``Trainer.predict`` maps every word's ids back to strings one by one in Python
        (``vocab.unmap``; the features' composite vocabulary formats ``key=value`` pairs for each
        word). Here each batch's argmax ids are gathered for the real words only and each distinct
        id (tuple) is mapped once with the same ``vocab.id2unit``, so the strings are stanza's
        (tests/test_parse_mst.py compares UPOS/XPOS/features with stanza's Pipeline).
        """
        import torch
        from stanza.models.common import doc as sdoc
        from stanza.models.common.utils import unsort
        from stanza.models.pos.data import Dataset
        from stanza.models.pos.trainer import unpack_batch

        pos = self.nlp.processors["pos"]
        cfg = pos.config
        dataset = Dataset(doc, cfg, pos.pretrain, vocab=pos.vocab, evaluation=True, sort_during_eval=True)
        loader = dataset.to_length_limited_loader(batch_size=cfg["batch_size"],
                                                  maximum_tokens=cfg.get("batch_maximum_tokens", 5000))
        trainer = pos.trainer
        model = trainer.model
        device = next(model.parameters()).device
        columns = [(k, c) for k, c in enumerate(model.tag_columns) if c.output]
        preds: list = []
        idx: list = []
        model.eval()
        with torch.no_grad():
            for b in loader:
                idx.extend(b[-1])
                inputs, orig_idx, word_orig_idx, sentlens, wordlens, text = unpack_batch(b, device)
                word, word_mask, wordchars, wordchars_mask, tags, pretrained = inputs
                _, out = model(word, word_mask, wordchars, wordchars_mask, tags, pretrained, word_orig_idx, sentlens,
                               wordlens, text)
                lengths = np.asarray(sentlens)
                real = np.arange(int(lengths.max()))[None, :] < lengths[:, None]  # (B, L) the real words
                seqs = [unmap_ids(trainer.vocab[c.name], out[k].cpu().numpy()[:, : real.shape[1]][real])
                        for k, c in columns]
                starts = np.concatenate([[0], np.cumsum(lengths)]).tolist()
                tokens = [[[seq[w] for seq in seqs] for w in range(starts[i], starts[i + 1])] for i in range(len(lengths))]
                preds += unsort(tokens, orig_idx)
        preds = unsort(preds, idx)
        dataset.doc.set([sdoc.UPOS, sdoc.XPOS, sdoc.FEATS], [y for x in preds for y in x])

    def depparse_batches(self, doc):
        """Run stanza's depparse model over a document's batches, as ``DepparseProcessor.process`` does.

        The same ``DataLoader(doc, ..., evaluation=True)`` batches and ``GraphParser.forward`` call;
        nothing is decoded here.

        Yields:
            ``(scores, sentlens, orig_idx)`` per batch: the model's three numpy score arrays (see
            :func:`decode_batch`), the nodes (words + 1) per sentence, and stanza's ``orig_idx``
            (the batch's order back to the length-sorted document order). The DataLoader is
            available as ``self.last_loader`` (its ``data_orig_idx`` restores document order).
        """
        import torch
        from stanza.models.depparse.data import DataLoader
        from stanza.models.depparse.trainer import unpack_batch
        from stanza.pipeline.depparse_processor import DEFAULT_SEPARATE_BATCH

        dp = self.depparse
        cfg = dp.config
        batch = DataLoader(
            doc,
            cfg["batch_size"],
            cfg,
            dp.pretrain,
            vocab=dp.vocab,
            evaluation=True,
            sort_during_eval=cfg.get("sort_during_eval", True),
            min_length_to_batch_separately=cfg.get("min_length_to_batch_separately", DEFAULT_SEPARATE_BATCH),
        )
        self.last_loader = batch
        model = dp.trainer.model
        device = model.get_device()
        model.eval()
        with torch.no_grad():
            for b in batch:
                inputs, orig_idx, word_orig_idx, sentlens, wordlens, text = unpack_batch(b, device)
                _, scores = model(*inputs, word_orig_idx, sentlens, wordlens, text)
                yield scores, sentlens, orig_idx

    def _depparse(self, doc) -> list[SparseLDD]:
        """stanza's DepparseProcessor.process, keeping the scores for the LDD."""
        from stanza.models.common import doc as sdoc
        from stanza.models.common.utils import unsort

        dp = self.depparse
        trainer = dp.trainer
        resolve = dp.config.get("resolve_head_constraints", True)
        reverse = trainer.args.get("reversed", False)
        preds: list = []
        ldds: list[SparseLDD] = []
        for scores, sentlens, orig_idx in self.depparse_batches(doc):
            if fast_decoder_available():
                tokens = decode_batch(scores, sentlens, dp.vocab["deprel"], self.relations, resolve)
            else:
                tokens = trainer.model.decode_graph_predictions(
                    dp.vocab["deprel"], len(sentlens), scores, sentlens, resolve_head_constraints=resolve
                )
            sparse = [
                sentence_ldd(scores[0][i], scores[2][i], sentlens[i] - 1, self.relations, self.spec.ldd_threshold)
                for i in range(len(sentlens))
            ]
            tokens = unsort(tokens, orig_idx)
            sparse = unsort(sparse, orig_idx)
            if reverse:
                tokens = trainer.reverse_predictions(tokens)
                sparse = [reverse_ldd(x, len(t)) for x, t in zip(sparse, tokens, strict=True)]
            preds += tokens
            ldds += sparse
        batch = self.last_loader
        if batch.data_orig_idx is not None:
            preds = unsort(preds, batch.data_orig_idx)
            ldds = unsort(ldds, batch.data_orig_idx)
        batch.doc.set((sdoc.HEAD, sdoc.DEPREL), [y for x in preds for y in x])
        for sentence in batch.doc.sentences:
            sentence.build_dependencies()
        return ldds


def sentence_ldd(
    head_logp: np.ndarray, rel_logp: np.ndarray, n: int, relations: list[str], threshold: float
) -> SparseLDD:
    """Sparse LDD of one sentence from stanza's biaffine log-probabilities (SPEC.md §4).

    Args:
        head_logp: (L, L) float, L >= n+1: log-softmax over head candidates (row = dependent,
            column = head, index 0 = ROOT); only the first n+1 rows/columns are used, and each row
            is renormalized over them (padding columns carry mass in stanza's batch softmax).
        rel_logp: (L, L, R) float: log-softmax over relations for every (dependent, head) arc.
        n: number of words.
        relations: (R,) relation names of the R label columns.
        threshold: keep entries with probability >= threshold, and each word's most probable
            entry whatever its probability (so no word is left without one).

    Returns:
        SparseLDD with 1-based ``dep``, ``head`` (0 = root), sorted by dep then head then relation.
    """
    h = np.asarray(head_logp[1 : n + 1, : n + 1], dtype=np.float64)  # (n, n+1)
    h = h - np.logaddexp.reduce(h, axis=1, keepdims=True)
    joint = h[:, :, None] + np.asarray(rel_logp[1 : n + 1, : n + 1, :], dtype=np.float64)  # (n, n+1, R)
    logt = np.log(threshold) if threshold > 0 else -np.inf
    keep = joint >= logt if threshold > 0 else np.isfinite(joint)
    best = joint.reshape(n, -1).argmax(axis=1)  # each word's most probable (head, relation)
    keep.reshape(n, -1)[np.arange(n), best] = True
    dep, head, rel = np.nonzero(keep)
    prob = np.exp(joint[dep, head, rel]).astype(np.float32)
    return SparseLDD(
        dep=(dep + 1).astype(np.int32),
        head=head.astype(np.int32),
        rel=[relations[r] for r in rel],
        prob=prob,
        threshold=float(threshold),
    )


def reverse_ldd(ldd: SparseLDD, n: int) -> SparseLDD:
    """Map an LDD computed on the reversed sentence back to the original word order."""
    dep = (n + 1 - ldd.dep).astype(np.int32)
    head = np.where(ldd.head == 0, 0, n + 1 - ldd.head).astype(np.int32)
    order = np.lexsort((head, dep))
    return SparseLDD(dep[order], head[order], [ldd.rel[i] for i in order], ldd.prob[order], ldd.threshold)


def ldd_argmax(ldd: SparseLDD, n: int) -> tuple[list[int], list[str | None]]:
    """The most probable (head, relation) of each word 1..n in a sparse LDD (None when a row is empty)."""
    best: list[tuple[float, int, str | None]] = [(-1.0, -1, None)] * n
    for d, h, r, p in zip(ldd.dep, ldd.head, ldd.rel, ldd.prob, strict=True):
        if p > best[d - 1][0]:
            best[d - 1] = (float(p), int(h), r)
    return [b[1] for b in best], [b[2] for b in best]

