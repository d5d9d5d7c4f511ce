"""``train``: one training run on a shard folder, in one process or one per device under ``torchrun``
(the folder's run lock held from start to end; :class:`~synprep.train.loop.Trainer` does the work)."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import torch.distributed as dist

from synprep.shards.mapped import ARRAYS, set_fallback
from synprep.train.config import TrainConfig
from synprep.train.data import ShardDataset, load_symbols
from synprep.train.distributed import init_distributed
from synprep.train.loop import Trainer
from synprep.train.rundir import run_lock

#: the subfolder of the shards' decoded arrays (:mod:`synprep.shards.mapped`), in the shard folder (or the run folder)
MAP_DIR = ARRAYS

log = logging.getLogger("synprep.train")


def arrays_folder(shards_dir: str | Path, out_dir: str | Path) -> Path:
    """Where a run's processes map the shards' decoded arrays from (:mod:`synprep.shards.mapped`).

    The run folder's ``arrays/`` where it exists (a run begun before the arrays moved, or a link the user made
    to keep them on another disk); else the shard folder's ``arrays/``, shared by every run on those shards
    (each shard decoded and written once, as fairseq's binarized data is: a paper's presets and seeds do
    not hold a copy each); else, where the shard folder cannot be written (a read-only dataset, ``arrays``
    taken by a file), the run folder's ``arrays/``, logged. A shard whose maps cannot be written in the shard
    folder's ``arrays/`` later (a full disk, a quota) has them written in the run folder's
    (:func:`synprep.shards.mapped.set_fallback`).
    """
    own = Path(out_dir) / MAP_DIR
    if os.path.lexists(own):
        return own
    shared = Path(shards_dir) / MAP_DIR
    try:
        shared.mkdir(exist_ok=True)
        with tempfile.TemporaryFile(dir=shared):
            pass
    except OSError as e:
        log.info("the shard folder's %s/ cannot be written (%s): this run's decoded arrays go to %s",
                 MAP_DIR, e.strerror or e, own)
        return own

    set_fallback(shared, own)
    return shared


def train(shards_dir: str | Path, out_dir: str | Path, cfg: TrainConfig | None = None, *, device: str | None = None,
          resume: bool = False, overrides: dict[str, Any] | None = None, progress: bool | None = None,
          train_split: str = "train", valid_split: str = "valid") -> dict[str, Any]:
    """Train on one split of a shard folder (``train``), validating on another (``valid``).

    Joins the ``torchrun`` process group when launched by it (``WORLD_SIZE > 1``).

    Args:
        shards_dir: output folder of the pipeline (``dict.txt``, ``train.*.h5``, ``valid.*.h5``).
        out_dir: run folder (``metrics.jsonl``, ``gates.png``, ``config.json``, checkpoints; the shards'
            decoded arrays that the run's processes map are in ``shards_dir/arrays/``, or ``out_dir/arrays/``:
            :func:`arrays_folder`).
        cfg: configuration of a new run (None with ``resume``).
        device: ``cpu``, ``cuda``, ``cuda:1``, … or None (CUDA when available, else CPU).
        resume: continue exactly from ``out_dir/checkpoint_last.pt``.
        overrides: with ``resume``: new ``max_steps``/``max_epochs``/… (see RESUME_OVERRIDABLE).
        progress: tqdm bars (None: when stderr is a terminal).
        train_split: split names (the same split for both makes a smoke run on a
            folder holding only a test split).
        valid_split: split names (the same split for both makes a smoke run on a
            folder holding only a test split).

    Returns:
        summary: ``step``, ``epoch`` (epochs finished), ``batches_in_epoch`` (batches of the next one
            done: a ``max_steps`` stop), ``best_valid_loss``, ``signature``, ….

    Raises:
        InputError: missing shards, splits or vocabulary.
        ConfigError: bad configuration.
        FolderBusy (a ConfigError): another run trains into ``out_dir`` (:mod:`synprep.train.rundir`).
    """
    env, dev = init_distributed(device)
    try:
        with run_lock(out_dir) if env.is_main else contextlib.nullcontext():  # one run per folder (rundir.py)
            arrays = arrays_folder(shards_dir, out_dir)  # the shards' decoded arrays, mapped by every process
            train_ds = ShardDataset(shards_dir, train_split, map_dir=arrays, option="--train-split")
            valid_ds = ShardDataset(shards_dir, valid_split, map_dir=arrays, option="--valid-split")
            symbols = load_symbols(shards_dir, train_ds.attrs)
            trainer = Trainer(cfg, train_ds, valid_ds, symbols, out_dir, dev, env, resume=resume,
                              overrides=overrides, progress=progress, data_signature=train_ds.attrs.get("signature"))
            return trainer.run()
    finally:
        if env.enabled and dist.is_initialized():
            dist.destroy_process_group()
