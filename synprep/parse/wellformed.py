"""Whether a parsed sentence is one the features can be computed from: the checks a fresh parse passes on its
way into a shard (:mod:`synprep.features.line` makes them) and a cached parse passes before it stands for one
(:func:`synprep.parse.cache.entry_problem`). Plain Python over :class:`~synprep.types.ParsedSentence`; a tree is
read with :func:`synprep.tree.parse_tree` (nltk, when there is one).
"""

from __future__ import annotations

from collections.abc import Sequence

from synprep.tree import leaf_mismatch, parse_tree
from synprep.types import ParsedSentence


def sentence_problem(s: ParsedSentence) -> str | None:
    """Why one parsed sentence cannot become features, or None: the checks
    :func:`synprep.features.line.line_features` makes of it.

    The annotations as long as the words; heads in ``[0, n]``, no self-loop, no cycle, exactly one root;
    a tree, when there is one, well-formed with the words as its leaves.
    """
    n = len(s.words)
    if not (len(s.upos) == len(s.heads) == len(s.deprels) == n) or n == 0:
        return f"{n} words, {len(s.upos)} tags, {len(s.heads)} heads and {len(s.deprels)} relations"
    problem = heads_problem(s.heads)
    if problem is not None:
        return problem
    try:
        if s.tree is not None:
            bad = leaf_mismatch(parse_tree(s.tree, normalize=False), s.words)
            if bad is not None:
                i, leaf, word = bad
                return f"tree leaves differ from the words at word {i + 1}: leaf {leaf!r} vs word {word!r}"
    except (ValueError, TypeError, OverflowError) as e:
        return str(e) or type(e).__name__
    return None


def heads_problem(heads: Sequence[int]) -> str | None:
    """Why ``heads`` are not one tree, or None: what the features' own check of the heads refuses (integers in ``[0, n]``,
    no self-loop, exactly one root, no cycle), in plain Python (a few microseconds a sentence, no arrays)."""
    n = len(heads)
    roots = 0
    for i, h in enumerate(heads, 1):
        if type(h) is not int or not 0 <= h <= n:
            return f"head {h!r} of word {i} is outside [0, {n}]"
        if h == i:
            return f"word {i} is its own head"
        roots += h == 0
    if roots != 1:
        return f"{roots} roots (head 0); exactly 1 expected"
    state = [2] + [0] * n  # 0: not seen, 1: on the path being followed, 2: reaches the root
    for i in range(1, n + 1):
        path, j = [], i
        while state[j] == 0:
            state[j] = 1
            path.append(j)
            j = heads[j - 1]
        if state[j] == 1:
            return f"heads contain a cycle (word {j} never reaches the root)"
        for k in path:
            state[k] = 2
    return None
