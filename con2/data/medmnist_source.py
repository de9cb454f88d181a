"""MedMNIST (v2/v3) npz files: found in ``data_dir`` or downloaded from Zenodo.

File layout (official): ``{flag}.npz`` for 28 px, ``{flag}_{size}.npz`` for 64/128/224 px, with keys
``train_images, train_labels, val_images, val_labels, test_images, test_labels``; labels are
``(N, 1)`` officially and ``(N,)`` in some copies: both are accepted. A file found on disk is
validated by content (keys, dtypes, whole-number labels and their set, images of the size the
file name declares in every split) rather than by md5, since hand-supplied copies differ in label
shape; its md5 is recorded in the cache manifest. A download must match the official md5
(``medmnist.INFO``, mirrored in :data:`MEDMNIST`) before it is renamed into place.

The network is touched only in :func:`_fetch_url`: tests replace it.
"""

from __future__ import annotations

import os
import urllib.request
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from con2.data.base import DataError, DatasetMissing
from con2.data.cache import Found, SourceTable
from con2.data.fileops import atomic_path, file_digest
from con2.data.source import DatasetInfo, Source
from con2.errors import read_failure
from con2.text import exception_text, shell_command

SPLIT_KEYS = ("train_images", "train_labels", "val_images", "val_labels", "test_images", "test_labels")
SIZES = (28, 64, 128, 224)
ZENODO = "https://zenodo.org/records/10519652/files"

#: Official md5 per (flag, size), as in ``medmnist.INFO[flag]["MD5"|"MD5_64"|...]`` (medmnist 3.0.2).
MEDMNIST: dict[str, dict[int, str]] = {
    "breastmnist": {
        28: "750601b1f35ba3300ea97c75c52ff8f6",
        64: "742edef2a1fd1524b2efff4bd7ba9364",
        128: "363e4b3f8d712e9b5de15470a2aaadf1",
        224: "b56378a6eefa9fed602bb16d192d4c8b",
    },
    "octmnist": {
        28: "c68d92d5b585d8d81f7112f81e2d0842",
        64: "e229e9440236b774d9f0dfef9d07bdaf",
        128: "0a97e76651ace45c5d943ee3f65b63ae",
        224: "abc493b6d529d5de7569faaef2773ba3",
    },
    "pneumoniamnist": {
        28: "28209eda62fecd6e6a2d98b1501bb15f",
        64: "8f4eceb4ccffa70c672198ea285246c6",
        128: "05b46931834c231683c68f40c47b2971",
        224: "d6a3c71de1b945ea11211b03746c1fe1",
    },
}


def npz_filename(flag: str, size: int) -> str:
    """Official MedMNIST file name for a dataset flag and image size."""
    return f"{flag}.npz" if size == 28 else f"{flag}_{size}.npz"


def url_and_md5(flag: str, size: int) -> tuple[str, str]:
    """Download URL and official md5 of ``flag`` at ``size``."""
    return f"{ZENODO}/{npz_filename(flag, size)}?download=1", MEDMNIST[flag][size]


def check_size(flag: str, size: int) -> None:
    """Raise unless MedMNIST publishes ``flag`` at ``size``."""
    if size not in SIZES:
        raise DataError(
            f"{flag}: MedMNIST comes in sizes {SIZES}, not {size}. Fix: use one of them: `con2 train --set "
            f"data_size=28` (the prepared resolution; image_size, the training size, may differ) or "
            f"`con2 data get {flag} --size 28`."
        )


def get_fix(flag: str, size: int, data_dir: Path) -> str:
    """The command (or manual step) that gets the file; each command quoted for a shell."""
    name = npz_filename(flag, size)
    get = shell_command("con2", "data", "get", flag, "--size", size, "--data-dir", data_dir)
    root = data_dir / "medmnist"
    medmnist = shell_command("python", "-m", "medmnist", "download", f"--size={size}", f"--root={root}")
    return (
        f"Fix: run `{get}` (needs a network, no credentials), or `{medmnist}`, or copy {name} from "
        f"https://zenodo.org/records/10519652 to {data_dir / 'medmnist' / name}."
    )


def find_npz(flag: str, size: int, data_dir: Path) -> Path:
    """Return the npz path for ``flag`` at ``size`` under ``data_dir`` (or ``data_dir/medmnist``)."""
    check_size(flag, size)
    name = npz_filename(flag, size)
    for candidate in (data_dir / name, data_dir / "medmnist" / name):
        if candidate.is_file():
            return candidate
    raise DatasetMissing(
        f"{flag}: {name} not found in {data_dir} or {data_dir / 'medmnist'}. {get_fix(flag, size, data_dir)}"
    )


def _integer_labels(labels: np.ndarray) -> np.ndarray | None:
    """``labels`` as int64 if every value is a whole number (integer dtype, or floats like ``1.0``), else ``None``."""
    if np.issubdtype(labels.dtype, np.integer) or labels.dtype == np.bool_:
        return labels.astype(np.int64)
    if np.issubdtype(labels.dtype, np.floating) and np.all(np.isfinite(labels)) and np.all(labels == np.round(labels)):
        return labels.astype(np.int64)
    return None


