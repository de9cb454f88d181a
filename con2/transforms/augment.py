"""Context transforms t_C, batched training views, and fixed test-time views.

Images travel as tensors ``[B, C, H, W]``: uint8 for the context transforms (which are defined
on pixels), float in [0, 1] for the view augmentations, then normalised with mean = std = 0.5.

* Context transforms (``CONTEXTS``): invert, flip (vertical, top-bottom), equalize (per channel,
  as torchvision's equalize), and compositions such as ``"invert+flip"`` for the multiple-context
  ablation. Context 0 is always the identity.
* Training views (``ViewAugment``, defined in :mod:`con2.transforms.views`): SimCLR's augmentations with
  parameters drawn independently for every image, on the images' device, seeded through torch's
  RNG, applied as one batched resampling plus tensor arithmetic. Never a vertical flip or a
  rotation, which would undo the flip context.
* Test-time views (``FixedView``): one set of parameters per view, drawn once from a seed and then
  applied identically to every image, training and test alike.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torchvision.transforms.v2.functional as TF
from torch import Tensor

from con2.errors import ConfigError
from con2.transforms.views import DEFAULT_VIEWS, ViewAugment, ViewParams, blur_kernel_size  # noqa: F401  (re-exported: methods build their views from here)

ContextFn = Callable[[Tensor], Tensor]


def invert(x: Tensor) -> Tensor:
    """``255 - x`` on uint8 images ``[B, C, H, W]``."""
    return 255 - x


def vflip(x: Tensor) -> Tensor:
    """Vertical (top-bottom) mirror of ``[B, C, H, W]`` images."""
    return torch.flip(x, dims=[-2])


def equalize(x: Tensor) -> Tensor:
    """Histogram equalisation per image and channel of uint8 ``[B, C, H, W]`` (torchvision's)."""
    return TF.equalize(x)


BASE_CONTEXTS: dict[str, ContextFn] = {"invert": invert, "flip": vflip, "equalize": equalize}

# The order in which contexts are added for the multiple-context ablation (k = 2..8):
# the identity, the three base transforms, then their compositions.
MULTI_CONTEXT_ORDER: tuple[str, ...] = tuple(
    "+".join(c) for r in (1, 2, 3) for c in itertools.combinations(("invert", "flip", "equalize"), r)
)


def context_fn(name: str) -> ContextFn:
    """The context transform called ``name``: a base name or a '+'-joined composition (left first)."""
    parts = name.split("+")
    unknown = [p for p in parts if p not in BASE_CONTEXTS]
    if unknown or not name:
        raise ConfigError(
            f"unknown context {name!r}: use one of {sorted(BASE_CONTEXTS)} or a '+'-joined composition like "
            "'invert+flip'"
        )
    fns = [BASE_CONTEXTS[p] for p in parts]

    def composed(x: Tensor) -> Tensor:
        for fn in fns:
            x = fn(x)
        return x

    return composed


def contexts_for(names: Sequence[str]) -> list[ContextFn]:
    """Context functions for labels 0..k: the identity, then one per name."""
    return [lambda x: x] + [context_fn(n) for n in names]


def multi_context_names(k: int) -> list[str]:
    """The ``k - 1`` non-identity contexts of the k-context ablation (2 <= k <= 8)."""
    if not 2 <= k <= len(MULTI_CONTEXT_ORDER) + 1:
        raise ConfigError(f"number of contexts k={k} must lie in 2..{len(MULTI_CONTEXT_ORDER) + 1}")
    return list(MULTI_CONTEXT_ORDER[: k - 1])


def to_float(x: Tensor) -> Tensor:
    """uint8 ``[B, C, H, W]`` -> float in [0, 1]; grayscale is repeated to 3 channels."""
    x = x.float() / 255.0
    return x.expand(-1, 3, -1, -1) if x.shape[1] == 1 else x


def normalize(x: Tensor) -> Tensor:
    """Float [0, 1] -> mean = std = 0.5 normalisation."""
    return (x - 0.5) / 0.5


@dataclass(frozen=True)
class FixedView:
    """One test-time augmentation with fixed parameters, applied identically to every image.

    ``crop`` is ``(top, left, height, width)`` as fractions of the image side; ``jitter`` holds
    brightness, contrast, saturation factors and a hue shift, applied in ``order`` (torchvision's
    ColorJitter semantics) when ``jitter_on``; ``blur_sigma > 0`` blurs last (torchvision's
    ``gaussian_blur``, SimCLR's kernel: :func:`con2.transforms.views.blur_kernel_size`).
    """

    crop: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)
    hflip: bool = False
    jitter_on: bool = False
    jitter: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 0.0)
    order: tuple[int, ...] = (0, 1, 2, 3)
    grayscale: bool = False
    blur_sigma: float = 0.0

    def __call__(self, x: Tensor, size: int) -> Tensor:
        """Apply to float ``[B, 3, H, W]`` in [0, 1] -> ``[B, 3, size, size]``."""
        h, w = x.shape[-2:]
        top, left, ch, cw = self.crop
        x = TF.resized_crop(
            x,
            round(top * h),
            round(left * w),
            max(1, round(ch * h)),
            max(1, round(cw * w)),
            [size, size],
            antialias=True,
        )
        if self.hflip:
            x = TF.horizontal_flip(x)
        if self.jitter_on:
            b, c, s, hue = self.jitter
            for i in self.order:
                if i == 0:
                    x = TF.adjust_brightness(x, b)
                elif i == 1:
                    x = TF.adjust_contrast(x, c)
                elif i == 2:
                    x = TF.adjust_saturation(x, s)
                else:
                    x = TF.adjust_hue(x, hue)
        if self.grayscale:
            x = TF.rgb_to_grayscale(x, num_output_channels=3)
        kernel = blur_kernel_size(size)
        if self.blur_sigma > 0 and kernel > 1:
            x = TF.gaussian_blur(x, [kernel, kernel], [self.blur_sigma, self.blur_sigma])
        return x.clamp(0.0, 1.0)


