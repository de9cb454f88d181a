"""CIFAR-10 and CIFAR-100 (20 superclasses) from the official python pickles (CIFAR-10 also from an
image folder when no pickles are there: :mod:`con2.data.cifar_folder`).

Found on disk first: ``cifar-10-batches-py/`` (``data_batch_1..5``, ``test_batch``,
``batches.meta``) or ``cifar-100-python/`` (``train``, ``test``, ``meta``) in ``data_dir`` or
``data_dir/cifar10`` / ``data_dir/cifar100``; or the official ``.tar.gz`` there, which is
extracted. CIFAR-100 classes are the 20 superclasses: ``coarse_labels`` of the pickles and
``coarse_label_names`` of ``meta`` (torchvision exposes only the fine labels), checked against
:data:`CIFAR100_SUPERCLASSES`.

A pickle can run code when it is loaded, so nothing is unpickled before it is known to be the
official file: every pickle (and a local archive, before it is extracted) must match the official
md5 of :data:`OFFICIAL_MD5` (torchvision's table; a download is also checked by torchvision). As
defence in depth the pickles are then read by :class:`CifarUnpickler`, which builds only the
numpy arrays, lists, strings and numbers a CIFAR batch holds and refuses any other global. The
files are then checked by content (keys, shapes, lengths, labels). There is no switch that turns
the checksums off: the tests, whose fixtures copy the layout with fake content, add their files'
md5s to the table in-process (``tests/data_fixtures.py``).

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

from con2.data import cifar_folder
from con2.data.base import DataError, DatasetMissing
from con2.data.cache import Found, SourceTable
from con2.data.fileops import atomic_path, extract_into, file_digest, partial_name, remove, text_digest
from con2.data.source import DatasetInfo, Source
from con2.errors import read_failure
from con2.text import exception_text, shell_command

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


#: The official md5 of every file, as in torchvision.datasets.CIFAR10 / CIFAR100 (``tgz_md5``,
#: ``train_list``, ``test_list``, ``meta``; tests/data/test_data_errors.py compares the two): a CIFAR
#: pickle is unpickled, and a local archive extracted, only if its md5 is the one listed here.
OFFICIAL_MD5: dict[str, dict[str, str]] = {
    "cifar10": {
        "cifar-10-python.tar.gz": "c58f30108f718f92721af3b95e74349a",
        "data_batch_1": "c99cafc152244af753f735de768cd75f",
        "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
        "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
        "data_batch_4": "634d18415352ddfa80567beed471001a",
        "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
        "test_batch": "40351d587109b95175f43aff81a1287e",
        "batches.meta": "5ff9c542aee3614f3951f8cda6e48888",
    },
    "cifar100": {
        "cifar-100-python.tar.gz": "eb9058c3a382ffc7106e4002c42a8d85",
        "train": "16019d7e3df5f24257cddd939b257f8d",
        "test": "f0ef6b0ae62326f3e7ffdfab6717acfc",
        "meta": "7973b15100ade9c7d40fb424638fde48",
    },
}

# The only globals a CIFAR batch refers to: numpy arrays (the ``data`` matrix) and their dtypes
# (``numpy.core`` in the official Python 2 files, ``numpy._core`` when written by numpy 2).
_CIFAR_GLOBALS = {
    (module, name)
    for module in ("numpy.core.multiarray", "numpy._core.multiarray")
    for name in ("_reconstruct", "scalar")
} | {("numpy", "ndarray"), ("numpy", "dtype")}


class CifarUnpickler(pickle.Unpickler):
    """An unpickler that builds only what a CIFAR batch holds (numpy arrays, built-in values) and
    refuses every other global: a file that passed the checksum still cannot run code."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _CIFAR_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"global {module}.{name} is not part of a CIFAR batch; refused")


