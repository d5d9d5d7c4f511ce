"""Exact single-root maximum spanning trees for stanza's graph parser, fast (docs/parse.md).

stanza 1.15 decodes every sentence with ``chuliu_edmonds_one_root`` (pure Python/numpy,
``stanza/models/common/chuliu_edmonds.py``): the root column gets a penalty of
``min(finite scores) * L`` so that exactly one word attaches to ROOT (Stanojević & Cohen 2021), and
Chu-Liu-Edmonds then contracts cycles — with that penalty the per-row argmax never picks ROOT,
so nearly every sentence contracts about once per word. This module gives the same trees in two
steps:

1. :func:`argmax_trees` (vectorized numpy over a whole batch): each word's best head (self-loops
   and padding excluded, no penalty). Where that choice has exactly one ROOT dependent, no
   cycle, and every word's maximum is strict (no tie), it is the unique best single-root tree —
   it maximizes every row on its own, so it beats every other tree, and a multi-root tree also
   pays the penalty once more per extra root — so any exact decoder, stanza's included, returns it.
2. :func:`chuliu_edmonds_one_root` for the other sentences: stanza's algorithm line by line,
   compiled with numba — the same penalty in float64, the same first-maximum argmax, the same
   Tarjan order of cycles (the last one found is contracted first), the same contraction scores
   (with numpy's pairwise summation for a cycle's score) — so it returns stanza's tree
   bit for bit, ties included (tests/test_parse_mst.py).

Scores: ``scores[i, j]`` = score of word ``j`` being the head of word ``i`` (row = dependent),
index 0 = ROOT, shape ``(L, L)`` with ``L = words + 1``; trees are returned as ``(L,)`` int64
arrays with ``tree[0] = 0`` and ``tree[i]`` = head of word ``i`` (0-based over the L nodes, so
1-based word heads).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# --- the compiled decoder: stanza's chuliu_edmonds.py, statement for statement -----------------


@njit(cache=True)
def _argmax(row: np.ndarray) -> int:
    """``np.argmax`` of a 1-D float64 row: the first NaN if any, else the first maximum."""
    best = 0
    v = row[0]
    if np.isnan(v):
        return 0
    for k in range(1, row.shape[0]):
        x = row[k]
        if np.isnan(x):
            return k
        if x > v:
            v = x
            best = k
    return best


@njit(cache=True)
def _block_sum(a: np.ndarray, lo: int, n: int) -> float:
    """numpy's pairwise summation of a block of ``n <= 128`` values (8 accumulators)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r = np.empty(8)
    for j in range(8):
        r[j] = a[lo + j]
    i = 8
    while i < n - (n % 8):
        for j in range(8):
            r[j] += a[lo + i + j]
        i += 8
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True)
def _pairwise_sum(a: np.ndarray, lo: int, n: int) -> float:
    """numpy's pairwise summation of ``a[lo:lo+n]`` (float64): ``np.sum``'s exact result.

    numpy halves blocks over 128 values (at a multiple of 8) and adds left + right; the recursion
    is unrolled on an explicit stack (numba's cache cannot hold a self-recursive function).
    """
    if n <= 128:
        return _block_sum(a, lo, n)
    f_lo = np.empty(128, dtype=np.int64)
    f_n = np.empty(128, dtype=np.int64)
    f_stage = np.empty(128, dtype=np.int64)
    vals = np.empty(128)
    top, nv = 1, 0
    f_lo[0], f_n[0], f_stage[0] = lo, n, 0
    while top > 0:
        k = top - 1
        fl, fn = f_lo[k], f_n[k]
        if fn <= 128:
            vals[nv] = _block_sum(a, fl, fn)
            nv += 1
            top -= 1
            continue
        n2 = fn // 2
        n2 -= n2 % 8
        if f_stage[k] == 0:
            f_stage[k] = 1
            f_lo[top], f_n[top], f_stage[top] = fl, n2, 0
            top += 1
        elif f_stage[k] == 1:
            f_stage[k] = 2
            f_lo[top], f_n[top], f_stage[top] = fl + n2, fn - n2, 0
            top += 1
        else:
            vals[nv - 2] = vals[nv - 2] + vals[nv - 1]
            nv -= 1
            top -= 1
    return vals[0]