IDENTITY_VIEW = FixedView()


def draw_fixed_views(
    n: int, seed: int, params: ViewParams = DEFAULT_VIEWS, ratio: tuple[float, float] | None = None
) -> list[FixedView]:
    """Draw ``n`` fixed test-time views from the training distribution T, reproducibly from ``seed``.

    Crops follow torchvision's RandomResizedCrop sampling (scale, log-uniform ratio, 10 tries, then
    the centre fallback) on a unit square; jitter factors follow ColorJitter's ranges. The blur is
    drawn (after everything else of a view) only when ``params.blur_p > 0``, so views without blur
    are the same as before it existed.
    """
    rng = np.random.default_rng(seed)
    ratio = params.crop_ratio if ratio is None else ratio
    views = []
    for _ in range(n):
        crop = (0.0, 0.0, 1.0, 1.0)
        for _try in range(10):
            area = rng.uniform(*params.crop_scale)
            aspect = float(np.exp(rng.uniform(np.log(ratio[0]), np.log(ratio[1]))))
            cw, ch = np.sqrt(area * aspect), np.sqrt(area / aspect)
            if cw <= 1.0 and ch <= 1.0:
                crop = (float(rng.uniform(0, 1 - ch)), float(rng.uniform(0, 1 - cw)), float(ch), float(cw))
                break
        b, c, s, h = params.jitter
        views.append(
            FixedView(
                crop=crop,
                hflip=bool(rng.random() < params.hflip_p),
                jitter_on=bool(rng.random() < params.jitter_p),
                jitter=(
                    float(rng.uniform(max(0, 1 - b), 1 + b)),
                    float(rng.uniform(max(0, 1 - c), 1 + c)),
                    float(rng.uniform(max(0, 1 - s), 1 + s)),
                    float(rng.uniform(-h, h)),
                ),
                order=tuple(int(i) for i in rng.permutation(4)),
                grayscale=bool(rng.random() < params.grayscale_p),
                blur_sigma=_draw_blur(rng, params),
            )
        )
    return views


def _draw_blur(rng: np.random.Generator, params: ViewParams) -> float:
    """A view's blur sigma (0: none); draws nothing when ``params.blur_p`` is 0."""
    if params.blur_p <= 0:
        return 0.0
    on, sigma = rng.random() < params.blur_p, float(rng.uniform(*params.blur_sigma))
    return sigma if on else 0.0
