"""The trainer's configuration: one typed dataclass, every default visible in one block.

A configuration is a flat JSON object whose keys are the fields of :class:`TrainConfig`; it is
saved beside every checkpoint (``OUT/config.json``) and inside it. Keys starting with ``_`` are
metadata (``_description``, ``_cite``, ``_alias``) and are skipped by the loader. Every value is
type-checked and size-bounded on load (:data:`LIMITS`, :data:`MAX_MODEL_ELEMENTS`), so a hostile config or
checkpoint is a one-line error, never a terabyte allocation. Presets ship as package data
(``synprep/presets/NAME.json``, listed by :func:`preset_names`), each citing its source for every
value that differs from the defaults: ``gated_iwslt14_de_en``, ``vanilla_iwslt14_de_en``,
``vanilla_iwslt14_de_en_ffn512``, ``slr_iwslt14_de_en``, ``cpu_small``, ``tiny``, … (docs/train.md).

The fields, their defaults and their checks are :class:`TrainConfig` (``synprep/train/schema.py``,
re-exported here with its constants); this module loads, bounds and names configurations.
"""

from __future__ import annotations

import json
import logging
import math
import types
import typing
from importlib import resources
from pathlib import Path
from typing import Any

from synprep.errors import ConfigError
from synprep.train.schema import (  # noqa: F401 (re-exported: the config's public names)
    ATTENTION_BACKENDS,
    FIELDS,
    GATED_PAPER_DEFAULTS,
    RESUME_OVERRIDABLE,
    SLR_HARD,
    SOURCE_DEFAULTED,
    SOURCE_OPTION_KEYS,
    SYNTAX_FIELDS,
    SYNTAX_GATE,
    SYNTAX_MODES,
    SYNTAX_SOURCES,
    TrainConfig,
)
from synprep.train.source_registry import SOURCES, spec_class

log = logging.getLogger("synprep.train")