@njit(cache=True)
def _prepare(scores: np.ndarray) -> None:
    n = scores.shape[0]
    for i in range(n):
        scores[i, i] = -np.inf
    for j in range(n):
        scores[0, j] = -np.inf
    scores[0, 0] = 0.0


@njit(cache=True)
def _row_argmax(scores: np.ndarray) -> np.ndarray:
    n = scores.shape[0]
    tree = np.empty(n, dtype=np.int64)
    for i in range(n):
        tree[i] = _argmax(scores[i])
    return tree


@njit(cache=True)
def _tarjan(tree: np.ndarray) -> list:
    """stanza's ``tarjan``: the cycles (boolean masks) of a head array, in the order stanza finds them."""
    n = tree.shape[0]
    indices = -np.ones(n, dtype=np.int64)
    lowlinks = -np.ones(n, dtype=np.int64)
    onstack = np.zeros(n, dtype=np.bool_)
    stack = np.empty(n, dtype=np.int64)
    top = 0
    counter = 0
    cycles = [np.zeros(0, dtype=np.bool_)]
    cycles.pop()
    # explicit call stack of (node, next dependent position to scan, dependent just visited)
    cs_node = np.empty(n + 1, dtype=np.int64)
    cs_pos = np.empty(n + 1, dtype=np.int64)
    cs_j = np.empty(n + 1, dtype=np.int64)
    for start in range(n):
        if indices[start] != -1:
            continue
        depth = 0
        cs_node[0], cs_pos[0], cs_j[0] = start, -1, -1
        depth = 1
        while depth > 0:
            depth -= 1
            i, pos, j = cs_node[depth], cs_pos[depth], cs_j[depth]
            if pos == -1:
                indices[i] = counter
                lowlinks[i] = counter
                counter += 1
                stack[top] = i
                top += 1
                onstack[i] = True
                pos = 0
            else:
                lowlinks[i] = min(lowlinks[i], lowlinks[j])
            descended = False
            while pos < n:
                jj = pos
                pos += 1
                if tree[jj] != i:
                    continue
                if indices[jj] == -1:
                    cs_node[depth], cs_pos[depth], cs_j[depth] = i, pos, jj
                    depth += 1
                    cs_node[depth], cs_pos[depth], cs_j[depth] = jj, -1, -1
                    depth += 1
                    descended = True
                    break
                elif onstack[jj]:
                    lowlinks[i] = min(lowlinks[i], indices[jj])
            if not descended and lowlinks[i] == indices[i]:
                cycle = np.zeros(n, dtype=np.bool_)
                while stack[top - 1] != i:
                    top -= 1
                    onstack[stack[top]] = False
                    cycle[stack[top]] = True
                top -= 1
                onstack[i] = False
                cycle[i] = True
                if cycle.sum() > 1:
                    cycles.append(cycle)
    return cycles


