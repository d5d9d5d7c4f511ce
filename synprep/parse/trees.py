"""Bracketed constituency trees: reading, normalizing and matching their leaves to words.

Accepted input (SPEC.md §1, §2): Penn-Treebank-style brackets as read by :class:`nltk.Tree`,

* one or more trees per line (``--trees FILE``: line *i* holds the tree(s) of input line *i*;
  several trees on one line are the line's sentences), or
* multi-line PTB ``.mrg`` files (:func:`read_mrg`), trees wrapped as ``( (S ...) )``.

Normalization (:func:`normalize_tree`), so that every tree synprep stores looks like stanza's:

* function tags and indices are removed: ``NP-SBJ-1`` → ``NP``, ``NP=2`` → ``NP``, ``S-TPC-1`` → ``S``
  (labels that *start* with ``-``, like ``-NONE-``, ``-LRB-``, are kept whole);
* ``-NONE-`` empty elements are removed, together with every constituent left without words;
* the top node is ``ROOT``: an unlabeled wrapper ``( ...)`` or ``TOP`` is renamed, any other top
  label gets a ``ROOT`` above it;
* trees without POS preterminals are accepted: a word that is a bare child of a phrase *with
  siblings* gets its own preterminal ``(X word)``; a phrase whose only child is a word is already
  a preterminal. Neither changes a syntactic distance (SPEC.md §2 collapses unary chains).

Leaves and words: a stored tree's leaves are the line's words (Moses tokens, unescaped) with only
``(`` and ``)`` written as ``-LRB-`` / ``-RRB-`` (stanza and the PTB do the same), so that the
string stays parseable. :func:`tree_words` turns the leaves back into words. When a tree is matched
against words (:func:`match_leaves`), a leaf matches a word when it is equal to it, or equal after
undoing the PTB bracket escapes (``-LRB- -RRB- -LSB- -RSB- -LCB- -RCB-``) or the Moses escapes
(``&apos;`` ...). Any other difference is an :class:`~synprep.errors.InputError` naming the line and
the first differing word — never a silent fallback (the reference code fell back to distance 1).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator

from nltk import Tree

from synprep.errors import InputError
from synprep.text.escape import unescape as moses_unescape
from synprep.textio import PathLike, display_name, iter_lines

#: PTB bracket escapes (leaf text → word)
PTB_ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}
#: the escapes a stored leaf needs (word → leaf): only round brackets break bracket parsing
_LEAF_ESCAPES = {"(": "-LRB-", ")": "-RRB-"}

ROOT = "ROOT"
#: label given to a bare word that had siblings (no POS preterminal in the input)
BARE_WORD_LABEL = "X"

_TAG_SPLIT = re.compile(r"[-=]")


def word_to_leaf(word: str) -> str:
    """The leaf text that stands for ``word`` in a stored tree (``(`` → ``-LRB-``, ``)`` → ``-RRB-``)."""
    return _LEAF_ESCAPES.get(word, word)


def leaf_to_word(leaf: str) -> str:
    """Undo the PTB bracket escapes of a leaf (``-LRB-`` → ``(``); other leaves are unchanged."""
    return PTB_ESCAPES.get(leaf, leaf)


def clean_label(label: str) -> str:
    """Strip function tags and indices: ``NP-SBJ-1`` → ``NP``, ``NP=2`` → ``NP``; ``-NONE-`` stays."""
    if label.startswith("-"):
        return label
    base = _TAG_SPLIT.split(label, maxsplit=1)[0]
    return base or label


def _strip(t: Tree) -> Tree | None:
    """Copy of ``t`` without -NONE- elements, empty constituents and function tags (None if empty)."""
    if t.label() == "-NONE-":
        return None
    kids: list[Tree | str] = []
    for child in t:
        if isinstance(child, Tree):
            c = _strip(child)
            if c is not None:
                kids.append(c)
        else:
            kids.append(child)
    if not kids:
        return None
    if len(kids) > 1:  # a bare word beside other children gets its own preterminal
        kids = [Tree(BARE_WORD_LABEL, [k]) if isinstance(k, str) else k for k in kids]
    return Tree(clean_label(t.label()), kids)


def normalize_tree(tree: Tree) -> Tree:
    """Normalize a tree as described in the module docstring (returns a new tree).

    Raises:
        ValueError: the tree has no words left after removing empty elements.
    """
    top_label = tree.label()
    stripped = _strip(tree)
    if stripped is None:
        raise ValueError("the tree has no words (only empty elements)")
    if top_label in ("", "TOP", ROOT):
        stripped.set_label(ROOT)
        return stripped
    return Tree(ROOT, [stripped])


def tree_to_str(tree: Tree) -> str:
    """One-line bracketed string of ``tree`` (``(ROOT (S (NP (PRP I)) ...))``)."""
    return tree.pformat(margin=sys.maxsize)


def tree_words(tree: str | Tree) -> list[str]:
    """The words of a stored tree: its leaves with the PTB bracket escapes undone."""
    if isinstance(tree, str):
        tree = Tree.fromstring(tree)
    return [leaf_to_word(leaf) for leaf in tree.leaves()]


def split_brackets(text: str) -> list[str]:
    """Cut a string into its top-level balanced ``( ... )`` groups.

    Raises:
        ValueError: unbalanced brackets, or text outside every bracket.
    """
    groups = []
    depth = 0
    start = -1
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ')' at character {i + 1}")
            if depth == 0:
                groups.append(text[start : i + 1])
        elif depth == 0 and not ch.isspace():
            raise ValueError(f"text outside brackets at character {i + 1}: {text[i : i + 20]!r}")
    if depth != 0:
        raise ValueError(f"{depth} unclosed '(' at the end")
    return groups


def parse_tree(text: str, path: str | None = None, line: int | None = None) -> Tree:
    """Parse and normalize one bracketed tree.

    Args:
        text: ``(ROOT (S ...))``, ``( (S ...))``, ``(S (NP-SBJ ...) ...)`` ...
        path, line: where the text comes from, for error messages (1-based line).

    Raises:
        InputError: not a single well-formed bracketed tree, or no words in it.
    """
    try:
        groups = split_brackets(text)
        if len(groups) != 1:
            raise ValueError(f"expected one tree, found {len(groups)}")
        return normalize_tree(Tree.fromstring(groups[0]))
    except ValueError as e:
        from synprep.features.distance import depth_message

        raise InputError(f"bad bracketed tree: {depth_message(str(e))}", path, line) from None


def parse_trees(text: str, path: str | None = None, line: int | None = None) -> list[Tree]:
    """Parse every tree on one line (``(ROOT ...) (ROOT ...)``; ``[]`` for a blank line).

    Raises:
        InputError: unbalanced or malformed brackets, or a tree without words.
    """
    try:
        groups = split_brackets(text)
    except ValueError as e:
        raise InputError(f"bad bracketed tree: {e}", path, line) from None
    return [parse_tree(g, path, line) for g in groups]


def match_leaves(tree: Tree, words: list[str], path: str | None = None, line: int | None = None) -> Tree:
    """Check that ``tree``'s leaves are ``words`` and rewrite them to the canonical leaf text.

    Args:
        tree: a normalized tree (modified in place).
        words: (n,) the words of the sentence (Moses tokens, unescaped).

    Returns:
        the same tree, its leaves now ``word_to_leaf(w)`` for each word.

    Raises:
        InputError: different number of leaves, or a leaf that matches no spelling of its word;
            the message names the 1-based word position and both spellings.
    """
    positions = tree.treepositions("leaves")
    if len(positions) != len(words):
        raise InputError(
            f"the tree has {len(positions)} leaves but the line has {len(words)} words", path, line
        )
    for k, (pos, word) in enumerate(zip(positions, words, strict=True), 1):
        leaf = tree[pos]
        if leaf != word and leaf_to_word(leaf) != word and moses_unescape(leaf) != word:
            raise InputError(f"tree leaf {k} is {leaf!r} but word {k} of the line is {word!r}", path, line)
        tree[pos] = word_to_leaf(word)
    return tree


def read_tree_lines(path: PathLike) -> Iterator[tuple[int, list[Tree]]]:
    """Read a file with the tree(s) of one sentence line per line.

    Yields:
        ``(line, trees)``: 1-based line number and its normalized trees (``[]`` for a blank line).

    Raises:
        InputError: a malformed line (named by file and line).
    """
    name = display_name(path)
    for lineno, text in enumerate(iter_lines(path), 1):
        yield lineno, parse_trees(text, name, lineno)


def read_mrg(path: PathLike) -> Iterator[tuple[int, Tree]]:
    """Read a Penn Treebank ``.mrg`` file: trees spread over several lines, ``( (S ...) )`` wrappers.

    Yields:
        ``(line, tree)``: the 1-based line where the tree starts, and the normalized tree.

    Raises:
        InputError: unbalanced brackets or a malformed tree (naming the tree's first line).
    """
    name = display_name(path)
    buf: list[str] = []
    depth = 0
    start = 0
    for lineno, text in enumerate(iter_lines(path), 1):
        if depth == 0:
            if not text.strip():
                continue
            if not text.lstrip().startswith("("):
                raise InputError(f"text outside a tree: {text.strip()[:40]!r}", name, lineno)
            start = lineno
        buf.append(text)
        depth += text.count("(") - text.count(")")
        if depth < 0:
            raise InputError("unbalanced ')'", name, lineno)
        if depth == 0:
            for tree in parse_trees(" ".join(buf), name, start):
                yield start, tree
            buf = []
    if depth:
        raise InputError("the last tree is not closed (missing ')')", name, start)