# --------------------------------------------------------------------------------------------
# loading: types, bounds, presets
# --------------------------------------------------------------------------------------------
#: longest sequence a model may take (pieces + ``</s>``); its sinusoidal position table,
#: ``(max_positions + 2) × d_model``, is computed, not stored in a checkpoint, so this bound (not the
#: checkpoint's size) limits it: 16386 × 256 float32 = 16 MB (fairseq's default is 1024)
MAX_POSITIONS = 1 << 14
#: most DataLoader worker processes a config may ask for (each is a process with its own shard
#: handles, started for training and again for every validation); a run also uses at most as many as
#: the machine has CPUs (:func:`synprep.train.rundir.bounded_workers`, with a warning)
MAX_WORKERS = 64
#: the largest learning rate (``lr``, ``warmup_init_lr``) and ``weight_decay`` a config may give: AdamW steps
#: move each weight by about ``lr`` (the paper's peak is 7e-3), and its decay scales weights by
#: ``1 - lr * weight_decay``; above these a run only diverges (1e308 overflowed to inf)
LR_MAX = 10.0
WEIGHT_DECAY_MAX = 10.0
#: inclusive (low, high) bounds of numeric fields; None = unbounded on that side. The upper bounds
#: are far above any real setup and keep a hostile config from allocating terabytes or overflowing.
LIMITS: dict[str, tuple[float | None, float | None]] = {
    "d_model": (1, 16384), "ffn_dim": (1, 65536), "heads": (1, 256), "encoder_layers": (1, 128),
    "decoder_layers": (1, 128), "max_positions": (1, MAX_POSITIONS), "gate_hidden": (1, 16384),
    "gate_freeze_epochs": (0, 1 << 20), "max_tokens": (1, 1 << 24), "update_freq": (1, 4096),
    "max_epochs": (0, 1 << 30), "max_steps": (0, 1 << 40), "seed": (0, 2**32 - 1), "warmup_updates": (0, 1 << 40),
    "num_workers": (-1, MAX_WORKERS), "threads": (0, 4096), "log_interval": (1, 1 << 40),
    "save_interval_updates": (0, 1 << 40), "keep_last_epochs": (0, 1 << 20), "beam": (1, 1024),
    "max_len_b": (0, 1 << 20), "max_len_a": (0.0, 1024.0), "lr": (0.0, LR_MAX),
    "warmup_init_lr": (0.0, LR_MAX), "adam_eps": (0.0, 1.0), "weight_decay": (0.0, WEIGHT_DECAY_MAX),
    "clip_norm": (0.0, 1e9),
    "sla_threshold": (0, 1 << 16), "set_max_path": (0, 64), "set_rel_dim": (1, 16384),
    "set_max_depth": (1, 1 << 16),
}
#: largest model a config and its vocabulary may describe, in elements: everything the model allocates
#: (embeddings, the sinusoidal position table, every layer's parameters and buffers; see
#: :func:`model_elements`). 2^29 float32 elements = 2 GiB of weights: a transformer-big-sized model
#: (d 1024, ffn 4096, 16 heads, 6+6 layers, 40k vocabulary, separate embeddings, gated) has 261 M, 0.49 of it.
MAX_MODEL_ELEMENTS = 1 << 29
#: list fields may hold at most this many entries
MAX_LIST = 4096
_HINTS = typing.get_type_hints(TrainConfig)


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) is not None:  # list[float], not list
        return str(tp).replace("typing.", "")
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _check_value(tp: Any, value: Any) -> bool:
    """Whether a JSON value fits the annotation ``tp`` (bool is not an int; an int is a float)."""
    if tp is Any:
        return True
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        return any(_check_value(a, value) for a in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        return isinstance(value, list) and len(value) <= MAX_LIST and all(_check_value(item, v) for v in value)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if tp is str:
        return isinstance(value, str) and len(value) <= 1024
    return True  # an annotation this checker does not know: left to validate()


def _why_not(tp: Any, value: Any) -> str | None:
    """What is wrong with a value that :func:`_check_value` refuses although it is of the right kind: a
    number that is not finite (``not a finite number``), a list too long, or a list's first bad item
    (``item 0 is nan, not a finite number``); None when the type is all there is to say."""
    arms = typing.get_args(tp) if typing.get_origin(tp) in (types.UnionType, typing.Union) else (tp,)
    if isinstance(value, float) and not math.isfinite(value) and float in arms:
        return "not a finite number"
    if isinstance(value, list):
        for arm in arms:
            if typing.get_origin(arm) is list:
                if len(value) > MAX_LIST:
                    return f"more than {MAX_LIST} entries"
                (item,) = typing.get_args(arm) or (Any,)
                for i, v in enumerate(value):
                    if not _check_value(item, v):
                        shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:37] + "..."
                        return f"item {i} is {shown}, " + ("not a finite number" if _why_not(item, v) else
                                                           f"not {_type_name(item)}")
    return None


def check_types(data: dict[str, Any], where: str = "config") -> None:
    """Check every value of a config object against :class:`TrainConfig`'s annotations and
    :data:`LIMITS` *before* anything is built.

    Raises:
        ConfigError: ``WHERE: FIELD must be TYPE, got VALUE`` or ``… must be <= LIMIT``.
    """
    for name, value in data.items():
        tp = _HINTS.get(name, Any)
        if value is None and name in SOURCE_DEFAULTED:  # None = the syntax source's paper default
            continue
        if not _check_value(tp, value):
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            why = _why_not(tp, value)
            raise ConfigError(f"{where}: {name} must be {_type_name(tp)}, got {shown} ({type(value).__name__})"
                              + (f": {why}" if why else ""))
        lo, hi = LIMITS.get(name, (None, None))
        if isinstance(value, int | float) and not isinstance(value, bool):
            if lo is not None and value < lo:
                raise ConfigError(f"{where}: {name} must be >= {lo}, got {value}")
            if hi is not None and value > hi:
                raise ConfigError(f"{where}: {name} = {value} is above the limit {hi}")


