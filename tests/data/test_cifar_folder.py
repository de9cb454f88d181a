"""CIFAR-10 from an image folder (issue 44): the dump's layout read, checked by content before use, and
named as a re-encoding in the manifest and the run record; every bad layout is one line naming the
folder or file, what was found and the fix, and leaves no prepared cache behind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_DATA
from data_fixtures import (  # noqa: F401  (isolated_env is autouse)
    data_dir,
    isolated_env,
    make_cifar10,
    make_cifar10_folder,
    write_image,
)
from PIL import Image

from con2.data import DataError, load_one_class
from con2.data.cifar_folder import FORMAT
from con2.data.cifar_source import CIFAR10_CLASSES
from con2.data.manifest import data_source
from con2.data.registry import dataset_status


def test_folder_loads_as_the_one_class_protocol_pixel_for_pixel(data_dir: Path) -> None:
    root = make_cifar10_folder(data_dir, n_train=3, n_test=2)
    data = load_one_class("cifar10", data_dir, "cat", size=32)
    assert data.train.shape == (3, 32, 32, 3) and data.test.shape == (20, 32, 32, 3)
    assert data.n_anomalous == 18 and data.n_normal_test == 2  # the normal class's test images are the normals
    # brute force: every training image is the PNG's pixels (lossless), in file order
    expected = np.stack([np.asarray(Image.open(root / "train" / "cat" / f"{i:04d}.png")) for i in range(3)])
    assert np.array_equal(np.asarray(data.train), expected)
    test_ids = data.manifest["test_ids"]  # type: ignore[index]
    for image, label, sample in zip(np.asarray(data.test), data.test_labels, test_ids, strict=True):
        assert np.array_equal(image, np.asarray(Image.open(root / sample)))
        assert label == (sample.split("/")[1] != "cat")


def test_record_source_names_the_folder_and_its_content(data_dir: Path, isolated_env: Path) -> None:
    root = make_cifar10_folder(data_dir)
    first = data_source(load_one_class("cifar10", data_dir, "dog", size=32).manifest)
    assert first is not None and first["format"] == FORMAT and len(str(first["sha256"])) == 64
    # the checksum is of the content: one image's bytes changed -> another checksum
    write_image(root / "test" / "frog" / "0001.png", 777, size=(32, 32))
    second = data_source(load_one_class("cifar10", data_dir, "dog", size=32).manifest)
    assert second is not None and second["sha256"] != first["sha256"]


def test_official_pickles_are_preferred_to_a_folder(data_dir: Path) -> None:
    make_cifar10_folder(data_dir)
    make_cifar10(data_dir / "cifar10")  # data_dir/cifar10/cifar-10-batches-py beside train/ and test/
    manifest = load_one_class("cifar10", data_dir, "cat", size=32).manifest
    assert manifest is not None and "format" not in manifest["source"]
    assert manifest["source"]["location"].endswith("cifar-10-batches-py")


def test_data_list_names_the_image_folder(data_dir: Path) -> None:
    make_cifar10_folder(data_dir)
    status = dataset_status("cifar10", data_dir)
    assert status["present"] and status["source"] == FORMAT and status["location"] == str(data_dir / "cifar10")


def _drop_split(root: Path) -> str:
    shutil.rmtree(root / "test")
    return r"cifar10/test is missing \(found only \['train'\]"


def _extra_class(root: Path) -> str:
    (root / "train" / "zebra").mkdir()
    return r"cifar10/train has class folders .*not CIFAR-10 classes: zebra"


def _missing_class(root: Path) -> str:
    shutil.rmtree(root / "test" / "ship")
    return r"cifar10/test has class folders .*missing: ship"


def _one_image_short(root: Path) -> str:
    (root / "train" / "horse" / "0002.png").unlink()
    return r"cifar10/train/horse holds 2 images, not CIFAR-10's 3 per train class"


def _bmp(root: Path) -> str:
    write_image(root / "test" / "deer" / "0002.bmp", 5, size=(32, 32))
    return r"cifar10/test/deer holds 1 file\(s\) that are not JPEG or PNG, e.g. 0002.bmp"


@pytest.mark.parametrize("damage", [_drop_split, _extra_class, _missing_class, _one_image_short, _bmp])
def test_bad_layout_is_one_line_naming_folder_found_and_fix(data_dir: Path, isolated_env: Path, damage) -> None:
    root = make_cifar10_folder(data_dir)
    pattern = damage(root)
    with pytest.raises(DataError, match=pattern) as err:
        load_one_class("cifar10", data_dir, "cat", size=32)
    message = str(err.value)
    assert "\n" not in message and "Fix: lay the images out as" in message and "con2 data get cifar10" in message
    assert not (isolated_env / "cifar10" / "32px" / "manifest.json").exists()  # nothing prepared from it
    status = dataset_status("cifar10", data_dir)  # `con2 data list` says BROKEN with the same line
    assert not status["present"] and status["problem"] == message
    assert status["source"] == FORMAT  # the broken copy is the image folder, not the pickles (issue 57, item 8)


def test_an_image_of_another_size_is_named_when_decoded(data_dir: Path, isolated_env: Path) -> None:
    root = make_cifar10_folder(data_dir)
    write_image(root / "train" / "bird" / "0001.png", 3, size=(31, 32))
    with pytest.raises(DataError, match=r"cifar10: .*train/bird/0001.png is 31x32 RGB, not a 32x32 RGB CIFAR-10 image"):
        load_one_class("cifar10", data_dir, "cat", size=32)
    assert not (isolated_env / "cifar10" / "32px" / "manifest.json").exists()


def test_an_undecodable_image_is_named(data_dir: Path, isolated_env: Path) -> None:
    root = make_cifar10_folder(data_dir, suffix=".jpg")
    (root / "test" / "truck" / "0000.jpg").write_bytes(b"\xff\xd8\xff not a jpeg")
    with pytest.raises(DataError, match=r"cifar10: cannot decode test/truck/0000.jpg in .*cifar10"):
        load_one_class("cifar10", data_dir, "cat", size=32)
    assert not (isolated_env / "cifar10" / "32px" / "manifest.json").exists()


def test_no_folder_and_no_pickles_says_both_ways_to_get_it(data_dir: Path) -> None:
    from con2.data import DatasetMissing

    with pytest.raises(DatasetMissing, match=r"con2 data get cifar10.*also read from an image folder"):
        load_one_class("cifar10", data_dir, "cat", size=32)


def test_the_real_offline_copy_passes_the_listing_check() -> None:
    """The real dump beside the checkout (../shared/data/cifar10: 60,000 JPEGs) passes the check of its
    listing with the real counts (the images are decoded when a run prepares them)."""
    if not (SHARED_DATA / "cifar10").is_dir():
        pytest.fail(f"the offline CIFAR-10 folder is missing at {SHARED_DATA / 'cifar10'} (../shared/data/README.md)")
    from con2.data.cifar_folder import EXPECTED_COUNTS, check_listing

    files = check_listing(SHARED_DATA / "cifar10", CIFAR10_CLASSES)
    assert EXPECTED_COUNTS == {"train": 5000, "test": 1000} and len(files) == 60000


def test_a_training_image_copied_into_its_test_folder_is_named(
    data_dir: Path, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 57, item 4: a train image in its own class's test folder (leakage that inflates AUROC) is one note
    naming both files, recorded in the manifest beside the cross-class duplicates; many groups: capped."""
    root = make_cifar10_folder(data_dir, n_train=8, n_test=8)
    (root / "test" / "cat" / "0001.png").write_bytes((root / "train" / "cat" / "0003.png").read_bytes())
    load_one_class("cifar10", data_dir, "cat", size=32)
    manifest = json.loads((isolated_env / "cifar10" / "32px" / "manifest.json").read_text())  # the prepared cache's
    assert manifest["duplicates_across_splits"] == [["test/cat/0001.png", "train/cat/0003.png"]]
    assert manifest["duplicates_across_classes"] == []
    err = capsys.readouterr().err
    assert "note: cifar10: test/cat/0001.png = train/cat/0003.png are byte-identical files of one class" in err
    assert "inflates AUROC" in err and err.count("note: ") == 1, err
    for i in range(8):  # the whole class copied: 8 groups, 5 lines and one that counts the rest
        (root / "test" / "dog" / f"{i:04d}.png").write_bytes((root / "train" / "dog" / f"{i:04d}.png").read_bytes())
    load_one_class("cifar10", data_dir, "cat", size=32)
    manifest = json.loads((isolated_env / "cifar10" / "32px" / "manifest.json").read_text())
    assert len(manifest["duplicates_across_splits"]) == 9
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note: ")]
    assert len(notes) == 6 and "and 4 more groups of byte-identical files (duplicates_across_splits)" in notes[-1]


