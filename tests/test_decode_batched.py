"""The batched decoder returns exactly the hypotheses of the earlier per-hypothesis
decoder (tests/decode_reference.py) on a checkpoint trained here on real Multi30k pairs, and
finished sentences leave the decoder's batch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from synprep.train.checkpoint import LAST
from synprep.train.config import load_preset, with_overrides
from synprep.train.data import BucketBatchSampler, Collater, RecordDataset
from synprep.train.decode import beam_search, greedy_search, load_model, translate_dataset
from synprep.train.loop import Trainer
from synprep.train.toydata import build_vocab, read_pairs, record_of_words
from tests import decode_reference as reference


@pytest.fixture(scope="module")
def trained(shared_data, tmp_path_factory):
    """A `tiny` model trained 150 updates on 200 Multi30k pairs, loaded back from its checkpoint;
    batches of 40 training pairs and of 60 unseen pairs (imperfect translations: real beam choices)."""
    pairs = read_pairs(shared_data / "multi30k/train.de.gz", shared_data / "multi30k/train.en.gz", 260, "de", "en")
    vocab = build_vocab([w for pair in pairs for w in pair], split_len=7)
    rng = np.random.default_rng(0)
    recs = [record_of_words(i + 1, [s], t, vocab.symbols, rng) for i, (s, t) in enumerate(pairs)]
    out = tmp_path_factory.mktemp("decode")
    cfg = with_overrides(load_preset("tiny"), {"max_steps": 150, "max_epochs": 0, "log_interval": 50, "threads": 1})
    Trainer(cfg, RecordDataset(recs[:200]), RecordDataset(recs[200:]), vocab.symbols, out, torch.device("cpu"),
            progress=False).run()
    model, _, _ = load_model(out / LAST)
    collate = Collater.for_model(model)
    return model, {"seen": collate(list(enumerate(recs[:40]))), "unseen": collate(list(enumerate(recs[200:])))}


@pytest.mark.parametrize("part", ["seen", "unseen"])
@pytest.mark.parametrize("beam,lenpen", [(1, 1.0), (5, 1.0), (5, 0.0), (5, 2.0)])
@pytest.mark.parametrize("max_len_a,max_len_b", [(0.0, 200), (1.0, 2)])
def test_hypotheses_equal_the_reference_decoder(trained, part, beam, lenpen, max_len_a, max_len_b):
    model, batches = trained
    batch = batches[part]
    if beam == 1:
        old = reference.greedy_search(model, batch, max_len_a, max_len_b)
        new = greedy_search(model, batch, max_len_a, max_len_b)
        assert new == beam_search(model, batch, 1, lenpen, max_len_a, max_len_b)
    else:
        old = reference.beam_search(model, batch, beam, lenpen, max_len_a, max_len_b)
        new = beam_search(model, batch, beam, lenpen, max_len_a, max_len_b)
    assert new == old
    limits = [int(max_len_a * n + max_len_b) for n in batch.src_lengths.tolist()]
    assert all(len(h) < lim for h, lim in zip(new, limits, strict=True))  # the limit counts </s>
    assert sum(map(len, new)) > batch.size  # real hypotheses, not empty lists


def test_hypotheses_equal_the_reference_under_bf16_autocast(trained):
    model, batches = trained
    batch = batches["unseen"]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        old = reference.beam_search(model, batch, 5, 1.0, 0.0, 200)
        new = beam_search(model, batch, 5, 1.0, 0.0, 200)
    assert new == old


def test_finished_sentences_leave_the_batch(trained):
    model, batches = trained
    batch = batches["unseen"]
    rows: list[int] = []
    hook = model.decoder[0].ffn.register_forward_hook(lambda _m, args, _o: rows.append(args[0].shape[0]))
    try:
        hyps = beam_search(model, batch, 5, 1.0, 0.0, 200)
    finally:
        hook.remove()
    lengths = sorted(len(h) for h in hyps)
    assert rows[0] == 5 * batch.size
    assert rows == sorted(rows, reverse=True) and rows[-1] < rows[0]  # shrinks as sentences finish
    assert lengths[0] < lengths[-1]  # sentences of different lengths: they finish at different steps


def test_translate_dataset_matches_the_reference(trained):
    model, batches = trained
    batch = batches["unseen"]
    recs = RecordDataset([_pair(batch, b) for b in range(batch.size)])
    got = translate_dataset(model, recs, beam=5, max_len_b=200, max_tokens=256, progress=False)
    assert got == reference.beam_search(model, batch, 5, 1.0, 0.0, 200)


def test_the_batch_size_defaults_per_device_kind(trained, monkeypatch):
    from synprep.defaults import DECODE_DEFAULTS
    from synprep.train import decode

    kinds = ("cpu", torch.device("cpu"), "cuda", "cuda:1", torch.device("cuda", 0))
    assert [DECODE_DEFAULTS.max_tokens(d) for d in kinds] == [4096, 4096, 32768, 32768, 32768]
    model, batches = trained
    batch = batches["unseen"]
    recs = RecordDataset([_pair(batch, b) for b in range(batch.size)])
    sizes: list[int] = []
    real = decode.beam_search
    monkeypatch.setattr(decode, "beam_search", lambda m, b, *a: sizes.append(b.size) or real(m, b, *a))
    got = translate_dataset(model, recs, beam=5, max_len_b=200, progress=False)  # the CPU's 4096: one batch
    assert sizes == [60] and got == reference.beam_search(model, batch, 5, 1.0, 0.0, 200)
    sizes.clear()
    assert translate_dataset(model, recs, beam=5, max_len_b=200, max_tokens=256, progress=False) == got
    assert len(sizes) > 2 and sum(sizes) == 60


def _pair(batch, b):
    """The b-th source of a collated batch as a record (its syntax columns rebuilt from the batch)."""
    from synprep.types import PairRecord

    n = int(batch.src_lengths[b]) - 1
    gaps = batch.syntax["slr"][b, : n - 1].numpy().astype(np.int64)
    e = np.zeros(0, dtype=np.int64)
    return PairRecord(line=b + 1, src_ids=batch.src_tokens[b, :n].numpy(), tgt_ids=e, word_index=e, heads=e, deprel=e,
                      upos=e, sent_start=e, gaps_cnf=gaps, gaps_nary=gaps, ldd_dep=e, ldd_head=e, ldd_rel=e,
                      ldd_prob=e.astype(np.float32))


@pytest.mark.parametrize("backend", ["auto", "math"])
def test_translate_in_threads_gives_the_same_hypotheses(trained, backend, monkeypatch):
    """`translate -j 3`: batches decoded in three threads (torch's threads shared out, the attention
    kernels scoped once around the pool) give the hypotheses of one thread, in dataset order; torch's
    thread count and the checkpoint's kernel policy are restored after."""
    import dataclasses

    from synprep.train import runtime

    model, batches = trained
    monkeypatch.setattr(model, "cfg", dataclasses.replace(model.cfg, attention_backend=backend))
    batch = batches["unseen"]
    recs = RecordDataset([_pair(batch, b) for b in range(batch.size)])
    threads = torch.get_num_threads()
    try:
        one = translate_dataset(model, recs, beam=5, max_len_b=200, max_tokens=64, progress=False)
        three = translate_dataset(model, recs, beam=5, max_len_b=200, max_tokens=64, progress=False, jobs=3)
        kernels = (runtime._masked, runtime._unmasked)
    finally:
        runtime.set_attention_backend("auto")
    assert three == one == reference.beam_search(model, batch, 5, 1.0, 0.0, 200)
    assert torch.get_num_threads() == threads
    assert kernels == ((None, None) if backend == "auto" else runtime._KERNELS["math"])


