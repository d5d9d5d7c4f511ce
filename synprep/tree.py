"""Tree primitives shared by the parser stage (:mod:`synprep.parse.trees`) and the syntax features
(:mod:`synprep.features.distance`): the PTB leaf escapes, the bracket scanner, normalization and the
one :func:`parse_tree` (one error, :class:`TreeError`), and :func:`leaf_mismatch` (the leaves against the words,
which the parse checks of :mod:`synprep.parse.wellformed` and the features share). The features import the parser
stage, never the reverse; both import this one (it imports only :mod:`synprep.errors`; nltk when a function first
builds a tree, :mod:`synprep.align` when one first compares leaves).

The accepted brackets and the normalization rules are described in :mod:`synprep.parse.trees`.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from synprep.errors import InputError

# nltk (0.2 s to import on a warm disk, seconds on a cold one) is imported by the functions that build trees
# (nltk_tree, nltk_cnf), not by this module: a dependency parse's workers and records never load it
if TYPE_CHECKING:
    from nltk import Tree


@functools.cache
def nltk_tree() -> type[Tree]:
    """nltk's ``Tree`` class, imported on the first call (nltk's package import is 0.2 s on a warm disk and
    seconds on a cold one; a dependency parse never needs it), then a cached lookup."""
    from nltk import Tree

    return Tree


@functools.cache
def nltk_cnf() -> Callable[..., None]:
    """nltk's ``chomsky_normal_form`` (imported as :func:`nltk_tree` is)."""
    from nltk.tree.transforms import chomsky_normal_form

    return chomsky_normal_form


#: PTB bracket escapes (leaf text → word)
PTB_ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}
#: the escapes a stored leaf needs (word → leaf): only round brackets break bracket parsing
_LEAF_ESCAPES = {"(": "-LRB-", ")": "-RRB-"}

ROOT = "ROOT"
#: label given to a bare word that had siblings (no POS preterminal in the input)
BARE_WORD_LABEL = "X"

_TAG_SPLIT = re.compile(r"[-=]")


def word_to_leaf(word: str) -> str:
    """The leaf text that stands for ``word`` in a stored tree: every ``(`` → ``-LRB-``, ``)`` → ``-RRB-``
    (``(Applause)`` → ``-LRB-Applause-RRB-``, as stanza writes it), so the tree string stays readable."""
    if "(" not in word and ")" not in word:
        return word
    return word.replace("(", _LEAF_ESCAPES["("]).replace(")", _LEAF_ESCAPES[")"])


def leaf_to_word(leaf: str) -> str:
    """Undo the PTB bracket escapes of a leaf: a whole-leaf escape (``-LRB-`` → ``(``, ``-LSB-`` → ``[``
    …), else ``-LRB-``/``-RRB-`` inside a word (``-LRB-Applause-RRB-`` → ``(Applause)``)."""
    if leaf in PTB_ESCAPES:
        return PTB_ESCAPES[leaf]
    if "-LRB-" in leaf or "-RRB-" in leaf:
        return leaf.replace("-LRB-", "(").replace("-RRB-", ")")
    return leaf


def leaf_mismatch(tree: Tree, words: Sequence[str]) -> tuple[int, str, str] | None:
    """First position where the tree's leaves differ from ``words``, or None when they agree.

    A PTB bracket escape leaf matches its word (``-LRB-`` for ``(``, ``-LRB-Applause-RRB-`` for
    ``(Applause)``: :func:`leaf_to_word`).

    Returns:
        ``(i, leaf, word)`` with ``i`` 0-based; a missing token reads ``"<end>"``.
    """
    # imported here: synprep.align loads numpy, which a reader of trees alone does not need (module docstring)
    from synprep.align import first_difference

    def same(leaf: str, word: str) -> bool:  # "-LRB-Applause-RRB-" is the stored leaf of "(Applause)"
        return leaf == word or leaf_to_word(leaf) == word

    return first_difference(tree.leaves(), words, same=same)


def clean_label(label: str) -> str:
    """Strip function tags and indices: ``NP-SBJ-1`` → ``NP``, ``NP=2`` → ``NP``; ``-NONE-`` stays.

    A bracket inside a label is written as treetools does (``$(`` → ``$LRB``), so that the stored
    tree string reads with :meth:`nltk.Tree.fromstring` (it stops a label at a bracket).
    """
    if not label.startswith("-"):
        label = _TAG_SPLIT.split(label, maxsplit=1)[0] or label
    return label.replace("(", "LRB").replace(")", "RRB")


