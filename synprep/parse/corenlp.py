"""Stanford CoreNLP through ``stanza.server.CoreNLPClient`` (needs ``$CORENLP_HOME`` and Java).

Request (:func:`corenlp_request`): one sentence per line, words joined by single spaces, with
``tokenize.whitespace=true`` (split on spaces only: no re-tokenization) and
``ssplit.eolonly=true`` (one sentence per line), annotators ``tokenize,ssplit,pos,parse,depparse``,
serialized (protobuf) output. Non-English languages add CoreNLP's ``pipelineLanguage``.

Response (:func:`document_to_sentences`): per sentence, the words are ours (the token count
must match, each token must spell its word, PTB bracket escapes allowed), heads and relations
from ``basicDependencies`` (UD relations in CoreNLP 4.x; root → head 0, ``root``), the tree
from ``parseTree`` (leaves checked against the words), UPOS from the token's ``coarseTag`` when
the server sets one, else mapped from the PTB tag (:func:`ptb_to_upos`). CoreNLP gives no arc
scores: ``ldd`` is None (the features stage uses one-hot rows, SPEC.md §4).

Timeouts: every request is bounded (``spec.timeout`` seconds, stanza's client waits up to
twice its timeout for the HTTP reply) and a server that does not come up fails after at most
``max(30, spec.timeout)`` seconds — a hung server makes the batch fail, it never hangs the run.
No CoreNLP can run on the machines this project is tested on: the request building and the
response conversion are tested on protobuf Documents built with ``stanza.protobuf``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from synprep.errors import ConfigError
from synprep.parse.base import PARSE_SCHEMA, ParserBackend, ParserSpec, plugin_option
from synprep.parse.trees import leaf_to_word, match_leaves, parse_tree, tree_to_str
from synprep.signature import package_version
from synprep.types import ParsedSentence

ANNOTATORS = "tokenize,ssplit,pos,parse,depparse"

#: CoreNLP's language names (``pipelineLanguage``) for the codes it supports
CORENLP_LANGUAGES = {
    "ar": "arabic", "zh": "chinese", "en": "english", "fr": "french", "de": "german",
    "hu": "hungarian", "it": "italian", "es": "spanish",
}  # fmt: skip

#: Penn Treebank tag → UD v2 UPOS (the usual conversion table; see :func:`ptb_to_upos`)
PTB_UPOS = {
    "CC": "CCONJ", "CD": "NUM", "DT": "DET", "EX": "PRON", "FW": "X", "IN": "ADP", "JJ": "ADJ",
    "JJR": "ADJ", "JJS": "ADJ", "LS": "X", "MD": "AUX", "NN": "NOUN", "NNS": "NOUN", "NNP": "PROPN",
    "NNPS": "PROPN", "PDT": "DET", "POS": "PART", "PRP": "PRON", "PRP$": "PRON", "RB": "ADV",
    "RBR": "ADV", "RBS": "ADV", "RP": "ADP", "SYM": "SYM", "TO": "PART", "UH": "INTJ", "VB": "VERB",
    "VBD": "VERB", "VBG": "VERB", "VBN": "VERB", "VBP": "VERB", "VBZ": "VERB", "WDT": "DET",
    "WP": "PRON", "WP$": "PRON", "WRB": "ADV", ".": "PUNCT", ",": "PUNCT", ":": "PUNCT",
    "``": "PUNCT", "''": "PUNCT", "-LRB-": "PUNCT", "-RRB-": "PUNCT", "HYPH": "PUNCT",
    "NFP": "PUNCT", "#": "SYM", "$": "SYM", "ADD": "X", "AFX": "ADJ", "GW": "X", "XX": "X",
}  # fmt: skip


def ptb_to_upos(tag: str, deprel: str | None = None) -> str:
    """UPOS of a PTB tag; the relation refines two tags the table cannot decide.

    ``IN`` attached as ``mark`` is ``SCONJ``; a verb tag (``VB*``) attached as ``aux``,
    ``aux:pass`` or ``cop`` is ``AUX``. Unknown tags give ``X``.
    """
    base = (deprel or "").split(":")[0]
    if tag == "IN" and base == "mark":
        return "SCONJ"
    if tag.startswith("VB") and base in ("aux", "cop"):
        return "AUX"
    return PTB_UPOS.get(tag, "X")


def corenlp_properties(lang: str) -> dict[str, str]:
    """Request properties: whitespace tokenization, one sentence per line, serialized output."""
    props = {
        "annotators": ANNOTATORS,
        "tokenize.whitespace": "true",
        "ssplit.eolonly": "true",
        "outputFormat": "serialized",
    }
    if lang != "en":
        if lang not in CORENLP_LANGUAGES:
            raise ConfigError(f"CoreNLP has no models for language {lang!r} (it has {', '.join(sorted(CORENLP_LANGUAGES))})")
        props["pipelineLanguage"] = CORENLP_LANGUAGES[lang]
    return props


def corenlp_request(sentences: list[list[str]], lang: str = "en") -> tuple[str, dict[str, str]]:
    """The text and properties of one request: ``(one sentence per line, properties)``.

    Raises:
        ValueError: a word is empty or holds whitespace (it would change the tokenization).
    """
    for words in sentences:
        for w in words:
            if not w or any(c.isspace() for c in w):
                raise ValueError(f"word {w!r} cannot be sent with tokenize.whitespace")
    return "\n".join(" ".join(words) for words in sentences), corenlp_properties(lang)


def parse_tree_to_str(node) -> str:
    """Bracketed string of a CoreNLP ``ParseTree`` protobuf (leaf values are the words)."""
    if not node.child:
        return node.value.replace("(", "-LRB-").replace(")", "-RRB-")
    return "(" + node.value + " " + " ".join(parse_tree_to_str(c) for c in node.child) + ")"


def document_to_sentences(doc, sentences: list[list[str]]) -> list[ParsedSentence]:
    """Convert a CoreNLP protobuf ``Document`` to our sentences (see the module docstring).

    Args:
        doc: ``stanza.protobuf.Document`` answered by the server.
        sentences: the word lists that were sent, in order.

    Raises:
        ValueError: the server split or tokenized differently, a word has no head, or the tree's
            leaves are not the words.
    """
    if len(doc.sentence) != len(sentences):
        raise ValueError(f"CoreNLP returned {len(doc.sentence)} sentences for {len(sentences)}")
    out = []
    for k, (sent, words) in enumerate(zip(doc.sentence, sentences, strict=True), 1):
        n = len(words)
        tokens = list(sent.token)
        if len(tokens) != n:
            raise ValueError(f"sentence {k}: CoreNLP returned {len(tokens)} tokens for {n} words")
        for i, (tok, w) in enumerate(zip(tokens, words, strict=True), 1):
            if tok.word != w and leaf_to_word(tok.word) != w:
                raise ValueError(f"sentence {k}: token {i} is {tok.word!r}, expected {w!r}")
        heads = [-1] * n
        deprels = [""] * n
        graph = sent.basicDependencies
        for edge in graph.edge:
            if not 1 <= edge.target <= n or not 0 <= edge.source <= n:
                raise ValueError(f"sentence {k}: dependency edge {edge.source}->{edge.target} out of range")
            heads[edge.target - 1] = edge.source
            deprels[edge.target - 1] = edge.dep
        for r in graph.root:
            heads[r - 1] = 0
            deprels[r - 1] = "root"
        missing = [i + 1 for i, h in enumerate(heads) if h < 0]
        if missing:
            raise ValueError(f"sentence {k}: no head for words {missing}")
        upos = [tok.coarseTag or ptb_to_upos(tok.pos, d) for tok, d in zip(tokens, deprels, strict=True)]
        tree = None
        if sent.HasField("parseTree"):
            t = parse_tree(parse_tree_to_str(sent.parseTree))
            tree = tree_to_str(match_leaves(t, list(words)))
        out.append(
            ParsedSentence(
                words=list(words),
                upos=upos,
                heads=heads,
                deprels=deprels,
                tree=tree,
                tree_source="constituency" if tree else None,
                ldd=None,
            )
        )
    return out


def corenlp_home() -> Path:
    """``$CORENLP_HOME`` as a directory.

    Raises:
        ConfigError: unset, or not a directory.
    """
    home = os.environ.get("CORENLP_HOME")
    if not home:
        raise ConfigError(
            "--parser corenlp needs a CoreNLP installation: set CORENLP_HOME to its folder "
            "(e.g. after python -c 'import stanza; stanza.install_corenlp()'), and have java on PATH"
        )
    path = Path(home).expanduser()
    if not path.is_dir():
        raise ConfigError(f"CORENLP_HOME={home} is not a directory")
    return path


def corenlp_identity(spec: ParserSpec) -> str:
    """``corenlp|STANZA VERSION|lang=..|annotators=..|jars=HASH``: the jars' names and sizes.

    Raises:
        ConfigError: no ``$CORENLP_HOME`` (see :func:`corenlp_home`).
    """
    home = corenlp_home()
    jars = sorted(home.glob("*.jar"))
    h = hashlib.sha256("\n".join(f"{j.name}:{j.stat().st_size}" for j in jars).encode()).hexdigest()[:16]
    return "|".join(["corenlp", package_version("stanza"), f"lang={spec.lang}", f"annotators={ANNOTATORS}", f"jars={h}",
                     f"schema={PARSE_SCHEMA}"])


@dataclass(frozen=True)
class CoreNLPOptions:
    """``--corenlp-endpoint``, ``--corenlp-timeout`` (also ``--timeout``, its earlier name)."""

    endpoint: str = plugin_option("http://localhost:9000", spec="corenlp_endpoint", metavar="URL",
                                  help="CoreNLP server URL (--parser corenlp).")
    timeout: float = plugin_option(60.0, spec="timeout", alias="--timeout", type=click.FloatRange(min=1.0),
                                   help="Seconds a CoreNLP request may take (--parser corenlp).")


class CoreNLPParser(ParserBackend):
    """A CoreNLP server client (started from ``$CORENLP_HOME`` unless one already listens); registry name
    ``corenlp``. No arc scores: ``ldd`` is None (one-hot rows).

    Raises:
        ConfigError: no ``$CORENLP_HOME``, or an unsupported language.
    """

    name = "corenlp"
    has_scores = False
    Options = CoreNLPOptions

    @classmethod
    def identity(cls, spec: ParserSpec) -> str:
        """:func:`corenlp_identity`."""
        return corenlp_identity(spec)

    @classmethod
    def probe(cls) -> dict[str, Any]:
        """``$CORENLP_HOME``, its CoreNLP jars and java: installed when both are there."""
        import shutil

        home = os.environ.get("CORENLP_HOME")
        jars = sorted(p.name for p in Path(home).glob("stanford-corenlp-*.jar")) if home and Path(home).is_dir() else []
        return {"installed": bool(jars) and shutil.which("java") is not None, "CORENLP_HOME": home,
                "jars": jars, "java": shutil.which("java")}

    @classmethod
    def signature_name(cls, spec: ParserSpec) -> str:
        """``corenlp-corenlp/LANG/default`` (as the pipeline signature always wrote it)."""
        return f"corenlp-corenlp/{spec.lang}/default"

    def __init__(self, spec: ParserSpec, device: str | None = None):
        from stanza.server import CoreNLPClient, StartServer

        corenlp_home()
        super().__init__(spec, device)
        self.properties = corenlp_properties(spec.lang)
        self.client = CoreNLPClient(
            start_server=StartServer.TRY_START,
            endpoint=spec.corenlp_endpoint,
            timeout=int(spec.timeout * 1000),
            annotators=ANNOTATORS,
            properties=dict(self.properties),
            output_format="serialized",
            be_quiet=True,
            threads=1,
        )
        self.client.CHECK_ALIVE_TIMEOUT = max(30, int(spec.timeout))

    def parse(self, sentences: list[list[str]]) -> list[ParsedSentence]:
        """Parse sentences in one request (raises on any server or conversion failure)."""
        if not sentences:
            return []
        text, props = corenlp_request(sentences, self.spec.lang)
        doc = self.client.annotate(text, properties=props)
        return document_to_sentences(doc, sentences)

    def close(self) -> None:
        self.client.stop()