def test_jobs_above_the_batch_count_leave_no_thread_idle(trained, monkeypatch):
    """`-j 8` on a split of two batches decodes them in two threads, each with half of torch's threads
    (not an eighth, as eight threads of which six had nothing to decode): the same hypotheses."""
    from synprep.train import decode

    model, batches = trained
    batch = batches["unseen"]
    recs = RecordDataset([_pair(batch, b) for b in range(batch.size)])
    src = np.asarray(recs.src_lengths)
    max_tokens = next(m for m in range(int(src.max()) + 1, 100_000)  # the smallest batches that make two
                      if len(BucketBatchSampler(src, src, m, shuffle=False)) == 2)
    seen: list[tuple[str, int]] = []
    search = decode.beam_search

    def spy(*args, **kwargs):
        import threading

        seen.append((threading.current_thread().name, torch.get_num_threads()))
        return search(*args, **kwargs)

    monkeypatch.setattr(decode, "beam_search", spy)
    threads = torch.get_num_threads()
    torch.set_num_threads(4)
    try:
        eight = translate_dataset(model, recs, beam=5, max_tokens=max_tokens, progress=False, jobs=8)
        assert len(seen) == 2 and {n for _, n in seen} == {2}, seen
        assert len({name for name, _ in seen}) == 2  # two threads of the pool, one batch each
        assert torch.get_num_threads() == 4
        seen.clear()
        one = translate_dataset(model, recs, beam=5, max_tokens=max_tokens, progress=False)
        assert [n for _, n in seen] == [4, 4]
    finally:
        torch.set_num_threads(threads)
    assert eight == one


