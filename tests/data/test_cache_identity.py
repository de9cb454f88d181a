"""The prepared cache is keyed by its source's content, and ``split_sha256`` names the images loaded.

Two different sources of one dataset and size, with equal names, sizes and mtimes (issue 32, item 2):
the second ``data_dir`` must train on its own images, under another ``split_sha256``; the same bytes
in another folder give the same ``split_sha256`` (paired tests pair them). A cache ``.lock`` that is
a FIFO, a device or a link is refused at once (item 15).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from data_fixtures import isolated_env, make_br35h  # noqa: F401  (isolated_env: autouse fixture)
from PIL import Image

from con2.data import cache as cache_module
from con2.data import load_one_class
from con2.data.cache import cache_dir

COUNTS = {"train": [9, 11], "val": [2, 2], "test": [7, 8]}
MTIME_NS = 1_600_000_000_123_456_789


def write_npz(path: Path, seed: int) -> dict[str, np.ndarray]:
    """An uncompressed MedMNIST npz (so two seeds give files of one size) with labels ``(N, 1)``."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, Any] = {}
    for split in ("train", "val", "test"):
        labels = np.concatenate([np.full(n, c, dtype=np.uint8) for c, n in enumerate(COUNTS[split])])
        arrays[f"{split}_images"] = rng.integers(0, 256, size=(len(labels), 28, 28), dtype=np.uint8)
        arrays[f"{split}_labels"] = labels[:, None]
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    os.utime(path, ns=(MTIME_NS, MTIME_NS))
    return arrays


def expected(arrays: dict[str, np.ndarray], ids: list[str]) -> np.ndarray:
    """The images of ``ids`` (``split/index``) in the npz, with the channel axis the loader adds."""
    return np.stack([arrays[f"{i.split('/')[0]}_images"][int(i.split("/")[1])] for i in ids])[..., None]


def load(data_dir: Path):
    return load_one_class("breastmnist", data_dir, size=28)


def test_two_npz_files_of_equal_name_size_and_mtime_give_their_own_images(tmp_path: Path) -> None:
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_arrays = write_npz(a_dir / "breastmnist.npz", seed=1)
    b_arrays = write_npz(b_dir / "breastmnist.npz", seed=2)
    sa, sb = (d / "breastmnist.npz" for d in (a_dir, b_dir))
    assert (sa.stat().st_size, sa.stat().st_mtime_ns) == (sb.stat().st_size, sb.stat().st_mtime_ns)
    assert sa.read_bytes() != sb.read_bytes()

    a = load(a_dir)
    b = load(b_dir)
    assert np.array_equal(b.train, expected(b_arrays, b.manifest["train_ids"]))
    assert np.array_equal(b.test, expected(b_arrays, b.manifest["test_ids"]))
    assert not np.array_equal(b.train, expected(a_arrays, b.manifest["train_ids"]))
    assert a.manifest["train_ids"] == b.manifest["train_ids"]  # the same ids...
    assert a.manifest["split_sha256"] != b.manifest["split_sha256"]  # ...but other images
    again = load(a_dir)  # back to the first folder: its own images again
    assert np.array_equal(again.train, expected(a_arrays, again.manifest["train_ids"]))
    assert again.manifest["split_sha256"] == a.manifest["split_sha256"]


def test_the_same_bytes_in_another_folder_give_the_same_split_sha256(tmp_path: Path) -> None:
    write_npz(tmp_path / "a" / "breastmnist.npz", seed=1)
    write_npz(tmp_path / "b" / "breastmnist.npz", seed=1)
    assert load(tmp_path / "a").manifest["split_sha256"] == load(tmp_path / "b").manifest["split_sha256"]


