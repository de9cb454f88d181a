"""Batched SimCLR training views: per-image random parameters, one resampling, tensor arithmetic.

The distribution is torchvision's per-image pipeline (the spec's T)::

    RandomResizedCrop(size, scale, ratio) -> RandomHorizontalFlip(p) ->
    RandomApply([ColorJitter(brightness, contrast, saturation, hue)], p) -> RandomGrayscale(p)
    [-> RandomApply([GaussianBlur(kernel, sigma)], blur_p)]   (SimCLR's strength; off by default)

with every parameter drawn independently for every image of the batch, on the images' device,
from torch's global RNG (so the engine's per-step seed makes a step reproducible):

* crop: torchvision's ``RandomResizedCrop.get_params``: 10 tries of an area fraction
  ``U(scale)`` and a log-uniform aspect ratio, integer box sides (rounded), the first box that
  fits, else the centre fallback; an integer top-left corner drawn uniformly;
* flip, jitter and grayscale: Bernoulli(p); jitter factors ``U(max(0, 1 - b), 1 + b)`` for
  brightness, contrast and saturation and ``U(-h, h)`` for the hue shift; the order of the four
  jitter operations is a uniformly random permutation per image, as ColorJitter draws it;
* blur (only when ``blur_p > 0``, from a second ``torch.rand`` call, so the draws above do not
  change): Bernoulli(``blur_p``) and a sigma ``U(blur_sigma)``; the kernel side is SimCLR's, 10% of
  the output side as an odd number (:func:`blur_kernel_size`).

Applying them (``apply_views``) costs one ``grid_sample`` for crop + resize + flip together, from
the stored image straight to the output size, and a few elementwise passes for the jitter:

* resampling is torchvision's ``resized_crop`` (bilinear, ``align_corners=False``, sample
  positions clamped to the crop box) followed by ``horizontal_flip``. When a crop is smaller than
  the output (always, when the data are not larger than ``image_size``: 28 px data trained at
  28-224 px upsample), this matches torchvision to float rounding. When the data are larger than
  the output, crops can be larger too and plain bilinear sampling would alias; torchvision
  antialiases with a triangle filter. Here every output pixel then averages a ``k x k`` grid of
  bilinear samples, ``k = ceil(input side / output side)`` (the ``roi_align`` scheme, a box
  filter): antialiased, but not torchvision's filter, so not equal to it;
* brightness, contrast, saturation and grayscale are torchvision's formulas (its luma weights
  0.2989, 0.587, 0.114) with per-image factors; each of the four jitter slots applies, per image,
  the operation that its permutation puts there;
* grayscale data (``[B, 1, H, W]``, or ``[B, 3, H, W]`` expanded from one channel with stride 0, as
  :func:`con2.transforms.augment.to_float` makes it) run on one channel. Saturation, hue and grayscale are
  exactly the identity on a gray image, so they are skipped; only the relative order of
  brightness and contrast matters there. (torchvision on such an image repeated to 3 channels
  differs by at most 1e-4: its luma weights sum to 0.9999, not 1.)
* blur is torchvision's ``gaussian_blur`` (its kernel, reflect padding) with a per-image sigma, as
  two separable grouped convolutions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor

LUMA = (0.2989, 0.587, 0.114)  # torchvision's rgb_to_grayscale weights
BRIGHTNESS, CONTRAST, SATURATION, HUE = range(4)  # jitter operation ids, ColorJitter's order
_TRIES = 10


@dataclass(frozen=True)
class ViewParams:
    """SimCLR view augmentation settings (defaults: the supervised-contrastive reference)."""

    crop_scale: tuple[float, float] = (0.2, 1.0)
    hflip_p: float = 0.5
    jitter: tuple[float, float, float, float] = (0.4, 0.4, 0.4, 0.1)
    jitter_p: float = 0.8
    grayscale_p: float = 0.2
    crop_ratio: tuple[float, float] = (3 / 4, 4 / 3)
    blur_p: float = 0.0  # SimCLR's Gaussian blur probability (0.5 in SimCLR; off in the SupCon reference)
    blur_sigma: tuple[float, float] = (0.1, 2.0)


DEFAULT_VIEWS = ViewParams()  # the supervised-contrastive reference views (a shared, frozen default)


@dataclass(frozen=True)
class ViewBatch:
    """Per-image parameters of ``B`` views, tensors on one device.

    ``crop [B, 4]``: top, left, height, width in input pixels (integers stored as float);
    ``flip [B]``, ``jitter_on [B]``, ``gray [B]``: bool; ``factors [B, 4]``: brightness, contrast
    and saturation factors and the hue shift as drawn (used only where ``jitter_on``);
    ``order [B, 4]``: the jitter operation ids (0-3) in the order each image applies them;
    ``hue``: False when the hue range is 0, so the hue step is skipped (known on the host);
    ``blur [B]``: the Gaussian blur sigma per image, 0 where no blur (``None``: blur off, ``blur_p = 0``).
    """

    crop: Tensor
    flip: Tensor
    jitter_on: Tensor
    factors: Tensor
    order: Tensor
    gray: Tensor
    hue: bool = True
    blur: Tensor | None = None

    def rows(self, start: int, stop: int) -> ViewBatch:
        """The parameters of images ``start:stop``."""
        blur = None if self.blur is None else self.blur[start:stop]
        return replace(
            self,
            crop=self.crop[start:stop],
            flip=self.flip[start:stop],
            jitter_on=self.jitter_on[start:stop],
            factors=self.factors[start:stop],
            order=self.order[start:stop],
            gray=self.gray[start:stop],
            blur=blur,
        )


def _centre_fallback(height: int, width: int, ratio: tuple[float, float]) -> tuple[int, int]:
    """torchvision's fallback box ``(h, w)`` when no try fits: the whole image, ratio-clamped."""
    in_ratio = width / height
    if in_ratio < min(ratio):
        return round(width / min(ratio)), width
    if in_ratio > max(ratio):
        return height, round(height * max(ratio))
    return height, width


