"""CON2's batch readings: contexts after the views (pixel-exact) and one encoder pass per context
(checked by the statistics BatchNorm keeps)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from con2.config import make_config
from con2.methods import build_method
from con2.methods.features import quantize
from con2.transforms.augment import invert

CPU = torch.device("cpu")


def tiny_con2(tiny, **params):
    torch.manual_seed(0)
    k = len(params.get("contexts", ["invert"])) + 1
    return build_method(make_config({**tiny, "method": "con2", "tta": 2 * k, "params": params}))


def images(n: int, seed: int) -> torch.Tensor:
    return torch.randint(0, 256, (n, 1, 16, 16), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


def as_pixels(x: torch.Tensor) -> torch.Tensor:
    """Undo the mean = std = 0.5 normalisation of a batch: uint8 ``[B, 3, S, S]``."""
    return quantize(x * 0.5 + 0.5)


@pytest.mark.parametrize("contexts", [["invert"], ["equalize"], ["invert", "flip"]])
def test_contexts_after_the_views_are_pixel_exact_transforms_of_the_x_views(tiny, contexts):
    method = tiny_con2(tiny, contexts=contexts, context_order="after_views")
    n, k = 6, len(contexts) + 1
    torch.manual_seed(3)
    batch = as_pixels(method.batch_views(images(n, 1)))  # [2 K N, 3, S, S], view-major, then context
    assert batch.shape == (2 * k * n, 3, 16, 16)
    for v in range(2):
        x_views = batch[(v * k) * n : (v * k + 1) * n]
        for c in range(1, k):
            assert torch.equal(batch[(v * k + c) * n : (v * k + c + 1) * n], method.contexts[c](x_views))
    assert not torch.equal(batch[:n], batch[k * n : (k + 1) * n])  # the two views differ
    # As printed (contexts before the views) the x^C views are independent views of t_C(x): not t_C of the x views.
    before = tiny_con2(tiny, contexts=contexts)
    torch.manual_seed(3)
    printed = as_pixels(before.batch_views(images(n, 1)))
    assert not torch.equal(printed[n : 2 * n], before.contexts[1](printed[:n]))


def test_contexts_after_the_views_at_test_time_too(tiny):
    from con2.methods.features import features

    method = tiny_con2(tiny, context_order="after_views")
    assert method.context_after_views() and not tiny_con2(tiny).context_after_views()
    seen = []
    method.encoder.register_forward_pre_hook(lambda m, args: seen.append(as_pixels(args[0])))
    view = method.test_views()[0].view
    imgs = images(5, 2)
    features(method.encoder, imgs, view, invert, 16, CPU, {"encoder": None}, channels_last=False, after=True)
    features(method.encoder, imgs, view, lambda x: x, 16, CPU, {"encoder": None}, channels_last=False, after=True)
    assert torch.equal(seen[0], invert(seen[1]))  # x^C test view = t_C(x test view), pixel for pixel


def bn_calls(method) -> list[torch.Tensor]:
    """Record the inputs of the encoder's first BatchNorm, one entry per forward call."""
    calls: list[torch.Tensor] = []
    method.encoder.bn1.register_forward_pre_hook(lambda m, args: calls.append(args[0].detach().clone()))
    return calls


def ema(start: torch.Tensor, batches: list[torch.Tensor], momentum: float, var: bool) -> torch.Tensor:
    """What BatchNorm's running mean (or unbiased variance) becomes after seeing ``batches`` in turn."""
    out = start.clone()
    for b in batches:
        flat = b.transpose(0, 1).flatten(1).double()
        stat = flat.var(1, unbiased=True) if var else flat.mean(1)
        out = (1 - momentum) * out.double() + momentum * stat
    return out.float()


@pytest.mark.parametrize("passes", ["joint", "per_context"])
def test_batchnorm_statistics_per_context_or_over_both(tiny, passes):
    method = tiny_con2(tiny, encoder_passes=passes)
    bn = method.encoder.bn1
    mean0, var0 = bn.running_mean.clone(), bn.running_var.clone()
    calls = bn_calls(method)
    n, k = 8, 2
    torch.manual_seed(1)
    method.train()
    method.training_loss(images(n, 1), progress=0.5)
    assert len(calls) == (1 if passes == "joint" else k)
    torch.testing.assert_close(bn.running_mean, ema(mean0, calls, bn.momentum, False), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(bn.running_var, ema(var0, calls, bn.momentum, True), atol=1e-5, rtol=1e-4)
    if passes == "per_context":  # each pass holds the 2N views of one context: x, then x^C
        torch.manual_seed(1)
        batch = method.batch_views(images(n, 1))
        for c, seen in enumerate(calls):
            rows = torch.cat([batch[c * n : (c + 1) * n], batch[(k + c) * n : (k + c + 1) * n]])
            torch.testing.assert_close(seen, method.encoder.conv1(rows), atol=1e-5, rtol=1e-4)
        per_context_means = [c.transpose(0, 1).flatten(1).mean(1) for c in calls]
        assert not torch.allclose(per_context_means[0], per_context_means[1], atol=1e-3)  # the contexts differ


def test_per_context_passes_give_each_view_its_own_row_in_the_losses(tiny):
    """The loss sees the same batch order either way: with BatchNorm in eval mode both passes agree."""
    joint, split = tiny_con2(tiny), tiny_con2(tiny, encoder_passes="per_context")
    split.load_state_dict(joint.state_dict())
    joint.eval(), split.eval()
    x = torch.randn(2 * 2 * 5, 3, 16, 16)
    with torch.no_grad():
        np.testing.assert_allclose(joint.encode(x).numpy(), split.encode(x).numpy(), rtol=1e-4, atol=1e-5)