@njit(cache=True)
def _contract(tree: np.ndarray, cycle: np.ndarray, scores: np.ndarray):
    """stanza's ``process_cycle``: the contracted problem with one cycle made a metanode."""
    cycle_locs = np.where(cycle)[0]
    noncycle_locs = np.where(~cycle)[0]
    c, m = cycle_locs.shape[0], noncycle_locs.shape[0]
    cycle_scores = np.empty(c)
    for a in range(c):
        cycle_scores[a] = scores[cycle_locs[a], tree[cycle_locs[a]]]
    cycle_score = _pairwise_sum(cycle_scores, 0, c)
    head_scores = np.empty((c, m))  # (cycle dependent, noncycle head)
    dep_scores = np.empty((m, c))  # (noncycle dependent, cycle head)
    for a in range(c):
        for b in range(m):
            head_scores[a, b] = scores[cycle_locs[a], noncycle_locs[b]] - cycle_scores[a] + cycle_score
    for b in range(m):
        for a in range(c):
            dep_scores[b, a] = scores[noncycle_locs[b], cycle_locs[a]]
    metanode_heads = np.empty(m, dtype=np.int64)
    metanode_deps = np.empty(m, dtype=np.int64)
    for b in range(m):
        metanode_heads[b] = _argmax(np.ascontiguousarray(head_scores[:, b]))
        metanode_deps[b] = _argmax(dep_scores[b])
    sub = np.zeros((m + 1, m + 1))
    for a in range(m):
        for b in range(m):
            sub[a, b] = scores[noncycle_locs[a], noncycle_locs[b]]
    for b in range(m):
        sub[m, b] = head_scores[metanode_heads[b], b]
        sub[b, m] = dep_scores[b, metanode_deps[b]]
    return sub, cycle_locs, noncycle_locs, metanode_heads, metanode_deps


@njit(cache=True)
def _expand(tree, contracted, cycle_locs, noncycle_locs, metanode_heads, metanode_deps):
    """stanza's ``expand_contracted_tree``."""
    m = contracted.shape[0] - 1
    cycle_head = contracted[m]
    new_tree = -np.ones_like(tree)
    for b in range(m):
        h = contracted[b]
        if h < m:
            new_tree[noncycle_locs[b]] = noncycle_locs[h]
        else:
            new_tree[noncycle_locs[b]] = cycle_locs[metanode_deps[b]]
    for a in range(cycle_locs.shape[0]):
        new_tree[cycle_locs[a]] = tree[cycle_locs[a]]
    new_tree[cycle_locs[metanode_heads[cycle_head]]] = noncycle_locs[cycle_head]
    return new_tree


@njit(cache=True)
def _chuliu_edmonds(scores: np.ndarray) -> np.ndarray:
    _prepare(scores)
    tree = _row_argmax(scores)
    cycles = _tarjan(tree)
    trees = [tree]
    cls, ncls, mhs, mds = [tree], [tree], [tree], [tree]  # typed by their first element, dropped below
    trees.pop(), cls.pop(), ncls.pop(), mhs.pop(), mds.pop()
    while len(cycles) > 0:
        sub, cycle_locs, noncycle_locs, mh, md = _contract(tree, cycles.pop(), scores)
        trees.append(tree)
        cls.append(cycle_locs)
        ncls.append(noncycle_locs)
        mhs.append(mh)
        mds.append(md)
        scores = sub
        _prepare(scores)
        tree = _row_argmax(scores)
        cycles = _tarjan(tree)
    while len(trees) > 0:
        tree = _expand(trees.pop(), tree, cls.pop(), ncls.pop(), mhs.pop(), mds.pop())
    return tree


@njit(cache=True)
def _one_root(scores: np.ndarray) -> np.ndarray:
    s = scores.astype(np.float64)  # a copy: the caller's array is left alone
    n = s.shape[0]
    min_score = np.inf
    for i in range(n):
        for j in range(n):
            if np.isfinite(s[i, j]) and s[i, j] < min_score:
                min_score = s[i, j]
    penalty = min_score * n
    for i in range(n):
        s[i, 0] = s[i, 0] + penalty
    return _chuliu_edmonds(s)


def chuliu_edmonds_one_root(scores: np.ndarray) -> np.ndarray:
    """stanza 1.15's ``chuliu_edmonds_one_root``, compiled: the best tree with exactly one ROOT dependent.

    Args:
        scores: ``(L, L)`` float (row = dependent, column = head, 0 = ROOT), at least one finite entry.

    Returns:
        ``(L,)`` int64 heads, ``tree[0] = 0``; identical to stanza's result, ties included.

    Raises:
        ValueError: not a square 2-D array.
    """
    a = np.ascontiguousarray(scores)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"scores must be a square matrix, got shape {a.shape}")
    return _one_root(a)


