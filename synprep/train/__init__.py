"""synprep.train — the gated syntax-attention Transformer and its trainer (SPEC.md §6, docs/train.md).

One module per concept:

* :mod:`~synprep.train.config` — :class:`TrainConfig` (every hyperparameter), presets, overrides.
* :mod:`~synprep.train.data` — shard dataset, length-bucketed batch sampler (DDP-aware), collate.
* :mod:`~synprep.train.masks` — SLR log-mask, PASCAL Gaussian weights, LDD weights (torch).
* :mod:`~synprep.train.sources` — the syntax-source registry (SLR, PASCAL, LDD, LDD 1-best parent,
  LISA/SISA, SLA, SET): one module per source, each with its collate, inputs and attention.
* :mod:`~synprep.train.attention` — plain and gated syntactic multi-head attention (SDPA).
* :mod:`~synprep.train.gate` — the per-layer gate network.
* :mod:`~synprep.train.model` — the encoder-decoder.
* :mod:`~synprep.train.loss` — fairseq's label-smoothed cross-entropy.
* :mod:`~synprep.train.run` — :func:`~synprep.train.run.train`: one run on a shard folder (run lock, DDP group).
* :mod:`~synprep.train.loop` — :class:`Trainer`: updates, validation, checkpoints, DDP.
* :mod:`~synprep.train.schema` — :class:`TrainConfig`'s fields, defaults and checks.
* :mod:`~synprep.train.state` — a run's position, schedule, effective gates, signature.
* :mod:`~synprep.train.distributed` — rank and device of a training process.
* :mod:`~synprep.train.checkpoint` — exact-resume checkpoints.
* :mod:`~synprep.train.decode` — greedy and beam search, translating a dataset.
* :mod:`~synprep.train.metrics` — BLEU (sacrebleu), gate heatmap, metrics.jsonl.
* :mod:`~synprep.train.toydata` — well-formed records from plain words (tests, benchmarks).
"""
