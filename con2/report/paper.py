"""The paper's published numbers and the names that join them to ours.

``workflow/resources/paper_numbers.csv`` (AUROC in percent; columns table, dataset, method,
family, context, score, auroc_mean, auroc_std) and ``paper_compute_hours.csv`` (GPU hours per
run) are copies of the spec's files. Our datasets are registry names (``breastmnist``), the
paper's are display names (``BreastMNIST``); our methods are ``(method, score)`` pairs
(``("con2", "nnd")``), the paper's are table rows (``CON2`` with score ``NND``). A profile config
may extend the maps (``paper_names`` in the config) for a new baseline that has a paper row.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

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

# (our method, our score) -> (paper method, paper score or "" where the paper's row has none)
PAPER_METHODS: dict[tuple[str, str], tuple[str, str]] = {
    ("con2", "nnd"): ("CON2", "NND"),
    ("con2", "lh"): ("CON2", "LH"),
    ("simclr", "knn"): ("SimCLR", ""),
    ("simclr", "ssd"): ("SSD", ""),
    ("csi", "csi"): ("CSI", ""),
}

# our method -> the method name of paper_compute_hours.csv
PAPER_COMPUTE_METHODS: dict[str, str] = {"con2": "CON2", "simclr": "SimCLR/SSD", "csi": "CSI"}

SCORE_LABELS: dict[str, str] = {"nnd": "NND", "lh": "LH", "knn": "kNN", "ssd": "SSD", "csi": "CSI"}
METHOD_LABELS: dict[str, str] = {"con2": "CON2", "simclr": "SimCLR", "csi": "CSI"}


SCORE_ORDER: tuple[str, ...] = ("nnd", "lh", "knn", "ssd", "csi")


def score_key(score: str) -> tuple[int, str]:
    """Sort key: the paper's scores in a fixed order (NND first), others alphabetically after."""
    return (SCORE_ORDER.index(score), "") if score in SCORE_ORDER else (len(SCORE_ORDER), str(score))


def pair_key(method: str, score: str) -> tuple[int, str, tuple[int, str]]:
    """Sort key of (method, score): CON2 first, then alphabetically; scores by :func:`score_key`."""
    return (0 if method == "con2" else 1, method, score_key(score))


def method_label(method: str, score: str) -> str:
    """Display name of one of our (method, score) pairs, e.g. ``CON2 (NND)``."""
    m = METHOD_LABELS.get(method, method)
    return f"{m} ({SCORE_LABELS.get(score, score)})"


# display names of registry datasets the paper does not report
OTHER_DATASETS: dict[str, str] = {"pneumoniamnist": "PneumoniaMNIST", "digits": "Digits"}


def dataset_label(dataset: str) -> str:
    """The paper's display name of a registry dataset name (the name itself when unknown)."""
    return PAPER_DATASETS.get(dataset, OTHER_DATASETS.get(dataset, dataset))


def name_maps(config: Mapping[str, Any] | None = None) -> tuple[dict[str, str], dict[tuple[str, str], tuple[str, str]]]:
    """Dataset and method maps, extended by the config's ``paper_names`` block::

        paper_names:
          datasets: {mydata: MyData}
          methods: {"panda/knn": "PANDA"}        # or "PANDA/NND" for a paper score
    """
    datasets = dict(PAPER_DATASETS)
    methods = dict(PAPER_METHODS)
    extra = (config or {}).get("paper_names") or {}
    datasets.update({str(k): str(v) for k, v in (extra.get("datasets") or {}).items()})
    for ours, theirs in (extra.get("methods") or {}).items():
        m, _, s = str(ours).partition("/")
        pm, _, ps = str(theirs).partition("/")
        methods[(m, s)] = (pm, ps)
    return datasets, methods


def load_paper_numbers(path: str | Path) -> pd.DataFrame:
    """The paper's AUROC table (strings stay strings; empty context/score become "")."""
    df = pd.read_csv(path, dtype={"context": str, "score": str, "family": str})
    for col in ("context", "score", "family"):
        df[col] = df[col].fillna("")
    return df


def load_compute_hours(path: str | Path) -> pd.DataFrame:
    """The paper's GPU hours per run (method, dataset, gpu_hours_per_run)."""
    return pd.read_csv(path)


def paper_value(
    paper: pd.DataFrame, table: str | None, dataset: str, method: str, score: str = "", context: str = ""
) -> tuple[float, float] | None:
    """``(mean, std)`` of one paper cell (std NaN where the paper gives none), or ``None``.

    ``score`` / ``context`` empty match any; ``table`` ``None`` searches every table.
    """
    sel = (paper["dataset"] == dataset) & (paper["method"] == method)
    if table is not None:
        sel &= paper["table"] == table
    if score:
        sel &= paper["score"].isin([score, ""])
    if context:
        sel &= paper["context"].isin([context, ""])
    hit = paper[sel]
    if hit.empty:
        return None
    if score and (hit["score"] == score).any():
        hit = hit[hit["score"] == score]
    row = hit.iloc[0]
    return float(row["auroc_mean"]), float(row["auroc_std"]) if pd.notna(row["auroc_std"]) else float("nan")
