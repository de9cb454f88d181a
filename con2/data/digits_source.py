"""sklearn's embedded 8x8 digits (offline, no files): a smoke dataset only.

Raw pixels already give a mean one-class AUROC of 99.6, so it checks pipelines, not methods.
Intensities 0..16 are scaled to 0..255; ``size`` other than 8 resizes (bilinear). Nothing is
written to disk: :class:`EmbeddedDigits` keeps the images in memory (no prepared cache).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from con2.data.cache import Found, Prepared, SourceTable
from con2.data.images import preprocess
from con2.data.source import DatasetInfo, Source

CLASSES = tuple(str(i) for i in range(10))
LOCATION = "scikit-learn"


def arrays(size: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """``(images uint8 [1797, size, size, 1], ids, labels [1797])``."""
    from sklearn.datasets import load_digits  # lazy: scikit-learn only when the digits are loaded

    digits = load_digits()
    images = np.clip(digits.images * (255.0 / 16.0), 0, 255).round().astype(np.uint8)[..., None]
    if size != 8:
        images = np.stack([preprocess(im, "resize", size, 1) for im in images])
    return images, [f"digits/{i}" for i in range(len(images))], digits.target.astype(np.int64)


class EmbeddedDigits(Source):
    """A dataset shipped inside scikit-learn (``kind = "embedded"``): always present, never cached."""

    kind = "embedded"

    def find(self, info: DatasetInfo, data_dir: Path, size: int) -> Found:
        return Found(LOCATION, f"sklearn.datasets.load_digits:{size}", data_dir)

    def table(self, info: DatasetInfo, found: Found, size: int) -> SourceTable:
        """The 8x8 images as they come (the cache's recipe would resize them to ``size``)."""
        images, ids, labels = arrays(8)
        return SourceTable(
            info.name,
            Path(LOCATION),
            found.fingerprint,
            info.classes,
            ids,
            ["all"] * len(ids),
            labels.tolist(),
            lambda i: images[i],
            info.recipe,
            info.channels,
        )

    def download(self, info: DatasetInfo, data_dir: Path, size: int, progress: bool = True) -> None:
        """Nothing to download."""

    def how_to_get(self, info: DatasetInfo, data_dir: Path) -> str:
        return "embedded in scikit-learn: nothing to download"

    def prepare(
        self,
        info: DatasetInfo,
        data_dir: str | Path | None,
        size: int,
        *,
        download: bool = False,
        progress: bool | None = None,
        verify: bool = False,
    ) -> Prepared:
        """The images at ``size`` in memory (``directory`` ``None``; ``data_dir`` is not touched)."""
        images, ids, labels = arrays(size)
        sha = hashlib.sha256(np.ascontiguousarray(images).tobytes()).hexdigest()
        return Prepared(
            directory=None,
            images=images,
            ids=np.array(ids),
            splits=np.array(["all"] * len(ids)),
            labels=np.array(labels),
            classes=info.classes,
            manifest={"images_sha256": sha, "source": {}},
        )


SOURCE = EmbeddedDigits()
