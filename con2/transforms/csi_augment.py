"""CSI's own batched view augmentation (Tack et al. 2020), as its code computes it.

CSI augments with tensor layers of its own (``models/transform_layers.py``), applied after the rotation in this
order (``models/classifier.py`` lines 16-31): ``ColorJitterLayer`` (p 0.8), ``RandomColorGrayLayer`` (p 0.2),
``RandomResizedCropLayer`` (scale ``(resize_factor, 1)``, 0.08 for training: ``common/common.py`` lines 76-77).
They are not torchvision's (the harness's views, :mod:`con2.transforms.views`):

* colour jitter (``transform_layers.py`` 322-413): every image gets the transform with probability ``jitter_p``.
  The transform is two groups, their order drawn once per batch (``np.random.rand() > 0.5``: contrast first),
  the same for every image of it: *contrast*, ``(x - m) * c + m`` with ``m`` the per-channel spatial mean of the
  image and ``c ~ U(0.6, 1.4)``, then clamped to [0, 1]; *HSV*, RGB -> HSV with an atan2 hue (lines 16-42), the hue
  moved by ``f * 255 / 360`` turn modulo 1 for ``f ~ U(-0.1, 0.1)`` (at most 25.5 degrees, not torchvision's
  36), saturation and value multiplied by ``U(0.6, 1.4)`` (the value factor is CSI's "brightness"), clamped to
  [0, 1], back to RGB (lines 45-66) by the standard formula, which inverts the lookup-table hue and not the atan2
  one: as in CSI, the HSV group moves a colour's hue by up to about 1.2 degrees beyond the drawn shift;
* grey (lines 297-319): the luma ``0.299 r + 0.587 g + 0.114 b`` on all three channels, per image with
  probability ``grayscale_p``;
* crop (lines 69-165): an area ``U(scale)`` times the image's, a log-uniform aspect ratio in (3/4, 4/3), the box
  sides ``w = round(sqrt(area * ratio))``, ``h = round(sqrt(area / ratio))`` in pixels, the first of 10 tries
  that fits, else the whole image; an integer ``k`` uniform in ``[w - W, W - w]`` moves the box centre by
  ``k / 2`` pixels (likewise vertically). The box is resampled, not cut: ``affine_grid`` with the box's scale and
  shift, ``grid_sample`` (bilinear, reflection padding, ``align_corners=False``) on a grid the size of the
  input, then ``adaptive_avg_pool2d`` to the output size. (Every box lies inside the image, so no sample lies
  more than half a pixel beyond the outer pixel centres, where reflection reads what border padding would.)

Two places differ from CSI's code, both invisible in its own runs:

* CSI draws the 10 N tries of a batch of N together and gives the first N that fit to its N images (the whole
  image to the rest when fewer fit); here every image has its own 10 tries, so an image's box never depends on
  its batch. The box of an image has the same distribution either way but for the fallback, which both reach
  almost never (scale (0.08, 1): a try fails with probability 0.09-0.13 at 16-64 px, ten in a row about 1e-9).
* CSI resamples on a grid the size of the input and pools it to the output size; where the output is larger
  than the input (never in CSI: CIFAR is cropped at 32 px from 32 px) the grid here has the output size, a
  bilinear upsampling instead of a blocky one. (CSI's crop also names the height ``width``: the same on the
  square images it rotates.)

Every draw comes from one ``torch.rand`` call per batch (the image's device, torch's global RNG or a passed
generator) plus the batch's jitter order from the CPU's (no host synchronisation), so the engine's per-step seed
makes a step reproducible; :func:`csi_views_from_uniform` turns given uniforms into views, for draws seeded per
image (CSI's test-time views, :mod:`baselines.csi`). Images travel as float ``[B, 3, H, W]`` in [0, 1] (one
channel is repeated to three, as :func:`con2.transforms.augment.to_float` does); normalisation comes after.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

CSI_LUMA = (0.299, 0.587, 0.114)  # RandomColorGrayLayer's weights (transform_layers.py line 302)
HUE_SCALE = 255.0 / 360.0  # RandomHSVFunction: the hue moves by f * 255 / 360 turn (transform_layers.py line 397)
CONTRAST, HUE, SATURATION, VALUE = range(4)  # the columns of CSIViewBatch.factors
_TRIES = 10
N_CSI_UNIFORMS = 2 * _TRIES + 8  # uniforms per image of one view: 10 areas, 10 ratios, 2 offsets, 1 + 4 jitter, 1 grey


@dataclass(frozen=True)
class CSIAugmentParams:
    """CSI's augmentation settings; defaults are its training ones (``models/classifier.py`` lines 11-18)."""

    brightness: float = 0.4  # the HSV value factor U(1 - b, 1 + b)
    contrast: float = 0.4
    saturation: float = 0.4
    hue: float = 0.1  # the hue shift U(-hue, hue), times 255 / 360 turn
    jitter_p: float = 0.8
    grayscale_p: float = 0.2
    crop_scale: tuple[float, float] = (0.08, 1.0)  # resize_factor 0.08 (common/common.py line 76), up to 1
    crop_ratio: tuple[float, float] = (3 / 4, 4 / 3)


