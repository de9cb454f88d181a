"""The paper's names of our datasets: registry names (``breastmnist``) -> the display names its tables
print (``BreastMNIST``), which join our runs to its published numbers. Standard library only: the
grid (``con2 plan``'s paper hours) and the report both read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PAPER_DATASETS: dict[str, str] = {
    "breastmnist": "BreastMNIST",
    "octmnist": "OctMNIST",
    "kvasir": "Kvasir",
    "br35h": "BR35H",
    "pneumonia": "Pneumonia",
    "melanoma": "Melanoma",
    "cifar10": "CIFAR10",
    "cifar100": "CIFAR100",
    "imagenet30": "ImageNet30",
    "dogs-vs-cats": "DogsVsCats",
    "muffin-vs-chihuahua": "MuffinVsChihuahua",
}

# display names of registry datasets the paper does not report
OTHER_DATASETS: dict[str, str] = {"pneumoniamnist": "PneumoniaMNIST", "digits": "Digits"}


def dataset_label(dataset: str) -> str:
    """The paper's display name of a registry dataset name (the name itself when unknown)."""
    return PAPER_DATASETS.get(dataset, OTHER_DATASETS.get(dataset, dataset))


def dataset_names(config: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Registry name -> the paper's dataset name, extended by the config's ``paper_names`` block::

    paper_names:
      datasets: {mydata: MyData}
      methods: {"panda/knn": "PANDA"}        # read by con2.report.methods (or "PANDA/NND")
    """
    datasets = dict(PAPER_DATASETS)
    extra = (config or {}).get("paper_names") or {}
    datasets.update({str(k): str(v) for k, v in (extra.get("datasets") or {}).items()})
    return datasets
