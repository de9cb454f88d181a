"""CIFAR-10 and CIFAR-100 (20 superclasses) from the official python pickles.

Found on disk first: ``cifar-10-batches-py/`` (``data_batch_1..5``, ``test_batch``,
``batches.meta``) or ``cifar-100-python/`` (``train``, ``test``, ``meta``) in ``data_dir`` or
``data_dir/cifar10`` / ``data_dir/cifar100``; or the official ``.tar.gz`` there, which is
extracted. CIFAR-100 classes are the 20 superclasses: ``coarse_labels`` of the pickles and
``coarse_label_names`` of ``meta`` (torchvision exposes only the fine labels), checked against
:data:`CIFAR100_SUPERCLASSES`. Files found on disk are checked by content (keys, shapes, lengths);
a download is checked by torchvision against the official md5 before we move it into place.

The network is touched only in :func:`_torchvision_fetch` (``torchvision.datasets.CIFAR10/100``
with ``download=True``): tests replace it, or the ``urlopen`` it uses.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from con2.data.atomic import atomic_path, extract_into, partial_name, remove, text_digest
from con2.data.base import DataError, DatasetMissing
from con2.data.cache import Found, SourceTable
from con2.data.source import DatasetInfo, Source

CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)
CIFAR100_SUPERCLASSES = (
    "aquatic_mammals",
    "fish",
    "flowers",
    "food_containers",
    "fruit_and_vegetables",
    "household_electrical_devices",
    "household_furniture",
    "insects",
    "large_carnivores",
    "large_man-made_outdoor_things",
    "large_natural_outdoor_scenes",
    "large_omnivores_and_herbivores",
    "medium_mammals",
    "non-insect_invertebrates",
    "people",
    "reptiles",
    "small_mammals",
    "trees",
    "vehicles_1",
    "vehicles_2",
)


@dataclass(frozen=True)
class CifarSpec:
    """Files of one CIFAR version."""

    name: str
    folder: str
    archive: str
    tv_class: str
    train_files: tuple[str, ...]
    test_files: tuple[str, ...]
    meta_file: str
    label_key: str
    names_key: str
    classes: tuple[str, ...]


SPECS = {
    "cifar10": CifarSpec(
        "cifar10",
        "cifar-10-batches-py",
        "cifar-10-python.tar.gz",
        "CIFAR10",
        tuple(f"data_batch_{i}" for i in range(1, 6)),
        ("test_batch",),
        "batches.meta",
        "labels",
        "label_names",
        CIFAR10_CLASSES,
    ),
    "cifar100": CifarSpec(
        "cifar100",
        "cifar-100-python",
        "cifar-100-python.tar.gz",
        "CIFAR100",
        ("train",),
        ("test",),
        "meta",
        "coarse_labels",
        "coarse_label_names",
        CIFAR100_SUPERCLASSES,
    ),
}


def get_fix(name: str, data_dir: Path) -> str:
    """The command (or manual step) that gets the files."""
    spec = SPECS[name]
    return (
        f"Fix: run `con2 data get {name} --data-dir {data_dir}` (needs a network, no credentials), or download "
        f"https://www.cs.toronto.edu/~kriz/{spec.archive} and extract it so that {data_dir / spec.folder}/ exists."
    )


def _decode(obj: Any) -> Any:
    """Python 2 pickles read with ``latin1`` give str keys, Python 3 ones bytes keys: unify to str."""
    if isinstance(obj, bytes):
        return obj.decode("latin1")
    if isinstance(obj, dict):
        return {_decode(k): (v if isinstance(v, np.ndarray) else _decode(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decode(v) for v in obj]
    return obj


def unpickle(path: Path, name: str, fix: str) -> dict[str, Any]:
    """Read one CIFAR pickle (keys as str)."""
    if not path.is_file():
        raise DataError(f"{name}: {path} is missing. {fix}")
    try:
        with open(path, "rb") as f:
            return _decode(pickle.load(f, encoding="latin1"))
    except (pickle.UnpicklingError, EOFError, OSError, ValueError, TypeError, AttributeError, IndexError) as exc:
        raise DataError(f"{name}: {path} is truncated or not a CIFAR pickle ({exc}). Delete it. {fix}") from exc


def read_folder(folder: Path, name: str, fix: str) -> tuple[dict[str, np.ndarray], tuple[str, ...]]:
    """Read and check every pickle of ``folder``: images ``[N, 32, 32, 3]`` and labels per split."""
    spec = SPECS[name]
    meta = unpickle(folder / spec.meta_file, name, fix)
    names = tuple(meta.get(spec.names_key, ()))
    if names != spec.classes:
        raise DataError(
            f"{name}: {folder / spec.meta_file} has {spec.names_key}={list(names)[:3]}..., not the "
            f"{len(spec.classes)} expected names. {fix}"
        )
    out: dict[str, np.ndarray] = {}
    for split, files in (("train", spec.train_files), ("test", spec.test_files)):
        images, labels = [], []
        for fname in files:
            d = unpickle(folder / fname, name, fix)
            if "data" not in d or spec.label_key not in d:
                raise DataError(f"{name}: {folder / fname} lacks 'data' or '{spec.label_key}'. {fix}")
            data, lab = np.asarray(d["data"]), np.asarray(d[spec.label_key], dtype=np.int64)
            if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072 or len(lab) != len(data):
                raise DataError(
                    f"{name}: {folder / fname} has data {data.dtype} {data.shape} and {len(lab)} labels. {fix}"
                )
            if len(lab) and (lab.min() < 0 or lab.max() >= len(spec.classes)):
                raise DataError(f"{name}: {folder / fname} has labels outside 0..{len(spec.classes) - 1}. {fix}")
            images.append(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            labels.append(lab)
        out[f"{split}_images"] = np.concatenate(images)
        out[f"{split}_labels"] = np.concatenate(labels)
    return out, names


def _candidates(name: str, data_dir: Path) -> list[Path]:
    folder = SPECS[name].folder
    return [data_dir / folder, data_dir / name / folder]


def locate(name: str, data_dir: Path) -> Path:
    """The pickle folder (extracting a local official archive if that is all there is)."""
    spec = SPECS[name]
    fix = get_fix(name, data_dir)
    for c in _candidates(name, data_dir):
        if c.is_dir():
            return c
    for base in (data_dir, data_dir / name):
        if (base / spec.archive).is_file():
            extract_into(base / spec.archive, base, name, lambda tmp: read_folder(tmp / spec.folder, name, fix))
            return base / spec.folder
    looked = " or ".join(str(c) for c in _candidates(name, data_dir))
    raise DatasetMissing(f"{name}: {spec.folder}/ not found (looked in {looked}). {fix}")


def fingerprint(name: str, folder: Path, data_dir: Path) -> str:
    """Names, sizes and mtimes of the pickles (cheap: they are read only by :func:`table`)."""
    spec = SPECS[name]
    files = [folder / f for f in (*spec.train_files, *spec.test_files, spec.meta_file)]
    missing = [f for f in files if not f.is_file()]
    if missing:
        raise DataError(f"{name}: {missing[0]} is missing. {get_fix(name, data_dir)}")
    return text_digest("\n".join(f"{f.name}\t{f.stat().st_size}\t{f.stat().st_mtime_ns}" for f in files))


def table(name: str, folder: Path, fingerprint: str, size: int, data_dir: Path) -> SourceTable:
    """One row per image: ids ``train/<i>`` and ``test/<i>`` in the pickles' order."""
    arrays, names = read_folder(folder, name, get_fix(name, data_dir))
    images = np.concatenate([arrays["train_images"], arrays["test_images"]])
    n_train, n_test = len(arrays["train_labels"]), len(arrays["test_labels"])
    return SourceTable(
        dataset=name,
        location=folder,
        fingerprint=fingerprint,
        classes=names,
        ids=[f"train/{i}" for i in range(n_train)] + [f"test/{i}" for i in range(n_test)],
        splits=["train"] * n_train + ["test"] * n_test,
        labels=np.concatenate([arrays["train_labels"], arrays["test_labels"]]).tolist(),
        read=lambda i: images[i],
        recipe="resize",
        channels=3,
    )


