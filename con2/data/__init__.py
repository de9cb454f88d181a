"""Datasets as one-class splits: normal training images, and a labelled test set.

Every loader returns a :class:`OneClassData` with uint8 images in ``[N, H, W, C]`` layout
(C = 1 or 3) and test labels with 1 = anomaly, 0 = normal. The registry maps a dataset name to a
:class:`DatasetInfo`, and its source kind to a :class:`~con2.data.source.Source` object;
``load_one_class`` is the single entry point the rest of the package uses, ``normal_classes``
lists the normal classes the paper runs per dataset, ``find_source`` locates a dataset on disk
without the network, ``default_data_dir`` is the data folder when none is given.

The names below are imported on first use, so ``import con2.cli.data`` (the command line's
start-up) and ``from con2.data import default_data_dir`` (the workflow's) do not load numpy, PIL
or the dataset sources.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from con2.data.data_dir import default_data_dir
from con2.errors import DataError, DatasetMissing

if TYPE_CHECKING:  # the names _LAZY resolves on first use, for type checkers
    from con2.data.base import OneClassData
    from con2.data.registry import (
        DATASETS,
        SOURCES,
        find_source,
        get_info,
        load_one_class,
        normal_classes,
        prepare_dataset,
        register_dataset,
        register_source,
    )
    from con2.data.source import DatasetInfo, Source

_LAZY = {
    "OneClassData": "con2.data.base",
    "DATASETS": "con2.data.registry",
    "SOURCES": "con2.data.registry",
    "DatasetInfo": "con2.data.source",
    "Source": "con2.data.source",
    "find_source": "con2.data.registry",
    "get_info": "con2.data.registry",
    "load_one_class": "con2.data.registry",
    "normal_classes": "con2.data.registry",
    "prepare_dataset": "con2.data.registry",
    "register_dataset": "con2.data.registry",
    "register_source": "con2.data.registry",
}

__all__ = ["DataError", "DatasetMissing", "default_data_dir", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'con2.data' has no attribute {name!r}")


# A process the workflow started (`con2 train`, a rule's script) knows the datasets its profile declares by folder
# from $CON2_DATASETS (con2.data.own_folder), registered here, where every user of the registry passes first.
if os.environ.get("CON2_DATASETS", "").strip():
    from con2.data.own_folder import register_from_environment

    register_from_environment()
