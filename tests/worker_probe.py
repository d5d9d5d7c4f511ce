"""Functions run in worker processes by tests, from a module that imports nothing heavy: unpickling them in a
worker must not load torch (tests/test_parse_pipeline.py checks what a worker imported)."""

from __future__ import annotations

import sys


def torch_state(_: int) -> tuple[bool, int]:
    """Whether torch was loaded in this process before this call, and its intra-op threads once loaded."""
    loaded = "torch" in sys.modules
    import torch

    return loaded, torch.get_num_threads()