def warm() -> None:
    """Have :func:`chuliu_edmonds_one_root`'s machine code for stanza's scores (``float32``) loaded now.

    numba loads it from its on-disk cache (or compiles it: seconds, once per checkout) on the first call of a
    process: 0.2-1.2 s of each parse worker's first batch (measured on the 2-core machine, cache on disk).
    The stanza parser calls this as it loads its models, so a warmed worker (:mod:`synprep.parse.warming`)
    pays it during the warm-up, beside the main process's own start-up, not inside the parse.
    """
    # a 3-cycle under ROOT: the whole decoder runs (Tarjan, a contraction, the expansion)
    chuliu_edmonds_one_root(np.array([[-np.inf, -9.0, -9.0, -9.0], [-5.0, -np.inf, -1.0, -2.0],
                                      [-5.0, -2.0, -np.inf, -1.0], [-5.0, -1.0, -2.0, -np.inf]], dtype=np.float32))


# --- the vectorized fast path ------------------------------------------------------------------


def argmax_trees(scores: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sentence's per-word best head, and whether that is already stanza's tree.

    Args:
        scores: ``(B, L, L)`` float batch (row = dependent, column = head, 0 = ROOT); sentence
            ``b`` uses ``scores[b, :lengths[b], :lengths[b]]``.
        lengths: ``(B,)`` int, nodes per sentence (words + 1), each ``>= 2``.

    Returns:
        ``heads`` ``(B, L)`` int64 (``heads[b, 0] = 0``, columns ``>= lengths[b]`` are 0) and
        ``ok`` ``(B,)`` bool: True where the heads form a tree with exactly one ROOT dependent
        and every word's maximum is strict and not NaN — then it is the unique best single-root
        tree, the one :func:`chuliu_edmonds_one_root` (and stanza) returns.
    """
    b, n, _ = scores.shape
    lengths = np.asarray(lengths, dtype=np.int64)
    cols = np.arange(n)
    valid = cols[None, :] < lengths[:, None]  # (B, L) real nodes
    s = np.where(valid[:, None, :], scores, -np.inf)
    s[:, cols, cols] = -np.inf
    heads = s.argmax(axis=2)
    best = np.take_along_axis(s, heads[:, :, None], axis=2)[:, :, 0]
    word = valid.copy()
    word[:, 0] = False
    strict = ((s == best[:, :, None]).sum(axis=2) == 1) & np.isfinite(best)
    nan_free = ~np.isnan(s).any(axis=2)
    heads = np.where(word, heads, 0)
    one_root = (heads[:, 1:] == 0).sum(axis=1) - (~word[:, 1:]).sum(axis=1) == 1
    reach = heads.copy()
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))) + 1)):
        reach = np.take_along_axis(reach, reach, axis=1)
    acyclic = (reach == 0).all(axis=1)
    ok = one_root & acyclic & ((strict & nan_free) | ~word).all(axis=1)
    return heads.astype(np.int64), ok


def decode_trees(scores: np.ndarray, lengths) -> tuple[list[np.ndarray], int]:
    """stanza's trees for a batch: :func:`argmax_trees`, then :func:`chuliu_edmonds_one_root` for the rest.

    Args:
        scores: ``(B, L, L)`` float (stanza's head log-probabilities), lengths: ``(B,)`` words + 1.

    Returns:
        ``(trees, compiled)``: per sentence its ``(lengths[b],)`` int64 heads (``tree[0] = 0``),
        and how many sentences needed the compiled decoder.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    heads, ok = argmax_trees(scores, lengths)
    trees = []
    for k, m in enumerate(lengths.tolist()):
        trees.append(heads[k, :m].copy() if ok[k] else chuliu_edmonds_one_root(scores[k, :m, :m]))
    return trees, int((~ok).sum())
