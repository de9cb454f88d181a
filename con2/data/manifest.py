"""Split manifests: the exact samples of a one-class split, with checksums.

A split manifest lists the sample ids of the training and test sets (in the order of the returned
arrays), the test labels, the seed and the size, plus the sha256 of the prepared array they were
cut from and a sha256 of the manifest itself (``split_sha256``), which a run record can store to
prove two runs saw the same data.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from con2.data.fileops import atomic_path, text_digest


def split_manifest(
    dataset: str,
    normal_class: str,
    seed: int,
    size: int,
    protocol: str,
    train_ids: Sequence[str],
    test_ids: Sequence[str],
    test_labels: np.ndarray,
    images_sha256: str | None,
    source: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Build the manifest dict of one split (see the module docstring)."""
    body = {
        "dataset": dataset,
        "normal_class": normal_class,
        "seed": int(seed),
        "size": int(size),
        "protocol": protocol,
        "n_train": len(train_ids),
        "n_test": len(test_ids),
        "n_test_anomalous": int(np.sum(test_labels)),
        "train_ids": [str(i) for i in train_ids],
        "test_ids": [str(i) for i in test_ids],
        "test_labels": [int(x) for x in test_labels],
        "images_sha256": images_sha256,
        "source": source or {},
    }
    canonical = {k: body[k] for k in ("dataset", "normal_class", "size", "train_ids", "test_ids", "test_labels")}
    body["split_sha256"] = text_digest(json.dumps(canonical, sort_keys=True))
    return body


def manifest_filename(normal_class: str, seed: int) -> str:
    """File name of a split manifest inside a cache folder's ``splits/``."""
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in normal_class)
    return f"{safe}__seed{seed}.json"


def write_manifest(manifest: dict[str, Any], path: Path) -> None:
    """Write a manifest atomically (JSON)."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(manifest, indent=1))
