"""Dataset registry: every dataset's metadata, the sources its files come from, and the entry points.

``DATASETS`` maps a lower-case name to a :class:`DatasetInfo` (family, source kind, classes, the
normal classes the paper runs, split protocol, preprocessing); ``SOURCES`` maps a source kind to
the one :class:`~con2.data.source.Source` object that finds, lists and downloads datasets of that
kind (:func:`register_source`, :func:`register_dataset` add more). This module is the only place
that goes from a dataset to its source. :func:`load_one_class` is the single entry point the rest
of the package uses; :func:`prepare_dataset` (``con2 data get``) locates or downloads, verifies and
prepares; :func:`find_source` says whether a dataset is on disk (no network); :func:`dataset_status`
feeds ``con2 data list``.

Example:
    >>> from con2.data import load_one_class
    >>> d = load_one_class("breastmnist", "../shared/data")  # doctest: +SKIP
    >>> d.train.shape, d.n_normal_test, d.n_anomalous  # doctest: +SKIP
    ((399, 28, 28, 1), 114, 42)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from con2.data import cifar_source, digits_source, imagenet30_source, kaggle_source, medmnist_source
from con2.data.base import DataError, DatasetMissing, OneClassData
from con2.data.cache import Found, Prepared, cache_root, take
from con2.data.manifest import manifest_filename, pixels_digest, split_manifest, write_manifest
from con2.data.source import DatasetInfo, Source, resolve_data_dir
from con2.data.splits import one_class_split, validation_normals
from con2.errors import read_failure

__all__ = [
    "DATASETS",
    "SOURCES",
    "DatasetInfo",
    "Source",
    "check_both_classes",
    "dataset_status",
    "find_source",
    "get_info",
    "load_one_class",
    "normal_classes",
    "prepare_dataset",
    "register_dataset",
    "register_source",
    "resolve_normal",
    "source_of",
]

SOURCES: dict[str, Source] = {}


def register_source(source: Source) -> Source:
    """Register the object serving every dataset whose ``source`` is ``source.kind``.

    Raises:
        ValueError: another object already serves that kind.
    """
    old = SOURCES.get(source.kind)
    if old is not None and old is not source:
        raise ValueError(
            f"source kind {source.kind!r} is registered twice ({type(old).__name__}, {type(source).__name__})"
        )
    SOURCES[source.kind] = source
    return source


for _source in (
    medmnist_source.SOURCE,
    kaggle_source.SOURCE,
    cifar_source.SOURCE,
    imagenet30_source.SOURCE,
    digits_source.SOURCE,
):
    register_source(_source)


def _medmnist(name: str, title: str, n_classes: int, normal: int, in_paper: bool = True) -> DatasetInfo:
    return DatasetInfo(
        name,
        title,
        "medical",
        "medmnist",
        tuple(str(i) for i in range(n_classes)),
        (str(normal),),
        recipe="native",
        channels=1,
        in_paper=in_paper,
        split=f"official: train on train-split label {normal}; test on the whole test split",
    )


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
    "cifar-10": "cifar10",
    "cifar-100": "cifar100",
    "cifar100-20": "cifar100",
    "imagenet-30": "imagenet30",
    "muffin": "muffin-vs-chihuahua",
    "dogscats": "dogs-vs-cats",
    "chest-xray": "pneumonia",
    "brain-tumor": "br35h",
    "kvasir-v1": "kvasir",
}


def register_dataset(info: DatasetInfo) -> DatasetInfo:
    """Add a dataset to the registry (its ``source`` must be a registered kind).

    Raises:
        ValueError: the name is taken by another dataset, or no source serves its kind.
    """
    if info.source not in SOURCES:
        raise ValueError(f"dataset {info.name!r}: no source of kind {info.source!r}; registered: {sorted(SOURCES)}")
    old = DATASETS.get(info.name)
    if old is not None and old != info:
        raise ValueError(f"dataset name {info.name!r} is registered twice")
    DATASETS[info.name] = info
    return info


def source_of(info: DatasetInfo) -> Source:
    """The registered source of ``info``'s kind."""
    try:
        return SOURCES[info.source]
    except KeyError:
        raise DataError(
            f"{info.name}: no source of kind {info.source!r} is registered; registered: {sorted(SOURCES)}"
        ) from None