def drop_empty_elements(tree: Tree) -> Tree:
    """Copy of a PTB tree without ``-NONE-`` elements and the constituents left without words, every
    label kept as it is (``NP-SBJ-1``; :func:`normalize_tree` removes function tags when the tree is
    read); an unlabeled top node (the ``( (S ...) )`` wrapper of ``.mrg`` files) is labeled ``ROOT``.

    Raises:
        ValueError: the tree has no words left (only empty elements).
    """
    tree_cls = nltk_tree()

    def copy(t: Tree) -> Tree | None:
        if t.label() == "-NONE-":
            return None
        kids = [c for c in (copy(k) if isinstance(k, tree_cls) else word_to_leaf(k) for k in t) if c is not None]
        return tree_cls(t.label(), kids) if kids else None

    out = copy(tree)
    if out is None:
        raise ValueError("the tree has no words (only empty elements)")
    if out.label() == "":
        out.set_label(ROOT)
    return out


def _strip(t: Tree, tree_cls: type[Tree]) -> Tree | None:
    """Copy of ``t`` without -NONE- elements, empty constituents and function tags (None if empty);
    ``tree_cls`` is nltk's ``Tree`` class (looked up once by the caller, not per node)."""
    if t.label() == "-NONE-":
        return None
    kids: list[Tree | str] = []
    for child in t:
        if isinstance(child, tree_cls):
            c = _strip(child, tree_cls)
            if c is not None:
                kids.append(c)
        else:
            kids.append(word_to_leaf(child))
    if not kids:
        return None
    if len(kids) > 1:  # a bare word beside other children gets its own preterminal
        kids = [tree_cls(BARE_WORD_LABEL, [k]) if isinstance(k, str) else k for k in kids]
    return tree_cls(clean_label(t.label()), kids)


def normalize_tree(tree: Tree) -> Tree:
    """Normalize a tree as described in the module docstring (returns a new tree).

    Raises:
        ValueError: the tree has no words left after removing empty elements.
    """
    tree_cls = nltk_tree()
    top_label = tree.label()
    stripped = _strip(tree, tree_cls)
    if stripped is None:
        raise ValueError("the tree has no words (only empty elements)")
    if top_label in ("", "TOP", "VROOT", ROOT):
        stripped.set_label(ROOT)
        return stripped
    return tree_cls(ROOT, [stripped])


def tree_to_str(tree: Tree) -> str:
    """One-line bracketed string of ``tree`` (``(ROOT (S (NP (PRP I)) ...))``)."""
    return tree.pformat(margin=sys.maxsize)


#: deepest bracket nesting read: nltk's ``MAX_TREE_DEPTH`` (500), the depth its recursive tree
#: methods (and synprep's normalization, binarization, distances) are guaranteed to walk
MAX_NESTING = 500


class BracketError(ValueError):
    """A broken bracketed tree; ``column`` is 1-based, ``label`` the node the error concerns (or None)."""

    def __init__(self, reason: str, column: int, label: str | None = None):
        self.column = column
        self.label = label
        super().__init__(reason)


def _label_end(text: str, i: int) -> int:
    """The end of the label of the ``(`` at ``text[i]`` (0-based, exclusive): :func:`_scan`'s label rule."""
    n = len(text)
    j = i + 1
    while j < n and not text[j].isspace() and text[j] not in "()":
        j += 1
    if j > i + 1 and j < n and text[j] == "(" and (j + 1 == n or text[j + 1].isspace()):
        j += 1  # "$(": the bracket ends the label
    return j


def _close(stack: list[list], out: list[tuple[Tree, int, int]], tree_cls: type[Tree], start: int, i: int) -> None:
    """:func:`_scan` at the ``)`` at ``text[i]``: the top open node becomes a tree, a child of the node below it
    or (at the top level) the next tree of ``out``, spanning ``start`` to ``i + 1``.

    Raises:
        BracketError: the node is an empty ``()``.
    """
    label, kids, col, _ = stack.pop()
    if not label and not kids:
        raise BracketError(f"empty '()' at column {col}", col)
    node = tree_cls(label, kids)
    if stack:
        stack[-1][1].append(node)
    else:
        out.append((node, start, i + 1))


