"""The per-hypothesis decoder (Python per hypothesis, a host sync per step), kept verbatim
as the reference that the batched decoder of :mod:`synprep.train.decode` must reproduce exactly."""

from __future__ import annotations

import torch

from synprep.constants import BOS_ID, EOS_ID, PAD_ID
from synprep.train.data import Batch
from synprep.train.model import Seq2Seq


def _max_lens(model: Seq2Seq, batch: Batch, max_len_a: float, max_len_b: int) -> list[int]:
    cap = model.cfg.max_positions - 1
    return [max(1, min(int(max_len_a * int(n) + max_len_b), cap)) for n in batch.src_lengths.tolist()]


def _lprobs(model: Seq2Seq, tokens: torch.Tensor, enc, cache) -> torch.Tensor:
    logits = model.decode(tokens, enc, cache)[:, -1].float()
    lp = torch.log_softmax(logits, dim=-1)
    lp[:, PAD_ID] = float("-inf")
    lp[:, BOS_ID] = float("-inf")
    return lp


@torch.no_grad()
def greedy_search(model: Seq2Seq, batch: Batch, max_len_a: float = 0.0, max_len_b: int = 200) -> list[list[int]]:
    """Greedy decoding.

    Args:
        model: in eval mode. batch: source side (``src_tokens``, ``src_lengths``, syntax features).

    Returns:
        B token id lists (no ``</s>``), in batch order.
    """
    B = batch.size
    dev = batch.src_tokens.device
    enc = model.encode(batch)
    limits = _max_lens(model, batch, max_len_a, max_len_b)
    cache = model.new_cache()
    tokens = torch.full((B, 1), EOS_ID, dtype=torch.long, device=dev)
    out: list[list[int] | None] = [None] * B
    limit_t = torch.tensor(limits, device=dev)  # (B,)
    for step in range(max(limits)):
        lp = _lprobs(model, tokens, enc, cache)
        nxt = lp.argmax(dim=-1).masked_fill_(limit_t <= step + 1, EOS_ID)  # </s> forced at the length limit
        tokens = torch.cat([tokens, nxt[:, None]], dim=1)
        for b, t in enumerate(nxt.tolist()):
            if out[b] is None and t == EOS_ID:
                out[b] = tokens[b, 1:-1].tolist()
        if all(o is not None for o in out):
            break
    return [o if o is not None else tokens[b, 1:].tolist() for b, o in enumerate(out)]


@torch.no_grad()
def beam_search(model: Seq2Seq, batch: Batch, beam: int = 5, lenpen: float = 1.0, max_len_a: float = 0.0,
                max_len_b: int = 200) -> list[list[int]]:
    """Beam search (see the module docstring).

    Returns:
        B token id lists (no ``</s>``): the best finished hypothesis of each sentence.
    """
    B, k = batch.size, beam
    dev = batch.src_tokens.device
    enc = model.encode(batch).index_select(torch.arange(B, device=dev).repeat_interleave(k))
    limits = _max_lens(model, batch, max_len_a, max_len_b)
    cache = model.new_cache()
    tokens = torch.full((B * k, 1), EOS_ID, dtype=torch.long, device=dev)
    scores = torch.zeros(B, k, device=dev)
    scores[:, 1:] = float("-inf")  # all beams start identical: keep one
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]
    done = [False] * B
    limit_t = torch.tensor(limits, device=dev).repeat_interleave(k)  # (B*k,)
    for step in range(max(limits)):
        lp = _lprobs(model, tokens, enc, cache)  # (B*k, V)
        V = lp.shape[1]
        # force </s> at the length limit and in finished sentences (vectorised over rows)
        forced = (limit_t <= step + 1) | torch.tensor(done, device=dev).repeat_interleave(k)
        if bool(forced.any()):
            eos = lp[:, EOS_ID].clone()
            lp[forced] = float("-inf")
            lp[forced, EOS_ID] = eos[forced]
        # the best 2k continuations of a sentence are among the best 2k of each of its beams
        row_s, row_i = lp.topk(min(2 * k, V), dim=1)  # (B*k, 2k)
        cand = (scores.view(B * k, 1) + row_s).view(B, -1)  # (B, k*2k)
        top_s, top_j = cand.topk(2 * k, dim=1)
        width = row_s.shape[1]
        top_beam = (top_j // width).tolist()
        top_tok = row_i.view(B, -1).gather(1, top_j).tolist()
        top_sl = top_s.tolist()
        new_rows, new_tok, new_scores = [], [], []
        for b in range(B):
            keep: list[tuple[int, int, float]] = []
            for j in range(2 * k):
                s, bi, t = top_sl[b][j], top_beam[b][j], top_tok[b][j]
                if s == float("-inf"):
                    break
                if t == EOS_ID:
                    if j < k and not done[b]:
                        hyp = tokens[b * k + bi, 1:].tolist()
                        finished[b].append((s / (step + 1) ** lenpen, hyp))
                elif len(keep) < k:
                    keep.append((bi, t, s))
            if len(finished[b]) >= k or step + 1 >= limits[b]:
                done[b] = True
            while len(keep) < k:  # a finished sentence (or one with too few live beams): dead beams
                keep.append((0, EOS_ID, float("-inf")))
            for bi, t, s in keep:
                new_rows.append(b * k + bi)
                new_tok.append(t)
                new_scores.append(s)
        if all(done):
            break
        order = torch.tensor(new_rows, device=dev)
        model.reorder_cache(cache, order)
        tokens = torch.cat([tokens.index_select(0, order), torch.tensor(new_tok, device=dev)[:, None]], dim=1)
        scores = torch.tensor(new_scores, device=dev).view(B, k)
    return [max(f, key=lambda x: x[0])[1] if f else [] for f in finished]
