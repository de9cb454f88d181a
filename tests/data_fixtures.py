"""Tiny on-disk fixtures that copy the real layouts of every dataset source exactly.

Each builder writes into a folder (a pytest ``tmp_path``) the same file names, folder trees,
archive nesting, pickle keys and npz keys as the real download, with a handful of tiny images
(8x8 or 10x7 JPEG/PNG) so that loading, splitting and preparing can be checked in milliseconds.
Layouts (see spec/datasets.md):

- MedMNIST: ``{flag}.npz`` / ``{flag}_{size}.npz`` with the six keys; labels ``(N,)`` or ``(N, 1)``.
- Kvasir: ``kvasir/kvasir-dataset/<8 classes>/<uuid>.jpg``.
- BR35H: ``br35h/{no,yes}/{no,y}N.jpg`` plus ``pred/predN.jpg`` and
  ``Br35H-Mask-RCNN/{TRAIN,VAL,TEST}/yN.jpg`` + ``annotations_*.json``.
- Pneumonia: ``pneumonia/chest_xray/{train,val,test}/{NORMAL,PNEUMONIA}/*.jpeg`` plus the nested
  duplicate ``chest_xray/chest_xray/...``, ``chest_xray/__MACOSX/...`` resource forks, ``.DS_Store``.
- Melanoma: ``melanoma/melanoma_cancer_dataset/{train,test}/{benign,malignant}/melanoma_N.jpg``.
- Muffin vs Chihuahua: ``muffin-vs-chihuahua/{train,test}/{chihuahua,muffin}/img_N_M.jpg``.
- Dogs vs Cats: ``dogs-vs-cats/train.zip`` holding ``train/{cat,dog}.N.jpg`` and ``test1.zip``
  holding ``test1/N.jpg``; the competition zip ``dogs-vs-cats.zip`` holds both and
  ``sampleSubmission.csv``.
- CIFAR-10: ``cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}`` pickles; or the image-folder
  dump ``cifar10/{train,test}/<class>/0000.jpg...`` (32x32; :func:`make_cifar10_folder`, whose counts per class
  join this test's copy of ``cifar_folder.EXPECTED_COUNTS`` as :func:`trust_cifar` does for checksums).
- CIFAR-100: ``cifar-100-python/{train,test,meta}`` pickles with ``coarse_labels``.
  The loader opens a CIFAR pickle (or extracts an archive) only if its md5 is the official one
  (``cifar_source.OFFICIAL_MD5``). The builders add their files' md5s to that table, which
  :func:`isolated_env` replaces by a copy for each test (``trusted=False`` leaves a file untrusted):
  the product has no switch that turns the check off.
- ImageNet30: ``imagenet30/one_class_{train,test}/<30 classes>/...JPEG`` (one class nested deeper).
"""

from __future__ import annotations

import hashlib
import io
import pickle
import struct
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from con2.data import cifar_folder, cifar_source
from con2.data.cifar_source import CIFAR10_CLASSES, CIFAR100_SUPERCLASSES
from con2.data.imagenet30_source import CLASSES as IMAGENET30_CLASSES
from con2.data.kaggle_source import KVASIR_CLASSES


def image_bytes(seed: int, fmt: str = "JPEG", size: tuple[int, int] = (10, 7), mode: str = "RGB") -> bytes:
    """A tiny deterministic image, encoded."""
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    img = Image.fromarray(arr).convert(mode)
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    return buf.getvalue()