CSI_TRAIN_VIEWS = CSIAugmentParams()
CSI_TEST_VIEWS = replace(CSI_TRAIN_VIEWS, crop_scale=(0.54, 0.54))  # --resize_factor 0.54 --resize_fix (README l. 91)


@dataclass(frozen=True)
class CSIViewBatch:
    """Per-image parameters of ``B`` CSI views, tensors on one device.

    ``crop [B, 4]``: box width ``w`` and height ``h`` in input pixels and the centre offsets ``kx``, ``ky`` in half
    pixels (integers stored as float); ``jitter_on [B]``, ``gray [B]``: bool; ``factors [B, 4]``: contrast factor,
    hue shift (before the 255 / 360), saturation and value factors (used only where ``jitter_on``);
    ``contrast_first``: the jitter's group order, one for the whole batch as CSI draws it.
    """

    crop: Tensor
    jitter_on: Tensor
    factors: Tensor
    gray: Tensor
    contrast_first: bool

    def rows(self, start: int, stop: int) -> CSIViewBatch:
        """The parameters of images ``start:stop`` (the same group order)."""
        return replace(
            self,
            crop=self.crop[start:stop],
            jitter_on=self.jitter_on[start:stop],
            factors=self.factors[start:stop],
            gray=self.gray[start:stop],
        )

    def to(self, device: torch.device | str) -> CSIViewBatch:
        """The same parameters on ``device``."""
        return replace(
            self,
            crop=self.crop.to(device),
            jitter_on=self.jitter_on.to(device),
            factors=self.factors.to(device),
            gray=self.gray.to(device),
        )


def _offsets(u: Tensor, side: Tensor, full: int) -> Tensor:
    """An integer ``k`` uniform in ``[side - full, full - side]`` from ``u ~ U(0, 1)`` (numpy's ``randint``)."""
    k = torch.floor(u * (2 * (full - side) + 1)) + (side - full)
    return torch.minimum(k, full - side)


def csi_views_from_uniform(
    u: Tensor, height: int, width: int, params: CSIAugmentParams = CSI_TRAIN_VIEWS, contrast_first: bool = True
) -> CSIViewBatch:
    """CSI view parameters for images of ``height x width`` pixels from uniforms ``u [B, N_CSI_UNIFORMS]``.

    Columns: 10 areas, 10 aspect ratios, the x and y offsets, jitter on, the 4 jitter factors, grey on.
    """
    if u.ndim != 2 or u.shape[1] != N_CSI_UNIFORMS:
        raise ValueError(f"expected uniforms [B, {N_CSI_UNIFORMS}], got {tuple(u.shape)}")
    batch = len(u)
    area_u, ratio_u = u[:, :_TRIES], u[:, _TRIES : 2 * _TRIES]
    x_u, y_u, jitter_u = u[:, 2 * _TRIES : 2 * _TRIES + 3].unbind(1)
    factor_u, gray_u = u[:, 2 * _TRIES + 3 : 2 * _TRIES + 7], u[:, 2 * _TRIES + 7]
    lo, hi = params.crop_scale
    area = (lo + (hi - lo) * area_u) * (height * width)
    log_lo, log_hi = math.log(params.crop_ratio[0]), math.log(params.crop_ratio[1])
    aspect = torch.exp(log_lo + (log_hi - log_lo) * ratio_u)
    w, h = torch.round(torch.sqrt(area * aspect)), torch.round(torch.sqrt(area / aspect))
    fits = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    tries = torch.arange(_TRIES, device=u.device).expand(batch, _TRIES)
    first = torch.where(fits, tries, _TRIES).min(1).values  # the first box that fits; _TRIES: none
    found, pick = first < _TRIES, first.clamp(max=_TRIES - 1)[:, None]
    w = torch.where(found, w.gather(1, pick)[:, 0], float(width))  # CSI's fallback: the whole image
    h = torch.where(found, h.gather(1, pick)[:, 0], float(height))
    b, c, s, hue = params.brightness, params.contrast, params.saturation, params.hue
    ranges = [(max(0.0, 1 - c), 1 + c), (-hue, hue), (max(0.0, 1 - s), 1 + s), (max(0.0, 1 - b), 1 + b)]
    return CSIViewBatch(
        crop=torch.stack([w, h, _offsets(x_u, w, width), _offsets(y_u, h, height)], 1),
        jitter_on=jitter_u < params.jitter_p,
        factors=torch.stack([lo_ + (hi_ - lo_) * factor_u[:, i] for i, (lo_, hi_) in enumerate(ranges)], 1),
        gray=gray_u < params.grayscale_p,
        contrast_first=contrast_first,
    )


