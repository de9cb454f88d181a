"""Dataset registry: a name maps to a loader that returns a :class:`OneClassData`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from con2.data.base import DataError, OneClassData
from con2.data.medmnist_source import load_medmnist


def load_digits_one_class(normal_class: int = 0) -> OneClassData:
    """sklearn's embedded 8x8 digits, upsampled to uint8 [0, 255]; deterministic 2:1 split per class.

    Normal class ``normal_class``: two thirds of its images (even index within the class first)
    train, the remaining normals plus every other digit's last third form the test set.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.clip(digits.images * (255.0 / 16.0), 0, 255).round().astype(np.uint8)[..., None]
    labels = digits.target
    train_idx, test_idx = [], []
    for c in range(10):
        idx = np.flatnonzero(labels == c)
        cut = (2 * len(idx)) // 3
        if c == normal_class:
            train_idx.extend(idx[:cut])
        test_idx.extend(idx[cut:])
    test_idx_arr = np.array(sorted(test_idx))
    return OneClassData(
        name="digits",
        normal_class=str(normal_class),
        train=images[np.array(train_idx)],
        test=images[test_idx_arr],
        test_labels=(labels[test_idx_arr] != normal_class).astype(np.int64),
    )


Loader = Callable[..., OneClassData]

DATASETS: dict[str, Loader] = {
    "breastmnist": lambda data_dir, normal_class=None, size=28, **_: load_medmnist(
        "breastmnist", Path(data_dir), (1,) if normal_class is None else (int(normal_class),), size
    ),
    "digits": lambda data_dir=None, normal_class=None, **_: load_digits_one_class(
        0 if normal_class is None else int(normal_class)
    ),
}


def load_one_class(
    name: str, data_dir: str | Path | None, normal_class: str | int | None = None, seed: int = 0, size: int = 28
) -> OneClassData:
    """Load dataset ``name`` as a one-class split.

    Args:
        name: registered dataset name (see ``DATASETS``).
        data_dir: folder searched for local copies (and where downloads go).
        normal_class: the normal class; ``None`` means the dataset's default.
        seed: split seed, for datasets without an official split.
        size: image resolution for sources that come in several sizes (MedMNIST).
    """
    key = name.lower()
    if key not in DATASETS:
        raise DataError(f"unknown dataset {name!r}; registered: {sorted(DATASETS)}")
    return DATASETS[key](data_dir=Path(data_dir or "data"), normal_class=normal_class, seed=seed, size=size)
