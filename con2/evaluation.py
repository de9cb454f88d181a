"""Test-time augmentation machinery shared by every method: fixed views, contexts, features.

A *plan* is a list of ``(FixedView, context index)`` pairs: A views drawn once from a seed, split
evenly over the K contexts (the first A/K on x, the next A/K on t_1(x), ...), the same for
training and test images. ``tta = 0`` means one identity view on x alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import torch
from torch import Tensor, nn

from con2.augment import IDENTITY_VIEW, FixedView, ViewParams, draw_fixed_views, normalize, to_float

Plan = list[tuple[FixedView, int]]


def tta_plan(n_views: int, n_contexts: int, seed: int, params: ViewParams = ViewParams()) -> Plan:
    """The A fixed test-time views and the context each is applied in (A divisible by K, or 0)."""
    if n_views == 0:
        return [(IDENTITY_VIEW, 0)]
    if n_views % n_contexts:
        raise ValueError(f"{n_views} test-time views cannot be split evenly over {n_contexts} contexts")
    per_context = n_views // n_contexts
    views = draw_fixed_views(n_views, seed, params)
    return [(v, i // per_context) for i, v in enumerate(views)]


@torch.no_grad()
def view_features(
    encoder: nn.Module,
    images: Tensor,
    view: FixedView,
    context: Callable[[Tensor], Tensor],
    size: int,
    device: torch.device,
    batch_size: int = 256,
    head: nn.Module | None = None,
    channels_last: bool = True,
) -> Tensor:
    """Features ``[n, d]`` of uint8 images ``[n, C, H, W]`` under one context and one fixed view.

    The context acts on raw pixels, then the view, then mean = std = 0.5 normalisation, as in
    training. ``head`` (optional) maps encoder outputs further (CSI scores on projections).
    """
    was_training = encoder.training
    encoder.eval()
    out = []
    for i in range(0, len(images), batch_size):
        x = context(images[i : i + batch_size].to(device))
        x = normalize(view(to_float(x), size))
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
            f = encoder(x)
            if head is not None:
                f = head(f)
        out.append(f.float())
    encoder.train(was_training)
    return torch.cat(out)


def iter_plan_features(
    encoder: nn.Module,
    train: Tensor,
    test: Tensor,
    plan: Plan,
    contexts: Sequence[Callable[[Tensor], Tensor]],
    size: int,
    device: torch.device,
    batch_size: int = 256,
) -> Iterator[tuple[Tensor, Tensor]]:
    """Yield ``(train_features [n, d], test_features [M, d])`` for each view of the plan, one at a time."""
    for view, c in plan:
        yield (
            view_features(encoder, train, view, contexts[c], size, device, batch_size),
            view_features(encoder, test, view, contexts[c], size, device, batch_size),
        )
