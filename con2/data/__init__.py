"""Datasets as one-class splits: normal training images, and a labelled test set.

Every loader returns a :class:`OneClassData` with uint8 images in ``[N, H, W, C]`` layout
(C = 1 or 3) and test labels with 1 = anomaly, 0 = normal. The registry maps a dataset name to a
loader; ``load_one_class`` is the single entry point the rest of the package uses.
"""

from con2.data.base import DataError, OneClassData
from con2.data.registry import DATASETS, load_one_class

__all__ = ["DATASETS", "DataError", "OneClassData", "load_one_class"]
