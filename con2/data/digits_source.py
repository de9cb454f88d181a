"""sklearn's embedded 8x8 digits (offline, no files): a smoke dataset only.

Raw pixels already give a mean one-class AUROC of 99.6, so it checks pipelines, not methods.
Intensities 0..16 are scaled to 0..255; ``size`` other than 8 resizes (bilinear).
"""

from __future__ import annotations

import numpy as np

from con2.data.images import preprocess

CLASSES = tuple(str(i) for i in range(10))


def arrays(size: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """``(images uint8 [1797, size, size, 1], ids, labels [1797])``."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.clip(digits.images * (255.0 / 16.0), 0, 255).round().astype(np.uint8)[..., None]
    if size != 8:
        images = np.stack([preprocess(im, "resize", size, 1) for im in images])
    return images, [f"digits/{i}" for i in range(len(images))], digits.target.astype(np.int64)