@pytest.mark.parametrize("link", [("train", "cat", "train", "dog"), ("test", "cat", "train", "cat")])
def test_a_class_folder_that_links_to_another_is_refused_in_one_line(
    data_dir: Path, isolated_env: Path, capsys: pytest.CaptureFixture[str], link: tuple[str, str, str, str]
) -> None:
    """Issue 57, item 8: a class folder that is a symlink to another class (or to its training folder) is one
    refusal naming both folders, not a note per image; nothing is prepared, and `con2 data list` shows the
    broken copy's source as the image folder."""
    root = make_cifar10_folder(data_dir)
    split, cls, to_split, to_cls = link
    shutil.rmtree(root / split / cls)
    (root / split / cls).symlink_to(root / to_split / to_cls, target_is_directory=True)
    with pytest.raises(DataError) as err:
        load_one_class("cifar10", data_dir, "cat", size=32)
    message = str(err.value)
    assert "\n" not in message and "is the same folder as" in message, message
    assert f"{split}/{cls}" in message and f"{to_split}/{to_cls}" in message
    assert "note: " not in capsys.readouterr().err
    assert not (isolated_env / "cifar10" / "32px" / "manifest.json").exists()
    status = dataset_status("cifar10", data_dir)
    assert not status["present"] and status["problem"] == message and status["source"] == FORMAT