def model_elements(cfg: TrainConfig, vocab_size: int) -> int:
    """Elements (float parameters and buffers) of ``Seq2Seq(cfg, vocab_size)``, from the config alone.

    Mirrors :class:`synprep.train.model.Seq2Seq` term by term: the embeddings (one matrix or two),
    the ``(max_positions + 2) × d_model`` position table (a buffer, not in checkpoints), every
    encoder layer (attention, FFN, two LayerNorms; a learned gate network with its BatchNorm
    statistics in syntactic layers), every decoder layer, the final LayerNorms (pre-norm), and each
    syntax source's parameters (:meth:`~synprep.train.sources.base.SyntaxSource.n_elements`).
    tests/test_presets.py checks it against ``sum(numel)`` of real models.
    """
    d, f, H = cfg.d_model, cfg.ffn_dim, cfg.heads
    norm = 2 * d
    attn = 4 * (d * d + d)
    ffn = d * f + f + f * d + d
    n = vocab_size * d * (1 if cfg.share_embeddings else 2) + (cfg.max_positions + 2) * d
    rows = cfg.head_sources()
    if cfg.gate_value is None:  # one gate network per syntactic layer
        gh = cfg.gate_hidden
        gate = d * gh + gh + 2 * gh + gh * H + H + (4 * H + 1 if cfg.gate_batch_norm else 0)
        n += len(rows) * gate
    n += cfg.encoder_layers * (attn + 2 * norm + ffn)
    n += cfg.decoder_layers * (2 * attn + 3 * norm + ffn)
    if cfg.normalize_before:
        n += 2 * norm
    for name in sorted({s for row in rows.values() for s in row if s is not None}):
        placement = {layer: [h for h, s in enumerate(row) if s == name] for layer, row in rows.items() if name in row}
        n += spec_class(name).n_elements(cfg, placement)
    return n


def check_model_size(cfg: TrainConfig, vocab_size: int | None, where: str = "config") -> None:
    """Refuse a model above :data:`MAX_MODEL_ELEMENTS` before anything is allocated.

    Args:
        vocab_size: the vocabulary the model is built for; None = not known yet (embeddings left out).

    Raises:
        ConfigError: ``WHERE: the model would have N elements … (limit …)``.
    """
    n = model_elements(cfg, vocab_size or 0)
    if n > MAX_MODEL_ELEMENTS:
        what = "without its embeddings" if vocab_size is None else f"with a vocabulary of {vocab_size}"
        raise ConfigError(f"{where}: the model would have {n:,} elements {what} (limit {MAX_MODEL_ELEMENTS:,}): "
                          "d_model, ffn_dim, the layer counts, max_positions or the vocabulary are too large")


