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


def clean_label(label: str) -> str:
    """Strip function tags and indices: ``NP-SBJ-1`` → ``NP``, ``NP=2`` → ``NP``; ``-NONE-`` stays.

    A bracket inside a label is written as treetools does (``$(`` → ``$LRB``), so that the stored
    tree string reads with :meth:`nltk.Tree.fromstring` (it stops a label at a bracket).
    """
    if not label.startswith("-"):
        label = _TAG_SPLIT.split(label, maxsplit=1)[0] or label
    return label.replace("(", "LRB").replace(")", "RRB")


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
            kids.append(word_to_leaf(child))
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
    if top_label in ("", "TOP", "VROOT", ROOT):
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


#: deepest bracket nesting read: nltk's ``MAX_TREE_DEPTH`` (500), the depth its recursive tree
#: methods (and synprep's normalization, binarization, distances) are guaranteed to walk
MAX_NESTING = 500


class BracketError(ValueError):
    """A broken bracketed tree; ``column`` is 1-based, ``label`` the node the error concerns (or None)."""

    def __init__(self, reason: str, column: int, label: str | None = None):
        self.column = column
        self.label = label
        super().__init__(reason)


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
            j = i + 1
            while j < n and not text[j].isspace() and text[j] not in "()":
                j += 1
            if j > i + 1 and j < n and text[j] == "(" and (j + 1 == n or text[j + 1].isspace()):
                j += 1  # "$(": the bracket ends the label
            stack.append([text[i + 1 : j], [], i + 1, False])
            i = j
            continue
        if ch == ")":
            if not stack:
                raise BracketError(f"unbalanced ')' at column {i + 1} closes no bracket", i + 1)
            label, kids, col, _ = stack.pop()
            if not label and not kids:
                raise BracketError(f"empty '()' at column {col}", col)
            node = Tree(label, kids)
            if stack:
                stack[-1][1].append(node)
            else:
                out.append((node, start, i + 1))
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


def split_brackets(text: str) -> list[str]:
    """Cut a string into its top-level bracketed trees (labels like ``$(`` read, see :func:`_scan`).

    Raises:
        BracketError: (a ValueError) unbalanced brackets or text outside every bracket; the message
            names the 1-based column and the label of the unclosed node.
    """
    return [text[a:b] for _, a, b in _scan(text)[0]]


def parse_tree(text: str, path: str | None = None, line: int | None = None) -> Tree:
    """Parse and normalize one bracketed tree.

    Args:
        text: ``(ROOT (S ...))``, ``( (S ...))``, ``(S (NP-SBJ ...) ...)`` ...
        path, line: where the text comes from, for error messages (1-based line).

    Raises:
        InputError: not a single well-formed bracketed tree, or no words in it.
    """
    try:
        found = _scan(text)[0]
        if len(found) != 1:
            raise ValueError(f"expected one tree, found {len(found)}")
        return normalize_tree(found[0][0])
    except ValueError as e:
        from synprep.features.distance import depth_message

        raise InputError(f"bad bracketed tree: {depth_message(str(e))}", path, line) from None


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
        try:
            found, open_ = _scan(" ".join(buf), partial=True)
        except ValueError as e:
            raise InputError(f"bad bracketed tree: {e}", name, lineno) from None
        depth = 1 if open_ else 0
        if depth == 0:
            for tree, _, _ in found:
                try:
                    yield start, normalize_tree(tree)
                except ValueError as e:
                    raise InputError(f"bad bracketed tree: {e}", name, start) from None
            buf = []
    if depth:
        raise InputError("the last tree is not closed (missing ')')", name, start)
