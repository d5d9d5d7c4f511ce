"""Greedy and beam search decoding with an incremental (key/value cached) decoder.

Beam search follows fairseq's ``SequenceGenerator``: at each step the 2·beam best continuations
of a sentence are ranked; a continuation ending in ``</s>`` among the first ``beam`` of them is
finished with score ``Σ log p / len^lenpen`` (``len`` counts the ``</s>``); the first ``beam``
others continue; a sentence stops once it has ``beam`` finished hypotheses; at the length limit
``</s>`` is forced. The limit is ``max_len_a · src_len + max_len_b`` (``src_len`` with ``</s>``),
capped by the model's positions. ``<pad>`` and ``<s>`` are never produced.

Both searches work on tensors only: sentences × beams are rows of one batch, the
selection of each step is a handful of tensor operations, the best finished hypothesis of every
sentence is kept on the device, and a sentence that is done leaves the batch (its rows of the
encoder's keys/values and of the self-attention cache are dropped). Each step is one
:meth:`~synprep.train.model.Seq2Seq.decode_step` (:class:`_Decoder`): the cross-attention
keys/values are kept once per sentence and its beams query them together. The one host synchronisation per step is
the stop test (which sentences are still running); the hypotheses come to the host once per
batch. The results equal those of the earlier per-hypothesis Python loop (kept as
``tests/decode_reference.py``; ``tests/test_decode_batched.py``). Under ``torch.autocast`` the
model runs in the autocast dtype; log-probabilities and scores are float32 (finished scores
float64, as the Python floats of the reference).

The searches run under ``torch.inference_mode``, or under ``torch.no_grad`` where autocast is on
(:func:`_grad_free`): autocast keeps its casts of the parameters (until its outermost context ends)
only outside inference mode (pytorch/pytorch#165068), and under inference mode every linear layer of
every step cast its weight and bias again (97 of a step's 152 casts on a 6+6-layer model, and a copy
of the V × D output embedding per step). Without autocast inference mode stays: its operators skip
the autograd dispatch that ``no_grad`` still runs (measured: a step of a small model ~15% faster).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar, cast

import torch

from synprep.constants import BOS_ID, EOS_ID, PAD_ID
from synprep.defaults import DECODE_DEFAULTS
from synprep.errors import ConfigError, InputError
from synprep.train import runtime
from synprep.train.checkpoint import average_checkpoints, load_checkpoint, validate_checkpoint
from synprep.train.data import Batch, BucketBatchSampler, Collater, loader_worker_init
from synprep.train.model import DecoderLayer, EncoderOut, Seq2Seq

#: the ids never produced, <s> and <pad>, adjacent in fairseq's order: one slice to mask
_NEVER = slice(min(BOS_ID, PAD_ID), max(BOS_ID, PAD_ID) + 1)
assert _NEVER.stop - _NEVER.start == 2


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _grad_free(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``fn`` under ``torch.no_grad`` where autocast is on (CPU or CUDA; its parameter casts are then
    cached), else under ``torch.inference_mode`` (cheaper per operator; see the module docstring)."""

    @functools.wraps(fn)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        autocast = torch.is_autocast_enabled("cuda") or torch.is_autocast_enabled("cpu")
        with torch.no_grad() if autocast else torch.inference_mode():
            return fn(*args, **kwargs)

    return run


def _limits(model: Seq2Seq, batch: Batch, max_len_a: float, max_len_b: int) -> torch.Tensor:
    """(B,) long on the batch's device: ``max(1, min(int(a · src_len + b), max_positions − 1))``."""
    cap = model.cfg.max_positions - 1
    lim = (max_len_a * batch.src_lengths.double() + max_len_b).trunc().clamp(1, cap)  # int() truncates
    return lim.long()


def _range(lim: torch.Tensor) -> tuple[int, int]:
    """(lo, L): the smallest and the largest of :func:`_limits`'s ``lim``, in one host read. No ``</s>``
    is forced before step lo − 1; a search runs at most L steps."""
    lo, hi = torch.stack(lim.aminmax()).tolist()
    return lo, hi