def config_from_dict(data: dict[str, Any], where: str = "config") -> TrainConfig:
    """Build a config from a JSON object; unknown keys are an error (typos must not pass silently),
    keys starting with ``_`` are metadata and skipped; values are type-checked and bounded first.

    Raises:
        ConfigError: an unknown key, a value of the wrong type, above its bound, or otherwise bad
            (the message names ``where``).
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a config is a JSON object, got {type(data).__name__}")
    data = {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith("_"))}
    unknown = sorted(str(k) for k in set(data) - set(FIELDS))
    if unknown:  # repr: a key may hold a newline or control characters (found by benchmarks/fuzz.py)
        raise ConfigError(f"{where}: unknown key(s) {', '.join(k if k.isidentifier() else repr(k) for k in unknown)}"
                          + _source_hint(unknown))
    check_types(data, where)
    try:
        cfg = TrainConfig(**data)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
    except (TypeError, ValueError) as e:  # pragma: no cover - a field check() does not know
        raise ConfigError(f"{where}: {e}") from None
    check_model_size(cfg, None, where)
    return cfg


def preset_names() -> list[str]:
    """Names of the shipped presets (aliases included)."""
    return sorted(p.name[:-5] for p in resources.files("synprep.presets").iterdir() if p.name.endswith(".json"))


def preset_data(name: str) -> dict[str, Any]:
    """The raw JSON object of a shipped preset, metadata keys included (an alias is not followed).

    Raises:
        ConfigError: no such preset (the message lists the known ones).
    """
    res = resources.files("synprep.presets") / f"{name}.json"
    if not name.replace("_", "").isalnum() or not res.is_file():
        raise ConfigError(f"no preset {name!r}; known: {', '.join(preset_names())}")
    data = json.loads(res.read_text("utf-8"))
    if not isinstance(data, dict):  # pragma: no cover - shipped files are tested
        raise ConfigError(f"preset {name}: not a JSON object")
    return data


def load_preset(name: str) -> TrainConfig:
    """Load a shipped preset (``synprep/presets/NAME.json``); an alias (``"_alias": TARGET``)
    logs a warning and loads its target.

    Raises:
        ConfigError: no such preset (the message lists the known ones).
    """
    data = preset_data(name)
    target = data.get("_alias")
    if target:
        log.warning("preset %s is an old name: loading %s (%s)", name, target,
                    data.get("_description", "see docs/train.md"))
        return load_preset(target)
    return config_from_dict(data, f"preset {name}")


def load_config(path: str | Path) -> TrainConfig:
    """Load a config JSON file (any subset of the fields; the rest take the defaults).

    Raises:
        ConfigError: missing file, invalid JSON, unknown key or bad value.
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such config file") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"{p}:{e.lineno}: invalid JSON: {e.msg}") from None
    except (UnicodeDecodeError, RecursionError) as e:
        raise ConfigError(f"{p}: not a readable JSON config ({type(e).__name__})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: a config is a JSON object")
    return config_from_dict(data, str(p))


def source_option_names(source: str) -> list[str]:
    """The configuration keys of a syntax source's options (``sla`` → ``["sla_threshold"]``)."""
    return [k for k, (s, _) in SOURCE_OPTION_KEYS.items() if s == source]


def _source_hint(keys: list[str]) -> str:
    """``; SOURCE's options: KEYS`` for the first unknown key that names a syntax source (``sla_windw``,
    ``sla.windw``), else ``""``."""
    for key in keys:
        for source in sorted(SOURCES, key=len, reverse=True):  # ldd_parent before ldd
            if key.startswith((f"{source}_", f"{source}.")):
                known = source_option_names(source)
                return (f"; the options of syntax source {source!r} are {', '.join(known)}" if known
                        else f"; syntax source {source!r} has no options")
    return ""


def option_key(key: str) -> str:
    """The configuration key of ``key``: a field name as is, ``SOURCE.FIELD`` as ``SOURCE_FIELD`` (the
    key of that source option, :data:`SOURCE_OPTION_KEYS`: ``sla.threshold`` → ``sla_threshold``,
    ``pascal.parent_ignore`` → ``parent_ignore``).

    Raises:
        ConfigError: an unknown key (a source's key: the message lists that source's options).
    """
    if key in FIELDS:
        return key
    source, dot, name = key.partition(".")
    if dot:
        for k, (s, n) in SOURCE_OPTION_KEYS.items():
            if (s, n) == (source, name):
                return k
        if source not in SOURCES:
            raise ConfigError(f"--set: unknown key {key!r}: {SOURCES.unknown(source)}")
    raise ConfigError(f"--set: unknown key {key!r}" + _source_hint([key]))


def parse_override(item: str) -> tuple[str, Any]:
    """Parse ``key=value`` (value as JSON, else as a plain string); a source option may be given as
    ``SOURCE.FIELD`` (:func:`option_key`).

    Raises:
        ConfigError: no ``=`` or an unknown key.
    """
    if "=" not in item:
        raise ConfigError(f"--set expects key=value, got {item!r}")
    key, raw = item.split("=", 1)
    key = option_key(key.strip())
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def with_overrides(cfg: TrainConfig, overrides: dict[str, Any]) -> TrainConfig:
    """A copy of ``cfg`` with fields replaced (validated again); fields ``cfg`` took from its sources'
    defaults are resolved again for the new sources unless ``overrides`` sets them.

    Raises:
        ConfigError: an unknown field or a bad value (:func:`config_from_dict`, named ``overrides``).
    """
    data = cfg.to_dict()
    data.update({f: None for f in getattr(cfg, "_defaulted", ())})
    data.update(overrides)
    return config_from_dict(data, "overrides")



