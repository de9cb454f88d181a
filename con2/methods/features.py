"""The features of the test-time views: one encoder pass per (split, view, context), every feature
space from that pass (:func:`features`), one fixed view's features (:func:`view_features`) and CSI's
random views per image (:func:`csi_image_views`; any :class:`PerImageViews`). :mod:`con2.methods.scoring`
scores them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

import torch
from torch import Tensor, nn

from con2.training.engine import derived_seed
from con2.transforms.augment import (
    FixedView,
    ViewParams,
    normalize,
    to_float,
)
from con2.transforms.views import N_UNIFORMS, ViewBatch, apply_views, views_from_uniform

ViewDraw = list[tuple[FixedView, int]]
ContextFn = Callable[[Tensor], Tensor]
CSI_CROP_SCALE = (0.54, 0.54)  # CSI's test-time crop: resize_factor 0.54 with resize_fix


class PerImageViews(Protocol):
    """Random views with their own parameters per image ``0..n-1``: :class:`ImageViews` (the harness's views) or
    :class:`con2.transforms.csi_augment.CSIImageViews` (CSI's own augmentation)."""

    def mirror(self, x: Tensor, start: int) -> Tensor:
        """The raw uint8 images ``start:start + len(x)``, left-right mirrored where their view flips (before the
        context)."""
        ...

    def apply(self, x: Tensor, size: int, start: int) -> Tensor:
        """The rest of the views of images ``start:start + len(x)`` on float ``x [b, C, H, W]`` (after the
        context) -> ``[b, 3, size, size]``."""
        ...


@dataclass(frozen=True)
class ImageViews:
    """Random views with their own parameters per image (CSI's test-time views), for images ``0..n-1``.

    ``params`` is a :class:`~con2.transforms.views.ViewBatch` of ``n`` images (on the CPU); its flip is applied
    to the raw pixels before the context (:meth:`mirror`), the rest after it (:meth:`apply`).
    """

    params: ViewBatch

    def mirror(self, x: Tensor, start: int) -> Tensor:
        """Left-right mirror the images ``start:start + len(x)`` of uint8 ``x [b, C, H, W]`` whose view flips."""
        flip = self.params.flip[start : start + len(x)].to(x.device)
        return torch.where(flip[:, None, None, None], x.flip(-1), x)

    def apply(self, x: Tensor, size: int, start: int) -> Tensor:
        """The views of images ``start:start + len(x)`` on float ``x [b, C, H, W]`` -> ``[b, 3, size, size]``."""
        v = self.params.rows(start, start + len(x))
        v = replace(v, **{k: getattr(v, k).to(x.device) for k in ("crop", "jitter_on", "factors", "order", "gray")})
        v = replace(v, flip=torch.zeros_like(v.jitter_on), blur=None if v.blur is None else v.blur.to(x.device))
        return apply_views(x, v, size)


def csi_image_views(
    n_images: int, n_views: int, height: int, width: int, params: ViewParams, seed: int, context: int
) -> list[ImageViews]:
    """CSI's test-time views: ``n_views`` random views of each of ``n_images`` images of one context.

    Image ``i``'s views come from a generator seeded by ``(seed, context, i)``, from ``params`` with
    the crop scale fixed at :data:`CSI_CROP_SCALE`. Returns one :class:`ImageViews` per view index.
    """

    params = replace(params, crop_scale=CSI_CROP_SCALE)
    blur = params.blur_p > 0
    u = torch.empty(n_images, n_views, N_UNIFORMS)
    blur_u = torch.empty(n_images, n_views, 2) if blur else None
    for i in range(n_images):  # the draws of sample_views(n_views, ..., generator=g) for image i, without its ops
        g = torch.Generator().manual_seed(derived_seed(seed, 0xC51, context, i))
        u[i] = torch.rand(n_views, N_UNIFORMS, generator=g)
        if blur_u is not None:
            blur_u[i] = torch.rand(n_views, 2, generator=g)
    return [
        ImageViews(views_from_uniform(u[:, v], height, width, params, None if blur_u is None else blur_u[:, v]))
        for v in range(n_views)
    ]


def quantize(x: Tensor) -> Tensor:
    """Float images in [0, 1] -> uint8 (rounded), so a context defined on pixels can act on a view."""
    return (x * 255.0).round().clamp(0, 255).to(torch.uint8)


def _pixels_to_input(
    x: Tensor, view: FixedView | PerImageViews, context: ContextFn, size: int, start: int, after: bool
) -> Tensor:
    """uint8 ``x [b, C, H, W]`` (images ``start:start + b``) -> the normalised view in its context ``[b, 3, S, S]``."""
    if isinstance(view, FixedView):
        apply = lambda f: view(f, size)  # noqa: E731
    else:
        x = view.mirror(x, start)
        apply = lambda f: view.apply(f, size, start)  # noqa: E731
    if after:
        return normalize(to_float(context(quantize(apply(to_float(x))))))
    return normalize(apply(to_float(context(x))))


@torch.no_grad()
def features(
    encoder: nn.Module,
    images: Tensor,
    view: FixedView | PerImageViews,
    context: ContextFn,
    size: int,
    device: torch.device,
    spaces: Mapping[str, nn.Module | None],
    batch_size: int = 256,
    channels_last: bool = True,
    after: bool = False,
) -> dict[str, Tensor]:
    """Features of uint8 images ``[n, C, H, W]`` under one context and one view, in every space.

    The context acts on raw pixels, then the view (a fixed view, or per-image views), then mean =
    std = 0.5 normalisation, as in training; with ``after`` the view comes first, is quantised to
    uint8 and the context acts on it. One encoder pass, then each space's head (``None``: the
    encoder output itself). Returns ``{space: [n, d_space]}`` (float32, on ``device``).
    """
    was_training = encoder.training
    encoder.eval()
    heads = [h for h in spaces.values() if h is not None]
    head_modes = [h.training for h in heads]
    for h in heads:
        h.eval()
    out: dict[str, list[Tensor]] = {name: [] for name in spaces}
    try:
        for i in range(0, len(images), batch_size):
            x = _pixels_to_input(images[i : i + batch_size].to(device), view, context, size, i, after)
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
                h = encoder(x)
                for name, head in spaces.items():
                    out[name].append((h if head is None else head(h)).float())
    finally:
        encoder.train(was_training)
        for head, mode in zip(heads, head_modes):
            head.train(mode)
    return {name: torch.cat(parts) for name, parts in out.items()}


def view_features(
    encoder: nn.Module,
    images: Tensor,
    view: FixedView,
    context: ContextFn,
    size: int,
    device: torch.device,
    batch_size: int = 256,
    head: nn.Module | None = None,
    channels_last: bool = True,
) -> Tensor:
    """Features ``[n, d]`` of uint8 images ``[n, C, H, W]`` under one context and one view (one space)."""
    return features(encoder, images, view, context, size, device, {"f": head}, batch_size, channels_last)["f"]