class _Decoder:
    """The incremental decoding state of one search: per decoder layer the self-attention cache
    (2, N, H, t, dh) of the N hypothesis rows and the cross-attention keys/values (2, A, H, T, dh)
    of the A running sentences, computed once per sentence (the g = N / A rows of a sentence are
    adjacent and share them; a beam reorder moves rows only within a sentence, so it never touches
    them). A reorder of the hypothesis rows (:meth:`select`) is kept as ``order`` and applied by the
    next step, in the copy that grows the cache by one position (one copy of the cache per step,
    not a ``cat`` and an ``index_select``)."""

    def __init__(self, model: Seq2Seq, enc: EncoderOut):
        self.model = model
        layers = [cast(DecoderLayer, layer) for layer in model.decoder]
        self.mem = [layer.cross_attn.memory_kv(enc.x) for layer in layers]
        # the padding bias in the queries' dtype (that of the keys, e.g. bf16 under autocast), cast
        # once here, not by every layer of every step
        self.bias = None if enc.bias is None else enc.bias.to(self.mem[0].dtype)
        self.kv: list[torch.Tensor | None] = [None] * len(layers)
        self.step = 0
        self.order: torch.Tensor | None = None

    def lprobs(self, tokens: torch.Tensor) -> torch.Tensor:
        """(N, V) float32 log-probabilities of the next token after ``tokens`` (N,) (the newest of
        each row); ``<pad>`` and ``<s>`` get −inf."""
        logits = self.model.decode_step(tokens, self.step, self.kv, self.order, self.mem, self.bias).float()
        self.step += 1
        self.order = None
        lp = torch.log_softmax(logits, dim=-1)
        lp[:, _NEVER] = float("-inf")
        return lp

    def select(self, rows: torch.Tensor, sentences: torch.Tensor | None = None) -> None:
        """Keep (reorder / subset) hypothesis ``rows``; with ``sentences``, keep only those sentences
        (whose rows ``rows`` must index)."""
        self.order = rows if self.order is None else self.order.index_select(0, rows)
        if sentences is not None:
            self.mem = [m.index_select(1, sentences) for m in self.mem]
            self.bias = None if self.bias is None else self.bias.index_select(0, sentences)


def _hypotheses(best: torch.Tensor, length: torch.Tensor, found: torch.Tensor) -> list[list[int]]:
    """Rows of ``best`` cut at ``length`` (one transfer to the host); [] where nothing was ``found``."""
    rows, lens, ok = best.cpu().tolist(), length.cpu().tolist(), found.cpu().tolist()
    return [r[:n] if f else [] for r, n, f in zip(rows, lens, ok, strict=True)]


@_grad_free
def greedy_search(model: Seq2Seq, batch: Batch, max_len_a: float = 0.0, max_len_b: int = 200) -> list[list[int]]:
    """Greedy decoding.

    Args:
        model: in eval mode.
        batch: source side (``src_tokens``, ``src_lengths``, syntax features).

    Returns:
        B token id lists (no ``</s>``), in batch order.
    """
    B = batch.size
    dev = batch.src_tokens.device
    dec = _Decoder(model, model.encode(batch))
    lim = _limits(model, batch, max_len_a, max_len_b)
    lo, L = _range(lim)
    tokens = torch.full((B, 1), EOS_ID, dtype=torch.long, device=dev)
    sent = torch.arange(B, device=dev)  # original index of each running sentence
    best = torch.full((B, L), PAD_ID, dtype=torch.long, device=dev)
    length = torch.zeros(B, dtype=torch.long, device=dev)
    for step in range(L):
        nxt = dec.lprobs(tokens[:, -1]).argmax(dim=-1)
        if step + 1 >= lo:  # some sentence may be at its length limit (known on the host)
            nxt = nxt.masked_fill_(lim <= step + 1, EOS_ID)  # </s> forced at the length limit
        alive = nxt.ne(EOS_ID).nonzero().view(-1)  # the stop test: the step's one host sync
        if alive.numel() < nxt.numel():  # finished rows (and only they) write their hypotheses
            fin = nxt.eq(EOS_ID)
            if step:
                best[sent, :step] = torch.where(fin[:, None], tokens[:, 1:], best[sent, :step])
            length[sent] = torch.where(fin, step, length[sent])
        if alive.numel() == 0:
            break
        tokens = torch.cat([tokens, nxt[:, None]], dim=1)
        if alive.numel() < nxt.numel():
            tokens, sent, lim = tokens[alive], sent[alive], lim[alive]
            dec.select(alive, alive)
    return _hypotheses(best, length, torch.ones(B, dtype=torch.bool))


