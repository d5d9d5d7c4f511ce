"""A long fuzzing campaign over the tree and CoNLL-U readers, ``synprep check`` and the shard readers
(hostile shards), and hostile trainer configs and checkpoints
(targets ``config``, ``checkpoint``), and the input bounds (targets ``imported``:
huge imported sentences and long words through ``annotate --parser conllu``; ``long_tokens``: long tokens
through the stanza parse stage; ``values``: one value of a shard replaced, the manifest re-sealed —
the reader must accept exactly what ``check`` accepts; tests/fuzz_bounds.py).

    python benchmarks/fuzz.py [--seconds 600] [--round 500] [--targets trees,mrg,conllu,check,shards,config,checkpoint,imported,long_tokens,values]

The same inputs and properties as tests/test_fuzz.py (defined in tests/fuzz_strategies.py), run
in rounds of ``--round`` hypothesis examples per target, round after round, until ``--seconds``
have passed. Property: only synprep's own errors (``SynprepError`` subclasses) or a
``CheckReport`` with a violation — never another exception type, never a hang (60 s per input).
CoNLL-U seeds are real UD sentence blocks from ``../shared/data/ud`` (``$SYNPREP_SHARED/data``).

Prints one JSON object: inputs tried per target and in all, the seconds spent, and every failure
(target, exception, the shrunk input as hypothesis reports it), and the process's peak RSS (MB)
after the whole campaign and after each target's first round. Exit status 1 when one failed.
The ``shards`` target reads every hostile folder as ``train`` (verified ``ShardDataset``, every
pair, cached and not), ``show`` (``load_pair``) and ``check`` do.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
import traceback
from pathlib import Path

from _cli import arg_parser, emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the strategies live with the tests that use them

from builders import small_folder  # noqa: E402
from fuzz_strategies import (  # noqa: E402
    check_conllu_bytes,
    check_damaged_folder,
    check_hostile_folder,
    check_mrg_bytes,
    check_tree_text,
    conllu_bytes,
    no_hang,
    read_blocks,
    tree_texts,
)
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SHARED = Path(os.environ.get("SYNPREP_SHARED", ROOT.parent / "shared")).resolve()
READER_TARGETS = ("trees", "mrg", "conllu", "check", "shards")
TRAIN_TARGETS = ("config", "checkpoint")  # make_train_targets
BOUND_TARGETS = ("imported", "long_tokens", "values")  # make_bound_targets
TARGETS = READER_TARGETS + TRAIN_TARGETS + BOUND_TARGETS


def make_targets(scratch: Path, n: int) -> dict:
    """target name → a hypothesis test running ``n`` examples; each input tried bumps ``counts``."""
    counts = dict.fromkeys(READER_TARGETS, 0)
    opts = settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    blocks = (read_blocks(SHARED / "data/ud/de_gsd-ud-dev.conllu", 800)
              + read_blocks(SHARED / "data/ud/en_ewt-ud-dev.conllu", 800)
              + read_blocks(SHARED / "data/ud/de_pud-ud-test.conllu", 400))
    base = scratch / "valid"
    small_folder(base)

    @opts
    @given(text=tree_texts)
    def trees(text):
        counts["trees"] += 1
        with no_hang():
            check_tree_text(text)

    @opts
    @given(data=st.binary(max_size=400) | tree_texts.map(lambda t: t.replace(" (", "\n (").encode("utf-8", "replace")))
    def mrg(data):
        counts["mrg"] += 1
        with no_hang():
            check_mrg_bytes(data, scratch / "f.mrg")

    @opts
    @given(raw=conllu_bytes(blocks) | st.binary(max_size=600))
    def conllu(raw):
        counts["conllu"] += 1
        with no_hang():
            check_conllu_bytes(raw, scratch / "f.conllu")

    @opts
    @given(data=st.data())
    def check(data):
        counts["check"] += 1
        with no_hang():
            check_damaged_folder(base, scratch / "damaged", data)

    kinds: dict[str, int] = {}

    @opts
    @given(data=st.data())
    def shards(data):
        counts["shards"] += 1
        with no_hang():
            kind = check_hostile_folder(base, scratch / "hostile", data)
        kinds[kind] = kinds.get(kind, 0) + 1

    counts_by_kind["shards"] = kinds
    return {"trees": trees, "mrg": mrg, "conllu": conllu, "check": check, "shards": shards}, counts


counts_by_kind: dict[str, dict[str, int]] = {}


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (Linux: ru_maxrss in KB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


# --------------------------------------------------------------------------------------------
# hostile trainer configs and checkpoints
# --------------------------------------------------------------------------------------------
_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def _config_values():
    """A config object: real field names (some with plausible values, some hostile), sometimes a stray key."""
    from synprep.train.config import FIELDS, TrainConfig

    defaults = TrainConfig().to_dict()
    plausible = {k: st.just(v) for k, v in defaults.items()}
    for k in ("d_model", "ffn_dim", "heads", "encoder_layers", "decoder_layers", "gate_hidden", "max_tokens",
              "max_positions", "beam", "update_freq"):
        plausible[k] = st.integers(min_value=-2, max_value=2**40) | st.sampled_from([1, 4, 8, 64, 10**6])
    value = st.sampled_from(sorted(FIELDS)).flatmap(lambda k: st.tuples(st.just(k), plausible[k] | _json))
    return st.lists(value, max_size=6).map(dict) | st.dictionaries(st.text(max_size=10), _json, max_size=3)


def check_config(data) -> None:
    """Property: a ConfigError, or a config within the bounds that builds on the meta device with
    exactly the elements :func:`~synprep.train.config.model_elements` counts."""
    import torch

    from synprep.errors import ConfigError
    from synprep.train.config import MAX_MODEL_ELEMENTS, config_from_dict, model_elements
    from synprep.train.model import Seq2Seq

    try:
        cfg = config_from_dict(data, "fuzz.json")
    except ConfigError as e:
        assert "\n" not in str(e), str(e)
        return
    assert model_elements(cfg, 0) <= MAX_MODEL_ELEMENTS  # embeddings are checked when the vocabulary is known
    if model_elements(cfg, 16) > MAX_MODEL_ELEMENTS:
        return
    with torch.device("meta"):
        model = Seq2Seq(cfg, 16)
    assert model_elements(cfg, 16) == sum(p.numel() for p in model.parameters()) + sum(
        b.numel() for b in model.buffers())


def _base_checkpoint() -> dict:
    import torch

    from synprep.train.config import load_preset, with_overrides
    from synprep.train.model import Seq2Seq

    cfg = with_overrides(load_preset("tiny"), {"d_model": 16, "ffn_dim": 16, "gate_hidden": 8, "encoder_layers": 1,
                                               "decoder_layers": 1})
    symbols = ["<s>", "<pad>", "</s>", "<unk>"] + [f"w{i}" for i in range(12)]
    torch.manual_seed(0)
    return {"config": cfg.to_dict(), "symbols": symbols, "signature": "fuzz",
            "model": Seq2Seq(cfg, len(symbols)).state_dict()}


def check_checkpoint(base: dict, path: Path, data) -> None:
    """Property: a damaged checkpoint (keys dropped or replaced, config values, vocabulary size,
    tensor shapes changed, file bytes flipped or truncated) loads as a model or raises a SynprepError
    whose message is one line; never another exception, never code execution."""
    import copy

    import torch

    from synprep.errors import SynprepError
    from synprep.train.checkpoint import save_checkpoint
    from synprep.train.decode import load_model

    ck = copy.copy(base)
    ck["config"] = dict(base["config"])
    ck["model"] = dict(base["model"])
    for _ in range(data.draw(st.integers(1, 3))):
        kind = data.draw(st.sampled_from(["drop", "replace", "config", "symbols", "tensor"]))
        if kind == "drop":
            ck.pop(data.draw(st.sampled_from(sorted(ck) or ["x"])), None)
        elif kind == "replace" and ck:
            ck[data.draw(st.sampled_from(sorted(ck)))] = data.draw(_json)
        elif kind == "config" and isinstance(ck.get("config"), dict):
            ck["config"].update(data.draw(_config_values()))
        elif kind == "symbols":
            ck["symbols"] = [f"s{i}" for i in range(data.draw(st.integers(0, 40)))]
        elif kind == "tensor" and isinstance(ck.get("model"), dict) and ck["model"]:
            key = data.draw(st.sampled_from(sorted(ck["model"])))
            shape = data.draw(st.lists(st.integers(0, 9), max_size=3))
            ck["model"][key] = torch.zeros(shape)
    save_checkpoint(path, ck)
    raw = path.read_bytes()
    how = data.draw(st.sampled_from(["keep", "flip", "truncate"]))
    if how == "flip":
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw = raw[:pos] + bytes([raw[pos] ^ data.draw(st.integers(1, 255))]) + raw[pos + 1:]
    elif how == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    path.write_bytes(raw)
    try:
        load_model(path)
    except SynprepError as e:
        assert "\n" not in str(e), str(e)


def make_train_targets(scratch: Path, n: int) -> tuple[dict, dict]:
    """The ``config`` and ``checkpoint`` targets (hypothesis tests of ``n`` examples) and their counts."""
    counts = dict.fromkeys(TRAIN_TARGETS, 0)
    opts = settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    base = _base_checkpoint()

    @opts
    @given(data=_config_values())
    def config(data):
        counts["config"] += 1
        with no_hang():
            check_config(data)

    @opts
    @given(data=st.data())
    def checkpoint(data):
        counts["checkpoint"] += 1
        with no_hang():
            check_checkpoint(base, scratch / "c.pt", data)

    return {"config": config, "checkpoint": checkpoint}, counts


def make_bound_targets(scratch: Path, n: int) -> tuple[dict, dict]:
    """The targets of the input bounds (tests/fuzz_bounds.py) and their counts."""
    from fuzz_bounds import check_imported_lines, check_parsed_long_tokens, check_value_damage

    from synprep.parse.base import ParserSpec

    counts = dict.fromkeys(BOUND_TARGETS, 0)
    opts = settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    base = scratch / "bounds-valid"
    small_folder(base)
    spec = ParserSpec(lang="de", dir=str(SHARED / "data" / "stanza_resources"), package="synprep")

    def counted(target: str, check, *args):
        kinds = counts_by_kind.setdefault(target, {})

        @opts
        @given(data=st.data())
        def run(data):
            counts[target] += 1
            with no_hang(300.0):
                kind = check(*args, data)
            kinds[kind] = kinds.get(kind, 0) + 1

        return run

    return {"imported": counted("imported", check_imported_lines, scratch / "imported"),
            "long_tokens": counted("long_tokens", check_parsed_long_tokens, spec),
            "values": counted("values", check_value_damage, base, scratch / "values")}, counts


def main() -> int:
    ap = arg_parser(__doc__, whole=True)
    ap.add_argument("--seconds", type=float, default=600.0, help="time budget of the whole campaign")
    ap.add_argument("--round", type=int, default=500, help="hypothesis examples per target per round")
    ap.add_argument("--targets", default=",".join(TARGETS), help="comma-separated subset of " + ",".join(TARGETS))
    args = ap.parse_args()
    chosen = [t for t in args.targets.split(",") if t]
    unknown = set(chosen) - set(TARGETS)
    if unknown:
        ap.error(f"unknown targets {sorted(unknown)}")
    failures: list[dict] = []
    t0 = time.perf_counter()
    rounds = 0
    peaks: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="synprep-fuzz-") as tmp:
        fns, counts = make_targets(Path(tmp), args.round) if set(chosen) & set(READER_TARGETS) else ({}, {})
        tallies = [counts]  # each target family counts into its own dict
        if set(chosen) & set(TRAIN_TARGETS):
            more, more_counts = make_train_targets(Path(tmp), args.round)
            fns = {**fns, **more}
            tallies.append(more_counts)
        if set(chosen) & set(BOUND_TARGETS):
            more, more_counts = make_bound_targets(Path(tmp), args.round)
            fns = {**fns, **more}
            tallies.append(more_counts)
        while time.perf_counter() - t0 < args.seconds and chosen:
            for name in list(chosen):
                try:
                    fns[name]()
                except BaseException as e:  # a property failed: report it, stop fuzzing that target
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    failures.append({"target": name, "error": f"{type(e).__name__}: {e}"[:4000],
                                      "traceback": traceback.format_exc()[-4000:]})
                    chosen.remove(name)
                peaks.setdefault(name, peak_rss_mb())
                if time.perf_counter() - t0 >= args.seconds:
                    break
            rounds += 1
    counts = {k: v for tally in tallies for k, v in tally.items()}
    emit({"inputs": counts, "total_inputs": sum(counts.values()), "rounds": rounds,
                      "seconds": round(time.perf_counter() - t0, 1), "kinds": counts_by_kind,
                      "peak_rss_mb": peak_rss_mb(), "peak_rss_mb_after_first_round": peaks,
                      "failures": failures})
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
