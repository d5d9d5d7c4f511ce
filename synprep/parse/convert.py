"""TIGER-XML and NEGRA export treebanks (discontinuous) → one bracketed tree per line, via treetools.

German treebanks (TIGER, NEGRA, TüBa-D/Z) store *discontinuous* constituents: a node's words need
not be adjacent, and punctuation hangs from the virtual root ``VROOT``. synprep's syntactic
distances (SPEC.md §2) need continuous (context-free) trees. The conversion is done by the
maintained ``treetools`` library (Maier; PyPI ``treetools``, GPL-3.0-or-later, Python ≥ 3.11,
installed with ``pip install 'synprep[trees]'``), with the transformation chain its README gives
for TIGER (the one of Maier & Kallmeyer's discontinuous-parsing work):

0. (synprep) a sentence without a ``VROOT`` (SQUOIA's files: punctuation left unattached) gets
   one: every parentless node becomes its child (:func:`add_virtual_root`);
1. ``root_attach`` — re-attach the children of ``VROOT`` (punctuation) below the lowest node
   that spans their neighbours;
2. ``negra_mark_heads`` — mark each node's head child (``HD`` edge, else the rightmost ``NK``);
3. ``boyd_split`` — split each discontinuous node into one node per continuous block
   (Boyd 2007, ACL Linguistic Annotation Workshop);
4. ``raising`` — keep the block with the head, raise the children of the other blocks.

The result is written with synprep's own tree normalization (:mod:`synprep.parse.trees`): the
top node ``ROOT``, ``$(`` spelled ``$LRB``, the words as they are in the treebank (only ``(`` and
``)`` leaves written ``-LRB-``/``-RRB-``), edge labels (grammatical functions) dropped.

Readers are a registry (:data:`READERS`): a new treebank format is one function and one line.

Penn Treebank ``.mrg`` files (format ``ptb``: one file, or a folder read recursively in sorted path
order) need no conversion and no treetools: their trees are read as ``--trees`` reads them
(:func:`synprep.parse.trees.read_mrg`) and written one per line with the ``-NONE-`` empty elements and
the constituents left without words removed (:func:`synprep.tree.drop_empty_elements`), every label
kept as it is (``NP-SBJ-1``: reading ``--trees`` removes function tags and indices), the wrapper
``( (S ...) )`` labeled ``ROOT``.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import logging
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nltk import Tree

from synprep.errors import ConfigError, InputError
from synprep.parse.trees import normalize_tree, read_mrg, tree_to_str, tree_words
from synprep.textio import PathLike, display_name
from synprep.tree import drop_empty_elements

log = logging.getLogger("synprep")

#: treetools transformations applied in order (see the module docstring)
TRANSFORMS = ("root_attach", "negra_mark_heads", "boyd_split", "raising")

#: file name endings that name their format when ``--from`` is not given
SUFFIXES = {".xml": "tigerxml", ".xml.gz": "tigerxml", ".export": "export", ".export.gz": "export",
            ".negra": "export", ".mrg": "ptb", ".mrg.gz": "ptb"}
#: the format of Penn Treebank ``.mrg`` files (read without treetools: :func:`read_ptb`)
PTB = "ptb"


def _treetools() -> Any:
    try:
        from treetools import transform, treeanalysis, treeinput, trees
    except ImportError:
        need = "" if sys.version_info >= (3, 11) else " (it needs Python >= 3.11)"
        raise ConfigError(
            "converting TIGER-XML/NEGRA export needs the treetools library"
            f"{need}: pip install 'synprep[trees]'"
        ) from None
    return treeanalysis, treeinput, trees, transform


def _read_tigerxml(path: Path, encoding: str | None = None) -> Iterator[tuple[str, Any]]:
    """Yield ``(sentence id, treetools tree)`` for each ``<s>`` of a TIGER-XML file (streamed).

    Raises:
        ConfigError: an ``encoding`` (the XML declaration names the file's own).
    """
    if encoding is not None:
        raise ConfigError("--encoding applies to NEGRA export only: a TIGER-XML file declares its own")
    _, treeinput, _, _ = _treetools()
    name = display_name(path)
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            yield from _tiger_sentences(ET.iterparse(f, events=("end",)), treeinput, name)
    except ET.ParseError as e:
        line, col = e.position
        what = str(e).split(": line ")[0]
        raise InputError(f"not well-formed XML at column {col + 1}: {what}", name, line) from None
    except (OSError, EOFError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise InputError(f"cannot read it: {e}", name) from None


def add_virtual_root(s_element: Any) -> int:
    """Attach the orphans of a TIGER-XML ``<s>`` to a new virtual root; returns how many it attached.

    A file without a ``VROOT`` node (e.g. SQUOIA's) leaves punctuation unattached: the sentence has
    several parentless nodes, which treetools refuses ("multiple roots"). Each parentless terminal
    and nonterminal becomes a child (edge ``--``) of a new ``<nt cat="VROOT">``, in document order,
    as TIGER's own VROOT holds the sentence node and the punctuation; ``root_attach`` then attaches
    the punctuation below the lowest node spanning its neighbours, as for every TIGER file.
    Nothing changes (0) for a sentence with one parentless node.
    """
    graph = s_element.find("graph")
    terminals, nonterminals = graph.find("terminals"), graph.find("nonterminals")
    if terminals is None:
        return 0
    if nonterminals is None:
        nonterminals = ET.SubElement(graph, "nonterminals")
    nodes = [n.get("id") for n in [*terminals.findall("t"), *nonterminals.findall("nt")]]
    children = {e.get("idref") for nt in nonterminals.findall("nt") for e in nt.findall("edge")}
    orphans = [i for i in nodes if i not in children]
    if len(orphans) < 2:
        return 0
    root_id = f"{s_element.get('id') or 's'}_VROOT"
    while root_id in nodes:
        root_id += "_"
    root = ET.SubElement(nonterminals, "nt", {"id": root_id, "cat": "VROOT"})
    for i in orphans:
        ET.SubElement(root, "edge", {"label": "--", "idref": i})
    graph.set("root", root_id)
    return len(orphans)


def _tiger_sentences(events: Iterator[tuple[str, Any]], treeinput: Any, name: str) -> Iterator[tuple[str, Any]]:
    """The ``<s>`` elements of an iterparse stream as treetools trees, each element freed after use
    (orphans attached to a virtual root first: :func:`add_virtual_root`)."""
    rooted = 0
    for _, elem in events:
        if elem.tag != "s":
            continue
        sid = elem.get("id") or "?"
        try:
            rooted += add_virtual_root(elem) > 0
            tree = treeinput.tigerxml_build_tree(elem)
        except (ValueError, KeyError, AttributeError) as e:
            raise InputError(f"TIGER-XML sentence {sid}: {e or type(e).__name__}", name) from None
        yield sid, tree
        elem.clear()
    if rooted:
        log.info("%s: %d sentence(s) without a VROOT: their parentless nodes (punctuation) were attached to a "
                 "virtual root", name, rooted)


def _read_export(path: Path, encoding: str | None = None) -> Iterator[tuple[str, Any]]:
    """Yield ``(#BOS number, treetools tree)`` for each sentence of a NEGRA export (format 3 or 4).

    ``encoding``: the file's (default UTF-8; NEGRA and older TIGER exports are often ``latin-1``).
    """
    _, treeinput, _, _ = _treetools()
    name = display_name(path)
    enc = encoding or "utf-8"
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            for tree in treeinput.export(str(path), enc):
                yield str(tree.data.get("sid")), tree
    except UnicodeDecodeError as e:
        raise InputError(f"not {enc} at byte {e.start} (another encoding? --encoding latin-1)", name) from None
    except (ValueError, IndexError, KeyError) as e:
        raise InputError(f"NEGRA export: {e or type(e).__name__}", name) from None
    except LookupError:
        raise ConfigError(f"unknown encoding {enc!r}") from None


#: format name → reader yielding ``(sentence id, treetools tree)``
READERS: dict[str, Callable[[Path, str | None], Iterator[tuple[str, Any]]]] = {
    "tigerxml": _read_tigerxml,
    "export": _read_export,
}


def formats() -> list[str]:
    """Every ``--from`` format: the treetools readers' and ``ptb``."""
    return [*READERS, PTB]


def ptb_files(path: PathLike) -> list[Path]:
    """The ``.mrg`` files of ``path``: the file itself, or a folder's ``*.mrg`` / ``*.mrg.gz`` files at any
    depth in sorted path order (``wsj/00/wsj_0001.mrg`` before ``wsj/01/…``).

    Raises:
        InputError: no such file or folder, or a folder without ``.mrg`` files.
    """
    p = Path(path)
    if p.is_dir():
        found = sorted(f for f in p.rglob("*") if f.is_file() and f.name.lower().endswith((".mrg", ".mrg.gz")))
        if not found:
            raise InputError("a folder without .mrg files", display_name(p))
        return found
    if not p.exists():
        raise InputError("no such file", display_name(p))
    return [p]


def read_ptb(path: PathLike) -> Iterator[tuple[str, Tree]]:
    """Yield ``(FILE:LINE, tree)`` for each tree of a ``.mrg`` file or folder (:func:`ptb_files`), without
    ``-NONE-`` elements, labels kept (module docstring).

    Raises:
        InputError: unbalanced brackets, text outside a tree, or a tree of empty elements only (file and line).
    """
    for f in ptb_files(path):
        name = display_name(f)
        for line, tree in read_mrg(f, drop_empty_elements):
            yield f"{name}:{line}", tree


def guess_format(path: PathLike) -> str:
    """The format named by the file's ending (:data:`SUFFIXES`); a folder holds ``.mrg`` files (``ptb``).

    Raises:
        ConfigError: an ending that names no format (give ``--from``).
    """
    if Path(path).is_dir():
        return PTB
    name = str(path).lower()
    for suffix, fmt in sorted(SUFFIXES.items(), key=lambda kv: -len(kv[0])):
        if name.endswith(suffix):
            return fmt
    raise ConfigError(f"cannot tell the treebank format of {path}; give --from {'|'.join(formats())}")


def _to_nltk(node: Any, trees: Any) -> Tree | str:
    """treetools node → nltk Tree (label only; the edge label is dropped); a terminal → its word."""
    kids = trees.children(node)
    if not kids:
        return Tree(node.data["label"] or "X", [node.data["word"]])
    return Tree(node.data["label"] or "", [_to_nltk(k, trees) for k in kids])


def convert_treebank(path: PathLike, fmt: str | None = None, encoding: str | None = None
                     ) -> Iterator[tuple[str, Tree]]:
    """Read a discontinuous treebank and yield its sentences as continuous, normalized trees (a PTB
    ``.mrg`` file or folder: its trees without empty elements, :func:`read_ptb`).

    Args:
        path: a TIGER-XML file or a NEGRA export file (either may be gzipped: ``.gz``), or ``.mrg`` files.
        fmt: ``"tigerxml"``, ``"export"`` (:data:`READERS`) or ``"ptb"``; None guesses it from the ending.
        encoding: the export file's encoding (default UTF-8); an error with TIGER-XML.

    Yields:
        ``(sentence id, tree)`` in file order; the tree's leaves are the sentence's words in
        order (see :func:`synprep.parse.trees.tree_words`).

    Raises:
        ConfigError: unknown format, or treetools not installed.
        InputError: malformed file or a sentence treetools cannot build or make continuous,
            naming the file and the sentence id.
    """
    fmt = fmt or guess_format(path)
    if fmt == PTB:
        if encoding is not None:
            raise ConfigError("--encoding applies to NEGRA export only: .mrg files are read as UTF-8")
        yield from read_ptb(path)
        return
    if fmt not in READERS:
        raise ConfigError(f"unknown treebank format {fmt!r}; known: {', '.join(formats())}")
    treeanalysis, _, trees, transform = _treetools()
    p = Path(path)
    if p.is_dir():
        raise InputError("is a directory, not a treebank file", display_name(p))
    if not p.exists():
        raise InputError("no such file", display_name(p))
    name = display_name(p)
    for sid, tt in READERS[fmt](p, encoding):
        words = [t.data["word"] for t in trees.terminals(tt)]
        try:
            for step in TRANSFORMS:
                tt = getattr(transform, step)(tt)
            if treeanalysis.gap_degree(tt) > 0:
                raise ValueError("still discontinuous after raising")
            tree = normalize_tree(_to_nltk(tt, trees))  # type: ignore[arg-type]
        except (ValueError, KeyError, IndexError) as e:
            raise InputError(f"sentence {sid}: cannot make the tree continuous: {e}", name) from None
        if tree_words(tree) != words:
            raise InputError(f"sentence {sid}: the converted tree lost or reordered words", name)
        yield sid, tree


def convert_lines(path: PathLike, fmt: str | None = None, encoding: str | None = None
                  ) -> Iterator[tuple[str, str, str]]:
    """:func:`convert_treebank` as text: ``(sentence id, bracketed tree, words joined by spaces)``."""
    for sid, tree in convert_treebank(path, fmt, encoding):
        yield sid, tree_to_str(tree), " ".join(tree_words(tree))
