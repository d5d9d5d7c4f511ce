"""The compile policy of ``compile: true``: regional compilation.

What is compiled (``torch.compile``, dynamic shapes), and why:

* **each encoder and decoder layer, in place** (:meth:`torch.nn.Module.compile`). PyTorch's
  regional-compilation recipe: the layers are the repeated block, and identical layers share one
  compiled graph (their parameters are graph inputs), so the cold start costs about one layer's
  compilation per kind of layer (plain encoder, syntactic encoder, decoder), not the whole model's.
  ``Module.compile`` keeps the module tree: ``state_dict`` keys and values are those of an eager
  model, so checkpoints move freely between compiled and eager runs.
* **the loss** (:func:`smoothed_loss`): float32 log-softmax over the vocabulary and the
  label-smoothed cross-entropy, fused into one pass over the (N, V) logits instead of several.

Not compiled: the embeddings, the syntax sources' ``prepare`` (host-built indices, once per
forward), the optimizer, beam search (:meth:`~synprep.train.model.DecoderLayer.step` is not a
layer's ``forward``). Shapes: every dimension is dynamic from the first compilation
(``dynamic=True``), so batches of other (B, T, U) reuse it; a layer compiles again only for the
other mode (train / eval: validation) and where a size is 0 or 1 (PyTorch specialises those).
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from synprep.train.loss import label_smoothed_nll_loss


def smoothed_loss(logits: torch.Tensor, target: torch.Tensor, epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed label-smoothed loss and NLL (nats) of (N, V) logits (any float dtype) against (N,) long
    targets: float32 log-softmax, then :func:`~synprep.train.loss.label_smoothed_nll_loss`."""
    return label_smoothed_nll_loss(torch.log_softmax(logits.float(), dim=-1), target, epsilon)


@functools.cache
def _compiled_loss():
    return torch.compile(smoothed_loss, dynamic=True)


def compiled_loss(logits: torch.Tensor, target: torch.Tensor, epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`smoothed_loss` through ``torch.compile`` (one compiled function per process, dynamic N
    and V; built at the first call, so importing this module does not load the compiler)."""
    return _compiled_loss()(logits, target, epsilon)


def compiled_layers(model: nn.Module) -> list[nn.Module]:
    """The layers :func:`compile_model` compiles: ``model.encoder`` then ``model.decoder``."""
    return [*model.encoder, *model.decoder]  # type: ignore[misc]


def compile_model(model: nn.Module, backend: str = "inductor") -> None:
    """Compile every encoder and decoder layer of a :class:`~synprep.train.model.Seq2Seq` in place
    (dynamic shapes; the first call of each kind of layer compiles it). State dict unchanged.
    backend: ``torch.compile``'s (the trainer's is Inductor; tests trace with ``eager``)."""
    # float hyperparameters (dropout rates) are constants of the graph, not symbols: with symbolic
    # floats torch 2.13 fails its own guard on 1 - (1-a)(1-p) (the syntactic heads' dropout)
    torch._dynamo.config.specialize_float = True
    for layer in compiled_layers(model):
        layer.compile(dynamic=True, backend=backend)