N_UNIFORMS = 2 * _TRIES + 13  # uniform draws per image of one view (the blur's two come from a second call)


def sample_views(
    batch: int,
    height: int,
    width: int,
    params: ViewParams = DEFAULT_VIEWS,
    device: torch.device | str = "cpu",
    generator: torch.Generator | None = None,
) -> ViewBatch:
    """Draw independent view parameters for ``batch`` images of ``height x width`` pixels.

    All draws come from one ``torch.rand`` call on ``device`` (no host synchronisation), two with
    blur; from ``generator`` (on ``device``) when given, else torch's global RNG.
    """
    u = torch.rand(batch, N_UNIFORMS, device=device, generator=generator)
    blur_u = torch.rand(batch, 2, device=device, generator=generator) if params.blur_p > 0 else None
    return views_from_uniform(u, height, width, params, blur_u)


def views_from_uniform(
    u: Tensor, height: int, width: int, params: ViewParams = DEFAULT_VIEWS, blur_u: Tensor | None = None
) -> ViewBatch:
    """View parameters from uniform draws ``u [B, N_UNIFORMS]`` (and ``blur_u [B, 2]`` with blur)."""
    batch = len(u)
    area_u, ratio_u = u[:, :_TRIES], u[:, _TRIES : 2 * _TRIES]
    top_u, left_u, flip_u, jitter_u, gray_u = u[:, 2 * _TRIES : 2 * _TRIES + 5].unbind(1)
    factor_u, order_u = u[:, 2 * _TRIES + 5 : 2 * _TRIES + 9], u[:, 2 * _TRIES + 9 :]
    # crop box: torchvision's RandomResizedCrop.get_params, all tries at once
    s_lo, s_hi = params.crop_scale
    area = (s_lo + (s_hi - s_lo) * area_u) * (height * width)
    log_lo, log_hi = math.log(params.crop_ratio[0]), math.log(params.crop_ratio[1])
    aspect = torch.exp(log_lo + (log_hi - log_lo) * ratio_u)
    w = torch.round(torch.sqrt(area * aspect))
    h = torch.round(torch.sqrt(area / aspect))
    fits = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    tries = torch.arange(_TRIES, device=u.device).expand(batch, _TRIES)
    first = torch.where(fits, tries, _TRIES).min(1).values  # first fitting try, _TRIES if none
    found = first < _TRIES
    pick = first.clamp(max=_TRIES - 1)[:, None]
    fh, fw = _centre_fallback(height, width, params.crop_ratio)
    h = torch.where(found, h.gather(1, pick)[:, 0], float(fh))
    w = torch.where(found, w.gather(1, pick)[:, 0], float(fw))
    top = torch.where(found, torch.floor(top_u * (height - h + 1)).clamp(max=height - h), (height - h) // 2)
    left = torch.where(found, torch.floor(left_u * (width - w + 1)).clamp(max=width - w), (width - w) // 2)
    # colour: ColorJitter's factor ranges, a random permutation per image (Python-number bounds:
    # a tensor built from a list on a GPU would be a blocking host-to-device copy every step)
    b, c, s, hue = params.jitter
    ranges = [(max(0.0, 1 - b), 1 + b), (max(0.0, 1 - c), 1 + c), (max(0.0, 1 - s), 1 + s), (-hue, hue)]
    return ViewBatch(
        crop=torch.stack([top, left, h, w], 1),
        flip=flip_u < params.hflip_p,
        jitter_on=jitter_u < params.jitter_p,
        factors=torch.stack([lo + (hi - lo) * factor_u[:, i] for i, (lo, hi) in enumerate(ranges)], 1),
        order=order_u.argsort(1),
        gray=gray_u < params.grayscale_p,
        hue=hue > 0,
        blur=None if blur_u is None else _blur_sigmas(blur_u, params),
    )


def _blur_sigmas(blur_u: Tensor, params: ViewParams) -> Tensor:
    """Per-image blur sigma ``[B]`` from ``blur_u [B, 2]``: ``U(blur_sigma)`` where blurred, else 0."""
    lo, hi = params.blur_sigma
    return torch.where(blur_u[:, 0] < params.blur_p, lo + (hi - lo) * blur_u[:, 1], 0.0)


def blur_kernel_size(size: int) -> int:
    """SimCLR's blur kernel for ``size``-pixel images: 10% of the side, odd (radius ``size // 20``): 28 px -> 3."""
    return 2 * (size // 20) + 1


def gaussian_kernels(sigma: Tensor, kernel_size: int) -> Tensor:
    """torchvision's 1-D Gaussian kernels ``[B, k]`` for per-image ``sigma [B]`` (> 0)."""
    half = (kernel_size - 1) * 0.5
    x = torch.linspace(-half, half, kernel_size, device=sigma.device, dtype=torch.float32)
    pdf = torch.exp(-0.5 * (x[None, :] / sigma[:, None]).pow(2))
    return pdf / pdf.sum(1, keepdim=True)


def gaussian_blur(x: Tensor, sigma: Tensor, kernel_size: int) -> Tensor:
    """Blur each image of float ``x [B, C, H, W]`` with its own ``sigma [B]`` (0: unchanged) -> ``[B, C, H, W]``.

    torchvision's ``gaussian_blur`` (its kernel, reflect padding) as two separable grouped
    convolutions, every image and channel its own group.
    """
    if kernel_size < 2:
        return x
    b, c, h, w = x.shape
    on = sigma > 0
    k = gaussian_kernels(torch.where(on, sigma, 1.0), kernel_size).repeat_interleave(c, 0)  # [B*C, k]
    pad = kernel_size // 2
    y = F.pad(x.reshape(1, b * c, h, w), (pad, pad, pad, pad), mode="reflect")
    y = F.conv2d(y, k[:, None, None, :], groups=b * c)  # along the width
    y = F.conv2d(y, k[:, None, :, None], groups=b * c)  # along the height
    return torch.where(_per_image(on), y.reshape(b, c, h, w), x)


def _axis_positions(start: Tensor, length: Tensor, size: int, side: int, sub: int) -> Tensor:
    """Normalised sample positions ``[B, size * sub]`` along one axis (``align_corners=False``).

    Output pixel ``u`` of a crop ``[start, start + length)`` resized to ``size`` samples at input
    pixel ``start + (u + 0.5) * length / size - 0.5``, clamped to the crop (torchvision's bilinear
    resize); ``sub > 1`` places ``sub`` samples evenly inside each output pixel.
    """
    u = (torch.arange(size * sub, device=start.device, dtype=torch.float32) + 0.5) / sub
    pos = start[:, None] + u[None, :] * (length[:, None] / size) - 0.5
    pos = torch.minimum(torch.maximum(pos, start[:, None]), (start + length - 1)[:, None])
    return (2 * pos + 1) / side - 1


def resample(x: Tensor, crop: Tensor, flip: Tensor, size: int) -> Tensor:
    """Crop ``[B, 4]`` boxes out of ``x [B, C, H, W]``, resize to ``size``, mirror where ``flip``.

    One ``grid_sample`` call -> ``[B, C, size, size]``; see the module docstring for antialiasing.
    """
    bsz, _, height, width = x.shape
    sub = max(1, math.ceil(max(height, width) / size))
    top, left, h, w = crop.to(torch.float32).unbind(1)
    gy = _axis_positions(top, h, size, height, sub)
    gx = _axis_positions(left, w, size, width, sub)
    gx = torch.where(flip[:, None], gx.flip(1), gx)
    n = size * sub
    grid = torch.stack([gx[:, None, :].expand(bsz, n, n), gy[:, :, None].expand(bsz, n, n)], dim=-1)
    out = F.grid_sample(x.float(), grid, mode="bilinear", padding_mode="border", align_corners=False)
    return F.avg_pool2d(out, sub) if sub > 1 else out


def _per_image(v: Tensor) -> Tensor:
    return v[:, None, None, None]


def _gray(x: Tensor) -> Tensor:
    """torchvision's luma ``[B, 1, H, W]`` of RGB ``x [B, 3, H, W]``."""
    r, g, b = x.unbind(1)
    return (r * LUMA[0] + g * LUMA[1] + b * LUMA[2])[:, None]


def _shift_hue(x: Tensor, shift: Tensor) -> Tensor:
    """Per-image hue rotation of RGB ``x [B, 3, H, W]`` by ``shift [B]`` turns (torchvision's HSV maths).

    With ``v = max``, ``c = max - min`` and the hue ``h6`` in sixths of a turn (Pillow's formula, as
    torchvision), HSV -> RGB gives channel ``n`` in (5, 3, 1) as ``v - c * clamp(min(k, 4 - k), 0, 1)``,
    ``k = (n + h6 + 6 shift) mod 6``; ``s`` cancels, so it is never formed.
    """
    r, g, b = x.unbind(1)
    maxc, minc = torch.maximum(torch.maximum(r, g), b), torch.minimum(torch.minimum(r, g), b)
    crange = maxc - minc
    div = torch.where(crange == 0, 1.0, crange)
    is_r = maxc == r
    is_g = (maxc == g) & ~is_r
    h6 = torch.where(is_r, (g - b) / div, torch.where(is_g, 2.0 + (b - r) / div, 4.0 + (r - g) / div))
    turned = h6 + 6.0 * shift[:, None, None]
    k = torch.stack([torch.remainder(turned + n, 6.0) for n in (5.0, 3.0, 1.0)], 1)
    ramp = torch.minimum(k, 4.0 - k).clamp(0.0, 1.0)
    return (maxc[:, None] - crange[:, None] * ramp).clamp(0.0, 1.0)


def _blend(x: Tensor, ref: Tensor | float, factor: Tensor) -> Tensor:
    """torchvision's ``_blend``: ``(factor * x + (1 - factor) * ref).clamp(0, 1)``, per-image factor."""
    f = _per_image(factor)
    return (x * f + ref * (1.0 - f)).clamp(0.0, 1.0)


def _jitter_gray(x: Tensor, v: ViewBatch) -> Tensor:
    """ColorJitter on one-channel ``x [B, 1, S, S]``: brightness and contrast in each image's order."""
    b = torch.where(v.jitter_on, v.factors[:, BRIGHTNESS], 1.0)
    c = torch.where(v.jitter_on, v.factors[:, CONTRAST], 1.0)
    slot = v.order.argsort(1)  # slot[:, op] = position of op in the image's order
    b_first = slot[:, BRIGHTNESS] < slot[:, CONTRAST]
    for step in range(2):
        use_b = b_first if step == 0 else ~b_first
        mean = x.mean(dim=(1, 2, 3))
        x = _blend(x, _per_image(torch.where(use_b, 0.0, mean)), torch.where(use_b, b, c))
    return x


def _linear_step(x: Tensor, op: Tensor, factors: Tensor) -> Tensor:
    """One jitter slot on RGB ``x``: per image brightness, contrast or saturation (``op`` 0-2), or nothing (-1)."""
    factor = torch.where(op >= 0, factors.gather(1, op.clamp(0, 2)[:, None])[:, 0], 1.0)
    gray = _gray(x)
    mean = gray.mean(dim=(1, 2, 3))
    ref = torch.where(_per_image(op == SATURATION), gray, _per_image(torch.where(op == CONTRAST, mean, 0.0)))
    return _blend(x, ref, factor)


def _jitter_rgb(x: Tensor, v: ViewBatch) -> Tensor:
    """ColorJitter and grayscale on RGB ``x [B, 3, S, S]``, each image in its own order.

    Each image's order is split at its hue step into up to three operations before it and up to
    three after it (padded with "nothing", -1): three slots, one batched hue shift, three slots.
    That applies every image's own sequence while computing the costly hue step once.
    """
    order = torch.where(v.jitter_on[:, None], v.order, -1)  # jitter off: four empty slots
    if not v.hue:
        for slot in range(4):
            x = _linear_step(x, torch.where(order[:, slot] == HUE, -1, order[:, slot]), v.factors)
    else:
        hue_at = (v.order == HUE).int().argmax(1)  # each order holds HUE exactly once
        j = torch.arange(3, device=x.device)[None, :]
        padded = torch.cat([order, order.new_full((len(order), 3), -1)], 1)
        before = torch.where(j < hue_at[:, None], order[:, :3], -1)
        after = padded.gather(1, hue_at[:, None] + 1 + j)
        for slot in range(3):
            x = _linear_step(x, before[:, slot], v.factors)
        x = torch.where(_per_image(v.jitter_on), _shift_hue(x, v.factors[:, HUE]), x)
        for slot in range(3):
            x = _linear_step(x, after[:, slot], v.factors)
    return torch.where(_per_image(v.gray), _gray(x).expand_as(x), x)


def is_gray(x: Tensor) -> bool:
    """One channel, or three expanded from one (stride 0): decided from the layout, no data read."""
    return x.shape[1] == 1 or (x.shape[1] == 3 and x.stride(1) == 0)


def apply_views(x: Tensor, v: ViewBatch, size: int) -> Tensor:
    """Apply per-image view parameters: float ``[B, C, H, W]`` in [0, 1], C = 1 or 3 -> ``[B, 3, size, size]``."""
    if x.ndim != 4 or x.shape[1] not in (1, 3):
        raise ValueError(f"expected float images [B, 1 or 3, H, W], got {tuple(x.shape)}")
    blur = (lambda y: y) if v.blur is None else (lambda y: gaussian_blur(y, v.blur, blur_kernel_size(size)))  # noqa: E731
    if is_gray(x):
        out = blur(_jitter_gray(resample(x[:, :1], v.crop, v.flip, size), v))
        return out.expand(-1, 3, -1, -1)
    return blur(_jitter_rgb(resample(x, v.crop, v.flip, size), v))


class ViewAugment(torch.nn.Module):
    """Random SimCLR views, parameters drawn per image.

    Float ``[B, 3, H, W]`` in [0, 1] -> ``[B, 3, size, size]``.
    """

    def __init__(self, size: int, params: ViewParams = DEFAULT_VIEWS) -> None:
        super().__init__()
        self.size = size
        self.params = params

    def forward(self, x: Tensor) -> Tensor:
        with torch.profiler.record_function("views"):
            v = sample_views(len(x), x.shape[-2], x.shape[-1], self.params, x.device)
            return apply_views(x, v, self.size)
