"""The one-class data container and the data error type."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class DataError(RuntimeError):
    """A dataset is missing, malformed or cannot be obtained; the message says how to fix it."""


@dataclass(frozen=True)
class OneClassData:
    """A one-class anomaly-detection split.

    Attributes:
        name: registered dataset name.
        normal_class: the class (or classes, joined by '+') treated as normal.
        train: uint8 ``[N, H, W, C]``, normal training images only.
        test: uint8 ``[M, H, W, C]``.
        test_labels: int64 ``[M]``, 1 = anomaly, 0 = normal.
    """

    name: str
    normal_class: str
    train: np.ndarray
    test: np.ndarray
    test_labels: np.ndarray

    def __post_init__(self) -> None:
        for field, arr in (("train", self.train), ("test", self.test)):
            if arr.dtype != np.uint8 or arr.ndim != 4 or arr.shape[-1] not in (1, 3):
                raise DataError(
                    f"{self.name}: {field} images must be uint8 [N, H, W, C] with C in (1, 3), "
                    f"got {arr.dtype} {arr.shape}"
                )
        if self.test_labels.shape != (len(self.test),):
            raise DataError(f"{self.name}: test_labels shape {self.test_labels.shape} != ({len(self.test)},)")
        if not set(np.unique(self.test_labels).tolist()) <= {0, 1}:
            raise DataError(f"{self.name}: test labels must be 0 (normal) or 1 (anomaly)")

    @property
    def n_anomalous(self) -> int:
        return int(self.test_labels.sum())

    @property
    def n_normal_test(self) -> int:
        return int(len(self.test_labels) - self.test_labels.sum())