def check_official(path: Path, name: str, fix: str) -> None:
    """Raise ``DataError`` unless ``path`` has the official md5 of its file name (:data:`OFFICIAL_MD5`)."""
    expected = OFFICIAL_MD5[name].get(path.name)
    try:
        got = file_digest(path, "md5")
    except OSError as exc:
        raise DataError(f"{name}: {read_failure(exc)}") from exc
    if got != expected:
        raise DataError(
            f"{name}: {path} is not the official file (md5 {got}, expected {expected}): truncated, changed or not "
            f"from the official archive, so it is not opened (a pickle can run code). Delete it. {fix}"
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
    """The command (or manual step) that gets the files; the command quoted for a shell."""
    spec = SPECS[name]
    folder = (
        f" CIFAR-10 is also read from an image folder, {cifar_folder.folder_root(data_dir)}/{{train,test}}/<class>/ "
        "(a re-encoding, not the official bytes; its tables say so)."
        if name == "cifar10"
        else ""
    )
    return (
        f"Fix: run `{shell_command('con2', 'data', 'get', name, '--data-dir', data_dir)}` (needs a network, no "
        "credentials), or download "
        f"https://www.cs.toronto.edu/~kriz/{spec.archive} and extract it so that {data_dir / spec.folder}/ exists."
        + folder
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
    """Read one CIFAR pickle (keys as str), once its md5 is the official one (:func:`check_official`)."""
    if not path.is_file():
        raise DataError(f"{name}: {path} is missing. {fix}")
    check_official(path, name, fix)
    try:
        with open(path, "rb") as f:
            return _decode(CifarUnpickler(f, encoding="latin1").load())
    except OSError as exc:
        raise DataError(f"{name}: {read_failure(exc)}") from exc
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as exc:
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
            check_official(base / spec.archive, name, fix)
            extract_into(base / spec.archive, base, name, lambda tmp: read_folder(tmp / spec.folder, name, fix))
            return base / spec.folder
    looked = " or ".join(str(c) for c in _candidates(name, data_dir))
    raise DatasetMissing(f"{name}: {spec.folder}/ not found (looked in {looked}). {fix}")


def pickle_files(name: str, folder: Path) -> tuple[Path, ...]:
    """The pickles of CIFAR ``name`` in ``folder``: their bytes are the samples."""
    spec = SPECS[name]
    return tuple(folder / f for f in (*spec.train_files, *spec.test_files, spec.meta_file))


def fingerprint(name: str, folder: Path, data_dir: Path) -> str:
    """Names, sizes and mtimes of the pickles (cheap: they are read only by :func:`table`): the listing's
    identity, never the cache's key (see :func:`con2.data.cache.source_key`)."""
    files = pickle_files(name, folder)
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
    import torchvision.datasets  # lazy: torchvision (and torch) only when CIFAR-10 is fetched

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
            why = exception_text(exc)
            raise DataError(f"{name}: cannot download {spec.archive} ({why}); no network? {fix}") from exc
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
    """The official CIFAR python pickles, read directly or downloaded by torchvision (``kind = "torchvision"``);
    for CIFAR-10, when no pickles are there, an image folder (:mod:`con2.data.cifar_folder`)."""

    kind = "torchvision"

    def find(self, info: DatasetInfo, data_dir: Path, size: int) -> Found:
        try:
            folder = locate(info.name, data_dir)
        except DatasetMissing:
            root = cifar_folder.folder_root(data_dir)
            if info.name != "cifar10" or not cifar_folder.looks_like_folder(root):
                raise
            return cifar_folder.find(root, data_dir, SPECS[info.name].classes)
        return Found(folder, fingerprint(info.name, folder, data_dir), data_dir, files=pickle_files(info.name, folder))

    def table(self, info: DatasetInfo, found: Found, size: int) -> SourceTable:
        if found.form == cifar_folder.FORMAT:
            return cifar_folder.table(Path(found.location), found, SPECS[info.name].classes)
        return table(info.name, Path(found.location), found.fingerprint, size, found.data_dir)

    def download(self, info: DatasetInfo, data_dir: Path, size: int, progress: bool = True) -> None:
        download_archive(info.name, data_dir)

    def how_to_get(self, info: DatasetInfo, data_dir: Path) -> str:
        return get_fix(info.name, data_dir)


SOURCE = CifarSource()
