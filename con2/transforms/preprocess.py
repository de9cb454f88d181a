"""Deterministic preprocessing of every image before training and scoring.

The paper's appendix resizes most medical images to 256 px and centre-crops 224 px before the
view augmentations (BreastMNIST, OctMNIST, BR35H, Pneumonia), i.e. it keeps the central
224/256 = 87.5% of each side. ``center_crop`` reproduces that at any stored size: resize the
stored image to ``round(size / fraction)`` and centre-crop ``size`` again, so the resolution is
unchanged and only the border is dropped. ``fraction = 1`` is the identity.
"""

from __future__ import annotations

import numpy as np
import torch
import torchvision.transforms.v2.functional as TF
from torch import Tensor

PAPER_CENTER_CROP = 224 / 256


def center_crop(images: Tensor, fraction: float) -> Tensor:
    """uint8 ``[N, C, H, W]`` -> ``[N, C, H, W]``: resize to ``H / fraction`` (antialiased), centre-crop ``H x W``."""
    if not 0 < fraction <= 1:
        raise ValueError(f"center_crop fraction must lie in (0, 1], got {fraction}")
    if fraction == 1:
        return images
    h, w = images.shape[-2:]
    resized = TF.resize(images, [round(h / fraction), round(w / fraction)], antialias=True)
    return TF.center_crop(resized, [h, w]).contiguous()


def center_crop_array(images: np.ndarray, fraction: float) -> np.ndarray:
    """:func:`center_crop` on uint8 ``[N, H, W, C]`` arrays (the data layer's layout).

    ``images`` may be a read-only memmap of the prepared cache: it is copied into a writable array
    first (torch refuses to share read-only memory without a warning)."""
    x = torch.from_numpy(np.array(images, copy=True).transpose(0, 3, 1, 2))
    return center_crop(x, fraction).permute(0, 2, 3, 1).contiguous().numpy()
