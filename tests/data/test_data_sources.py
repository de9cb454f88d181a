"""Every source loads from a fixture that copies its real layout, with the right counts and a stable split."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from data_fixtures import (  # noqa: F401  (isolated_env is autouse)
    DOGS_CATS_NS,
    PNEUMONIA_COUNTS,
    data_dir,
    dogs_cats_train_zip,
    isolated_env,
    make_br35h,
    make_cifar10,
    make_cifar100,
    make_dogs_cats,
    make_imagenet30,
    make_kvasir,
    make_melanoma,
    make_muffin,
    make_pneumonia,
    write_medmnist_npz,
)

from con2.data import DATASETS, DataError, OneClassData, load_one_class, normal_classes


def counts(d: OneClassData) -> tuple[int, int, int]:
    return len(d.train), d.n_normal_test, d.n_anomalous


# --------------------------------------------------------------------------- MedMNIST


def test_breastmnist_shared_offline(shared_data: Path) -> None:
    d = load_one_class("breastmnist", shared_data)
    assert counts(d) == (399, 114, 42)
    assert d.train.shape == (399, 28, 28, 1) and d.train.dtype == np.uint8
    assert d.normal_class == "1"
    assert d.manifest is not None and d.manifest["n_train"] == 399 and len(d.manifest["test_ids"]) == 156


@pytest.mark.parametrize("label_shape", ["N", "N1"])
def test_medmnist_both_label_shapes(data_dir: Path, label_shape: str) -> None:
    counts_ = {"train": [7, 12], "val": [2, 3], "test": [4, 9]}
    write_medmnist_npz(data_dir / "medmnist" / "breastmnist.npz", counts_, label_shape=label_shape)
    d = load_one_class("breastmnist", data_dir)
    assert counts(d) == (12, 9, 4)
    d0 = load_one_class("breastmnist", data_dir, normal_class=0)
    assert counts(d0) == (7, 4, 9)


def test_medmnist_sizes_and_octmnist(data_dir: Path) -> None:
    write_medmnist_npz(
        data_dir / "octmnist_64.npz", {"train": [3, 3, 3, 5], "val": [1, 1, 1, 1], "test": [2, 2, 2, 3]}, size=64
    )
    d = load_one_class("octmnist", data_dir, size=64)
    assert d.train.shape == (5, 64, 64, 1) and counts(d) == (5, 3, 6)
    with pytest.raises(DataError, match=r"octmnist\.npz not found.*con2 data get octmnist"):
        load_one_class("octmnist", data_dir, size=28)
    with pytest.raises(DataError, match="sizes"):
        load_one_class("octmnist", data_dir, size=32)


def test_medmnist_split_is_official_and_seed_free(data_dir: Path) -> None:
    write_medmnist_npz(data_dir / "pneumoniamnist.npz", {"train": [6, 4], "val": [1, 1], "test": [3, 5]})
    a = load_one_class("pneumoniamnist", data_dir, seed=0)
    b = load_one_class("pneumoniamnist", data_dir, seed=5)
    assert a.manifest["split_sha256"] == b.manifest["split_sha256"]
    assert a.manifest["train_ids"] == [f"train/{i}" for i in range(6)]
    assert counts(a) == (6, 3, 5)


def test_medmnist_validation_normals_are_the_val_splits_normals_outside_the_split_checksum(data_dir: Path) -> None:
    """Issue 35: the normal images of MedMNIST's val split come with the run's data (never trained on),
    listed in the manifest beside the split but outside ``split_sha256``; a holdout dataset has none."""
    path = write_medmnist_npz(data_dir / "pneumoniamnist.npz", {"train": [6, 4], "val": [3, 2], "test": [3, 5]})
    a = load_one_class("pneumoniamnist", data_dir)
    raw = np.load(path)
    normal_val = raw["val_images"][raw["val_labels"][:, 0] == 0]
    assert a.val is not None and a.val.shape == (3, 28, 28, 1)
    np.testing.assert_array_equal(a.val[..., 0], normal_val)
    assert a.manifest["val_ids"] == ["val/0", "val/1", "val/2"] and a.manifest["n_val"] == 3
    assert not set(a.manifest["val_ids"]) & set(a.manifest["train_ids"] + a.manifest["test_ids"])
    arrays = dict(raw)
    arrays["val_images"] = 255 - arrays["val_images"]  # other validation images, the same split otherwise
    np.savez_compressed(path, **arrays)
    b = load_one_class("pneumoniamnist", data_dir, verify=True)
    assert b.manifest["split_sha256"] == a.manifest["split_sha256"]
    assert b.manifest["val_pixels_sha256"] != a.manifest["val_pixels_sha256"]
    make_br35h(data_dir, n_no=10, n_yes=6)
    holdout = load_one_class("br35h", data_dir, seed=0)
    assert holdout.val is not None and len(holdout.val) == 0 and holdout.manifest["n_val"] == 0


# --------------------------------------------------------------------------- Kaggle folder datasets


def test_kvasir_seeded_holdout(data_dir: Path) -> None:
    make_kvasir(data_dir, per_class=5)
    a = load_one_class("kvasir", data_dir, seed=0)
    assert a.normal_class == "normal-cecum+normal-pylorus+normal-z-line"
    assert counts(a) == (12, 3, 25)  # 3 normal classes x (4 train + 1 held out); 5 x 5 anomalies
    assert a.train.shape[1:] == (28, 28, 3)
    again = load_one_class("kvasir", data_dir, seed=0)
    assert again.manifest == a.manifest
    other = load_one_class("kvasir", data_dir, seed=1)
    assert other.manifest["split_sha256"] != a.manifest["split_sha256"]
    assert counts(other) == counts(a)
    assert set(a.manifest["train_ids"]).isdisjoint(a.manifest["test_ids"])
    assert all(i.split("/")[0].startswith("normal-") for i in a.manifest["train_ids"])
    single = load_one_class("kvasir", data_dir, normal_class="polyps")
    assert counts(single) == (4, 1, 35)


def test_br35h_ignores_pred_and_maskrcnn(data_dir: Path) -> None:
    make_br35h(data_dir, n_no=10, n_yes=6)
    a = load_one_class("br35h", data_dir, seed=0)
    assert counts(a) == (8, 2, 6)
    assert a.train.shape[1:] == (28, 28, 1)
    ids = a.manifest["train_ids"] + a.manifest["test_ids"]
    assert all(i.startswith(("no/", "yes/")) for i in ids)
    assert load_one_class("br35h", data_dir, seed=0).manifest == a.manifest
    assert load_one_class("br35h", data_dir, seed=3).manifest["train_ids"] != a.manifest["train_ids"]


def test_pneumonia_uses_top_level_splits_only(data_dir: Path) -> None:
    make_pneumonia(data_dir)
    d = load_one_class("pneumonia", data_dir)
    (n_tr, _), (n_te_norm, n_te_pn) = PNEUMONIA_COUNTS["train"], PNEUMONIA_COUNTS["test"]
    assert counts(d) == (n_tr, n_te_norm, n_te_pn)
    ids = d.manifest["train_ids"] + d.manifest["test_ids"]
    assert all(i.startswith(("train/", "test/")) for i in ids)  # not chest_xray/..., not __MACOSX, not val/
    assert d.manifest["split_sha256"] == load_one_class("pneumonia", data_dir, seed=9).manifest["split_sha256"]


def test_melanoma(data_dir: Path) -> None:
    make_melanoma(data_dir)
    d = load_one_class("melanoma", data_dir, size=16)
    assert counts(d) == (6, 3, 4) and d.train.shape[1:] == (16, 16, 3)


@pytest.mark.parametrize("normal,expected", [("chihuahua", (6, 3, 2)), ("muffin", (5, 2, 3)), (1, (5, 2, 3))])
def test_muffin_each_class(data_dir: Path, normal, expected) -> None:
    make_muffin(data_dir)
    assert counts(load_one_class("muffin-vs-chihuahua", data_dir, normal_class=normal)) == expected


def test_dogs_cats_from_train_zip(data_dir: Path) -> None:
    make_dogs_cats(data_dir)
    n_train = sum(n < 10000 for n in DOGS_CATS_NS)
    n_test = len(DOGS_CATS_NS) - n_train
    cat = load_one_class("dogs-vs-cats", data_dir, normal_class="cat")
    assert counts(cat) == (n_train, n_test, n_test)
    assert sorted(cat.manifest["train_ids"]) == sorted(f"cat.{n}.jpg" for n in DOGS_CATS_NS if n < 10000)
    dog = load_one_class("dogs-vs-cats", data_dir, normal_class="dog", seed=4)
    assert counts(dog) == (n_train, n_test, n_test)
    assert dog.manifest["test_ids"] == cat.manifest["test_ids"]


def test_dogs_cats_from_extracted_folder(data_dir: Path, tmp_path: Path) -> None:
    import zipfile

    z = dogs_cats_train_zip(tmp_path / "train.zip")
    with zipfile.ZipFile(z) as zf:
        zf.extractall(data_dir / "dogs-vs-cats")
    d = load_one_class("dogs-vs-cats", data_dir, normal_class="dog")
    assert counts(d) == (4, 3, 3)


def test_kaggle_zip_on_disk_is_extracted(data_dir: Path, tmp_path: Path) -> None:
    from data_fixtures import zip_tree

    src = make_melanoma(tmp_path / "src").parent
    (data_dir / "melanoma").mkdir()
    zip_tree(src, data_dir / "melanoma" / "archive.zip")  # as the website's "Download" button names it
    d = load_one_class("melanoma", data_dir)
    assert counts(d) == (6, 3, 4)
    assert (data_dir / "melanoma" / "melanoma_cancer_dataset" / "train" / "benign").is_dir()


# --------------------------------------------------------------------------- CIFAR, ImageNet30, digits


def test_cifar10_each_class(data_dir: Path) -> None:
    make_cifar10(data_dir, per_batch=10, n_test=20)
    assert len(normal_classes("cifar10")) == 10
    for c in ("airplane", "truck"):
        d = load_one_class("cifar10", data_dir, normal_class=c, size=32)
        assert counts(d) == (5, 2, 18)
        assert d.train.shape == (5, 32, 32, 3)
        assert isinstance(d.train, np.memmap)  # a contiguous slice of the cache, not a copy
    d3 = load_one_class("cifar10", data_dir, normal_class=3, size=32)
    assert d3.normal_class == "cat"


def test_cifar10_pixels_are_the_pickles(data_dir: Path) -> None:
    import pickle

    root = make_cifar10(data_dir)
    with open(root / "test_batch", "rb") as f:
        raw = pickle.load(f, encoding="bytes")
    d = load_one_class("cifar10", data_dir, normal_class=0, size=32)
    first = d.manifest["test_ids"].index("test/0")
    expected = raw[b"data"][0].reshape(3, 32, 32).transpose(1, 2, 0)
    np.testing.assert_array_equal(d.test[first], expected)


def test_cifar100_superclasses_from_coarse_labels(data_dir: Path) -> None:
    make_cifar100(data_dir, train_per=2, test_per=1)
    names = normal_classes("cifar100")
    assert len(names) == 20 and names[0] == "aquatic_mammals" and names[-1] == "vehicles_2"
    for c in (names[0], names[13], names[19]):
        d = load_one_class("cifar100", data_dir, normal_class=c, size=32)
        assert counts(d) == (2, 1, 19)


def test_imagenet30(data_dir: Path) -> None:
    make_imagenet30(data_dir, n_train=2, n_test=1)
    assert len(normal_classes("imagenet30")) == 30
    d = load_one_class("imagenet30", data_dir, normal_class="acorn", size=16)
    assert counts(d) == (2, 1, 29)  # acorn's nested test image is found too
    assert d.train.shape[1:] == (16, 16, 3)
    assert counts(load_one_class("imagenet30", data_dir, normal_class="volcano", size=16)) == (2, 1, 29)


def test_digits_seeded_split() -> None:
    a = load_one_class("digits", None, normal_class=3, seed=0, size=8)
    assert a.train.shape[1:] == (8, 8, 1)
    assert len(a.train) == 183 - round(183 / 3)  # 183 threes
    assert a.n_normal_test == round(183 / 3)
    assert load_one_class("digits", None, 3, seed=0, size=8).manifest == a.manifest
    assert load_one_class("digits", None, 3, seed=1, size=8).manifest["split_sha256"] != a.manifest["split_sha256"]
    assert load_one_class("digits", None, 3, size=28).train.shape[1:] == (28, 28, 1)


def test_registry_covers_the_eleven() -> None:
    eleven = {
        "breastmnist",
        "octmnist",
        "kvasir",
        "br35h",
        "pneumonia",
        "melanoma",
        "muffin-vs-chihuahua",
        "dogs-vs-cats",
        "cifar10",
        "cifar100",
        "imagenet30",
    }
    assert eleven <= set(DATASETS) and {"pneumoniamnist", "digits"} <= set(DATASETS)
    assert all(DATASETS[n].in_paper for n in eleven)
    for name, info in DATASETS.items():
        assert normal_classes(name) and all(isinstance(c, str) for c in normal_classes(name))
        assert info.family in ("medical", "natural", "smoke")
        if info.family == "medical":
            assert len(normal_classes(name)) == 1
    assert normal_classes("breastmnist") == ["1"] and normal_classes("octmnist") == ["3"]
    assert normal_classes("muffin-vs-chihuahua") == ["chihuahua", "muffin"]