def test_an_in_place_rewrite_that_restores_size_and_mtime_is_noticed(tmp_path: Path) -> None:
    """Same path, same inode, same size, same mtime, other bytes: prepared again from the new bytes."""
    path = tmp_path / "a" / "breastmnist.npz"
    write_npz(path, seed=1)
    first = load(path.parent)
    other = tmp_path / "other.npz"
    new_arrays = write_npz(other, seed=3)
    inode = path.stat().st_ino
    with open(path, "r+b") as f:  # rewrite in place: the inode stays
        f.write(other.read_bytes())
    os.utime(path, ns=(MTIME_NS, MTIME_NS))
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (inode, MTIME_NS)
    second = load(path.parent)
    assert np.array_equal(second.train, expected(new_arrays, second.manifest["train_ids"]))
    assert second.manifest["split_sha256"] != first.manifest["split_sha256"]


def bmp(path: Path, value: int) -> None:
    """A 10x7 grey image stored as BMP under ``path`` (a ``.jpg`` name): every value gives one file size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((7, 10), value, dtype=np.uint8)).save(path, format="BMP")
    os.utime(path, ns=(MTIME_NS, MTIME_NS))


def test_two_image_folders_of_equal_listing_sizes_and_mtimes_give_their_own_images(tmp_path: Path) -> None:
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    for d, value in ((a_dir, 40), (b_dir, 200)):
        make_br35h(d, n_no=10, n_yes=6)
        for p in sorted((d / "br35h" / "no").iterdir()):
            bmp(p, value)
        for p in (d / "br35h").rglob("*"):
            os.utime(p, ns=(MTIME_NS, MTIME_NS))
    a = load_one_class("br35h", a_dir, seed=0, size=8)
    b = load_one_class("br35h", b_dir, seed=0, size=8)
    assert a.manifest is not None and b.manifest is not None
    assert a.manifest["train_ids"] == b.manifest["train_ids"]
    assert np.all(a.train == 40) and np.all(b.train == 200)
    assert a.manifest["split_sha256"] != b.manifest["split_sha256"]


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory"])
def test_a_cache_lock_that_is_no_regular_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    """``con2 data get`` with a FIFO (or a link, or a folder) as the cache's ``.lock``: one error line, exit 2."""
    data = tmp_path / "data"
    write_npz(data / "medmnist" / "breastmnist.npz", seed=1)
    lock = cache_dir(data, "breastmnist", 28) / ".lock"
    lock.parent.mkdir(parents=True)
    target = tmp_path / "elsewhere"
    target.write_text("precious\n")
    if kind == "fifo":
        os.mkfifo(lock)
    elif kind == "symlink":
        lock.symlink_to(target)
    else:
        lock.mkdir()
    cmd = [sys.executable, "-m", "con2", "data", "get", "breastmnist", "--data-dir", str(data), "--size", "28"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=10, env=env)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("con2: error: "), proc.stderr
    assert str(lock) in lines[0] and "Fix: " in lines[0]
    assert target.read_text() == "precious\n"
    assert not (lock.parent / "images.npy").exists()


def test_the_same_bytes_in_another_folder_reuse_the_cache_and_then_read_no_source_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key is the content: a copy elsewhere reuses the prepared images (hashing its file once), and
    the manifest then remembers that file, so the next load reads none of the source's bytes."""
    write_npz(tmp_path / "a" / "breastmnist.npz", seed=1)
    write_npz(tmp_path / "b" / "breastmnist.npz", seed=1)
    first = load(tmp_path / "a")
    images = cache_dir(tmp_path / "a", "breastmnist", 28) / "images.npy"
    before = images.stat().st_ino, images.stat().st_mtime_ns
    second = load(tmp_path / "b")
    assert (images.stat().st_ino, images.stat().st_mtime_ns) == before  # not prepared again
    assert second.manifest["source"]["location"] == str(tmp_path / "b" / "breastmnist.npz")
    assert second.manifest["split_sha256"] == first.manifest["split_sha256"]

    def no_read(path, algo="md5", chunk=0):
        raise AssertionError(f"{path} was read")

    monkeypatch.setattr(cache_module, "file_digest", no_read)
    assert load(tmp_path / "b").manifest["split_sha256"] == first.manifest["split_sha256"]
