"""The configuration side of every syntax source, without torch: what :class:`~synprep.train.config.TrainConfig`
reads to resolve and check a configuration (a default ``TrainConfig()`` imports no torch).

Each :class:`SourceSpec` subclass holds a source's registry name, its paper and shard fields, its
paper's defaults and modes, its checks, its signature text and its parameter count; it names the
module of its ``nn.Module`` (:attr:`SourceSpec.runtime`), whose class inherits it
(:class:`~synprep.train.sources.base.SyntaxSource`). The registry :data:`synprep.train.sources.SOURCES`
points here; :func:`synprep.train.sources.source_class` loads the runtime class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from synprep.errors import ConfigError
from synprep.types import DEPRELS

if TYPE_CHECKING:
    from synprep.train.config import TrainConfig

#: LISA's variants: LISA's parent attention, or SISA's bilinear one (pascal-parent-scaled-attention §4)
VARIANTS = ("lisa", "sisa")
#: SET's gate activations
GATES = ("sigmoid", "tanh")
#: SET's relation ids: no relation, same word; then 2 + 2·deprel + direction
NONE, SELF = 0, 1
LABEL0 = 2


def n_relations(max_path: int) -> int:
    """Size of SET's relation vocabulary (ids ``0 … n − 1``): ``len(path_ids(max_path))`` in closed
    form (path lengths n = 2 … max_path have n + 1 positions each), so a hostile ``set_max_path``
    costs nothing to size."""
    n_paths = (max_path + 1) * (max_path + 2) // 2 - 3 if max_path >= 2 else 0
    return LABEL0 + 2 * len(DEPRELS) + n_paths


class SourceSpec:
    """A syntax source's configuration side (the base of :class:`~synprep.train.sources.base.SyntaxSource`)."""

    #: the registry name (the value of ``syntax_source``)
    name: ClassVar[str] = ""
    #: paper and section the source reproduces
    cite: ClassVar[str] = ""
    #: :class:`~synprep.types.PairRecord` fields the collate reads
    record_fields: ClassVar[tuple[str, ...]] = ()
    #: the source paper's values of fields in ``config.SOURCE_DEFAULTED``
    defaults: ClassVar[dict[str, Any]] = {}
    #: the ``syntax`` modes in which the source's paper uses it (its :attr:`defaults` apply there)
    paper_modes: ClassVar[tuple[str, ...]] = ("hard",)
    #: the ``syntax`` modes the source can run in at all
    modes: ClassVar[tuple[str, ...]] = ("gated", "avg", "pure", "hard")
    #: ``"module:Class"`` of the source's ``nn.Module`` (None: this class is it)
    runtime: ClassVar[str | None] = None

    @classmethod
    def check(cls, cfg: TrainConfig, placement: dict[int, list[int]]) -> None:
        """Validate the source's fields and where it is used.

        Args:
            placement: ``{layer: [heads using this source]}`` (0-based).

        Raises:
            ConfigError: naming the bad field.
        """

    @classmethod
    def describe(cls, cfg: TrainConfig) -> str:
        """Short text for the signature line (e.g. ``slr-cnf-tau10``)."""
        return cls.name

    @classmethod
    def n_elements(cls, cfg: TrainConfig, placement: dict[int, list[int]]) -> int:
        """Elements (parameters and buffers) the source allocates in a model: its model-wide
        parameters and its ``layer_module`` of every layer in ``placement`` (``{layer: heads}``).

        Computed from the config alone, before anything is built
        (:func:`synprep.train.config.model_elements`); a source with parameters must override it
        (tests/test_presets.py compares it with real models of every source).
        """
        return 0


class SLRSpec(SourceSpec):
    name = "slr"
    cite = "distance-transformer-slr §3 (SPEC.md §3); gated-syntax-attention eq. 9"
    record_fields = ("gaps_cnf", "gaps_nary")
    #: the SLR paper has no dropout on the syntactic attention
    defaults = {"syntax_dropout": 0.0}
    runtime = "synprep.train.sources.slr:SLR"

    @classmethod
    def describe(cls, cfg) -> str:
        kind = f"hard-{cfg.slr_hard}" if cfg.slr_hard else f"tau{cfg.slr_tau:g}"
        return f"slr-{cfg.slr_gaps}-{kind}"


class LDDSpec(SourceSpec):
    name = "ldd"
    cite = "ldd-parser-uncertainty, Method (SPEC.md §4)"
    record_fields = ("word_index", "heads", "ldd_dep", "ldd_head", "ldd_rel", "ldd_prob")
    #: the LDD paper infuses the first encoder layer, without dropout on it
    defaults = {"syntax_dropout": 0.0}
    runtime = "synprep.train.sources.ldd:LDD"

    @classmethod
    def check(cls, cfg, placement) -> None:
        if len(cfg.ldd_labels) != cfg.heads:
            raise ConfigError(f"ldd_labels needs one UD relation per head ({cfg.heads}), got {cfg.ldd_labels}")