def sample_csi_views(
    batch: int,
    height: int,
    width: int,
    params: CSIAugmentParams = CSI_TRAIN_VIEWS,
    device: torch.device | str = "cpu",
    generator: torch.Generator | None = None,
) -> CSIViewBatch:
    """Draw CSI views for ``batch`` images: one ``torch.rand`` on ``device`` (``generator``'s, else torch's global
    RNG), and the batch's group order from the CPU (``generator``'s device when given)."""
    u = torch.rand(batch, N_CSI_UNIFORMS, device=device, generator=generator)
    order_device = "cpu" if generator is None else generator.device
    contrast_first = bool(torch.rand((), device=order_device, generator=generator) < 0.5)
    return csi_views_from_uniform(u, height, width, params, contrast_first)


def identity_csi_views(batch: int, height: int, width: int, device: torch.device | str = "cpu") -> CSIViewBatch:
    """The views that change nothing: the whole image, no jitter, no grey."""
    crop = torch.tensor([float(width), float(height), 0.0, 0.0], device=device).expand(batch, 4)
    off = torch.zeros(batch, dtype=torch.bool, device=device)
    return CSIViewBatch(crop, off, torch.ones(batch, 4, device=device), off, True)


def _per_image(v: Tensor) -> Tensor:
    return v[:, None, None, None]


def rgb_to_hsv(x: Tensor) -> Tensor:
    """CSI's ``rgb2hsv``: RGB ``[B, 3, H, W]`` in [0, 1] -> HSV ``[B, 3, H, W]``, every channel in [0, 1].

    Hue ``atan2(sqrt(3) (g - b), 2 r - g - b)`` as a fraction of a turn (not the lookup-table hue: up to about 1.2
    degrees apart), saturation ``(max - min) / max`` (0 where ``max`` is 0), value ``max``.
    """
    r, g, b = x.unbind(1)
    cmax, cmin = x.max(1).values, x.min(1).values
    hue = torch.remainder(torch.atan2(math.sqrt(3.0) * (g - b), 2 * r - g - b), 2 * math.pi) / (2 * math.pi)
    sat = torch.where(cmax > 0, (cmax - cmin) / torch.where(cmax > 0, cmax, 1.0), 0.0)
    return torch.stack([hue, sat, cmax], 1)


def hsv_to_rgb(hsv: Tensor) -> Tensor:
    """CSI's ``hsv2rgb``: HSV ``[B, 3, H, W]`` -> RGB; channel ``n`` in (5, 3, 1) is ``v - v s clamp(min(k, 4 - k),
    0, 1)`` with ``k = (n + 6 h) mod 6``."""
    h, s, v = hsv[:, :1], hsv[:, 1:2], hsv[:, 2:]
    n = torch.tensor([5.0, 3.0, 1.0], device=hsv.device, dtype=hsv.dtype).view(1, 3, 1, 1)
    k = torch.remainder(n + h * 6, 6)
    return v - v * s * torch.minimum(k, 4 - k).clamp(0, 1)


def adjust_contrast(x: Tensor, factor: Tensor) -> Tensor:
    """CSI's contrast: ``(x - m) * factor + m`` per image (``factor [B]``), ``m`` the per-channel spatial mean of
    ``x [B, 3, H, W]``, clamped to [0, 1]."""
    m = x.mean(dim=(2, 3), keepdim=True)
    return ((x - m) * _per_image(factor) + m).clamp(0, 1)


def adjust_hsv(x: Tensor, hue: Tensor, saturation: Tensor, value: Tensor) -> Tensor:
    """CSI's ``RandomHSVFunction`` on RGB ``x [B, 3, H, W]`` with per-image ``[B]`` factors: hue ``+ hue * 255 /
    360`` turn modulo 1, saturation and value multiplied, HSV clamped to [0, 1], back to RGB."""
    h, s, v = rgb_to_hsv(x).unbind(1)
    h = torch.remainder(h + hue[:, None, None] * HUE_SCALE, 1.0)
    hsv = torch.stack([h, s * saturation[:, None, None], v * value[:, None, None]], 1).clamp(0, 1)
    return hsv_to_rgb(hsv)