# A member of an npz whose data expand more than this many times over their compressed bytes (and
# above 64 MB) is refused as a zip bomb: MedMNIST images compress a few times, not a thousand.
MAX_NPZ_RATIO = 1000


def memory_bytes() -> int:
    """The machine's physical memory in bytes (a large default where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - POSIX has both
        return 1 << 40


def _header_2_0(member: Any) -> tuple[tuple[int, ...], bool, np.dtype]:
    """An .npy header of version 2.0 or 3.0 (3.0 differs only in its text's encoding)."""
    return np.lib.format.read_array_header_2_0(member)


def check_npz_sizes(path: Path, flag: str, fix: str) -> None:
    """Read the header of every array in the npz (no data) and refuse, before any array is loaded,
    one whose header declares more bytes than the file holds for it, a member that expands more than
    :data:`MAX_NPZ_RATIO` times (a zip bomb), or arrays larger together than this machine's memory.

    Raises:
        DataError: naming the file, the array and its declared size, and ``fix``.
    """
    total = 0
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            with z.open(info) as member:
                version = np.lib.format.read_magic(member)
                read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else _header_2_0
                shape, _, dtype = read_header(member)  # the header only
            declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
            name = info.filename.removesuffix(".npy")
            if declared > info.file_size:
                raise DataError(
                    f"{flag}: {path} array {name} declares shape {tuple(shape)} ({declared:,} bytes) but the file "
                    f"holds {info.file_size:,} bytes for it; it is damaged. {fix}"
                )
            if info.file_size > 64 << 20 and info.file_size > MAX_NPZ_RATIO * max(info.compress_size, 1):
                raise DataError(
                    f"{flag}: {path} array {name} expands from {info.compress_size:,} to {info.file_size:,} bytes "
                    f"(more than {MAX_NPZ_RATIO}x: a zip bomb, not images). {fix}"
                )
            total += declared
    if total > memory_bytes():
        raise DataError(
            f"{flag}: {path} declares {total:,} bytes of arrays, more than this machine's {memory_bytes():,} bytes "
            f"of memory. Fix: use a smaller size of {flag}, or a machine with more memory."
        )


def read_npz(path: Path, flag: str, size: int | None = None) -> dict[str, np.ndarray]:
    """Read and validate a MedMNIST npz; labels are flattened to ``(N,)``, images get a channel axis.

    Every split must hold uint8 images ``[N, size, size(, C)]`` (``size``: the resolution the file
    name declares; ``None``: any, but the same for every split) and whole-number labels.

    Raises:
        DataError: a file that cannot be read (no permission: nothing is said to be wrong with it),
            one that is not a readable npz, or content of the wrong keys, shapes, sizes or types.
    """
    fix = f"Fix: delete {path} and run `con2 data get {flag}`."
    try:
        check_npz_sizes(path, flag, fix)  # before np.load reads any array
        with np.load(path) as f:
            missing = [k for k in SPLIT_KEYS if k not in f.files]
            if missing:
                raise DataError(f"{flag}: {path} lacks keys {missing}; it is not a MedMNIST npz. {fix}")
            arrays = {k: np.asarray(f[k]) for k in SPLIT_KEYS}
    except OSError as exc:
        if exc.errno is not None:  # the file system refused the read: the file may be fine
            raise DataError(f"{flag}: {read_failure(exc)}") from exc
        raise DataError(f"{flag}: {path} is not a readable npz ({exc}); it may be truncated. {fix}") from exc
    except (zipfile.BadZipFile, ValueError, EOFError, KeyError) as exc:
        raise DataError(f"{flag}: {path} is not a readable npz ({exc}); it may be truncated. {fix}") from exc
    shapes = set()
    for split in ("train", "val", "test"):
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        if (
            images.dtype != np.uint8
            or images.ndim not in (3, 4)
            or (images.ndim == 4 and images.shape[-1] not in (1, 3))
        ):
            raise DataError(
                f"{flag}: {path} {split}_images must be uint8 [N,H,W(,C)], got {images.dtype} {images.shape}. {fix}"
            )
        hwc = (*images.shape[1:3], images.shape[3] if images.ndim == 4 else 1)
        if size is not None and hwc[:2] != (size, size):
            raise DataError(
                f"{flag}: {path} is named for {size} px images but its {split}_images are {hwc[0]}x{hwc[1]} px "
                f"(they would be silently resized). Fix: name the file for its size (`{npz_filename(flag, hwc[0])}` "
                f"for square images) or replace it: delete it and run `con2 data get {flag} --size {size}`."
            )
        shapes.add(hwc)
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.ndim != 1 or len(labels) != len(images):
            raise DataError(
                f"{flag}: {path} {split}_labels shape {arrays[f'{split}_labels'].shape} does not match "
                f"{len(images)} images. {fix}"
            )
        integers = _integer_labels(labels)
        if integers is None:
            example = next((v for v in labels.tolist() if not isinstance(v, int) or isinstance(v, bool)), None)
            raise DataError(
                f"{flag}: {path} {split}_labels must be whole-number class indices, got {labels.dtype} values such "
                f"as {example!r} (they would be truncated). {fix}"
            )
        if len(integers) and (integers.min() < 0 or integers.max() > 255):
            raise DataError(f"{flag}: {path} {split}_labels out of range. {fix}")
        arrays[f"{split}_labels"] = integers
        if images.ndim == 3:
            arrays[f"{split}_images"] = images[..., None]
    if len(shapes) > 1:
        found = ", ".join(f"{h}x{w}x{c}" for h, w, c in sorted(shapes))
        raise DataError(
            f"{flag}: {path} mixes image shapes across its splits ({found}); a MedMNIST file holds one size. {fix}"
        )
    return arrays


def npz_table(path: Path, flag: str, size: int, classes: Sequence[str], fingerprint: str) -> SourceTable:
    """Read and validate the npz; one row per image of the three official splits."""
    arrays = read_npz(path, flag, size)
    bad = set(np.concatenate([arrays[f"{s}_labels"] for s in ("train", "val", "test")]).tolist()) - set(
        range(len(classes))
    )
    if bad:
        raise DataError(
            f"{flag}: {path} has labels {sorted(bad)} outside 0..{len(classes) - 1}. Fix: delete it and run "
            f"`con2 data get {flag}`."
        )
    ids, splits, labels, images = [], [], [], []
    for split in ("train", "val", "test"):
        n = len(arrays[f"{split}_labels"])
        ids += [f"{split}/{i}" for i in range(n)]
        splits += [split] * n
        labels += arrays[f"{split}_labels"].tolist()
        images.append(arrays[f"{split}_images"])
    stacked = np.concatenate(images)
    md5 = file_digest(path, "md5")
    official = MEDMNIST.get(flag, {}).get(size, "")
    return SourceTable(
        dataset=flag,
        location=path,
        fingerprint=fingerprint,
        classes=tuple(classes),
        ids=ids,
        splits=splits,
        labels=labels,
        read=lambda i: stacked[i],
        recipe="native",
        channels=int(stacked.shape[-1]),
        checksums={"md5": md5, "official_md5": official, "is_official_file": str(md5 == official).lower()},
    )


def _fetch_url(url: str, dest: Path, progress: bool = True) -> None:
    """Stream ``url`` into ``dest`` with a progress bar (network boundary)."""
    with urllib.request.urlopen(url, timeout=60) as resp, open(dest, "wb") as out:
        total = int(resp.headers.get("Content-Length") or 0) or None
        with tqdm(
            total=total,
            unit="B",
            unit_scale=True,
            desc=dest.name.split(".partial-")[0].lstrip("."),
            disable=not progress,
        ) as bar:
            while block := resp.read(1 << 20):
                out.write(block)
                bar.update(len(block))


def download_npz(flag: str, size: int, data_dir: Path, progress: bool = True) -> Path:
    """Download ``flag`` at ``size`` into ``data_dir/medmnist``; verify md5 and content, then rename.

    Raises:
        DataError: no network, a wrong md5 or an unreadable file; nothing is left behind.
    """
    check_size(flag, size)
    url, md5 = url_and_md5(flag, size)
    final = data_dir / "medmnist" / npz_filename(flag, size)
    with atomic_path(final) as tmp:
        try:
            _fetch_url(url, tmp, progress)
        except OSError as exc:  # URLError, ConnectionError, timeouts, HTTP errors
            raise DataError(
                f"{flag}: cannot download {url} to {final} ({exception_text(exc)}); no network? "
                f"{get_fix(flag, size, data_dir)}"
            ) from exc
        got = file_digest(tmp, "md5")
        if got != md5:
            raise DataError(
                f"{flag}: the download of {url} has md5 {got}, expected {md5} (truncated or changed); it was deleted. "
                f"{get_fix(flag, size, data_dir)}"
            )
        read_npz(tmp, flag, size)
    return final


class MedMNISTSource(Source):
    """MedMNIST npz files (``kind = "medmnist"``): one file per dataset and size; 28 px by default."""

    kind = "medmnist"

    def find(self, info: DatasetInfo, data_dir: Path, size: int) -> Found:
        """Locate the npz (cheap: the file is read only by :meth:`table`; its bytes key the cache)."""
        path = find_npz(info.name, size, data_dir)
        st = path.stat()
        return Found(path, f"{path.name}:{st.st_size}:{st.st_mtime_ns}", data_dir, files=(path,))

    def table(self, info: DatasetInfo, found: Found, size: int) -> SourceTable:
        return npz_table(Path(found.location), info.name, size, info.classes, found.fingerprint)

    def download(self, info: DatasetInfo, data_dir: Path, size: int, progress: bool = True) -> None:
        download_npz(info.name, size, data_dir, progress)

    def how_to_get(self, info: DatasetInfo, data_dir: Path) -> str:
        return get_fix(info.name, 28, data_dir)

    def default_size(self, info: DatasetInfo) -> int:
        """MedMNIST's smallest published size, 28 px (the paper's medical runs)."""
        return 28

    def published_sizes(self, info: DatasetInfo) -> tuple[int, ...] | None:
        """The sizes MedMNIST publishes (:data:`SIZES`)."""
        return SIZES


SOURCE = MedMNISTSource()