def _scan(text: str, *, partial: bool = False) -> tuple[list[tuple[Tree, int, int]], bool]:
    """Read the top-level trees of ``text`` with labels that may end in ``(`` (TIGER's ``$(``).

    nltk's reader splits ``($( -)`` at the ``(`` of the label; this reader does not. Rules, from
    the bracket conventions of the PTB and of TIGER/NEGRA-derived brackets:

    * a label is the run of characters after ``(`` up to whitespace or a bracket; one trailing
      ``(`` belongs to it when whitespace follows (``$(``), so ``(NP(NN x))`` still reads;
    * a node whose label is followed by whitespace and which has no child yet takes a bare ``(``
      right before ``)`` (``($( ())``) or a ``)`` followed by another ``)`` (``($( ))``) as its
      leaf, the unescaped bracket words of TIGER-derived trees.

    Args:
        text: one or more bracketed trees.
        partial: return ``(trees, True)`` instead of raising when the text ends inside a tree.

    Returns:
        ``([(tree, start, end), ...], incomplete)``: each tree with its 0-based character span.

    Raises:
        BracketError: a ``)`` that closes nothing, text outside every bracket, an unclosed ``(``
            (naming the label and column where it was opened), an empty ``()``, or brackets nested
            more than :data:`MAX_NESTING` deep.
    """
    tree_cls = nltk_tree()
    # a stack of open nodes: [label, children, column of "(", whitespace after label]
    out: list[tuple[Tree, int, int]] = []
    stack: list[list] = []
    n = len(text)
    i = 0
    start = 0
    while i < n:
        ch = text[i]
        if ch.isspace():
            if stack and not stack[-1][1]:
                stack[-1][3] = True
            i += 1
            continue
        top = stack[-1] if stack else None
        bare_leaf = top is not None and top[0] and top[3] and not top[1]
        if ch == "(" and bare_leaf and i + 1 < n and text[i + 1] == ")":
            top[1].append("(")  # type: ignore[index]
            i += 1
            continue
        if ch == ")" and bare_leaf and text[i + 1 :].lstrip().startswith(")"):
            top[1].append(")")  # type: ignore[index]
            i += 1
            continue
        if ch == "(":
            if not stack:
                start = i
            elif len(stack) >= MAX_NESTING:  # every later step walks trees recursively (RecursionError)
                raise BracketError(f"the tree nests more than {MAX_NESTING} brackets deep (column {i + 1}): synprep "
                                   "cannot use such a tree (leave the sentence out, or split it)", i + 1)
            j = _label_end(text, i)
            stack.append([text[i + 1 : j], [], i + 1, False])
            i = j
            continue
        if ch == ")":
            if not stack:
                raise BracketError(f"unbalanced ')' at column {i + 1} closes no bracket", i + 1)
            _close(stack, out, tree_cls, start, i)
            i += 1
            continue
        if not stack:
            raise BracketError(f"text outside brackets at column {i + 1}: {text[i : i + 20]!r}", i + 1)
        j = i
        while j < n and not text[j].isspace() and text[j] not in "()":
            j += 1
        stack[-1][1].append(text[i:j])
        i = j
    if stack:
        if partial:
            return out, True
        label, _, col, _ = stack[-1]
        raise BracketError(
            f"{len(stack)} unclosed '(' at the end: label {label!r} opened at column {col}", col, label
        )
    return out, False


_NLTK_ADVICE = re.compile(r"\s*Raise nltk\.tree\.tree\.MAX_TREE_DEPTH to allow it\.?")


def depth_message(message: str) -> str:
    """nltk's depth-limit message without its advice to raise a library constant (not a user's option).

    ``... exceeds MAX_TREE_DEPTH (500); ... Raise nltk.tree.tree.MAX_TREE_DEPTH to allow it.`` →
    ``... exceeds MAX_TREE_DEPTH (500); ...: synprep cannot use such a tree (leave the sentence out, or
    split it)``.
    """
    if "MAX_TREE_DEPTH" not in message:
        return message
    return _NLTK_ADVICE.sub("", message).rstrip(" .") + ": synprep cannot use such a tree (leave the sentence " \
        "out, or split it)"


class TreeError(InputError, ValueError):
    """A string that is not one well-formed bracketed tree: an :class:`~synprep.errors.InputError`
    (``FILE:LINE: bad bracketed tree: REASON`` when the place is known) that is also a ``ValueError``
    (the feature code drops such a line with its reason)."""


def parse_tree(text: str, path: str | None = None, line: int | None = None, *, normalize: bool = True) -> Tree:
    """Read one bracketed tree (:func:`_scan`), normalized (:func:`normalize_tree`) unless told not to.

    Args:
        text: ``(ROOT (S ...))``, ``( (S ...))``, ``(S (NP-SBJ ...) ...)`` ...
        path: where the text comes from, for error messages (1-based line).
        line: where the text comes from, for error messages (1-based line).
        normalize: False: the tree exactly as written (a stored tree, already normalized, or a tree
            whose gaps are computed as given: :func:`synprep.features.distance.as_tree`).

    Raises:
        TreeError: not exactly one well-formed bracketed tree, or (normalized) no words in it.
    """
    try:
        found = _scan(text)[0]
        if len(found) != 1:
            raise ValueError(f"expected one tree, found {len(found)}")
        return normalize_tree(found[0][0]) if normalize else found[0][0]
    except ValueError as e:
        raise TreeError(f"bad bracketed tree: {depth_message(str(e))}", path, line) from None