class LDDParentSpec(SourceSpec):
    name = "ldd_parent"
    cite = "ldd-parser-uncertainty, Results (the 1-best unlabeled dependency parse system)"
    record_fields = ("word_index", "heads")
    defaults = {"syntax_dropout": 0.0}
    runtime = "synprep.train.sources.ldd_parent:LDDParent"


class PascalSpec(SourceSpec):
    name = "pascal"
    cite = "pascal-parent-scaled-attention §3 (SPEC.md §4)"
    record_fields = ("heads", "word_index")
    #: PASCAL regularises with parent ignoring, never with dropout on the syntactic attention
    defaults = {"syntax_dropout": 0.0}
    runtime = "synprep.train.sources.pascal:Pascal"

    @classmethod
    def check(cls, cfg, placement) -> None:
        if cfg.pascal_sigma <= 0:
            raise ConfigError("pascal_sigma must be > 0")

    @classmethod
    def describe(cls, cfg) -> str:
        return f"pascal-s{cfg.pascal_sigma:g}"


class LISASpec(SourceSpec):
    name = "lisa"
    cite = "gated-syntax-attention §5.2 / Table 3 (LISA); pascal-parent-scaled-attention §4 (SISA)"
    record_fields = ("heads", "word_index")
    defaults = {"syntax_dropout": 0.0}
    paper_modes = ("hard", "pure")
    modes = ("hard", "pure")
    runtime = "synprep.train.sources.lisa:LISA"

    @classmethod
    def check(cls, cfg, placement) -> None:
        if cfg.lisa_variant not in VARIANTS:
            raise ConfigError(f"lisa_variant must be one of {', '.join(VARIANTS)}, got {cfg.lisa_variant!r}")
        if cfg.lisa_weight <= 0:
            raise ConfigError(f"lisa_weight must be > 0, got {cfg.lisa_weight}")
        n = sum(len(h) for h in placement.values())
        if n != 1:
            raise ConfigError(f"lisa supervises exactly one head of the encoder, got {n} "
                              f"({placement}); choose it with syntax_layers=[L] and syntax_heads=[H]")

    @classmethod
    def describe(cls, cfg) -> str:
        return f"{cfg.lisa_variant}-w{cfg.lisa_weight:g}"

    @classmethod
    def n_elements(cls, cfg, placement) -> int:
        dh = cfg.d_model // cfg.heads
        return sum(len(h) * dh * dh for h in placement.values()) if cfg.lisa_variant == "sisa" else 0


class SLASpec(SourceSpec):
    name = "sla"
    cite = "gated-syntax-attention §5.2 / Table 3 (SLA, Li et al. 2021)"
    record_fields = ("heads", "word_index")
    #: "without any regularization": no syntax dropout, no pre-warmup, a gate without BatchNorm
    defaults = {"syntax_dropout": 0.0, "gate_freeze_epochs": 0, "gate_batch_norm": False}
    paper_modes = ("gated", "hard")
    runtime = "synprep.train.sources.sla:SLA"

    @classmethod
    def check(cls, cfg, placement) -> None:
        if cfg.sla_threshold < 1:
            raise ConfigError(f"sla_threshold must be >= 1 (arcs), got {cfg.sla_threshold}")

    @classmethod
    def describe(cls, cfg) -> str:
        return f"sla-m{cfg.sla_threshold}"


class SETSpec(SourceSpec):
    name = "set"
    cite = "set-syntax-enhanced-transformer §2 (eq. 1–3, §2.3)"
    record_fields = ("heads", "deprel", "word_index")
    #: the SET paper has no dropout on its relation attention
    defaults = {"syntax_dropout": 0.0}
    #: SET's attention replaces the self-attention of every encoder layer (G ≡ 1)
    paper_modes = ("pure", "hard")
    runtime = "synprep.train.sources.set:SET"

    @classmethod
    def check(cls, cfg, placement) -> None:
        if cfg.set_gate not in GATES:
            raise ConfigError(f"set_gate must be one of {', '.join(GATES)}, got {cfg.set_gate!r}")
        for name in ("set_max_path", "set_rel_dim", "set_max_depth"):
            if getattr(cfg, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(cfg, name)}")

    @classmethod
    def describe(cls, cfg) -> str:
        return f"set-p{cfg.set_max_path}-{cfg.set_gate}"

    @classmethod
    def n_elements(cls, cfg, placement) -> int:
        d, r = cfg.d_model, cfg.set_rel_dim
        per_head = r + d * r + r * r + r  # SETLayer: v_r, w_ge, w_gr, v_g
        return (n_relations(cfg.set_max_path) * r + (cfg.set_max_depth + 1) * d
                + sum(len(h) * per_head for h in placement.values()))
