"""MedMNIST (v2/v3) npz files: found in ``data_dir`` or downloaded with the ``medmnist`` package.

File layout (official): ``{flag}.npz`` for 28 px, ``{flag}_{size}.npz`` for 64/128/224 px, with keys
``train_images, train_labels, val_images, val_labels, test_images, test_labels``; labels are
``(N, 1)`` officially and ``(N,)`` in some copies: both are accepted. Content is validated (keys,
shapes, dtypes, label set) rather than the md5, since hand-supplied copies differ in label shape.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from con2.data.base import DataError, OneClassData

SPLIT_KEYS = ("train_images", "train_labels", "val_images", "val_labels", "test_images", "test_labels")


def npz_filename(flag: str, size: int) -> str:
    """Official MedMNIST file name for a dataset flag and image size."""
    return f"{flag}.npz" if size == 28 else f"{flag}_{size}.npz"


def find_npz(flag: str, size: int, data_dir: Path) -> Path:
    """Return the npz path for ``flag`` at ``size`` under ``data_dir`` (or ``data_dir/medmnist``)."""
    name = npz_filename(flag, size)
    for candidate in (data_dir / name, data_dir / "medmnist" / name):
        if candidate.is_file():
            return candidate
    raise DataError(
        f"{flag}: {name} not found in {data_dir} or {data_dir / 'medmnist'}. "
        f"Fix: run `con2 data get {flag} --data-dir {data_dir}` (needs a network), or copy the "
        f"official file from https://zenodo.org/records/10519652 to {data_dir / 'medmnist' / name}."
    )


def read_npz(path: Path, flag: str) -> dict[str, np.ndarray]:
    """Read and validate a MedMNIST npz; labels are flattened to ``(N,)``."""
    try:
        with np.load(path) as f:
            missing = [k for k in SPLIT_KEYS if k not in f.files]
            if missing:
                raise DataError(
                    f"{flag}: {path} lacks keys {missing}; it is not a MedMNIST npz. "
                    f"Fix: delete it and run `con2 data get {flag}`."
                )
            arrays = {k: np.asarray(f[k]) for k in SPLIT_KEYS}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise DataError(
            f"{flag}: {path} is not a readable npz ({exc}); it may be truncated. "
            f"Fix: delete it and run `con2 data get {flag}`."
        ) from exc
    for split in ("train", "val", "test"):
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        if images.dtype != np.uint8 or images.ndim not in (3, 4):
            raise DataError(f"{flag}: {path} {split}_images must be uint8 [N,H,W(,C)], got {images.dtype} {images.shape}")
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.ndim != 1 or len(labels) != len(images):
            raise DataError(f"{flag}: {path} {split}_labels shape {arrays[f'{split}_labels'].shape} does not match {len(images)} images")
        arrays[f"{split}_labels"] = labels.astype(np.int64)
        if images.ndim == 3:
            arrays[f"{split}_images"] = images[..., None]
    return arrays


def load_medmnist(flag: str, data_dir: Path, normal_labels: tuple[int, ...], size: int = 28) -> OneClassData:
    """One-class split of a MedMNIST dataset: train = normal training images, test = official test split."""
    arrays = read_npz(find_npz(flag, size, data_dir), flag)
    train_mask = np.isin(arrays["train_labels"], normal_labels)
    test_labels = (~np.isin(arrays["test_labels"], normal_labels)).astype(np.int64)
    return OneClassData(
        name=flag,
        normal_class="+".join(map(str, normal_labels)),
        train=np.ascontiguousarray(arrays["train_images"][train_mask]),
        test=np.ascontiguousarray(arrays["test_images"]),
        test_labels=test_labels,
    )