def write_image(path: Path, seed: int, **kw) -> Path:
    """Write a tiny image at ``path`` (format from the suffix)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = "PNG" if path.suffix.lower() == ".png" else "JPEG"
    path.write_bytes(image_bytes(seed, fmt, **kw))
    return path


# --------------------------------------------------------------------------- MedMNIST


def write_medmnist_npz(
    path: Path,
    counts: dict[str, list[int]],
    size: int = 28,
    label_shape: str = "N1",
    channels: int = 0,
    pixel_seed: int = 0,
) -> Path:
    """An npz with the official keys; ``counts[split][label]`` images per label, labels ``(N,)``
    (``label_shape="N"``) or ``(N, 1)`` (``"N1"``, official); ``pixel_seed``: other images, same layout."""
    rng = np.random.default_rng(pixel_seed)
    arrays = {}
    for split in ("train", "val", "test"):
        labels = np.concatenate([np.full(n, c, dtype=np.uint8) for c, n in enumerate(counts[split])])
        shape = (len(labels), size, size) + ((channels,) if channels else ())
        arrays[f"{split}_images"] = rng.integers(0, 256, size=shape, dtype=np.uint8)
        arrays[f"{split}_labels"] = labels[:, None] if label_shape == "N1" else labels
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)
    return path


# --------------------------------------------------------------------------- Kaggle trees


def make_kvasir(data_dir: Path, per_class: int = 5) -> Path:
    root = data_dir / "kvasir" / "kvasir-dataset"
    for ci, c in enumerate(KVASIR_CLASSES):
        for i in range(per_class):
            write_image(root / c / f"{ci:02d}{i:02d}a1b2-c3d4-e5f6-{c[:4]}-{i}.jpg", 100 * ci + i, size=(12, 9))
    return root


def make_br35h(data_dir: Path, n_no: int = 10, n_yes: int = 6) -> Path:
    root = data_dir / "br35h"
    for i in range(n_no):
        write_image(root / "no" / f"no{i}.jpg", i)
    for i in range(n_yes):
        write_image(root / "yes" / f"y{i}.jpg", 1000 + i)
    for i in range(3):  # unlabelled
        write_image(root / "pred" / f"pred{i}.jpg", 2000 + i)
    for part in ("TRAIN", "VAL", "TEST"):  # copies of yes/ with masks
        write_image(root / "Br35H-Mask-RCNN" / part / f"y{len(part)}.jpg", 1000 + len(part))
        (root / "Br35H-Mask-RCNN" / part / f"annotations_{part.lower()}.json").write_text("{}")
    return root


PNEUMONIA_COUNTS = {"train": (5, 7), "val": (2, 2), "test": (4, 6)}


def make_pneumonia(data_dir: Path) -> Path:
    top = data_dir / "pneumonia" / "chest_xray"
    seed = 0
    for copy in (top, top / "chest_xray"):  # the zip nests a duplicate copy
        for split, (n_norm, n_pn) in PNEUMONIA_COUNTS.items():
            for i in range(n_norm):
                write_image(copy / split / "NORMAL" / f"IM-{115 + i:04d}-0001.jpeg", seed := seed + 1, mode="L")
            for i in range(n_pn):
                write_image(
                    copy / split / "PNEUMONIA" / f"person{i + 1}_bacteria_{i + 1}.jpeg", seed := seed + 1, mode="L"
                )
        (copy / split / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    for split in ("train", "test"):  # macOS resource forks: not images although named .jpeg
        fork = top / "__MACOSX" / "chest_xray" / split / "NORMAL" / "._IM-0115-0001.jpeg"
        fork.parent.mkdir(parents=True, exist_ok=True)
        fork.write_bytes(b"\0\5\26\7 not an image")
    return top


def make_melanoma(data_dir: Path, counts: dict | None = None) -> Path:
    counts = counts or {"train": {"benign": 6, "malignant": 5}, "test": {"benign": 3, "malignant": 4}}
    root = data_dir / "melanoma" / "melanoma_cancer_dataset"
    k = 0
    for split, per in counts.items():
        for cls, n in per.items():
            for _ in range(n):
                write_image(root / split / cls / f"melanoma_{k}.jpg", k)
                k += 1
    return root


def make_muffin(data_dir: Path) -> Path:
    root = data_dir / "muffin-vs-chihuahua"
    counts = {"train": {"chihuahua": 6, "muffin": 5}, "test": {"chihuahua": 3, "muffin": 2}}
    for split, per in counts.items():
        for ci, (cls, n) in enumerate(per.items()):
            for i in range(n):
                write_image(root / split / cls / f"img_{i}_{ci}{i}.jpg", 10 * ci + i + (0 if split == "train" else 500))
    return root


DOGS_CATS_NS = (0, 1, 2, 9999, 10000, 10001, 12499)  # 4 train and 3 test ids per class


def dogs_cats_train_zip(path: Path) -> Path:
    """``train.zip``: ``train/cat.N.jpg`` and ``train/dog.N.jpg``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for cls in ("cat", "dog"):
            for n in DOGS_CATS_NS:
                zf.writestr(f"train/{cls}.{n}.jpg", image_bytes(n + (0 if cls == "cat" else 50000)))
    return path


