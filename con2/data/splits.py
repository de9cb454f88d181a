"""One-class splits as pure functions of sample ids, source splits, classes and a seed.

Two protocols (spec/datasets.md):

- ``official``: train on the normal images of the source ``train`` split; test on every image of
  the source ``test`` split (MedMNIST, Pneumonia, Melanoma, Muffin vs Chihuahua, Dogs vs Cats,
  CIFAR, ImageNet30). The normal images of the source ``val`` split (MedMNIST's) are the
  validation normals (:func:`validation_normals`): scored, never trained on, they set a threshold
  without the test labels; other ``val`` images are not used.
- ``holdout``: for datasets without an official split (Kvasir, BR35H, digits). Each class is
  split by ranking its sample ids by ``sha256(f"{seed}:{id}")``: the first ``test_fraction`` of
  every class goes to the held-out part. Train = held-in normals; test = held-out normals plus
  the anomalies (all of them, or only the held-out ones with ``all_anomalies=False``). No
  validation normals: carving them from the training normals would change what every method
  trains on and every published comparison.

Hash ranking makes a split depend only on the ids and the seed: not on file order, numpy's RNG
version or which other files exist.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np


def hash_rank(ids: Sequence[str], seed: int) -> np.ndarray:
    """Order (indices into ``ids``) by ``sha256(f"{seed}:{id}")``: a seeded, stable shuffle."""
    keys = [hashlib.sha256(f"{seed}:{i}".encode()).hexdigest() for i in ids]
    return np.array(sorted(range(len(ids)), key=keys.__getitem__), dtype=np.int64)


def holdout_mask(
    ids: Sequence[str] | np.ndarray, classes: Sequence[int] | np.ndarray, test_fraction: float, seed: int
) -> np.ndarray:
    """Boolean ``[N]``: True for the held-out ``round(test_fraction * n_c)`` samples of each class."""
    classes_a = np.asarray(classes)
    held = np.zeros(len(ids), dtype=bool)
    for c in np.unique(classes_a):
        idx = np.flatnonzero(classes_a == c)
        order = hash_rank([ids[int(i)] for i in idx], seed)
        held[idx[order[: int(round(test_fraction * len(idx)))]]] = True
    return held


def one_class_split(
    ids: Sequence[str] | np.ndarray,
    splits: Sequence[str] | np.ndarray,
    classes: Sequence[int] | np.ndarray,
    normal: Sequence[int],
    protocol: str,
    seed: int = 0,
    test_fraction: float = 0.2,
    all_anomalies: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compute a one-class split.

    Args:
        ids: ``[N]`` unique sample ids.
        splits: ``[N]`` source split of each sample (``train``/``val``/``test``/``all``).
        classes: ``[N]`` class index of each sample.
        normal: class indices that are normal.
        protocol: ``official`` or ``holdout`` (see the module docstring).
        seed: seed of the ``holdout`` protocol (ignored by ``official``).
        test_fraction: held-out fraction per class (``holdout``).
        all_anomalies: ``holdout`` only: put every anomaly in the test set (else only held-out ones).

    Returns:
        ``(train_idx [n], test_idx [m], test_labels [m])``: sorted int64 indices into the samples
        and int64 labels, 1 = anomaly, 0 = normal.
    """
    splits_a, classes_a = np.asarray(splits), np.asarray(classes)
    is_normal = np.isin(classes_a, np.asarray(list(normal)))
    if protocol == "official":
        train = (splits_a == "train") & is_normal
        test = splits_a == "test"
    elif protocol == "holdout":
        held = holdout_mask(ids, classes_a, test_fraction, seed)
        train = is_normal & ~held
        test = held | (~is_normal if all_anomalies else np.zeros_like(held))
    else:
        raise ValueError(f"unknown split protocol {protocol!r}")
    test_idx = np.flatnonzero(test)
    return np.flatnonzero(train), test_idx, (~is_normal[test_idx]).astype(np.int64)


def validation_normals(
    splits: Sequence[str] | np.ndarray, classes: Sequence[int] | np.ndarray, normal: Sequence[int], protocol: str
) -> np.ndarray:
    """Sorted int64 indices of the normal images of the source ``val`` split under the ``official``
    protocol (``[V]``, empty where the source has none); always empty under ``holdout`` (module docstring)."""
    if protocol != "official":
        return np.zeros(0, dtype=np.int64)
    is_normal = np.isin(np.asarray(classes), np.asarray(list(normal)))
    return np.flatnonzero((np.asarray(splits) == "val") & is_normal).astype(np.int64)
