"""The :class:`TrainConfig` dataclass: every field of a training run, its default, its checks.

Variants (SPEC.md §6), selected by ``syntax``:

========== =====================================================================================
vanilla    plain Transformer (G ≡ 0 everywhere; no syntax features are read)
gated      ``A = G·A_syn + (1−G)·A_raw``, G from the gate network (paper eq. 4–10)
avg        ablation "Avg": G ≡ 0.5 (paper Table 6)
pure       ablation "Pure": G ≡ 1 (paper Table 6)
hard       hard placement: G ≡ 1 on ``syntax_heads`` of ``syntax_layers``, plain heads elsewhere
========== =====================================================================================

``syntax_source`` picks the syntactic attention of each syntactic head, by its name in the
registry :data:`synprep.train.sources.SOURCES` (``slr``, ``pascal``, ``ldd``, ``ldd_parent``,
``lisa``, ``sla``, ``set``; one module each under ``synprep/train/sources/``). It is one name for
every syntactic head, or a list with one entry per syntactic layer, each a name or a list with
one name per head.

Source-dependent defaults (:data:`SOURCE_DEFAULTED`): a field left at None takes the value of the
paper of the sources in use — each source's own paper where it runs as that paper ran it (e.g. no
syntax dropout for SLR or PASCAL in ``hard`` mode; SLA's unregularised gate), else the gated
paper's (:data:`GATED_PAPER_DEFAULTS`). The resolved value is what ``to_dict`` shows and saves.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import MISSING, dataclass, field
from typing import Any, TypeVar

from synprep.constants import GAP_MODES
from synprep.errors import ConfigError
from synprep.features.slr import HARD_MODES
from synprep.train.source_registry import SOURCES, source_options, spec_class
from synprep.types import DEPRELS

SYNTAX_MODES = ("vanilla", "gated", "avg", "pure", "hard")
#: the constant G of every syntactic head per mode (None: learned by the gate networks)
SYNTAX_GATE: dict[str, float | None] = {"vanilla": 0.0, "gated": None, "avg": 0.5, "pure": 1.0, "hard": 1.0}
SYNTAX_SOURCES = tuple(SOURCES)
# --- syntax-source defaults (engineer `sources`) ----------------------------------------------
#: the gated paper's values of the source-dependent fields (gated-syntax-attention Table 2,
#: IWSLT14 De-En: ignore rate 0.4, locking epoch K = 80; §4.4 BatchNorm in the gate)
GATED_PAPER_DEFAULTS: dict[str, Any] = {"syntax_dropout": 0.4, "gate_freeze_epochs": 80, "gate_batch_norm": True}
#: fields whose default (None) is resolved from the syntax sources (see the module docstring)
SOURCE_DEFAULTED = tuple(GATED_PAPER_DEFAULTS)
# ----------------------------------------------------------------------------------------------
SLR_HARD = HARD_MODES

#: fields that may change when a run is resumed (they do not change the model or the data order)
RESUME_OVERRIDABLE = frozenset({"max_steps", "max_epochs", "num_workers", "log_interval", "threads",
                                "save_interval_updates", "keep_last_epochs", "beam", "lenpen", "max_len_a",
                                "max_len_b", "decode_bf16", "tf32", "attention_backend", "compile",
                                "cuda_graphs", "async_checkpoint"})
#: values of ``batch_order``: the size the training pairs are sorted by first (synprep.train.data.BucketBatchSampler)
BATCH_ORDERS = ("target", "source")
#: values of ``attention_backend`` (what each does: synprep/train/runtime.py)
ATTENTION_BACKENDS = ("auto", "efficient", "flash", "cudnn", "math", "flex")

log = logging.getLogger("synprep.train")
#: the syntax fields of TrainConfig that belong to no one source (the sources' options follow syntax_source)
SYNTAX_CORE = ("syntax", "syntax_layers", "syntax_heads", "syntax_source")
#: the gate and syntax-dropout fields (SOURCE_DEFAULTED and the gate network's size)
GATE_FIELDS = ("syntax_dropout", "gate_hidden", "gate_freeze_epochs", "gate_batch_norm")

_C = TypeVar("_C")


def _with_source_options(cls: type[_C]) -> type[_C]:
    """Add a field per source option (:func:`synprep.train.sources.source_options`) to ``cls``'s
    annotations after ``syntax_source``, before :func:`dataclasses.dataclass` reads them."""
    added: dict[str, Any] = {}
    for opt in source_options():
        f = opt.field
        setattr(cls, opt.key, field(default=f.default) if f.default_factory is MISSING
                else field(default_factory=f.default_factory))
        added[opt.key] = opt.type
    ann: dict[str, Any] = {}
    for name, tp in cls.__dict__["__annotations__"].items():
        ann[name] = tp
        if name == "syntax_source":
            ann.update(added)
    cls.__annotations__ = ann
    return cls


@dataclass
@_with_source_options
class TrainConfig:
    """Every hyperparameter of a training run (defaults = the paper's IWSLT14 De→En setup).

    Sources: gated-syntax-attention §5.1 and Table 2; fairseq's ``transformer_iwslt_de_en``
    architecture and IWSLT recipe for what the paper leaves out (marked "fairseq").
    """

    # --- model (paper §5.1; fairseq transformer_iwslt_de_en) ---------------------------------
    d_model: int = 512  # model width: embeddings and every layer's input and output
    ffn_dim: int = 1024  # inner width of each layer's feed-forward network
    heads: int = 4  # attention heads of every layer (must divide d_model)
    encoder_layers: int = 6  # encoder self-attention layers
    decoder_layers: int = 6  # decoder layers
    dropout: float = 0.3  # dropout on embeddings and residual branches
    attention_dropout: float = 0.2  # dropout on attention weights
    activation_dropout: float = 0.0  # fairseq default
    share_embeddings: bool = True  # one matrix: encoder input, decoder input, output projection
    normalize_before: bool = False  # fairseq default: post-norm
    max_positions: int = 1024  # pairs longer than this (pieces + </s>) are skipped, counted

    # --- syntax (SPEC.md §3, §4, §6) ----------------------------------------------------------
    syntax: str = "gated"  # vanilla | gated | avg | pure | hard
    syntax_layers: list[int] | None = None  # 0-based encoder layers; None = all (hard: [0])
    syntax_heads: list[int] | None = None  # 0-based heads of those layers; None = all
    syntax_source: Any = "slr"  # a name in sources.SOURCES, or one per syntax layer (name or list per head)
    # the sources' options follow here: one field per field of each source's ``Options`` dataclass
    # (synprep/train/sources/specs.py), named SOURCE_FIELD (slr_tau, sla_threshold, …; PASCAL's
    # parent_ignore keeps its name): see _with_source_options and docs/train.md
    # None = the sources' paper default (SOURCE_DEFAULTED), resolved when the config is built
    syntax_dropout: float = None  # type: ignore[assignment]  # syntax ignoring: dropout on A_syn (Table 2 "ignore rate")
    gate_hidden: int = 256  # d' of the gate network (not given in the paper; d/2)
    gate_freeze_epochs: int = None  # type: ignore[assignment]  # pre-warmup: gate network frozen for the first K epochs
    gate_batch_norm: bool = None  # type: ignore[assignment]  # BatchNorm in the gate network (SLA: none)
    # --- optimisation (paper §5.1) ------------------------------------------------------------
    lr: float = 7e-3  # peak learning rate, reached after warmup_updates (inverse square root decay after)
    warmup_init_lr: float = 1e-3  # learning rate of update 1, raised linearly to lr
    warmup_updates: int = 4000  # updates of the linear warm-up
    adam_betas: list[float] = field(default_factory=lambda: [0.9, 0.98])  # Adam's (beta1, beta2)
    adam_eps: float = 1e-8  # Adam's epsilon
    weight_decay: float = 1e-4  # decoupled (AdamW), as fairseq's Adam applies it
    label_smoothing: float = 0.1  # label-smoothed cross-entropy's epsilon
    clip_norm: float = 0.0  # 0 = no clipping (fairseq IWSLT recipe)
    max_tokens: int = 4096  # per batch, padding included (fairseq --max-tokens)
    batch_order: str = "target"  # pairs sorted by (target, source) size, or "source": (source, target) as fairseq
    update_freq: int = 1  # batches per update (fairseq --update-freq)
    max_epochs: int = 100  # 0 = no limit (then max_steps must be set)
    max_steps: int = 0  # 0 = no limit
    seed: int = 1  # seeds the model's initialisation, dropout and the batch order
    bf16: bool = False  # bf16 autocast (CUDA or CPU)

    # --- bookkeeping ----------------------------------------------------------------------------
    num_workers: int = -1  # DataLoader workers (each opens its own HDF5 handles); -1 = auto (data.loader_workers)
    threads: int = 0  # torch intra-op threads in the training process; 0 = torch's default
    log_interval: int = 100  # updates between metrics.jsonl step records
    save_interval_updates: int = 0  # also save checkpoint_last.pt every N updates; 0 = per epoch
    keep_last_epochs: int = 0  # keep checkpoint{EPOCH}.pt of the last N epochs (fairseq); 0 = none
    # write checkpoints in a background thread from a host copy of the weights and optimizer state
    # (held in memory between saves, pinned on CUDA); false: torch.save in the loop
    async_checkpoint: bool = True

    # --- runtime (synprep/train/runtime.py; ``bf16`` above is the training autocast) -
    decode_bf16: bool = False  # bf16 autocast when translating
    tf32: bool = False  # TF32 matrix products / convolutions on CUDA
    attention_backend: str = "auto"  # auto | efficient | flash | cudnn | math | flex (runtime.py)
    compile: bool = False  # torch.compile each layer and the loss (synprep.train.compiling; slower on an H200: docs/train.md)
    # replay each batch shape's forward and backward as a CUDA graph (one process on CUDA; the sources'
    # word counts padded to a multiple of 8; with compile, of the compiled layers; synprep/train/graphs.py)
    cuda_graphs: bool = False

    # --- decoding (paper §5.1 Evaluation; fairseq generate defaults) ---------------------------
    beam: int = 5  # beam size of translate (1: greedy)
    lenpen: float = 1.0  # length penalty: a hypothesis's score is divided by its length ** lenpen
    max_len_a: float = 0.0  # longest output: max_len_a × source length + max_len_b pieces
    max_len_b: int = 200  # see max_len_a

    # ------------------------------------------------------------------------------------------
    def __post_init__(self) -> None:
        self._defaulted: frozenset[str] = frozenset()
        if self.syntax in SYNTAX_MODES:
            self._resolve_source_defaults()
        self.validate()

    def _resolve_source_defaults(self) -> None:
        """Fill the :data:`SOURCE_DEFAULTED` fields left at None from the sources' papers.

        Raises:
            ConfigError: the sources in use default to different values of a field.
        """
        missing = [f for f in SOURCE_DEFAULTED if getattr(self, f) is None]
        if not missing:
            return
        names = sorted(self.sources_used())
        for f in missing:
            values = set()
            for n in names:
                cls = spec_class(n)
                values.add(cls.defaults.get(f, GATED_PAPER_DEFAULTS[f]) if self.syntax in cls.paper_modes
                           else GATED_PAPER_DEFAULTS[f])
            if len(values) > 1:
                raise ConfigError(f"{f}: the sources {', '.join(names)} default to different values "
                                  f"({', '.join(map(str, sorted(values)))}); set {f} explicitly")
            setattr(self, f, values.pop() if values else GATED_PAPER_DEFAULTS[f])
        self._defaulted = frozenset(missing)

    def validate(self) -> None:
        """Check every field.

        Raises:
            ConfigError: naming the first bad field.
        """
        if self.syntax not in SYNTAX_MODES:
            raise ConfigError(f"syntax must be one of {', '.join(SYNTAX_MODES)}, got {self.syntax!r}")
        if self.d_model % self.heads:
            raise ConfigError(f"d_model ({self.d_model}) must be divisible by heads ({self.heads})")
        for name in ("dropout", "attention_dropout", "activation_dropout", "syntax_dropout",
                     "parent_ignore", "label_smoothing"):
            v = getattr(self, name)
            if not 0.0 <= v < 1.0:
                raise ConfigError(f"{name} must be in [0, 1), got {v}")
        for name in ("d_model", "ffn_dim", "heads", "encoder_layers", "decoder_layers", "max_tokens",
                     "update_freq", "gate_hidden", "max_positions", "beam"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.batch_order not in BATCH_ORDERS:
            raise ConfigError(f"batch_order must be one of {', '.join(BATCH_ORDERS)}, got {self.batch_order!r}")
        if self.attention_backend not in ATTENTION_BACKENDS:
            raise ConfigError(f"attention_backend must be one of {', '.join(ATTENTION_BACKENDS)}, "
                              f"got {self.attention_backend!r}")
        slr, pascal = self.options("slr"), self.options("pascal")
        if slr.gaps not in GAP_MODES:
            raise ConfigError(f"slr_gaps must be one of {', '.join(GAP_MODES)}, got {slr.gaps!r}")
        if slr.hard is not None and slr.hard not in SLR_HARD:
            raise ConfigError(f"slr_hard must be null, strict or nonstrict, got {slr.hard!r}")
        if slr.tau <= 0 or pascal.sigma <= 0:
            raise ConfigError("slr_tau and pascal_sigma must be > 0")
        if self.max_epochs < 0 or self.max_steps < 0 or self.gate_freeze_epochs < 0:
            raise ConfigError("max_epochs, max_steps and gate_freeze_epochs must be >= 0")
        if len(self.adam_betas) != 2:
            raise ConfigError(f"adam_betas must be two numbers, got {self.adam_betas}")
        if not all(0.0 <= b < 1.0 for b in self.adam_betas):  # torch's AdamW raises a ValueError
            raise ConfigError(f"adam_betas must be two numbers in [0, 1), got {self.adam_betas}")
        for label in self.options("ldd").labels:
            if label not in DEPRELS:
                raise ConfigError(f"ldd_labels: {label!r} is not a UD relation ({', '.join(DEPRELS)})")
        self.head_sources()  # validates syntax_layers/heads, syntax_source and ldd_labels length

    # ------------------------------------------------------------------------------------------
    def options(self, source: str) -> Any:
        """The options of the source ``source`` (its spec's ``Options`` dataclass) with this config's values.

        Raises:
            ConfigError: ``source`` is not registered.
        """
        return spec_class(source).options_of(self)

    @property
    def uses_syntax(self) -> bool:
        return self.syntax != "vanilla"

    @property
    def gate_value(self) -> float | None:
        """The constant G of the syntactic heads (:data:`SYNTAX_GATE`); None for learned gates."""
        return SYNTAX_GATE[self.syntax]

    def layers_with_syntax(self) -> list[int]:
        """0-based encoder layers that have syntactic heads (empty for vanilla)."""
        if not self.uses_syntax:
            return []
        if self.syntax_layers is not None:
            return list(self.syntax_layers)
        return [0] if self.syntax == "hard" else list(range(self.encoder_layers))

    def head_sources(self) -> dict[int, list[str | None]]:
        """Syntactic source of every head of every syntactic layer.

        Returns:
            ``{layer: [source or None per head]}`` (0-based layers, ``heads`` entries each); None
            marks a plain head (G ≡ 0).

        Raises:
            ConfigError: ``syntax_layers``/``syntax_heads`` not distinct indices in range, unknown
                source, wrong list lengths, a source in a mode it cannot run in, or a source's own
                check (:meth:`~synprep.train.sources.base.SyntaxSource.check`).
        """
        # checked here, not only in validate(): the source defaults are resolved (through this method)
        # before validate() runs (an out-of-range head was an IndexError; found by benchmarks/fuzz.py)
        for name, limit in (("syntax_layers", self.encoder_layers), ("syntax_heads", self.heads)):
            vals = getattr(self, name)
            if vals is not None and (not vals or any(not 0 <= v < limit for v in vals) or len(set(vals)) != len(vals)):
                raise ConfigError(f"{name} must be distinct 0-based indices below {limit}, got {vals}")
        layers = self.layers_with_syntax()
        heads = list(range(self.heads)) if self.syntax_heads is None else list(self.syntax_heads)
        src = self.syntax_source
        if isinstance(src, str) or src is None:
            per_layer = [src] * len(layers)
        elif isinstance(src, list) and len(src) == len(layers):
            per_layer = src
        else:
            raise ConfigError(f"syntax_source must be a name or a list with one entry per syntax layer "
                              f"({len(layers)}: {layers}), got {src!r}")
        out: dict[int, list[str | None]] = {}
        for layer, entry in zip(layers, per_layer, strict=True):
            if isinstance(entry, str):
                names = [entry] * len(heads)
            elif isinstance(entry, list) and len(entry) == len(heads):
                names = entry
            else:
                raise ConfigError(f"syntax_source for layer {layer}: a name or one name per syntax head "
                                  f"({len(heads)}), got {entry!r}")
            row: list[str | None] = [None] * self.heads
            for h, name in zip(heads, names, strict=True):
                spec_class(name)  # raises on an unknown name
                row[h] = name
            out[layer] = row
        for name in sorted({s for row in out.values() for s in row if s is not None}):
            cls = spec_class(name)
            if self.syntax not in cls.modes:
                raise ConfigError(f"syntax_source {name!r} runs only with syntax = {' | '.join(cls.modes)}, "
                                  f"got {self.syntax!r}")
            cls.check(self, {layer: [h for h, s in enumerate(row) if s == name] for layer, row in out.items()
                             if name in row})
        return out

    def sources_used(self) -> set[str]:
        """The syntactic sources any head uses (decides which features the collate builds)."""
        return {s for row in self.head_sources().values() for s in row if s is not None}

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n"

    def describe(self) -> str:
        """Short text for the signature line, e.g. ``gated/slr-cnf-tau10`` or ``vanilla``."""
        if not self.uses_syntax:
            return "vanilla"
        parts = [spec_class(s).describe(self) for s in sorted(self.sources_used())]
        return f"{self.syntax}/{'+'.join(parts)}"


FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}
#: the configuration key of every source option (``sla_threshold``) -> (source, Options field)
SOURCE_OPTION_KEYS = {o.key: (o.source, o.name) for o in source_options()}
#: the fields of TrainConfig's syntax block: the mode and placement, every source's options (from their
#: declarations, :func:`synprep.train.sources.source_options`), the gate and syntax-dropout fields
SYNTAX_FIELDS = (*SYNTAX_CORE, *SOURCE_OPTION_KEYS, *GATE_FIELDS)
