"""Datasets as one-class splits: normal training images, and a labelled test set.

Every loader returns a :class:`OneClassData` with uint8 images in ``[N, H, W, C]`` layout
(C = 1 or 3) and test labels with 1 = anomaly, 0 = normal. The registry maps a dataset name to a
:class:`DatasetInfo`; ``load_one_class`` is the single entry point the rest of the package uses,
``normal_classes`` lists the normal classes the paper runs per dataset.
"""

from con2.data.base import DataError, DatasetMissing, OneClassData
from con2.data.registry import DATASETS, DatasetInfo, get_info, load_one_class, normal_classes, prepare_dataset

__all__ = [
    "DATASETS",
    "DataError",
    "DatasetInfo",
    "DatasetMissing",
    "OneClassData",
    "get_info",
    "load_one_class",
    "normal_classes",
    "prepare_dataset",
]
