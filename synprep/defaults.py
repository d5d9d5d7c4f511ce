"""The stages' own defaults, in one typed place that imports nothing.

Stage modules (:mod:`synprep.text.clean`, :mod:`synprep.parse`, the annotation stage) read their
defaults from here, never from the application's configuration; :class:`synprep.pipeline.config.DataConfig`
takes its field defaults from here too, so each number is written once.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CleanDefaults:
    """clean-corpus-n.perl's filter as fairseq's IWSLT14 recipe runs it (SPEC.md §1).

    Attributes:
        ratio: maximum token-count ratio either way.
        min_len: the smallest token count of a side, inclusive.
        max_len: the largest token count of a side, inclusive.
    """

    ratio: float = 1.5
    min_len: int = 1
    max_len: int = 175


@dataclass(frozen=True)
class ParseDefaults:
    """The parser stage.

    Attributes:
        max_words: longer sentences are recorded as ``parse:too_long``, never parsed (stanza hangs or
            runs out of memory on 400+ words).
        batch_size: sentences per parser call sent to a worker.
        ldd_threshold: LDD entries with P(head, rel) below this are dropped (SPEC.md §4).
    """

    max_words: int = 250
    batch_size: int = 64
    ldd_threshold: float = 0.01


@dataclass(frozen=True)
class ShardDefaults:
    """The shard writer. Attributes: shard_size: input pairs per shard (the unit of resume)."""

    shard_size: int = 10000


@dataclass(frozen=True)
class RuntimeDefaults:
    """How a run uses the machine: never part of a folder's configuration, never changes the output.

    Attributes:
        gpu_workers_per_device: a ``--device cuda`` parse on this machine (loky) runs this many workers per
            visible GPU without ``-j``, and at most this many with it (``$SYNPREP_GPU_WORKERS_PER_DEVICE``
            overrides it). Measured on one H100 with 16 cores, IWSLT14 test.de (benchmarks/gpu_suite.py,
            figure ``parse_workers``): 4 workers 1665, 8 workers 1759, 16 workers 664 sentences/s.
        cuda_loader_workers: DataLoader workers of a training process on CUDA when its config leaves
            ``num_workers`` at -1 (auto; on the CPU auto is 0). The reads and the collation then run beside the
            updates, not between them: on the CPU a batch of 16384 tokens took 5 ms to read and collate for the
            vanilla and gated presets and 23–37 ms for SET (its relation paths), against ~35–40 ms of GPU time an
            update with CUDA graphs on an H100 (benchmarks/bench_train_gpu.py). 2 as that benchmark's real
            loop runs; fairseq's default is 1.
    """

    gpu_workers_per_device: int = 8
    cuda_loader_workers: int = 2


@dataclass(frozen=True)
class DecodeDefaults:
    """Beam search's batches (``synprep translate``, :func:`synprep.train.decode.translate_dataset`): source
    tokens per batch, padding included, per device kind. The hypotheses do not depend on it beyond the last
    bits of padded arithmetic.

    Attributes:
        max_tokens_cpu: on the CPU, where a step's operators scale with its rows. Measured with
            benchmarks/bench_translate.py (the ``tiny`` copy-task model, a 2-core machine): 2048 → 234.6,
            4096 → 271.5, 8192 → 280.4, 16384 → 262.4 sentences/s, within the noise.
        max_tokens_cuda: on a GPU, where a search step costs about the same host time whatever its rows.
            Measured with benchmarks/gpu_suite.py (beam 5, bf16, ``vanilla_iwslt14_de_en``): figure
            ``translate_iwslt_size`` on one H200, an untrained model on 6750 sentences of IWSLT14 test's
            shape, 4096 → 674, 16384 → 2154, 32768 → 2840 sentences/s; figure ``translate_trained`` on one
            H100, a (weakly) trained model on IWSLT14 test itself, 4096 → 2005, 16384 → 6302, 32768 → 9969,
            65536 → 10127. At 30 pieces per sentence 32768 tokens are ~5,500 beam rows: 0.9 GB of float32
            log-probabilities for a 40,000-symbol vocabulary.
    """

    max_tokens_cpu: int = 4096
    max_tokens_cuda: int = 32768

    def max_tokens(self, device: object) -> int:
        """The default for ``device`` (a ``torch.device`` or its name: ``cpu``, ``cuda``, ``cuda:1``, …)."""
        kind = getattr(device, "type", None) or str(device).split(":", 1)[0]
        return self.max_tokens_cuda if kind == "cuda" else self.max_tokens_cpu


CLEAN_DEFAULTS = CleanDefaults()
PARSE_DEFAULTS = ParseDefaults()
SHARD_DEFAULTS = ShardDefaults()
RUNTIME_DEFAULTS = RuntimeDefaults()
DECODE_DEFAULTS = DecodeDefaults()
