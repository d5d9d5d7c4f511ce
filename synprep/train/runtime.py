"""The runtime policy of training and decoding: one place for the device, autocast, TF32,
the attention kernel and compilation.

The fields live in one block of :class:`~synprep.train.config.TrainConfig` (``bf16``,
``decode_bf16``, ``tf32``, ``attention_backend``, ``compile``, ``cuda_graphs``; the device comes from ``--device``).
:func:`resolve` checks them against the device and returns a :class:`RuntimePolicy`;
:func:`apply` sets the process-wide switches (TF32, the attention kernels); the trainer logs
:meth:`RuntimePolicy.describe` at start and records :meth:`RuntimePolicy.record` in
``config.json``'s ``_runtime`` key and in every epoch row of ``metrics.jsonl`` (``runtime``).

Attention kernels (``attention_backend``). Every attention call of the model goes through
:func:`sdpa`; a call *with* an additive mask (key padding, syntax biases) and one without are
scoped separately with :func:`torch.nn.attention.sdpa_kernel`:

==========  ====================================  =========================================
value       masked / biased calls                 unmasked calls (decoder, causal)
==========  ====================================  =========================================
auto        flash, efficient or math: never cuDNN  flash, efficient or math: never cuDNN
math        math                                  math
flash       flash, else efficient, else math      flash, else math
efficient   efficient, else math (CUDA only)      efficient, else math
cudnn       cuDNN, else math (CUDA only)          cuDNN, else math
flex        not supported: a ConfigError          (its kernels need torch.compile, no dropout)
==========  ====================================  =========================================

``auto`` exists because cuDNN attention (which PyTorch prefers on Hopper, masked or not) builds
a new plan for every new (batch, length) shape: 2.5 s of 3.1 s host time in four gated bf16
updates on an H200 (``../shared/gpu/README.md``). Unmasked calls (the decoder's causal
self-attention) too: on an H100, bf16, 16384 tokens, vanilla ran at 58k target tokens/s with torch's
own choice (cuDNN) against 205k with flash (benchmarks/gpu_suite.py, figure ``attention_backends``), so ``auto`` never takes it. "else math" is the fallback where the kernel
cannot run the call (CUDA flash takes no mask; the CPU's flash kernel takes no dropout). On the
CPU, ``auto`` restricts nothing (the CPU has no cuDNN attention) and costs nothing.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from synprep.errors import ConfigError
from synprep.train.config import ATTENTION_BACKENDS, TrainConfig

log = logging.getLogger("synprep.train")

_CUDA_ONLY = {"efficient", "cudnn"}
_B = SDPBackend
#: per backend value: (kernels allowed for masked calls, for unmasked calls); None = no restriction
_KERNELS: dict[str, tuple[list[SDPBackend] | None, list[SDPBackend] | None]] = {
    # never cuDNN on CUDA, masked or not: it builds a plan per (batch, length) shape (measured, module docstring)
    "auto": ([_B.FLASH_ATTENTION, _B.EFFICIENT_ATTENTION, _B.MATH], [_B.FLASH_ATTENTION, _B.EFFICIENT_ATTENTION, _B.MATH]),
    "math": ([_B.MATH], [_B.MATH]),
    "flash": ([_B.FLASH_ATTENTION, _B.EFFICIENT_ATTENTION, _B.MATH], [_B.FLASH_ATTENTION, _B.MATH]),
    "efficient": ([_B.EFFICIENT_ATTENTION, _B.MATH], [_B.EFFICIENT_ATTENTION, _B.MATH]),
    "cudnn": ([_B.CUDNN_ATTENTION, _B.MATH], [_B.CUDNN_ATTENTION, _B.MATH]),
}
#: the kernels scoped around masked / unmasked calls now (set by :func:`apply`)
_masked: list[SDPBackend] | None = None
_unmasked: list[SDPBackend] | None = None


@dataclass(frozen=True)
class RuntimePolicy:
    """The resolved policy of one process.

    Attributes:
        device: the torch device (``cpu``, ``cuda:0``, …).
        train_autocast: ``bf16`` or None (float32).
        decode_autocast: ``bf16`` or None (float32).
        tf32: TF32 matrix products and convolutions on CUDA.
        attention_backend: the config's value (see the module docstring).
        compile: ``torch.compile`` of each encoder/decoder layer and of the loss, dynamic shapes
            (:mod:`synprep.train.compiling`).
        cuda_graphs: each training batch shape's forward and backward replayed as a CUDA graph
            (:mod:`synprep.train.graphs`; the trainer checks it is on CUDA, in one process; with ``compile``
            the graphs record the compiled layers' kernels).
    """

    device: str
    train_autocast: str | None
    decode_autocast: str | None
    tf32: bool
    attention_backend: str
    compile: bool
    cuda_graphs: bool = False
    torch: str = torch.__version__

    def record(self) -> dict[str, Any]:
        """JSON-ready record (config.json ``_runtime``, metrics.jsonl ``runtime``)."""
        return asdict(self)

    def describe(self) -> str:
        """One log line."""
        return (f"runtime: device {self.device} | autocast train {self.train_autocast or 'off'}, decode "
                f"{self.decode_autocast or 'off'} | tf32 {'on' if self.tf32 else 'off'} | attention "
                f"{self.attention_backend} | compile {'on' if self.compile else 'off'} | cuda graphs "
                f"{'on' if self.cuda_graphs else 'off'} | torch {self.torch}")

    def autocast(self, kind: str = "train") -> contextlib.AbstractContextManager:
        """The autocast context of ``kind`` (``train`` or ``decode``) on this device."""
        dtype = self.train_autocast if kind == "train" else self.decode_autocast
        return torch.autocast(device_type=torch.device(self.device).type, dtype=torch.bfloat16,
                              enabled=dtype == "bf16")


def resolve(cfg: TrainConfig, device: torch.device | str) -> RuntimePolicy:
    """The policy of ``cfg`` on ``device``.

    Raises:
        ConfigError: an unknown ``attention_backend``, ``flex`` (not supported), or a CUDA-only
            kernel (``efficient``, ``cudnn``) on another device.
    """
    dev = torch.device(device)
    name = cfg.attention_backend
    if name not in ATTENTION_BACKENDS:
        raise ConfigError(f"attention_backend must be one of {', '.join(ATTENTION_BACKENDS)}, got {name!r}")
    if name == "flex":
        raise ConfigError("attention_backend flex is not supported: flex attention needs torch.compile and takes "
                          "no dropout (use auto)")
    if name in _CUDA_ONLY and dev.type != "cuda":
        raise ConfigError(f"attention_backend {name} is a CUDA kernel; this run is on {dev.type} "
                          "(use auto, math or flash)")
    return RuntimePolicy(device=str(dev), train_autocast="bf16" if cfg.bf16 else None,
                         decode_autocast="bf16" if cfg.decode_bf16 else None, tf32=bool(cfg.tf32),
                         attention_backend=name, compile=bool(cfg.compile), cuda_graphs=bool(cfg.cuda_graphs))


def apply(policy: RuntimePolicy) -> None:
    """Set the process-wide switches of ``policy``: TF32 (CUDA) and the attention kernels of :func:`sdpa`."""
    global _masked, _unmasked
    if torch.device(policy.device).type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = policy.tf32
        torch.backends.cudnn.allow_tf32 = policy.tf32
    masked, unmasked = _KERNELS[policy.attention_backend]
    if policy.attention_backend == "auto" and torch.device(policy.device).type != "cuda":
        masked = unmasked = None  # no cuDNN attention off CUDA: nothing to avoid
    _masked, _unmasked = masked, unmasked


def set_attention_backend(name: str, device: torch.device | str = "cpu") -> None:
    """Scope :func:`sdpa`'s kernels as ``attention_backend = name`` on ``device`` (tests, tools).

    Raises:
        ConfigError: as :func:`resolve`.
    """
    apply(resolve(TrainConfig(attention_backend=name), device))


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None = None,
         dropout_p: float = 0.0, is_causal: bool = False) -> torch.Tensor:
    """``F.scaled_dot_product_attention`` under the kernels the policy allows for this call
    (masked or not; see the module docstring). Shapes and arguments as SDPA's."""
    kernels = _masked if attn_mask is not None else _unmasked
    if kernels is None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal)
    with sdpa_kernel(kernels):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal)


