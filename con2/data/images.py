"""Deterministic image preprocessing: the paper's resize/crop recipes, scaled to any size.

The paper's input table (spec/method.md) gives each dataset a recipe at its training size. The
cache stores the deterministic part of it at the requested ``size``:

- ``resize_crop``: resize the shorter edge to ``round(size * 256 / 224)``, centre-crop ``size``
  (the paper's "resize 256, centre-crop 224" at ``size=224``; BR35H, Pneumonia, ImageNet30, whose
  "random 224 crop" is left to the training augmentation, which crops anyway).
- ``short_crop``: resize the shorter edge to ``size``, centre-crop ``size`` (Dogs vs Cats;
  Muffin vs Chihuahua, whose random crop is again left to the training augmentation).
- ``resize``: resize to ``size x size`` ignoring the aspect ratio (Kvasir, Melanoma, CIFAR and
  digits when ``size`` differs from their native 32 / 8 px).
- ``native``: arrays already at ``size`` (MedMNIST npz files exist per size) are kept as they are.

Resampling is PIL's bilinear filter, which antialiases when it shrinks.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

RECIPES = ("resize_crop", "short_crop", "resize", "native")


def _resize_short(img: Image.Image, short: int) -> Image.Image:
    w, h = img.size
    if min(w, h) == short:
        return img
    scale = short / min(w, h)
    new = (max(short, round(w * scale)), max(short, round(h * scale)))
    return img.resize(new, Image.Resampling.BILINEAR)


def _centre_crop(img: Image.Image, size: int) -> Image.Image:
    w, h = img.size
    left, top = (w - size) // 2, (h - size) // 2
    return img.crop((left, top, left + size, top + size))


SIXTEEN_BIT_MODES = ("I;16", "I;16L", "I;16B", "I;16N")


def eight_bit(image: Image.Image) -> Image.Image:
    """``image`` with 8 bits per channel: a 16-bit greyscale image (PNG ``I;16``, or ``I`` holding values up to
    65535) scaled to 0..255 (``round(v / 257)``, the full range kept), where PIL's ``convert("L")`` clamps every
    value above 255 to white; any other image as it is.

    Raises:
        ValueError: a 32-bit integer image with values beyond 16 bits, or a floating-point one: no scale is known.
    """
    if image.mode not in (*SIXTEEN_BIT_MODES, "I", "F"):
        return image
    if image.mode == "F":
        raise ValueError("a floating-point (mode F) image has no known scale to 8 bits; save it as 8 or 16 bit")
    values = np.asarray(image).astype(np.int64)
    if values.size and (values.min() < 0 or values.max() > 65535):
        raise ValueError(
            f"a 32-bit image with values {values.min()}..{values.max()}, beyond 16 bits; save it as 8 or 16 bit"
        )
    return Image.fromarray(((values + 128) // 257).astype(np.uint8), "L")


def preprocess(image: Image.Image | np.ndarray, recipe: str, size: int, channels: int) -> np.ndarray:
    """Apply ``recipe`` at ``size``; return uint8 ``[size, size, channels]``.

    Args:
        image: a PIL image (16-bit greyscale scaled to 8 bits: :func:`eight_bit`), or a uint8 array
            ``[H, W]`` / ``[H, W, C]``.
        recipe: one of :data:`RECIPES`.
        size: output height and width.
        channels: 1 (grayscale, ``L``) or 3 (``RGB``).
    """
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; known: {RECIPES}")
    if isinstance(image, np.ndarray):
        arr = image[..., 0] if image.ndim == 3 and image.shape[-1] == 1 else image
        image = Image.fromarray(np.ascontiguousarray(arr))
    img = eight_bit(image).convert("L" if channels == 1 else "RGB")
    if recipe == "resize_crop":
        img = _centre_crop(_resize_short(img, round(size * 256 / 224)), size)
    elif recipe == "short_crop":
        img = _centre_crop(_resize_short(img, size), size)
    elif img.size != (size, size):  # resize, or native arrays of another size
        img = img.resize((size, size), Image.Resampling.BILINEAR)
    out = np.asarray(img, dtype=np.uint8)
    return out[..., None] if out.ndim == 2 else out
