"""Dataset registry: every dataset's metadata, and the entry points that load and prepare them.

``DATASETS`` maps a lower-case name to a :class:`DatasetInfo` (family, source, classes, the normal
classes the paper runs, split protocol, preprocessing). A :class:`DatasetInfo` is also callable
like the loaders it replaces. :func:`load_one_class` is the single entry point the rest of the
package uses; :func:`prepare_dataset` (``con2 data get``) locates or downloads, verifies and
prepares; :func:`dataset_status` feeds ``con2 data list``.

Example:
    >>> from con2.data import load_one_class
    >>> d = load_one_class("breastmnist", "../shared/data")  # doctest: +SKIP
    >>> d.train.shape, d.n_normal_test, d.n_anomalous  # doctest: +SKIP
    ((399, 28, 28, 1), 114, 42)
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from con2.data import cifar_source, digits_source, imagenet30_source, kaggle_source, medmnist_source
from con2.data.atomic import file_lock
from con2.data.base import DataError, DatasetMissing, OneClassData
from con2.data.cache import Found, Prepared, cache_dir, cache_root, load_prepared, prepare, take
from con2.data.manifest import manifest_filename, split_manifest, write_manifest
from con2.data.splits import one_class_split
from con2.errors import write_failure


@dataclass(frozen=True)
class DatasetInfo:
    """What the harness knows about one dataset.

    Attributes:
        name: registry key (lower case).
        title: display name.
        family: ``medical``, ``natural`` or ``smoke``.
        source: ``medmnist``, ``kaggle``, ``torchvision``, ``manual`` or ``embedded``.
        classes: all class names (index = label).
        normals: the normal classes the paper runs, one run each (a group is one entry).
        groups: named groups of classes (e.g. Kvasir's ``normal`` = its three normal classes).
        protocol: ``official`` or ``holdout`` (see :mod:`con2.data.splits`).
        test_fraction: held-out fraction per class (``holdout``).
        all_anomalies: ``holdout``: every anomaly is a test image (else only held-out ones).
        recipe: preprocessing (see :mod:`con2.data.images`); ``native`` for MedMNIST.
        channels: channels of the prepared images.
        paper_size: the training size in the paper.
        in_paper: whether the paper reports it.
        split: one line describing the split.
    """

    name: str
    title: str
    family: str
    source: str
    classes: tuple[str, ...]
    normals: tuple[str, ...]
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    protocol: str = "official"
    test_fraction: float = 0.2
    all_anomalies: bool = True
    recipe: str = "resize"
    channels: int = 3
    paper_size: int = 224
    in_paper: bool = True
    split: str = ""

    @property
    def default_normal(self) -> str:
        """The normal class used when none is given."""
        return self.normals[0]

    def how_to_get(self, data_dir: str | Path = "data") -> str:
        """How to obtain the dataset (command, credentials or manual steps)."""
        d = Path(data_dir)
        if self.source == "medmnist":
            return medmnist_source.get_fix(self.name, 28, d)
        if self.source == "kaggle":
            spec = kaggle_source.SPECS[self.name]
            return (
                f"`con2 data get {self.name} --data-dir {d}` with Kaggle credentials (~/.kaggle/kaggle.json or "
                f"KAGGLE_USERNAME/KAGGLE_KEY), or `{spec.command(d / self.name)}`, or {spec.url} by hand into {d / self.name}/"
            )
        if self.source == "torchvision":
            return cifar_source.get_fix(self.name, d)
        if self.source == "manual":
            return imagenet30_source.instructions(d)
        return "embedded in scikit-learn: nothing to download"

    def __call__(
        self,
        data_dir: str | Path | None = None,
        normal_class: str | int | None = None,
        seed: int = 0,
        size: int = 28,
        **_: Any,
    ) -> OneClassData:
        """Same as ``load_one_class(self.name, ...)`` (the registry's values used to be loaders)."""
        return load_one_class(self.name, data_dir, normal_class, seed, size)


def _medmnist(name: str, title: str, n_classes: int, normal: int, in_paper: bool = True) -> DatasetInfo:
    return DatasetInfo(
        name, title, "medical", "medmnist", tuple(str(i) for i in range(n_classes)), (str(normal),),
        recipe="native", channels=1, in_paper=in_paper,
        split=f"official: train on train-split label {normal}; test on the whole test split",
    )  # fmt: skip


_INFOS = [
    _medmnist("breastmnist", "BreastMNIST", 2, 1),
    _medmnist("octmnist", "OctMNIST", 4, 3),
    _medmnist("pneumoniamnist", "PneumoniaMNIST", 2, 0, in_paper=False),
    DatasetInfo(
        "kvasir",
        "Kvasir v1",
        "medical",
        "kaggle",
        kaggle_source.KVASIR_CLASSES,
        ("normal",),
        groups=(("normal", ("normal-cecum", "normal-pylorus", "normal-z-line")),),
        protocol="holdout",
        recipe="resize",
        channels=3,
        split="seeded 80/20 of the three normal classes; test = 20% normals + all anomalies",
    ),
    DatasetInfo(
        "br35h",
        "BR35H",
        "medical",
        "kaggle",
        ("no", "yes"),
        ("no",),
        protocol="holdout",
        recipe="resize_crop",
        channels=1,
        split="seeded 80/20 of no/; test = 20% of no/ + all of yes/ (pred/, Br35H-Mask-RCNN/ ignored)",
    ),
    DatasetInfo(
        "pneumonia",
        "Pneumonia (chest X-ray)",
        "medical",
        "kaggle",
        ("NORMAL", "PNEUMONIA"),
        ("NORMAL",),
        recipe="resize_crop",
        channels=1,
        split="official: train/NORMAL; test = all of test/ (nested duplicates ignored)",
    ),
    DatasetInfo(
        "melanoma",
        "Melanoma",
        "medical",
        "kaggle",
        ("benign", "malignant"),
        ("benign",),
        recipe="resize",
        channels=3,
        paper_size=128,
        split="official: train/benign; test = all of test/",
    ),
    DatasetInfo(
        "muffin-vs-chihuahua",
        "Muffin vs Chihuahua",
        "natural",
        "kaggle",
        ("chihuahua", "muffin"),
        ("chihuahua", "muffin"),
        recipe="short_crop",
        paper_size=128,
        split="official: train/<c>; test = all of test/",
    ),
    DatasetInfo(
        "dogs-vs-cats",
        "Dogs vs Cats",
        "natural",
        "kaggle",
        ("cat", "dog"),
        ("cat", "dog"),
        recipe="short_crop",
        paper_size=128,
        split="train.zip: N < 10000 of the class trains; N >= 10000 of both tests",
    ),
    DatasetInfo(
        "cifar10",
        "CIFAR-10",
        "natural",
        "torchvision",
        cifar_source.CIFAR10_CLASSES,
        cifar_source.CIFAR10_CLASSES,
        paper_size=32,
        split="official: 5000 train images of the class; the 10000 test images",
    ),
    DatasetInfo(
        "cifar100",
        "CIFAR-100 (20 superclasses)",
        "natural",
        "torchvision",
        cifar_source.CIFAR100_SUPERCLASSES,
        cifar_source.CIFAR100_SUPERCLASSES,
        paper_size=32,
        split="official: 2500 train images of the superclass; the 10000 test images",
    ),
    DatasetInfo(
        "imagenet30",
        "ImageNet30",
        "natural",
        "manual",
        imagenet30_source.CLASSES,
        imagenet30_source.CLASSES,
        recipe="resize_crop",
        split="official: one_class_train/<c>; all of one_class_test/",
    ),
    DatasetInfo(
        "digits",
        "sklearn digits",
        "smoke",
        "embedded",
        digits_source.CLASSES,
        digits_source.CLASSES,
        protocol="holdout",
        test_fraction=1 / 3,
        all_anomalies=False,
        recipe="resize",
        channels=1,
        paper_size=8,
        in_paper=False,
        split="seeded 2/3 : 1/3 of every class; train = 2/3 of the normal digit; test = the other third of all",
    ),
]

DATASETS: dict[str, DatasetInfo] = {i.name: i for i in _INFOS}

_ALIASES = {
    "cifar-10": "cifar10", "cifar-100": "cifar100", "cifar100-20": "cifar100", "imagenet-30": "imagenet30",
    "muffin": "muffin-vs-chihuahua", "dogscats": "dogs-vs-cats", "chest-xray": "pneumonia",
    "brain-tumor": "br35h", "kvasir-v1": "kvasir",
}  # fmt: skip


def default_data_dir() -> Path:
    """``$CON2_DATA_DIR``, else ``./data``."""
    return Path(os.environ.get("CON2_DATA_DIR", "data"))


def get_info(name: str) -> DatasetInfo:
    """The registry entry of ``name`` (case, ``_`` and spaces ignored; a few aliases).

    Raises:
        DataError: unknown name, listing the registered ones.
    """
    key = str(name).strip().lower().replace("_", "-").replace(" ", "-")
    key = _ALIASES.get(key, key)
    if key not in DATASETS:
        raise DataError(
            f"unknown dataset {name!r}; registered: {', '.join(sorted(DATASETS))}. Fix: use one of them (`con2 data list`)."
        )
    return DATASETS[key]


def normal_classes(name: str) -> list[str]:
    """The normal classes the paper runs for ``name``, one run each (e.g. 10 for CIFAR-10, 20
    superclasses for CIFAR-100, 30 for ImageNet30, the single default for medical datasets)."""
    return list(get_info(name).normals)


def resolve_normal(info: DatasetInfo, normal_class: str | int | None) -> tuple[str, tuple[int, ...]]:
    """``(canonical name, class indices)`` of a normal class given by name, index, group or '+'-list.

    Raises:
        DataError: unknown class, listing the valid ones.
    """
    if normal_class is None:
        normal_class = info.default_normal
    groups = dict(info.groups)
    names: list[str] = []
    for part in str(normal_class).split("+"):
        part = part.strip()
        if part in groups:
            names += groups[part]
        elif part in info.classes:
            names.append(part)
        elif part.lstrip("-").isdigit() and 0 <= int(part) < len(info.classes):
            names.append(info.classes[int(part)])
        else:
            raise DataError(
                f"{info.name}: unknown normal class {normal_class!r}; classes: {', '.join(info.classes)}"
                + (f"; groups: {', '.join(groups)}" if groups else "")
                + f". Fix: pass one of them (or its index 0..{len(info.classes) - 1})."
            )
    idx = tuple(sorted({info.classes.index(n) for n in names}))
    return "+".join(info.classes[i] for i in idx), idx


def _data_dir(data_dir: str | Path | None) -> Path:
    """The absolute data folder; ``DataError`` if the path exists but is not a folder."""
    d = (Path(data_dir).expanduser() if data_dir is not None else default_data_dir()).absolute()
    if d.exists() and not d.is_dir():
        raise DataError(
            f"data_dir {d} is a file, not a folder. Fix: pass the folder that holds the datasets "
            f"(`con2 train --set data_dir=DIR`, `con2 data get NAME --data-dir DIR`), e.g. {d.parent}"
        )
    return d


def find_source(info: DatasetInfo, data_dir: Path, size: int) -> Found:
    """Locate ``info``'s files under ``data_dir`` (no network).

    Raises:
        DatasetMissing: nothing there; DataError: a damaged copy.
    """
    if info.source == "medmnist":
        return medmnist_source.find(info.name, size, data_dir, info.classes)
    if info.source == "kaggle":
        return kaggle_source.find(info.name, data_dir, info.classes, info.recipe, info.channels)
    if info.source == "torchvision":
        return cifar_source.find(info.name, data_dir, size)
    if info.source == "manual":
        return imagenet30_source.find(data_dir)
    raise DataError(f"{info.name}: embedded dataset has no files")


def download_source(info: DatasetInfo, data_dir: Path, size: int, progress: bool = True) -> None:
    """Download ``info`` into ``data_dir`` (the network is touched only in the sources' boundary functions)."""
    if info.source == "medmnist":
        medmnist_source.download(info.name, size, data_dir, progress)
    elif info.source == "kaggle":
        kaggle_source.download(info.name, data_dir)
    elif info.source == "torchvision":
        cifar_source.download(info.name, data_dir)
    elif info.source == "manual":
        imagenet30_source.locate(data_dir)  # raises with the manual instructions


def prepare_dataset(
    name: str,
    data_dir: str | Path | None,
    size: int,
    download: bool = False,
    progress: bool | None = None,
    verify: bool = False,
) -> Prepared:
    """Locate (or, with ``download``, download) dataset ``name``, verify it and prepare its cache.

    Args:
        name: registered name.
        data_dir: searched first; downloads go there.
        size: image size of the cache.
        download: download when nothing is on disk.
        progress: show progress bars (``None``: when stderr is a terminal).
        verify: recompute the cache's sha256 even if it looks unchanged.

    Raises:
        DataError: with the file and the fix.
    """
    info = get_info(name)
    if info.source == "embedded":
        raise DataError(f"{info.name}: embedded in scikit-learn; nothing to prepare")
    d = _data_dir(data_dir)
    show = sys.stderr.isatty() if progress is None else progress
    if size < 1:
        raise DataError(f"{info.name}: size must be positive, got {size}")
    try:
        found = find_source(info, d, size)
    except DatasetMissing:
        if not download:
            raise
        download_source(info, d, size, show)
        found = find_source(info, d, size)
    directory = cache_dir(d, info.name, size)
    prepared = load_prepared(directory, found.fingerprint, verify=verify)
    if prepared is not None:
        return prepared
    try:
        with file_lock(directory / ".lock"):
            prepared = load_prepared(directory, found.fingerprint)  # another job may have finished it
            if prepared is None:
                prepared = prepare(found.build(), size, directory, progress=show)
    except OSError as exc:
        fix = (
            f"point CON2_CACHE_DIR at a writable folder with free space (or make room or write access there), "
            f"then rerun (or run `con2 data get {info.name} --size {size}`)"
        )
        problem = write_failure(exc, fix) or f"cannot write the prepared cache {directory} ({exc}). Fix: {fix}"
        raise DataError(f"{info.name}: {problem}") from exc
    return prepared


def _embedded(info: DatasetInfo, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    images, ids, labels = digits_source.arrays(size)
    sha = hashlib.sha256(np.ascontiguousarray(images).tobytes()).hexdigest()
    return images, np.array(ids), np.array(["all"] * len(ids)), labels, sha


def check_both_classes(info: DatasetInfo, normal_name: str, test_labels: np.ndarray, location: str) -> None:
    """Raise ``DataError`` unless the test split holds normal and anomalous images (AUROC needs both)."""
    n_anomalous = int(np.sum(test_labels))
    if 0 < n_anomalous < len(test_labels):
        return
    only = "anomalies" if n_anomalous else "normal images"
    raise DataError(
        f"{info.name}: the test split of normal class {normal_name} holds only {only} ({len(test_labels)} images "
        f"from {location}); an AUROC needs normal and anomalous test images. Fix: check that the copy of "
        f"{info.name} is complete (delete it and run `con2 data get {info.name}`), or choose another normal class "
        f"(--set normal_class=..., one of: {', '.join(info.normals)})"
    )


def load_one_class(
    name: str,
    data_dir: str | Path | None,
    normal_class: str | int | None = None,
    seed: int = 0,
    size: int = 28,
    *,
    download: bool = False,
) -> OneClassData:
    """Load dataset ``name`` as a one-class split.

    Args:
        name: registered dataset name (see ``DATASETS``).
        data_dir: folder searched for local copies (and where downloads go); ``None``:
            ``$CON2_DATA_DIR`` or ``./data``.
        normal_class: the normal class (name, index, group or '+'-joined names); ``None`` means
            the dataset's default.
        seed: split seed, for datasets without an official split (ignored otherwise).
        size: training resolution: the MedMNIST npz size (28/64/128/224), otherwise the size the
            spec's recipe is scaled to (see :mod:`con2.data.images`).
        download: download a missing dataset (otherwise a missing one raises with the command).

    Returns:
        :class:`OneClassData` whose arrays may be read-only memmaps of the prepared cache, and
        whose ``manifest`` lists the samples (also written to the cache's ``splits/`` folder).

    Raises:
        DataError: unknown dataset or class, missing or damaged files; the message says how to fix it.
    """
    info = get_info(name)
    normal_name, normal_idx = resolve_normal(info, normal_class)
    directory: Path | None = None
    source: dict[str, Any] = {}
    if info.source == "embedded":
        images, ids, splits, labels, sha = _embedded(info, size)
    else:
        prep = prepare_dataset(info.name, data_dir, size, download=download)
        images, ids, splits, labels = prep.images, prep.ids, prep.splits, prep.labels
        sha, directory, source = prep.manifest["images_sha256"], prep.directory, prep.manifest["source"]
    train_idx, test_idx, test_labels = one_class_split(
        ids, splits, labels, normal_idx, info.protocol, seed, info.test_fraction, info.all_anomalies
    )
    if len(train_idx) == 0:
        raise DataError(
            f"{info.name}: no training images of normal class {normal_name} in {source.get('location', 'the data')}"
        )
    check_both_classes(info, normal_name, test_labels, source.get("location", "the data"))
    manifest = split_manifest(
        info.name, normal_name, seed, size, info.protocol, ids[train_idx].tolist(), ids[test_idx].tolist(),
        test_labels, sha, source,
    )  # fmt: skip
    if directory is not None:
        try:
            write_manifest(manifest, directory / "splits" / manifest_filename(normal_name, seed))
        except OSError:
            pass  # a read-only cache still loads; the manifest is on the returned object
    return OneClassData(
        name=info.name,
        normal_class=normal_name,
        train=take(images, train_idx),
        test=take(images, test_idx),
        test_labels=test_labels,
        manifest=manifest,
    )


def dataset_status(name: str, data_dir: str | Path | None) -> dict[str, Any]:
    """What ``con2 data list`` shows for one dataset: present?, where, prepared sizes, how to get it."""
    info = get_info(name)
    d = _data_dir(data_dir)
    status: dict[str, Any] = {"name": info.name, "title": info.title, "family": info.family, "source": info.source}
    if info.source == "embedded":
        status.update(present=True, location="scikit-learn", problem="")
    else:
        size = 28 if info.source == "medmnist" else info.paper_size
        try:
            found = find_source(info, d, size)
            status.update(present=True, location=str(found.location), problem="")
        except DatasetMissing:
            status.update(present=False, location="", problem="missing")
        except DataError as exc:
            status.update(present=False, location="", problem=str(exc))
    root = cache_root(d) / info.name
    status["prepared"] = sorted(
        int(p.parent.name[:-2]) for p in root.glob("*px/manifest.json") if p.parent.name[:-2].isdigit()
    ) if root.is_dir() else []  # fmt: skip
    status["how_to_get"] = info.how_to_get(d)
    return status
