"""The configuration side of every syntax source, without torch: what :class:`~synprep.train.config.TrainConfig`
reads to resolve and check a configuration (a default ``TrainConfig()`` imports no torch).

Each :class:`SourceSpec` subclass holds a source's registry name, its paper and shard fields, its
paper's defaults and modes, its checks, its signature text and its parameter count; it names the
module of its ``nn.Module`` (:attr:`SourceSpec.runtime`), whose class inherits it
(:class:`~synprep.train.sources.base.SyntaxSource`). The registry :data:`synprep.train.sources.SOURCES`
points here; :func:`synprep.train.sources.source_class` loads the runtime class.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
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


def source_option(default: Any = MISSING, *, help: str, key: str | None = None, default_factory: Any = MISSING) -> Any:
    """A field of a source's :attr:`SourceSpec.Options` dataclass: one configuration key of the trainer.

    The key is ``SOURCE_FIELD`` (the source's registry name, ``_``, the field: ``sla_threshold``), a
    field of :class:`~synprep.train.config.TrainConfig` (``config.json``, ``--set sla_threshold=3``,
    also spelled ``--set sla.threshold=3``).

    Args:
        default: the value when the key is not given.
        default_factory: makes that value, for a mutable one (as :func:`dataclasses.field`).
        help: what it does (docs).
        key: the stored name where it is older than the rule (PASCAL's ``parent_ignore``); configs,
            presets and checkpoints keep it.
    """
    return field(default=default, default_factory=default_factory, metadata={"help": help, "key": key})


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
    #: the source's options: a dataclass of :func:`source_option` fields, or None. Each field is a
    #: :class:`~synprep.train.config.TrainConfig` key (:meth:`option_key`); adding an option = one field.
    Options: ClassVar[Any] = None

    @classmethod
    def option_key(cls, f: Any) -> str:
        """The configuration key of the :attr:`Options` field ``f``: ``NAME_FIELD`` (or its older ``key``)."""
        key: str = f.metadata.get("key") or f"{cls.name}_{f.name}"
        return key

    @classmethod
    def option_keys(cls) -> dict[str, str]:
        """``{field: configuration key}`` of the source's :attr:`Options` (empty: it has none)."""
        return {f.name: cls.option_key(f) for f in fields(cls.Options)} if cls.Options is not None else {}

    @classmethod
    def options_of(cls, cfg: Any) -> Any:
        """The source's :attr:`Options` with the values of ``cfg`` (a :class:`~synprep.train.config.TrainConfig`),
        or None when it has none."""
        if cls.Options is None:
            return None
        return cls.Options(**{name: getattr(cfg, key) for name, key in cls.option_keys().items()})

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

    @dataclass
    class Options:
        gaps: str = source_option("cnf", help="cnf | nary: which stored gaps build the SLR mask")
        tau: float = source_option(10.0, help="soft SLR temperature τ")
        hard: str | None = source_option(None, help="None = soft; strict | nonstrict = hard SLR (SPEC §3)")

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

    @dataclass
    class Options:
        labels: list[str] = source_option(default_factory=lambda: ["nsubj", "obj", "amod", "det"],
                                          help="one UD relation per head")

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

    @dataclass
    class Options:
        sigma: float = source_option(1.0, help="Gaussian σ of PASCAL weights (SPEC §4)")
        parent_ignore: float = source_option(0.0, key="parent_ignore",
                                             help="parent ignoring: per query row, weights := 1 with prob p")

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

    @dataclass
    class Options:
        variant: str = source_option("lisa", help="lisa (L2 to the parent row, gated paper) | sisa (bilinear + NLL, PASCAL paper)")
        weight: float = source_option(1.0, help="weight of LISA's auxiliary loss (summed over source pieces)")

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

    @dataclass
    class Options:
        threshold: int = source_option(3, help="largest dependency path length (arcs) a query attends to")

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

    @dataclass
    class Options:
        max_path: int = source_option(3, help="word pairs up to this path length (arcs) get a relation")
        rel_dim: int = source_option(64, help="d_r, size of the relation vectors")
        max_depth: int = source_option(16, help="level embeddings for depths 0 … max_depth-1 (deeper clipped)")
        gate: str = source_option("sigmoid", help="eq. 3 gate: sigmoid (the equation) | tanh (the text)")

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
