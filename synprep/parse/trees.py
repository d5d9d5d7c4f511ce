"""Bracketed constituency trees: reading, normalizing and matching their leaves to words.

Accepted input (SPEC.md §1, §2): Penn-Treebank-style brackets, read into :class:`nltk.Tree` by
:func:`split_brackets`' scanner, which (unlike nltk's reader) also takes labels that end in a
bracket, like TIGER/NEGRA's ``$(`` (``($( -)``, ``($( ()``), and names the column and the label of
a broken bracket,

* one or more trees per line (``--trees FILE``: line *i* holds the tree(s) of input line *i*;
  several trees on one line are the line's sentences), or
* multi-line PTB ``.mrg`` files (:func:`read_mrg`), trees wrapped as ``( (S ...) )``.

Normalization (:func:`normalize_tree`), so that every tree synprep stores looks like stanza's:

* function tags and indices are removed: ``NP-SBJ-1`` → ``NP``, ``NP=2`` → ``NP``, ``S-TPC-1`` → ``S``
  (labels that *start* with ``-``, like ``-NONE-``, ``-LRB-``, are kept whole);
* ``-NONE-`` empty elements are removed, together with every constituent left without words;
* a bracket inside a label is spelled out as treetools does: TIGER's ``$(`` → ``$LRB`` (``$,``
  and ``$.`` stay), and a bare ``(`` / ``)`` leaf becomes ``-LRB-`` / ``-RRB-``;
* the top node is ``ROOT``: an unlabeled wrapper ``( ...)``, ``TOP`` or NEGRA/TIGER's ``VROOT`` is renamed, any other top
  label gets a ``ROOT`` above it;
* trees without POS preterminals are accepted: a word that is a bare child of a phrase *with
  siblings* gets its own preterminal ``(X word)``; a phrase whose only child is a word is already
  a preterminal. Neither changes a syntactic distance (SPEC.md §2 collapses unary chains).

Leaves and words: a stored tree's leaves are the line's words (Moses tokens, unescaped) with only
``(`` and ``)`` written as ``-LRB-`` / ``-RRB-``, also inside a word (``(Applause)`` →
``-LRB-Applause-RRB-``; stanza and the PTB do the same), so that the string stays parseable. :func:`tree_words` turns the leaves back into words. When a tree is matched
against words (:func:`match_leaves`), a leaf matches a word when it is equal to it, or equal after
undoing the PTB bracket escapes (``-LRB- -RRB- -LSB- -RSB- -LCB- -RCB-``) or the Moses escapes
(``&apos;`` ...). Any other difference is an :class:`~synprep.errors.InputError` naming the line and
the first differing word — never a silent fallback (the reference code fell back to distance 1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from synprep.align import first_difference
from synprep.errors import InputError
from synprep.escape import unescape as moses_unescape
from synprep.textio import PathLike, display_name, iter_lines

# the primitives live in synprep.tree (shared with synprep.features.distance); re-exported here
from synprep.tree import (  # noqa: F401
    BARE_WORD_LABEL,
    PTB_ESCAPES,
    ROOT,
    BracketError,
    TreeError,
    _scan,
    clean_label,
    leaf_to_word,
    nltk_tree,
    normalize_tree,
    parse_tree,
    tree_to_str,
    word_to_leaf,
)

if TYPE_CHECKING:  # nltk only where a tree is built (synprep.tree): a dependency parse never loads it
    from nltk import Tree


def tree_words(tree: str | Tree) -> list[str]:
    """The words of a stored tree: its leaves with the PTB bracket escapes undone."""
    if isinstance(tree, str):
        tree = nltk_tree().fromstring(tree)
    return [leaf_to_word(leaf) for leaf in tree.leaves()]


def split_brackets(text: str) -> list[str]:
    """Cut a string into its top-level bracketed trees (labels like ``$(`` read, see :func:`_scan`).

    Raises:
        BracketError: (a ValueError) unbalanced brackets or text outside every bracket; the message
            names the 1-based column and the label of the unclosed node.
    """
    return [text[a:b] for _, a, b in _scan(text)[0]]


def parse_trees(text: str, path: str | None = None, line: int | None = None) -> list[Tree]:
    """Parse every tree on one line (``(ROOT ...) (ROOT ...)``; ``[]`` for a blank line).

    Raises:
        InputError: unbalanced or malformed brackets, or a tree without words.
    """
    try:
        found = _scan(text)[0]
        return [normalize_tree(t) for t, _, _ in found]
    except ValueError as e:
        raise InputError(f"bad bracketed tree: {e}", path, line) from None


class TreeLeavesError(InputError):
    """Your trees' leaves (``--trees``) are not the line's words: their number or a word differs.

    A subclass of :class:`~synprep.errors.InputError`, so that ``synprep pipeline`` can add what to
    do when it tokenized the text itself (``--tokenized`` for text tokenized like the trees).
    """


def leaf_matches(leaf: str, word: str) -> bool:
    """True when tree leaf ``leaf`` spells ``word`` (equal, or after ``-LRB-``/Moses unescaping)."""
    return leaf == word or leaf_to_word(leaf) == word or moses_unescape(leaf) == word


def leaves_differ_message(leaves: list[str], words: list[str]) -> str:
    """``"the first difference is word 4: tree leaf ',' vs word 'das'"`` (1-based; ``<end>`` past an end)."""
    diff = first_difference(leaves, words, same=leaf_matches)
    if diff is None:
        return "the leaves spell the words"
    k, leaf, word = diff
    return f"the first difference is word {k + 1}: tree leaf {leaf!r} vs word {word!r}"


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
        raise TreeLeavesError(f"the tree has {len(positions)} leaves but the line has {len(words)} words; "
                              f"{leaves_differ_message([tree[p] for p in positions], words)}", path, line)
    for k, (pos, word) in enumerate(zip(positions, words, strict=True), 1):
        leaf = tree[pos]
        if not leaf_matches(leaf, word):
            raise TreeLeavesError(f"tree leaf {k} is {leaf!r} but word {k} of the line is {word!r}", path, line)
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


def read_mrg(path: PathLike, normalize: Callable[[Tree], Tree] = normalize_tree) -> Iterator[tuple[int, Tree]]:
    """Read a Penn Treebank ``.mrg`` file: trees spread over several lines, ``( (S ...) )`` wrappers.

    Args:
        path: the file (``.gz`` read as gzip).
        normalize: what is done to each tree read (default :func:`normalize_tree`;
            :func:`synprep.tree.drop_empty_elements` keeps the labels as they are).

    Yields:
        ``(line, tree)``: the 1-based line where the tree starts, and the tree ``normalize`` returned.

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
        try:
            found, open_ = _scan(" ".join(buf), partial=True)
        except ValueError as e:
            raise InputError(f"bad bracketed tree: {e}", name, lineno) from None
        depth = 1 if open_ else 0
        if depth == 0:
            for tree, _, _ in found:
                try:
                    yield start, normalize(tree)
                except ValueError as e:
                    raise InputError(f"bad bracketed tree: {e}", name, start) from None
            buf = []
    if depth:
        raise InputError("the last tree is not closed (missing ')')", name, start)