@pytest.mark.parametrize("jobs", [1, 2])
def test_read_ahead_in_a_worker_gives_the_same_hypotheses_in_order(trained, jobs):
    """The batches read and collated in a DataLoader worker process (a GPU's default) give the
    hypotheses of batches read in this thread, in dataset order, with one search thread or two."""
    model, batches = trained
    batch = batches["unseen"]
    recs = RecordDataset([_pair(batch, b) for b in range(batch.size)])
    ahead = translate_dataset(model, recs, beam=5, max_tokens=64, progress=False, jobs=jobs, read_ahead=True)
    here = translate_dataset(model, recs, beam=5, max_tokens=64, progress=False, read_ahead=False)
    assert ahead == here == reference.beam_search(model, batch, 5, 1.0, 0.0, 200)


def test_shared_kernels_scope_the_kernels_once():
    """Inside `shared_kernels` sdpa enters no scope of its own (a per-call scope ending in one thread
    while another thread's call runs would switch that call's kernel) and the policy's kernels are
    the process's; after it, both are as before."""
    from synprep.train import runtime

    runtime.set_attention_backend("math")
    try:
        assert torch.backends.cuda.flash_sdp_enabled()  # per call only, outside
        with runtime.shared_kernels():
            assert (runtime._masked, runtime._unmasked) == (None, None)
            assert torch.backends.cuda.math_sdp_enabled() and not torch.backends.cuda.flash_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled()
        assert runtime._masked == [torch.nn.attention.SDPBackend.MATH]
    finally:
        runtime.set_attention_backend("auto")


def test_jobs_on_a_gpu_is_an_error():
    """-j decodes batches side by side on the CPU only: on a GPU the option would have no effect."""
    from synprep.errors import ConfigError
    from synprep.train.decode import check_jobs

    check_jobs(4, "cpu")
    check_jobs(1, "cuda")
    with pytest.raises(ConfigError, match="-j/--jobs 2 decodes several batches at once on the CPU; on cuda:0"):
        check_jobs(2, "cuda:0")


def test_training_after_decoding_in_inference_mode(tmp_path):
    """Under ``torch.inference_mode`` (the searches' mode without autocast, or a caller's), the index
    tensors the model caches for later calls
    (``synprep.train.masks.device_index``: here heads 0 and 2, not a slice) must stay normal tensors, or
    the next training step's ``index_select`` cannot save them for backward."""
    from synprep.shards.synthetic import random_records
    from synprep.train import masks
    from synprep.train.model import Seq2Seq

    masks._DEVICE_INDEX.clear()
    cfg = with_overrides(load_preset("tiny"), {"syntax_heads": [0, 2], "dropout": 0.0})
    torch.manual_seed(0)
    model = Seq2Seq(cfg, 50)
    recs = list(random_records(6, np.random.default_rng(0), vocab_size=50))
    batch = Collater.for_model(model)(list(enumerate(recs)))
    model.eval()
    with torch.inference_mode():
        assert len(beam_search(model, batch, 2, 1.0, 0.0, 5)) == 6
    assert masks._DEVICE_INDEX and not any(t.is_inference() for t in masks._DEVICE_INDEX.values())
    model.train()
    logits, _ = model(batch)
    logits.sum().backward()  # RuntimeError "Inference tensors cannot be saved for backward" before
    assert model.encoder[0].self_attn.q_proj.weight.grad is not None


@pytest.mark.parametrize("search", [greedy_search, beam_search])
def test_autocast_casts_the_output_embedding_once_per_search(search):
    """Under bf16 autocast the searches reuse autocast's cast of each parameter: they run under
    ``no_grad`` there (under ``inference_mode`` autocast keeps no casts, and every step cast every weight
    again, the (V, D) output embedding included)."""
    from torch.profiler import profile

    from synprep.shards.synthetic import random_records
    from synprep.train.model import Seq2Seq

    torch.manual_seed(0)
    model = Seq2Seq(load_preset("tiny"), 50).eval()
    batch = Collater.for_model(model)(list(enumerate(random_records(3, np.random.default_rng(0), vocab_size=50))))
    shape = list(model.dec_embed.weight.shape)
    with profile(record_shapes=True) as prof, torch.autocast("cpu", dtype=torch.bfloat16):
        search(model, batch, max_len_b=8)
    casts = [e for e in prof.events() if e.name == "aten::_to_copy" and e.input_shapes[:1] == [shape]]
    assert len(casts) == 1