def make_dogs_cats(data_dir: Path) -> Path:
    """``dogs-vs-cats/train.zip`` and the unlabelled ``test1.zip``."""
    folder = data_dir / "dogs-vs-cats"
    dogs_cats_train_zip(folder / "train.zip")
    with zipfile.ZipFile(folder / "test1.zip", "w") as zf:
        for n in (1, 2, 3):
            zf.writestr(f"test1/{n}.jpg", image_bytes(7000 + n))
    return folder


def dogs_cats_competition_zip(path: Path) -> Path:
    """``dogs-vs-cats.zip`` as the competition download: train.zip, test1.zip, sampleSubmission.csv."""
    inner = make_dogs_cats(path.parent / "_inner")
    with zipfile.ZipFile(path, "w") as zf:
        zf.write(inner / "train.zip", "train.zip")
        zf.write(inner / "test1.zip", "test1.zip")
        zf.writestr("sampleSubmission.csv", "id,label\n1,0\n")
    return path


def zip_tree(folder: Path, zip_path: Path) -> Path:
    """Zip the contents of ``folder`` (paths relative to it), as Kaggle serves a dataset."""
    with zipfile.ZipFile(zip_path, "w") as zf:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                zf.write(p, p.relative_to(folder).as_posix())
    return zip_path


# --------------------------------------------------------------------------- CIFAR pickles


class Py2Str(bytes):
    """A Python 2 ``str``: pickled with the STRING opcodes, so it loads as ``str`` with
    ``encoding="latin1"`` (what torchvision uses) and as ``bytes`` with ``encoding="bytes"``."""


class _Py2Pickler(pickle._Pickler):  # the pure-Python pickler lets us emit Python 2 opcodes
    dispatch = pickle._Pickler.dispatch.copy()

    def save_py2str(self, obj: Py2Str) -> None:
        n = len(obj)
        head = pickle.SHORT_BINSTRING + bytes([n]) if n < 256 else pickle.BINSTRING + struct.pack("<i", n)
        self.write(head + bytes(obj))
        self.memoize(obj)

    dispatch[Py2Str] = save_py2str
    dispatch[bytes] = save_py2str  # an array's raw data too: Python 2 had no bytes type (no _codecs.encode)

    def save_global(self, obj, name=None) -> None:
        module = getattr(obj, "__module__", "")
        if module == "numpy._core.multiarray":  # numpy 2's name; the official files say numpy.core
            self.write(pickle.GLOBAL + f"numpy.core.multiarray\n{obj.__name__}\n".encode())
            self.memoize(obj)
            return
        super().save_global(obj, name)


