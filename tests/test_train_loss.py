"""The trainer's loss (synprep/train/loss.py): ``smoothed_loss_from_logits``, whose backward writes the
logits' gradient in one pass, gives the values of the log-softmax then ``label_smoothed_nll_loss``
(:func:`synprep.train.compiling.smoothed_loss`, what it replaces in the eager update) and their gradient,
padding rows included, with the log-probabilities in the logits' own memory (``overwrite``) or not; a trainer's updates with it give the losses and weights of updates with the
autograd chain it replaces."""

from __future__ import annotations

import functools

import pytest
import torch

from synprep.constants import PAD_ID
from synprep.train import loop
from synprep.train.compiling import smoothed_loss
from synprep.train.loss import label_smoothed_nll_loss, smoothed_loss_from_logits
from tests.test_train_syncs import _trainer


def _logits_and_target(n: int = 50, vocab: int = 300, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, vocab, generator=gen) * 4
    target = torch.randint(0, vocab, (n,), generator=gen)
    target[::7] = PAD_ID  # padding rows: no loss, no gradient
    return logits, target


def _value_and_grad(fn, logits: torch.Tensor, target: torch.Tensor, eps: float, w_nll: float):
    z = logits.clone().requires_grad_()
    loss, nll = fn(z * 1.0, target, eps)  # not a leaf: as the model's output
    (loss * 0.37 + nll * w_nll).backward()
    return loss.detach(), nll.detach(), z.grad


def _chain(logits: torch.Tensor, target: torch.Tensor, eps: float, overwrite: bool = False):
    return smoothed_loss(logits, target, eps)


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("w_nll", [0.0, 0.5])
@pytest.mark.parametrize("overwrite", [False, True])
def test_the_one_pass_loss_gives_the_values_and_the_gradient_of_the_autograd_chain(eps, w_nll, overwrite):
    logits, target = _logits_and_target()
    fast = functools.partial(smoothed_loss_from_logits, overwrite=overwrite)
    loss, nll, grad = _value_and_grad(fast, logits, target, eps, w_nll)
    ref_loss, ref_nll, ref_grad = _value_and_grad(smoothed_loss, logits, target, eps, w_nll)
    assert torch.equal(loss, ref_loss) and torch.equal(nll, ref_nll)  # the same forward operations
    torch.testing.assert_close(grad, ref_grad, rtol=1e-5, atol=1e-6)
    assert not grad[target == PAD_ID].any() and grad[target != PAD_ID].abs().sum() > 0
    # against float64, the one pass is at least as close as the chain
    exact = _value_and_grad(lambda z, t, e: label_smoothed_nll_loss(torch.log_softmax(z, -1), t, e),
                            logits.double(), target, eps, w_nll)[2]
    assert (grad.double() - exact).abs().max() <= (ref_grad.double() - exact).abs().max() + 1e-7


def test_overwrite_writes_the_log_probabilities_into_the_logits_and_leaves_a_leaf_alone():
    logits, target = _logits_and_target()
    z = logits.clone().requires_grad_()
    out = z * 1.0
    smoothed_loss_from_logits(out, target, 0.1, overwrite=True)
    assert torch.equal(out.detach(), torch.log_softmax(logits, -1))
    smoothed_loss_from_logits(z, target, 0.1, overwrite=True)[0].backward()
    assert torch.equal(z.detach(), logits) and z.grad is not None


def test_half_precision_logits_get_a_float32_loss_and_a_gradient_of_their_dtype():
    logits, target = _logits_and_target()
    z = logits.bfloat16().requires_grad_()
    loss, _ = smoothed_loss_from_logits(z, target, 0.1)
    loss.backward()
    assert loss.dtype == torch.float32 and z.grad is not None and z.grad.dtype == torch.bfloat16
    assert torch.equal(loss.detach(), smoothed_loss(z.detach(), target, 0.1)[0])


def test_a_second_backward_through_the_same_loss_is_refused():
    logits, target = _logits_and_target()
    z = logits.clone().requires_grad_()
    loss, _ = smoothed_loss_from_logits(z, target, 0.1)
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="a second backward through the same loss"):
        loss.backward()


@pytest.mark.parametrize("source", ["slr", "vanilla"])
def test_updates_with_the_one_pass_loss_give_the_gradients_and_losses_of_the_autograd_chain(tmp_path, monkeypatch,
                                                                                          source):
    """Dropout on (the same random streams either way): a batch's gradients of every weight, then the losses of 6
    updates, within float rounding. (Not the weights after them: where a gradient is 0 but for rounding, as a
    key's bias, Adam scales the rounding up to steps of the learning rate's size either way.)"""
    runs = {}
    for name, fn in (("fast", smoothed_loss_from_logits), ("chain", _chain)):
        monkeypatch.setattr(loop, "smoothed_loss_from_logits", fn)
        over = {"syntax": "vanilla"} if source == "vanilla" else {}
        tr = _trainer(tmp_path / name, "slr" if source == "vanilla" else source, **over)
        tr.train_sampler.set_epoch(0)
        first = next(iter(tr.train_loader))
        tr._forward_backward(tr.ddp, first, 1.0 / first.ntokens)
        grads = {k: p.grad.clone() for k, p in tr.model.named_parameters() if p.grad is not None}
        tr.optimizer.zero_grad()
        losses = [float(tr.train_step([b])["loss"]) for _, b in zip(range(6), tr.train_loader, strict=False)]
        runs[name] = (grads, losses)
    assert runs["fast"][0].keys() == runs["chain"][0].keys() and len(runs["fast"][1]) == 6
    for key, value in runs["chain"][0].items():
        torch.testing.assert_close(runs["fast"][0][key], value, rtol=1e-4, atol=1e-7, msg=key)
    torch.testing.assert_close(runs["fast"][1], runs["chain"][1], rtol=1e-5, atol=0)