def _start_beams(B: int, k: int, dev: torch.device) -> tuple[torch.Tensor, ...]:
    """:func:`beam_search`'s state before the first step: ``(last, tokens, scores, sent, n_fin)``."""
    last = torch.full((B * k,), EOS_ID, dtype=torch.long, device=dev)  # (A*k,) each row's newest token
    tokens = torch.empty((B * k, 0), dtype=torch.long, device=dev)  # (A*k, step) each row's tokens after </s>
    scores = torch.zeros(B, k, device=dev)
    scores[:, 1:] = float("-inf")  # all beams start identical: keep one
    sent = torch.arange(B, device=dev)  # original index of each running sentence
    n_fin = torch.zeros(B, dtype=torch.long, device=dev)  # finished hypotheses per running sentence
    return last, tokens, scores, sent, n_fin


def _best_slots(B: int, L: int, dev: torch.device) -> tuple[torch.Tensor, ...]:
    """:func:`beam_search`'s best finished hypotheses, none yet: ``(run_best, run_score, best, best_score)``."""
    # the best finished hypothesis of each running sentence, (A, L) long and (A, 1) float64: its tokens
    # are <pad> after its length (a hypothesis holds no <pad>, and a later, longer one overwrites it)
    run_best = torch.full((B, L), PAD_ID, dtype=torch.long, device=dev)
    run_score = torch.full((B, 1), float("-inf"), dtype=torch.float64, device=dev)
    best = torch.full((B, L), PAD_ID, dtype=torch.long, device=dev)  # the same, by original index
    best_score = torch.full((B, 1), float("-inf"), dtype=torch.float64, device=dev)
    return run_best, run_score, best, best_score


def _candidate_positions(B: int, k: int, width: int, dev: torch.device) -> tuple[torch.Tensor, ...]:
    """:func:`beam_search`'s fixed index tensors: ``(j, first_k, j_late, first, row0)``."""
    j = torch.arange(2 * k, device=dev)
    first_k, j_late = j < k, j + 2 * k
    first = torch.arange(width, device=dev) == 0
    row0 = (torch.arange(B, device=dev) * k)[:, None]  # (A, 1) the first row of each running sentence
    return j, first_k, j_late, first, row0


@_grad_free
def beam_search(model: Seq2Seq, batch: Batch, beam: int = 5, lenpen: float = 1.0, max_len_a: float = 0.0,
                max_len_b: int = 200) -> list[list[int]]:
    """Beam search (see the module docstring).

    Rows ``a·beam … a·beam + beam − 1`` of the decoder batch are the beams of the a-th running
    sentence; ``scores`` (A, beam) float32 are their summed log-probabilities, −inf for a dead beam
    (whose row continues some row of its sentence: its continuations are −inf, never chosen).

    Returns:
        B token id lists (no ``</s>``): the best finished hypothesis of each sentence.
    """
    B, k = batch.size, beam
    dev = batch.src_tokens.device
    dec = _Decoder(model, model.encode(batch))
    lim = _limits(model, batch, max_len_a, max_len_b)  # (A,)
    lo, L = _range(lim)
    last, tokens, scores, sent, n_fin = _start_beams(B, k, dev)
    run_best, run_score, best, best_score = _best_slots(B, L, dev)
    width = min(2 * k, model.dec_embed.num_embeddings)  # candidates per row
    j, first_k, j_late, first, row0 = _candidate_positions(B, k, width, dev)
    for step in range(L):
        A = sent.numel()
        lp = dec.lprobs(last)  # (A*k, V)
        # the best 2k continuations of a sentence are among the best 2k of each of its beams (two
        # topk, not one over beam × V: the reference's order among equal scores, common under bf16)
        row_s, row_i = lp.topk(width, dim=1)  # (A*k, 2k)
        at_limit = step + 1 >= lo  # some sentence may be at its length limit (known on the host)
        if at_limit:
            # </s> alone at the length limit: the row's only finite candidate (the others are never used)
            forced = lim <= step + 1
            forced_rows = forced.repeat_interleave(k)[:, None]
            row_s = torch.where(forced_rows, torch.where(first, lp[:, EOS_ID:EOS_ID + 1], float("-inf")), row_s)
            row_i = torch.where(forced_rows & first, EOS_ID, row_i)
        cand = (scores.view(A * k, 1) + row_s).view(A, -1)  # (A, k*2k)
        top_s, top_j = cand.topk(2 * k, dim=1)  # (A, 2k), best first
        top_row = row0 + top_j // width  # (A, 2k) the row each candidate continues
        top_tok = row_i.view(A, -1).gather(1, top_j)
        valid = top_s.ne(float("-inf"))
        eos = top_tok.eq(EOS_ID)
        # finished: </s> among the first k; the best of them (first on ties) may replace the kept one
        fin = eos & valid & first_k
        norm = torch.where(fin, top_s.double() / (step + 1) ** lenpen, float("-inf"))
        bval, bj = norm.max(dim=1, keepdim=True)  # (A, 1) the first maximum; −inf where none finished
        upd = bval > run_score
        run_score = torch.where(upd, bval, run_score)
        if step:
            hyp = tokens.index_select(0, top_row.gather(1, bj).view(-1))  # (A, step)
            prefix = run_best[:, :step]
            torch.where(upd, hyp, prefix, out=prefix)
        n_fin += fin.sum(dim=1)
        # continuing: the first k valid non-</s> candidates, then dead beams (−inf)
        keep = valid > eos  # valid and not </s>
        sel = torch.where(keep, j, j_late).topk(k, dim=1, largest=False)[1]  # (A, k) the first k kept ones, in order
        new_s = torch.where(keep, top_s, float("-inf")).gather(1, sel)
        new_tok = top_tok.gather(1, sel)
        running = n_fin < k
        if at_limit:
            running &= ~forced
        alive = running.nonzero().view(-1)  # the stop test: the step's one host sync
        if alive.numel() == 0:
            best.index_copy_(0, sent, run_best)
            best_score.index_copy_(0, sent, run_score)
            break
        order = top_row.gather(1, sel)  # (A, k) rows of the next step
        if alive.numel() < A:  # finished sentences leave the batch
            best.index_copy_(0, sent, run_best)
            best_score.index_copy_(0, sent, run_score)
            order, new_tok, new_s = order[alive].view(-1), new_tok[alive], new_s[alive]
            sent, lim, n_fin, run_best, run_score = sent[alive], lim[alive], n_fin[alive], run_best[alive], run_score[alive]
            row0 = row0[:alive.numel()]
            dec.select(order, alive)
        else:
            order = order.view(-1)
            dec.select(order)
        last = new_tok.view(-1)
        tokens = torch.cat([tokens.index_select(0, order), last[:, None]], dim=1)
        scores = new_s
    return _hypotheses(best, best.ne(PAD_ID).sum(dim=1), best_score.view(-1) > float("-inf"))