def _py2(obj):
    if isinstance(obj, str):
        return Py2Str(obj.encode("latin1"))
    if isinstance(obj, dict):
        return {_py2(k): _py2(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_py2(v) for v in obj]
    return obj


def _pickle(path: Path, obj: dict) -> None:
    """Write ``obj`` as the CIFAR pickles are: protocol 2, Python 2 strings (keys and names)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        _Py2Pickler(f, protocol=2).dump(_py2(obj))


_OFFICIAL_MD5 = cifar_source.OFFICIAL_MD5  # the real table, as imported (isolated_env swaps in a copy)


def trust_cifar(name: str, *paths: Path) -> None:
    """Add the md5 of each fixture file (``data_batch_1``, ``meta``, ``cifar-10-python.tar.gz``, ...) to
    this test's copy of ``cifar_source.OFFICIAL_MD5``, as if it were the official file."""
    table = cifar_source.OFFICIAL_MD5
    if table is _OFFICIAL_MD5:
        raise RuntimeError("trust_cifar needs the isolated_env fixture: it must never change the real checksum table")
    for path in paths:
        table[name][path.name] = hashlib.md5(path.read_bytes()).hexdigest()


def _cifar_data(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(n, 3072), dtype=np.uint8)


def make_cifar10(data_dir: Path, per_batch: int = 10, n_test: int = 20, trusted: bool = True) -> Path:
    """``cifar-10-batches-py/``: 5 train batches (labels cycling 0..9) and ``test_batch``; ``trusted``:
    their md5s join this test's checksum table (:func:`trust_cifar`)."""
    root = data_dir / "cifar-10-batches-py"
    for b in range(1, 6):
        labels = [(i + b) % 10 for i in range(per_batch)]
        _pickle(
            root / f"data_batch_{b}",
            {
                "batch_label": f"training batch {b} of 5",
                "labels": labels,
                "data": _cifar_data(per_batch, b),
                "filenames": [f"img_{b}_{i}.png" for i in range(per_batch)],
            },
        )
    _pickle(
        root / "test_batch",
        {
            "batch_label": "testing batch 1 of 1",
            "labels": [i % 10 for i in range(n_test)],
            "data": _cifar_data(n_test, 99),
            "filenames": [f"t_{i}.png" for i in range(n_test)],
        },
    )
    _pickle(
        root / "batches.meta",
        {
            "num_cases_per_batch": per_batch,
            "label_names": [c for c in CIFAR10_CLASSES],
            "num_vis": 3072,
        },
    )
    (root / "readme.html").write_text("<html></html>")
    if trusted:
        trust_cifar("cifar10", *(p for p in root.iterdir() if p.name != "readme.html"))
    return root


def make_cifar100(data_dir: Path, train_per: int = 2, test_per: int = 1, trusted: bool = True) -> Path:
    """``cifar-100-python/``: ``train``, ``test`` (fine + coarse labels) and ``meta``; ``trusted`` as
    :func:`make_cifar10`."""
    root = data_dir / "cifar-100-python"
    for split, per, seed in (("train", train_per, 1), ("test", test_per, 2)):
        coarse = [c for c in range(20) for _ in range(per)][::-1]  # not sorted, as in the real file
        _pickle(
            root / split,
            {
                "filenames": [f"{split}_{i}.png" for i in range(len(coarse))],
                "batch_label": split,
                "fine_labels": [5 * c + (i % 5) for i, c in enumerate(coarse)],
                "coarse_labels": coarse,
                "data": _cifar_data(len(coarse), seed),
            },
        )
    _pickle(
        root / "meta",
        {
            "fine_label_names": [f"fine{i}" for i in range(100)],
            "coarse_label_names": [c for c in CIFAR100_SUPERCLASSES],
        },
    )
    if trusted:
        trust_cifar("cifar100", root / "train", root / "test", root / "meta")
    return root


_EXPECTED_COUNTS = cifar_folder.EXPECTED_COUNTS  # the real counts, as imported (isolated_env swaps in a copy)


def make_cifar10_folder(
    data_dir: Path, n_train: int = 3, n_test: int = 2, suffix: str = ".png", expected: bool = True
) -> Path:
    """``cifar10/{train,test}/<class>/NNNN<suffix>``: ``n_train`` and ``n_test`` random 32x32 RGB images per
    class, named as the real dump (0000.jpg...); ``expected``: those counts become this test's CIFAR-10
    counts (the real 5000 / 1000 stay in the product; :func:`isolated_env` gives each test its own copy)."""
    if expected:
        if cifar_folder.EXPECTED_COUNTS is _EXPECTED_COUNTS:
            raise RuntimeError(
                "make_cifar10_folder needs the isolated_env fixture: it must never change the real counts"
            )
        cifar_folder.EXPECTED_COUNTS.update(train=n_train, test=n_test)
    root = data_dir / "cifar10"
    for split, n in (("train", n_train), ("test", n_test)):
        for c, cls in enumerate(CIFAR10_CLASSES):
            for i in range(n):
                write_image(
                    root / split / cls / f"{i:04d}{suffix}", 1000 * c + 10 * i + (split == "test"), size=(32, 32)
                )
    return root


def tar_gz(folder: Path, archive: Path, trusted: bool = True) -> Path:
    """``archive`` (.tar.gz) holding ``folder`` under its own name, like the official CIFAR archives;
    ``trusted``: an archive named as CIFAR's joins this test's checksum table."""
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(folder, arcname=folder.name)
    named = [name for name, spec in cifar_source.SPECS.items() if spec.archive == archive.name]
    if trusted and named:
        trust_cifar(named[0], archive)
    return archive


# --------------------------------------------------------------------------- ImageNet30


def make_imagenet30(data_dir: Path, n_train: int = 2, n_test: int = 1) -> Path:
    """``imagenet30/one_class_{train,test}/<class>/``; the first class's test images one level deeper."""
    root = data_dir / "imagenet30"
    k = 0
    for folder, n in (("one_class_train", n_train), ("one_class_test", n_test)):
        for ci, c in enumerate(IMAGENET30_CLASSES):
            sub = root / folder / c / (c if (ci == 0 and folder == "one_class_test") else "")
            for i in range(n):
                write_image(sub / f"n{ci:08d}_{i}.JPEG", k)
                k += 1
    return root


# --------------------------------------------------------------------------- pytest fixtures

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Caches under ``tmp_path``, no Kaggle credentials, no real network, and this test's own copy of
    the CIFAR checksum table (see :func:`trust_cifar`)."""
    monkeypatch.setenv("CON2_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("KAGGLE_API_TOKEN", "KAGGLE_USERNAME", "KAGGLE_KEY", "CON2_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(tmp_path / "no-kaggle-config"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    def no_network(*args, **kwargs):
        raise AssertionError("a test tried to reach the network")

    import urllib.request

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    # a copy of the CIFAR checksum table for this test: the builders add their fake files to it
    monkeypatch.setattr(cifar_source, "OFFICIAL_MD5", {k: dict(v) for k, v in _OFFICIAL_MD5.items()})
    monkeypatch.setattr(cifar_folder, "EXPECTED_COUNTS", dict(_EXPECTED_COUNTS))  # make_cifar10_folder shrinks it
    return tmp_path / "cache"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    return d


def no_partials(folder: Path) -> list[Path]:
    """Leftover temporary files or folders (there must be none)."""
    return [p for p in folder.rglob("*") if ".partial-" in p.name]


@pytest.fixture
def private_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A private cache, no folder declarations from the environment, and the dataset registry, its sources and
    con2.data.own_folder's declarations as they were once the test ends (a test that declares a folder of its
    own registers it process-wide, and sets $CON2_DATASETS)."""
    import os

    from con2.data import own_folder
    from con2.data.registry import DATASETS, SOURCES

    monkeypatch.setenv("CON2_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(own_folder.ENV, raising=False)
    saved = [(DATASETS, dict(DATASETS)), (SOURCES, dict(SOURCES)), (own_folder.DECLARED, dict(own_folder.DECLARED))]
    yield
    for registry, before in saved:
        registry.clear()
        registry.update(before)
    os.environ.pop(own_folder.ENV, None)  # set by a registration (monkeypatch restores the rest)
