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


def preprocess(image: Image.Image | np.ndarray, recipe: str, size: int, channels: int) -> np.ndarray:
    """Apply ``recipe`` at ``size``; return uint8 ``[size, size, channels]``.

    Args:
        image: a PIL image, or a uint8 array ``[H, W]`` / ``[H, W, C]``.
        recipe: one of :data:`RECIPES`.
        size: output height and width.
        channels: 1 (grayscale, ``L``) or 3 (``RGB``).
    """
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; known: {RECIPES}")
    if isinstance(image, np.ndarray):
        arr = image[..., 0] if image.ndim == 3 and image.shape[-1] == 1 else image
        image = Image.fromarray(np.ascontiguousarray(arr))
    img = image.convert("L" if channels == 1 else "RGB")
    if recipe == "resize_crop":
        img = _centre_crop(_resize_short(img, round(size * 256 / 224)), size)
    elif recipe == "short_crop":
        img = _centre_crop(_resize_short(img, size), size)
    elif img.size != (size, size):  # resize, or native arrays of another size
        img = img.resize((size, size), Image.Resampling.BILINEAR)
    out = np.asarray(img, dtype=np.uint8)
    return out[..., None] if out.ndim == 2 else out