def get_info(name: str) -> DatasetInfo:
    """The registry entry of ``name`` (case, ``_`` and spaces ignored; a few aliases).

    Raises:
        DataError: unknown name, listing the registered ones.
    """
    if name in DATASETS:  # a declared folder's name is taken as written (its case and '_' are its own)
        return DATASETS[name]
    key = str(name).strip().lower().replace("_", "-").replace(" ", "-")
    key = _ALIASES.get(key, key)
    if key not in DATASETS:
        raise DataError(
            f"unknown dataset {name!r}; registered: {', '.join(sorted(DATASETS))}. Fix: use one of them "
            "(`con2 data list`)."
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


def find_source(name: str, data_dir: str | Path | None, size: int) -> Found:
    """Locate dataset ``name``'s files under ``data_dir`` at ``size`` (no network, no image read).

    Raises:
        DatasetMissing: nothing there; DataError: a damaged copy, an unknown name, a folder that
            cannot be read (no permission: nothing is said to be wrong with it).
    """
    info = get_info(name)
    try:
        return source_of(info).find(info, resolve_data_dir(data_dir), size)
    except PermissionError as exc:  # a folder of the dataset that cannot be listed: a read, never a write
        raise DataError(f"{info.name}: {read_failure(exc)}") from exc


def prepare_dataset(
    name: str,
    data_dir: str | Path | None,
    size: int,
    download: bool = False,
    progress: bool | None = None,
    verify: bool = False,
) -> Prepared:
    """Locate (or, with ``download``, download) dataset ``name``, verify it and prepare it at ``size``:
    its source's :meth:`~con2.data.source.Source.prepare` (arguments as there; ``directory`` of the
    result is ``None`` for a source kept in memory).

    Raises:
        DataError: an unknown name or a size < 1; the source's errors (with the file and the fix).
    """
    info = get_info(name)
    if size < 1:
        raise DataError(f"{info.name}: size must be positive, got {size}")
    return source_of(info).prepare(info, data_dir, size, download=download, progress=progress, verify=verify)


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
    verify: bool = False,
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
        verify: recompute the sha256 of the prepared cache and prepare it again if it disagrees with its
            manifest (otherwise only a changed size or mtime is noticed; see :func:`con2.data.cache.load_prepared`).

    Returns:
        :class:`OneClassData` whose arrays may be read-only memmaps of the prepared cache, and
        whose ``manifest`` lists the samples (also written to the cache's ``splits/`` folder).

    Raises:
        DataError: unknown dataset or class, missing or damaged files; the message says how to fix it.
    """
    info = get_info(name)
    normal_name, normal_idx = resolve_normal(info, normal_class)
    prep = prepare_dataset(info.name, data_dir, size, download=download, verify=verify)
    images, ids, splits, labels = prep.images, prep.ids, prep.splits, prep.labels
    sha, directory, source = prep.manifest["images_sha256"], prep.directory, prep.manifest["source"]
    train_idx, test_idx, test_labels = one_class_split(
        ids, splits, labels, normal_idx, info.protocol, seed, info.test_fraction, info.all_anomalies
    )
    if len(train_idx) == 0:
        raise DataError(
            f"{info.name}: no training images of normal class {normal_name} in {source.get('location', 'the data')}. "
            f"Fix: check that the copy of {info.name} is complete (delete it and run `con2 data get {info.name}`), "
            f"or choose another normal class (--set normal_class=..., one of: {', '.join(info.normals)})"
        )
    check_both_classes(info, normal_name, test_labels, source.get("location", "the data"))
    train, test = take(images, train_idx), take(images, test_idx)
    val_idx = validation_normals(splits, labels, normal_idx, info.protocol)
    val = take(images, val_idx)
    manifest = split_manifest(
        info.name,
        normal_name,
        seed,
        size,
        info.protocol,
        ids[train_idx].tolist(),
        ids[test_idx].tolist(),
        test_labels,
        sha,
        source,
        pixels_digest(train, test),
        ids[val_idx].tolist(),
        pixels_digest(val) if len(val_idx) else None,
    )
    if source.get("format") == "folder" and str(source.get("settings", "")).startswith("layout=mvtec"):
        # a declared mvtec tree: each test image's anomaly kind (its class folder), for per-kind AUROC columns
        manifest["test_kinds"] = [prep.classes[int(c)] for c in labels[test_idx]]
    if directory is not None:
        try:
            write_manifest(manifest, directory / "splits" / manifest_filename(normal_name, seed))
        except OSError:
            pass  # a read-only cache still loads; the manifest is on the returned object
    return OneClassData(
        name=info.name,
        normal_class=normal_name,
        train=train,
        test=test,
        test_labels=test_labels,
        val=val,
        manifest=manifest,
    )


def dataset_status(name: str, data_dir: str | Path | None) -> dict[str, Any]:
    """What ``con2 data list`` shows for one dataset: present?, where, prepared sizes, how to get it."""
    info = get_info(name)
    source = source_of(info)
    d = resolve_data_dir(data_dir)
    status: dict[str, Any] = {"name": info.name, "title": info.title, "family": info.family, "source": info.source}
    try:
        found = source.find(info, d, source.default_size(info))
        status.update(present=True, location=str(found.location), problem="", source=found.form or info.source)
    except DatasetMissing:
        status.update(present=False, location="", problem="missing")
    except DataError as exc:  # a broken copy: named by the format found (an image folder), not the usual source
        status.update(present=False, location="", problem=str(exc), source=exc.form or info.source)
    root = cache_root(d) / info.name
    status["prepared"] = (
        sorted(int(p.parent.name[:-2]) for p in root.glob("*px/manifest.json") if p.parent.name[:-2].isdigit())
        if root.is_dir()
        else []
    )
    status["how_to_get"] = source.how_to_get(info, d)
    return status