def color_jitter(x: Tensor, on: Tensor, factors: Tensor, contrast_first: bool) -> Tensor:
    """CSI's ``ColorJitterLayer`` with drawn parameters: float ``[B, 3, H, W]`` -> the same, jittered where ``on``.

    ``factors [B, 4]``: contrast, hue shift, saturation, value; the contrast group first if ``contrast_first``.
    """
    c, hue, s, v = factors.unbind(1)
    y = x
    for contrast in (True, False) if contrast_first else (False, True):
        y = adjust_contrast(y, c) if contrast else adjust_hsv(y, hue, s, v)
    return torch.where(_per_image(on), y, x)


def csi_grayscale(x: Tensor, on: Tensor) -> Tensor:
    """CSI's ``RandomColorGrayLayer`` with drawn parameters: the luma (0.299, 0.587, 0.114) on 3 channels where
    ``on [B]``."""
    r, g, b = x.unbind(1)
    luma = (r * CSI_LUMA[0] + g * CSI_LUMA[1] + b * CSI_LUMA[2])[:, None]
    return torch.where(_per_image(on), luma.expand_as(x), x)


def crop_resize(x: Tensor, crop: Tensor, size: int) -> Tensor:
    """CSI's ``RandomResizedCropLayer`` with drawn boxes: float ``[B, C, H, W]`` -> ``[B, C, size, size]``.

    ``crop [B, 4]`` as in :class:`CSIViewBatch`. The box's affine map (scale ``w / W``, ``h / H``; shift ``kx /
    W``, ``ky / H`` in ``affine_grid``'s [-1, 1] coordinates) sampled with ``grid_sample`` (bilinear, reflection
    padding, ``align_corners=False``) on a grid of ``max(input side, size)``, then ``adaptive_avg_pool2d`` to
    ``size``.
    """
    bsz, ch, height, width = x.shape
    w, h, kx, ky = crop.to(torch.float32).unbind(1)
    zero = torch.zeros_like(w)
    theta = torch.stack(
        [torch.stack([w / width, zero, kx / width], 1), torch.stack([zero, h / height, ky / height], 1)], 1
    )
    grid_size = [bsz, ch, max(height, size), max(width, size)]
    grid = F.affine_grid(theta, grid_size, align_corners=False)
    out = F.grid_sample(x.float(), grid, mode="bilinear", padding_mode="reflection", align_corners=False)
    return out if out.shape[-2:] == (size, size) else F.adaptive_avg_pool2d(out, size)


def apply_csi_views(x: Tensor, v: CSIViewBatch, size: int) -> Tensor:
    """CSI's augmentation in its order, jitter, grey, crop: float ``[B, C, H, W]`` in [0, 1], C = 1 or 3 ->
    ``[B, 3, size, size]``."""
    if x.ndim != 4 or x.shape[1] not in (1, 3):
        raise ValueError(f"expected float images [B, 1 or 3, H, W], got {tuple(x.shape)}")
    if len(v.crop) != len(x):
        raise ValueError(f"{len(v.crop)} views for {len(x)} images")
    x = x.expand(-1, 3, -1, -1) if x.shape[1] == 1 else x
    x = csi_grayscale(color_jitter(x, v.jitter_on, v.factors, v.contrast_first), v.gray)
    return crop_resize(x, v.crop, size)


class CSIAugment(nn.Module):
    """CSI's random views, parameters drawn per image (the group order per batch): float ``[B, C, H, W]`` in
    [0, 1] -> ``[B, 3, size, size]``."""

    def __init__(self, size: int, params: CSIAugmentParams = CSI_TRAIN_VIEWS) -> None:
        super().__init__()
        self.size = size
        self.params = params

    def forward(self, x: Tensor) -> Tensor:
        with torch.profiler.record_function("csi_views"):
            v = sample_csi_views(len(x), x.shape[-2], x.shape[-1], self.params, x.device)
            return apply_csi_views(x, v, self.size)


@dataclass(frozen=True)
class CSIImageViews:
    """CSI views with their own parameters per image, for images ``0..n-1`` (CSI's test-time views): a left-right
    mirror ``flip [n]`` of the raw pixels before the context (the rotation), then the CSI views after it.

    The per-image view protocol of :func:`con2.methods.features.features` (``mirror``, ``apply``).
    """

    flip: Tensor
    views: CSIViewBatch

    def mirror(self, x: Tensor, start: int) -> Tensor:
        """Mirror the images ``start:start + len(x)`` of uint8 ``x [b, C, H, W]`` whose view flips."""
        flip = self.flip[start : start + len(x)].to(x.device)
        return torch.where(_per_image(flip), x.flip(-1), x)

    def apply(self, x: Tensor, size: int, start: int) -> Tensor:
        """The views of images ``start:start + len(x)`` on float ``x [b, C, H, W]`` -> ``[b, 3, size, size]``."""
        return apply_csi_views(x, self.views.rows(start, start + len(x)).to(x.device), size)