def load_model(path, device: torch.device | str = "cpu", average=None):
    """Model, config and vocabulary of a checkpoint, in eval mode on ``device``.

    Args:
        path: a synprep checkpoint (loaded with ``weights_only=True`` and validated before the
            model is built: :func:`synprep.train.checkpoint.validate_checkpoint`).
        average: instead of ``path`` alone, the mean of these checkpoints' parameters
            (:func:`synprep.train.checkpoint.average_checkpoints`, fairseq's semantics).

    Returns:
        (Seq2Seq, TrainConfig, symbols).

    Raises:
        InputError: see :func:`~synprep.train.checkpoint.load_checkpoint` and
            :func:`~synprep.train.checkpoint.validate_checkpoint`.
    """
    ck = average_checkpoints(average) if average else load_checkpoint(path, map_location="cpu")
    cfg = validate_checkpoint(ck, path)
    symbols = list(ck["symbols"])
    model = Seq2Seq(cfg, len(symbols))
    model.load_state_dict(ck["model"])
    return model.to(device).eval(), cfg, symbols


def check_jobs(jobs: int, device: torch.device | str) -> None:
    """Check that ``jobs`` batches can be decoded at once on ``device``.

    Raises:
        ConfigError: ``jobs`` > 1 on a device other than the CPU (a GPU decodes one batch at a time).
    """
    if jobs > 1 and torch.device(device).type != "cpu":
        raise ConfigError(f"-j/--jobs {jobs} decodes several batches at once on the CPU; on {device} the batches "
                          "run one after another (raise --max-tokens for larger batches instead)")