def _torchvision_fetch(tv_class: str, root: Path) -> None:
    """Download and extract with torchvision, which checks the archive's md5 (network boundary)."""
    import torchvision.datasets

    getattr(torchvision.datasets, tv_class)(root=str(root), train=True, download=True)


def download_archive(name: str, data_dir: Path) -> Path:
    """Download CIFAR ``name`` into ``data_dir`` via torchvision; nothing is left on failure.

    Raises:
        DataError: no network, an archive whose md5 is wrong, or unreadable pickles.
    """
    spec = SPECS[name]
    fix = get_fix(name, data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    work = partial_name(data_dir / name)
    work.mkdir()
    try:
        try:
            _torchvision_fetch(spec.tv_class, work)
        except RuntimeError as exc:  # torchvision: "File not found or corrupted." = md5 mismatch
            raise DataError(
                f"{name}: the downloaded {spec.archive} failed torchvision's md5 check ({exc}); it was deleted. {fix}"
            ) from exc
        except OSError as exc:  # URLError, ConnectionError, timeouts
            raise DataError(f"{name}: cannot download {spec.archive} ({exc}); no network? {fix}") from exc
        read_folder(work / spec.folder, name, fix)
        with atomic_path(data_dir / spec.folder) as tmp:
            (work / spec.folder).rename(tmp)
    finally:
        remove(work)
    return data_dir / spec.folder


def class_names(name: str) -> Sequence[str]:
    """Class names of CIFAR ``name`` (superclasses for CIFAR-100)."""
    return SPECS[name].classes


class CifarSource(Source):
    """The official CIFAR python pickles, read directly or downloaded by torchvision (``kind = "torchvision"``)."""

    kind = "torchvision"

    def find(self, info: DatasetInfo, data_dir: Path, size: int) -> Found:
        folder = locate(info.name, data_dir)
        return Found(folder, fingerprint(info.name, folder, data_dir), data_dir)

    def table(self, info: DatasetInfo, found: Found, size: int) -> SourceTable:
        return table(info.name, Path(found.location), found.fingerprint, size, found.data_dir)

    def download(self, info: DatasetInfo, data_dir: Path, size: int, progress: bool = True) -> None:
        download_archive(info.name, data_dir)

    def how_to_get(self, info: DatasetInfo, data_dir: Path) -> str:
        return get_fix(info.name, data_dir)


SOURCE = CifarSource()