@contextlib.contextmanager
def shared_kernels():
    """Context for :func:`sdpa` called from several threads at once (``translate -j``).

    ``sdpa_kernel``'s switches are process-wide: a scope that :func:`sdpa` enters per call in one
    thread can end while another thread's call runs, which then runs under the switches from before
    its own scope (another kernel, other bits). Inside this context the kernels are scoped once, around
    every thread, and :func:`sdpa` enters no scope of its own. It takes the masked calls' kernels for
    all calls: off CUDA (the only device decoded from several threads) they equal the unmasked
    calls' (the two lists differ in CUDA kernels only, :data:`_KERNELS`).
    """
    global _masked, _unmasked
    saved = (_masked, _unmasked)
    kernels = _masked if _masked is not None else _unmasked
    if kernels is None:
        yield
        return
    _masked = _unmasked = None
    try:
        with sdpa_kernel(kernels):
            yield
    finally:
        _masked, _unmasked = saved


@contextlib.contextmanager
def attention_backend(name: str, device: torch.device | str = "cpu"):
    """Context: :func:`set_attention_backend` inside, the previous kernels restored after."""
    global _masked, _unmasked
    saved = (_masked, _unmasked)
    set_attention_backend(name, device)
    try:
        yield
    finally:
        _masked, _unmasked = saved