@torch.no_grad()
def translate_dataset(model: Seq2Seq, dataset, *, beam: int = 5, lenpen: float = 1.0, max_len_a: float = 0.0,
                      max_len_b: int = 200, max_tokens: int | None = None, device: torch.device | str = "cpu",
                      progress: bool | None = None, jobs: int = 1, read_ahead: bool | None = None) -> list[list[int]]:
    """Translate every pair of a dataset (its source side), batched by source length.

    Args:
        model: in eval mode.
        dataset: yields ``(index, PairRecord)``, has ``src_lengths``.
        beam: 1 = greedy search.
        max_tokens: source tokens per batch (padding included); None: the device kind's default
            (:class:`synprep.defaults.DecodeDefaults`: 4096 on the CPU, 32768 on a GPU).
        jobs: batches decoded at once, each in a thread of this process (CPU only): torch's
            intra-op threads are shared out between them (``max(1, threads // jobs)`` each, restored
            after); at most one thread per batch (fewer batches than ``jobs``: fewer threads, each
            with more of torch's). A small model's search step is many small operations that intra-op threads speed
            up little; batches side by side use the cores better (:func:`_in_threads`; docs/train.md).
        read_ahead: read and collate the next batches in a DataLoader worker process (pinned memory on
            CUDA) while this process searches; None: on a GPU only, where the search would otherwise
            wait for every batch's reads (on the CPU ``jobs`` threads overlap them with this thread's).

    Returns:
        hypotheses (token ids, no ``</s>``) in dataset order, whatever ``jobs``.

    Raises:
        InputError: a source longer than the model's ``max_positions`` (the message names its line).
        ConfigError: ``jobs`` > 1 on a device other than the CPU (a GPU decodes one batch at a time).
    """
    import sys

    import numpy as np
    from tqdm import tqdm

    cfg = model.cfg
    src = np.asarray(dataset.src_lengths)
    too_long = np.flatnonzero(src + 1 > cfg.max_positions)
    if len(too_long):
        i = int(too_long[0])
        line = dataset.line(i) if hasattr(dataset, "line") else i + 1
        raise InputError(f"source of {int(src[i])} pieces exceeds the model's max_positions={cfg.max_positions}",
                         None, line)

    check_jobs(jobs, device)
    if max_tokens is None:
        max_tokens = DECODE_DEFAULTS.max_tokens(device)
    policy = runtime.resolve(cfg, device)  # the checkpoint's decode autocast and attention kernels
    runtime.apply(policy)
    sampler = BucketBatchSampler(src, src, max(max_tokens, int(src.max(initial=0)) + 1), shuffle=False)
    jobs = max(1, min(jobs, len(sampler)))  # no idle threads: their share of torch's threads goes to the others
    collate = Collater.for_model(model)
    out: list[list[int]] = [[] for _ in range(len(dataset))]
    show = sys.stderr.isatty() if progress is None else progress

    def search(batch: Batch) -> tuple[list[int], list[list[int]]]:
        with policy.autocast("decode"):  # autocast is per thread (the searches then pick no_grad or inference mode themselves)
            if beam == 1:
                return batch.ids.tolist(), greedy_search(model, batch, max_len_a, max_len_b)
            return batch.ids.tolist(), beam_search(model, batch, beam, lenpen, max_len_a, max_len_b)

    cuda = torch.device(device).type == "cuda"
    if read_ahead is None:
        read_ahead = cuda
    if read_ahead:  # the trainer's loader: one worker, two batches ahead (memory stays flat)
        from torch.utils.data import DataLoader

        loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collate, num_workers=1,
                            pin_memory=cuda, worker_init_fn=loader_worker_init)
        batches = (b.to(device) for b in loader)
    else:
        batches = (collate([dataset[i] for i in idx]).to(device) for idx in sampler)  # read in this thread only
    with tqdm(total=len(dataset), desc="translate", unit="sent", file=sys.stderr, disable=not show, leave=False) as bar:
        for ids, hyps in _in_threads(search, batches, jobs):
            for i, h in zip(ids, hyps, strict=True):
                out[i] = h
            bar.update(len(ids))
    return out


def _in_threads(fn, items, jobs: int):
    """``fn(item)`` for every item, in order; with ``jobs`` > 1 in a pool of ``jobs`` threads, at most
    ``2 · jobs`` items taken from ``items`` ahead of the result returned (memory stays flat), torch's
    intra-op threads shared out (``max(1, n // jobs)`` each while the pool runs) and the attention
    kernels scoped once around the pool (:func:`synprep.train.runtime.shared_kernels`). torch releases
    the GIL inside its operations, so the threads' searches run on different cores."""
    if jobs <= 1:
        yield from map(fn, items)
        return
    import collections
    from concurrent.futures import ThreadPoolExecutor

    threads = torch.get_num_threads()
    torch.set_num_threads(max(1, threads // jobs))
    try:
        with runtime.shared_kernels(), ThreadPoolExecutor(jobs, thread_name_prefix="translate") as pool:
            pending: collections.deque = collections.deque()
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= 2 * jobs:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
    finally:
        torch.set_num_threads(threads)
