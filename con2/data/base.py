"""The one-class data container and the data error type.

:class:`OneClassData` is what every loader returns: normal training images, a labelled test set
(1 = anomaly, 0 = normal) and the manifest of the split (sample ids, seed, checksums), so a run
record can say exactly which images it saw. :class:`DataError` (defined in :mod:`con2.errors`) is the
single error type of the data layer; its message names the dataset, the file and the command or
credential that fixes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from con2.errors import DataError, DatasetMissing

__all__ = ["DataError", "DatasetMissing", "OneClassData"]


@dataclass(frozen=True)
class OneClassData:
    """A one-class anomaly-detection split.

    Attributes:
        name: registered dataset name.
        normal_class: the class (or classes, joined by '+') treated as normal.
        train: uint8 ``[N, H, W, C]``, normal training images only (may be a read-only memmap).
        test: uint8 ``[M, H, W, C]`` (may be a read-only memmap).
        test_labels: int64 ``[M]``, 1 = anomaly, 0 = normal.
        val: uint8 ``[V, H, W, C]``, the normal validation images (MedMNIST's ``val`` split; ``V`` = 0
            for a dataset without one): scored to set a threshold, never trained on.
        manifest: the split manifest (see :func:`con2.data.manifest.split_manifest`): sample ids
            of both splits, seed, size and checksums; ``None`` only for hand-built containers.
    """

    name: str
    normal_class: str
    train: np.ndarray
    test: np.ndarray
    test_labels: np.ndarray
    val: np.ndarray | None = field(default=None, compare=False, repr=False)
    manifest: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        arrays = [("train", self.train), ("test", self.test)] + ([("val", self.val)] if self.val is not None else [])
        for name, arr in arrays:
            if arr.dtype != np.uint8 or arr.ndim != 4 or arr.shape[-1] not in (1, 3):
                raise DataError(
                    f"{self.name}: {name} images must be uint8 [N, H, W, C] with C in (1, 3), "
                    f"got {arr.dtype} {arr.shape}"
                )
        if self.test_labels.shape != (len(self.test),):
            raise DataError(f"{self.name}: test_labels shape {self.test_labels.shape} != ({len(self.test)},)")
        if not set(np.unique(self.test_labels).tolist()) <= {0, 1}:
            raise DataError(f"{self.name}: test labels must be 0 (normal) or 1 (anomaly)")

    @property
    def n_anomalous(self) -> int:
        """Number of anomalous test images."""
        return int(self.test_labels.sum())

    @property
    def n_normal_test(self) -> int:
        """Number of normal test images."""
        return int(len(self.test_labels) - self.test_labels.sum())