def resume_config(saved: dict[str, Any], overrides: dict[str, Any] | None, where: str = "checkpoint") -> TrainConfig:
    """The configuration of a resumed run: the checkpoint's, with ``overrides`` applied. The one
    merge of ``synprep train --resume`` and ``--resume --print-config`` (CLI) and of
    :class:`~synprep.train.loop.Trainer` (``resume=True``), so both show and run the same config.

    Args:
        saved: the checkpoint's config object (``ck["config"]``).
        overrides: field → new value (``--set``, ``--max-steps``, …); fields of :data:`RESUME_OVERRIDABLE`
            take it, any other field must keep its saved value.
        where: named in errors.

    Raises:
        ConfigError: an override of a field that cannot change on resume (all of them named), or a
            bad value (:func:`config_from_dict`).
    """
    data = dict(saved)
    overrides = overrides or {}
    bad = sorted(k for k, v in overrides.items() if k not in RESUME_OVERRIDABLE and data.get(k) != v)
    if bad:
        raise ConfigError(f"cannot change {', '.join(bad)} when resuming (only {', '.join(sorted(RESUME_OVERRIDABLE))})")
    data.update({k: v for k, v in overrides.items() if k in RESUME_OVERRIDABLE})
    return config_from_dict(data, where)

# --------------------------------------------------------------------------------------------
# systems: named syntax settings for comparisons (make multi30k-seeds, synprep train --system)
# --------------------------------------------------------------------------------------------
def source_preset(source: str) -> str:
    """The paper preset of a registered syntax source: ``SOURCE_iwslt14_de_en``."""
    return f"{source}_iwslt14_de_en"


def system_names() -> list[str]:
    """Every name :func:`system_overrides` knows: vanilla, gated, each source, gated-SOURCE (for the
    sources that can run gated)."""
    return ["vanilla", "gated", *SOURCES, *(f"gated-{s}" for s in SOURCES if "gated" in spec_class(s).modes)]


def system_overrides(name: str) -> dict[str, Any]:
    """The syntax settings a system name stands for, as overrides of a base config (a preset such
    as ``cpu_small``, whose architecture and optimisation are kept).

    * ``vanilla``: no syntax.
    * ``gated``: the gated paper's model — gated SLR in every head of every layer; the base
      config's gate settings (syntax dropout, pre-warmup K) are kept.
    * ``gated-SOURCE``: the same with SOURCE in every head.
    * ``SOURCE`` (every name of the registry :data:`synprep.train.sources.SOURCES`): the source as
      its paper uses it — every syntax field its paper preset (:func:`source_preset`) sets (mode,
      layers, heads, source parameters, syntax dropout and gate settings); the source-defaulted
      fields the preset leaves out are resolved from the source's paper, not kept from the base.

    Raises:
        ConfigError: an unknown name (the message lists the known ones).
    """
    everywhere = {"syntax_layers": None, "syntax_heads": None}
    if name == "vanilla":
        return {"syntax": "vanilla"}
    if name == "gated":
        return {"syntax": "gated", "syntax_source": "slr", **everywhere}
    if name.startswith("gated-") and name in system_names():
        return {"syntax": "gated", "syntax_source": name[len("gated-"):], **everywhere}
    if name in SOURCES:
        data = preset_data(source_preset(name))
        out = {k: data[k] for k in SYNTAX_FIELDS if k in data}
        out.update({k: None for k in SOURCE_DEFAULTED if k not in data})
        return out
    raise ConfigError(f"unknown system {name!r}: one of {', '.join(system_names())}")
