"""Split manifests: the exact samples of a one-class split, with checksums.

A split manifest lists the sample ids of the training and test sets (in the order of the returned
arrays), the test labels, the seed and the size, plus the sha256 of the prepared array they were
cut from, the sha256 of the training and test images themselves (``pixels_sha256``, see
:func:`pixels_digest`) and a sha256 over the ids, labels and those images (``split_sha256``), which a
run record stores to prove two runs saw the same images: equal for the same images wherever their
files lie, different for other images under the same ids. The validation normals (``val_ids``, with
their own ``val_pixels_sha256``) are listed beside them and left out of ``split_sha256``: they set
a threshold only, and a split's identity is what a method trains and is tested on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from con2.data.fileops import atomic_path, text_digest


def pixels_digest(*arrays: np.ndarray) -> str:
    """sha256 over the dtype, shape and bytes of each array in turn: the images a run loads (a read of
    each page, which training reads anyway; no copy of a contiguous memmap slice)."""
    h = hashlib.sha256()
    for a in arrays:
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).data)
    return h.hexdigest()


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
    pixels_sha256: str | None = None,
    val_ids: Sequence[str] = (),
    val_pixels_sha256: str | None = None,
) -> dict[str, Any]:
    """Build the manifest dict of one split (see the module docstring); ``pixels_sha256``:
    :func:`pixels_digest` of the training and test images, part of ``split_sha256``; ``val_ids`` and
    ``val_pixels_sha256``: the validation normals and their digest, outside ``split_sha256``."""
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
        "source": {k: v for k, v in (source or {}).items() if k != "files"},  # not the per-file hashes
        "pixels_sha256": pixels_sha256,
        "n_val": len(val_ids),
        "val_ids": [str(i) for i in val_ids],
        "val_pixels_sha256": val_pixels_sha256,
    }
    keys = ("dataset", "normal_class", "size", "train_ids", "test_ids", "test_labels", "pixels_sha256")
    canonical = {k: body[k] for k in keys}
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


def data_source(manifest: dict[str, Any] | None) -> dict[str, str | None] | None:
    """What a run record says of its images' source (record field ``data_source``): ``format``, the kind
    of copy where a dataset has several (``image-folder`` for a re-encoded CIFAR-10 dump, else ``None``),
    and ``sha256``, the content checksum of the source files (the prepared cache's key); for a dataset
    declared by folder also ``settings``, how its files were read (layout, channels, resize policy, test
    fraction). ``None`` without a manifest."""
    if not manifest:
        return None
    source = manifest.get("source") or {}
    out: dict[str, str | None] = {"format": source.get("format"), "sha256": source.get("fingerprint")}
    if source.get("settings"):
        out["settings"] = source["settings"]
    return out
