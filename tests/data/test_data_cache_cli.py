"""The prepared cache (memmaps, checksums, invalidation, atomicity), the pure split functions,
the preprocessing recipes and the ``con2 data`` commands."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from data_fixtures import (  # noqa: F401  (isolated_env is autouse)
    data_dir,
    isolated_env,
    make_br35h,
    make_cifar10,
    make_melanoma,
    no_partials,
    write_image,
    write_medmnist_npz,
)
from PIL import Image

from con2.cli.data import add_data_subcommands, main
from con2.data import (
    DataError,
    DatasetInfo,
    DatasetMissing,
    Source,
    find_source,
    load_one_class,
    prepare_dataset,
    register_dataset,
    register_source,
)
from con2.data import cache as cache_mod
from con2.data.cache import Found, SourceTable, cache_root, take
from con2.data.images import preprocess
from con2.data.splits import hash_rank, holdout_mask, one_class_split

MED = {"train": [3, 5], "val": [1, 1], "test": [2, 4]}


# --------------------------------------------------------------------------- cache


def test_cache_is_reused_and_checksummed(data_dir: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_melanoma(data_dir)
    first = prepare_dataset("melanoma", data_dir, 16)
    manifest = json.loads((isolated_env / "melanoma" / "16px" / "manifest.json").read_text())
    assert manifest["images_sha256"] == first.manifest["images_sha256"]
    assert manifest["recipe"] == "resize" and manifest["shape"] == [18, 16, 16, 3]
    assert len(manifest["samples"]["id"]) == 18 and manifest["source"]["fingerprint"]

    def fail(*a, **k):
        raise AssertionError("prepared again")

    monkeypatch.setattr("con2.data.source.prepare", fail)
    again = prepare_dataset("melanoma", data_dir, 16)
    assert isinstance(again.images, np.memmap)
    np.testing.assert_array_equal(np.asarray(again.images), np.asarray(first.images))


def test_cache_invalidated_by_source_change(data_dir: Path) -> None:
    root = make_melanoma(data_dir)
    prepare_dataset("melanoma", data_dir, 16)
    write_image(root / "train" / "benign" / "melanoma_999.jpg", 999)
    d = load_one_class("melanoma", data_dir, size=16)
    assert len(d.train) == 7


def test_damaged_cache_is_rebuilt(data_dir: Path, isolated_env: Path) -> None:
    write_medmnist_npz(data_dir / "breastmnist.npz", MED)
    good = np.array(load_one_class("breastmnist", data_dir).test)  # a copy: the memmap sees file edits
    images = isolated_env / "breastmnist" / "28px" / "images.npy"
    raw = bytearray(images.read_bytes())
    raw[-10:] = b"\xff" * 10
    images.write_bytes(bytes(raw))  # same size, new mtime: the sha256 no longer matches
    again = load_one_class("breastmnist", data_dir)
    np.testing.assert_array_equal(np.asarray(again.test), good)
    images.write_bytes(bytes(raw[:-100]))  # truncated
    np.testing.assert_array_equal(np.asarray(load_one_class("breastmnist", data_dir).test), good)


def test_interrupted_preparation_leaves_nothing(
    data_dir: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_br35h(data_dir)
    calls = {"n": 0}
    real = cache_mod.preprocess

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(cache_mod, "preprocess", flaky)
    with pytest.raises(KeyboardInterrupt):
        prepare_dataset("br35h", data_dir, 16)
    folder = isolated_env / "br35h" / "16px"
    assert not (folder / "images.npy").exists() and not (folder / "manifest.json").exists()
    assert not no_partials(isolated_env)
    monkeypatch.setattr(cache_mod, "preprocess", real)
    assert len(prepare_dataset("br35h", data_dir, 16).images) == 16


def test_split_manifest_written(data_dir: Path, isolated_env: Path) -> None:
    make_br35h(data_dir)
    d = load_one_class("br35h", data_dir, seed=7, size=16)
    on_disk = json.loads((isolated_env / "br35h" / "16px" / "splits" / "no__seed7.json").read_text())
    assert on_disk == d.manifest
    assert on_disk["seed"] == 7 and on_disk["n_train"] == len(d.train) and len(on_disk["test_labels"]) == len(d.test)
    assert on_disk["images_sha256"] and on_disk["split_sha256"]


def test_the_cache_is_the_users_never_the_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19, point 12: prepared data go to $CON2_CACHE_DIR, else $XDG_CACHE_HOME/con2/prepared
    (~/.cache/con2/prepared), for a writable data folder too; nothing is written into data_dir."""
    monkeypatch.delenv("CON2_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    rw, ro = tmp_path / "rw", tmp_path / "ro"
    for d in (rw, ro):
        write_medmnist_npz(d / "medmnist" / "breastmnist.npz", MED)
    assert cache_root(rw) == cache_root(ro) == tmp_path / "xdg" / "con2" / "prepared"
    os.chmod(ro, 0o555)
    try:
        for d in (rw, ro):
            before = sorted(p.relative_to(d) for p in d.rglob("*"))
            assert len(load_one_class("breastmnist", d).train) == 5
            assert sorted(p.relative_to(d) for p in d.rglob("*")) == before  # the data folder untouched
    finally:
        os.chmod(ro, 0o755)
    assert (tmp_path / "xdg" / "con2" / "prepared" / "breastmnist" / "28px" / "manifest.json").is_file()
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/xdg")  # not absolute: ignored, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root(rw) == tmp_path / "home" / ".cache" / "con2" / "prepared"
    monkeypatch.setenv("CON2_CACHE_DIR", "rel/cache")
    assert cache_root(rw) == Path.cwd() / "rel" / "cache"


def test_take_is_a_view_when_contiguous() -> None:
    arr = np.arange(10)
    assert np.shares_memory(take(arr, np.array([2, 3, 4])), arr)
    np.testing.assert_array_equal(take(arr, np.array([1, 5])), [1, 5])
    assert take(arr, np.array([], dtype=np.int64)).shape == (0,)


# --------------------------------------------------------------------------- splits (pure)


def test_hash_rank_is_a_seeded_permutation() -> None:
    ids = [f"x{i}" for i in range(50)]
    a, b, c = hash_rank(ids, 0), hash_rank(ids, 0), hash_rank(ids, 1)
    assert sorted(a.tolist()) == list(range(50))
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()
    # depends on ids, not on their order
    rev = hash_rank(ids[::-1], 0)
    assert [ids[::-1][i] for i in rev] == [ids[i] for i in a]


def test_holdout_mask_fraction_per_class() -> None:
    ids = [f"s{i}" for i in range(30)]
    classes = [0] * 10 + [1] * 20
    held = holdout_mask(ids, classes, 0.2, 3)
    assert held[:10].sum() == 2 and held[10:].sum() == 4


def test_one_class_split_protocols() -> None:
    ids = [f"s{i}" for i in range(8)]
    splits = ["train", "train", "train", "val", "test", "test", "test", "train"]
    classes = [0, 1, 0, 0, 0, 1, 1, 1]
    tr, te, lab = one_class_split(ids, splits, classes, [0], "official")
    assert tr.tolist() == [0, 2] and te.tolist() == [4, 5, 6] and lab.tolist() == [0, 1, 1]
    tr, te, lab = one_class_split(ids * 1, ["all"] * 8, classes, [1], "holdout", seed=0, test_fraction=0.25)
    assert len(tr) == 3 and set(te) >= {0, 2, 3, 4} and lab.sum() == 4 and (lab == 0).sum() == 1
    with pytest.raises(ValueError):
        one_class_split(ids, splits, classes, [0], "nope")


# --------------------------------------------------------------------------- preprocessing


def test_resize_crop_recipe_scales() -> None:
    img = Image.fromarray(np.zeros((300, 400, 3), np.uint8))
    assert preprocess(img, "resize_crop", 224, 3).shape == (224, 224, 3)
    assert preprocess(img, "short_crop", 128, 1).shape == (128, 128, 1)
    assert preprocess(img, "resize", 32, 3).shape == (32, 32, 3)
    # centre crop keeps the centre: a bright central stripe survives, the border is cut
    arr = np.zeros((256, 512), np.uint8)
    arr[:, 240:272] = 255
    out = preprocess(arr, "resize_crop", 224, 1)[..., 0]
    assert out[:, 112].mean() > 200 and out[:, 0].mean() < 10
    # resize 256 then crop 224 at size 224: a 256x256 image loses 16 px each side
    ramp = np.tile(np.arange(256, dtype=np.uint8), (256, 1))
    assert preprocess(ramp, "resize_crop", 224, 1)[0, 0, 0] == 16


def test_native_recipe_keeps_arrays() -> None:
    arr = np.random.default_rng(0).integers(0, 256, (28, 28, 1), dtype=np.uint8)
    np.testing.assert_array_equal(preprocess(arr, "native", 28, 1), arr)


# --------------------------------------------------------------------------- CLI


def test_cli_list(data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    write_medmnist_npz(data_dir / "medmnist" / "breastmnist.npz", MED)
    root = make_melanoma(data_dir)
    (root / "test" / "benign").rename(root / "test" / "benign_old")
    assert main(["data", "list", "--data-dir", str(data_dir)]) == 0
    out = capsys.readouterr().out
    rows = {
        line.split()[0]: line.split()
        for line in out.splitlines()
        if line and not line.startswith((" ", "data_dir", "cache:", "name", "Looked", "To get", "*"))
    }
    assert rows["breastmnist"][3] == "yes" and rows["digits"][3] == "yes"
    assert rows["octmnist"][3] == "no" and rows["melanoma"][3] == "BROKEN"
    assert len(rows) == 13
    assert "kvasir: `con2 data get kvasir" in out and "KAGGLE_USERNAME" in out
    assert "test/benign is missing" in out
    assert "gdown 1B5c39Fc3haOPzlehzmpTLz6xLtGyKEy4" in out


def test_cli_list_says_where_prepared_arrays_come_from(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Issue 36, point 11: arrays prepared from another data folder show in a folder without the source
    (the cache is user-wide): marked, and the list names the cache."""
    write_medmnist_npz(data_dir / "medmnist" / "breastmnist.npz", MED)
    prepare_dataset("breastmnist", data_dir, 28)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["data", "list", "--data-dir", str(empty)]) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.startswith("breastmnist"))
    assert row[3] == "no" and row[4] == "28px*"
    assert f"cache:    {cache_root(empty)}" in out and "shared by every checkout" in out
    assert "* prepared from another data folder" in out
    assert main(["data", "list", "--data-dir", str(data_dir)]) == 0
    here = capsys.readouterr().out
    assert next(line.split() for line in here.splitlines() if line.startswith("breastmnist"))[4] == "28px"
    assert "* prepared from another data folder" not in here


def test_cli_get_local(data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    make_cifar10(data_dir)
    assert main(["data", "get", "CIFAR-10", "--data-dir", str(data_dir), "--size", "32", "--size", "8"]) == 0
    out = capsys.readouterr().out
    assert "cifar10 32px: 70 images (32, 32, 3)" in out and "cifar10 8px: 70 images (8, 8, 3)" in out
    assert "normal class airplane: 5 train, test 2 normal + 18 anomalous" in out
    assert main(["data", "list", "--data-dir", str(data_dir)]) == 0
    assert "8px,32px" in capsys.readouterr().out


def test_cli_get_errors(data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["data", "get", "nosuch", "--data-dir", str(data_dir)]) == 2
    assert "unknown dataset 'nosuch'" in capsys.readouterr().err
    assert main(["data", "get", "kvasir", "--data-dir", str(data_dir)]) == 2
    err = capsys.readouterr().err
    assert "kvasir: no Kaggle credentials" in err and "kaggle.json" in err
    assert main(["data", "get", "breastmnist", "--data-dir", str(data_dir), "--no-download"]) == 2
    assert "breastmnist.npz not found" in capsys.readouterr().err


def test_add_data_subcommands_sets_func() -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="con2")
    add_data_subcommands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["data", "get", "breastmnist", "--data-dir", "d", "--size", "64"])
    assert callable(args.func) and args.name == "breastmnist" and args.size == [64] and args.data_dir == "d"
    assert callable(parser.parse_args(["data", "list"]).func)


class NpyPair(Source):
    """A source kind the package does not know: ``<data_dir>/<name>/images.npy`` + ``labels.npy``."""

    kind = "npy-pair"

    def find(self, info: DatasetInfo, data_dir: Path, size: int) -> Found:
        path = data_dir / info.name / "images.npy"
        if not path.is_file():
            raise DatasetMissing(f"{info.name}: {path} not found. {self.how_to_get(info, data_dir)}")
        st = path.stat()
        return Found(path, f"{st.st_size}:{st.st_mtime_ns}", data_dir)

    def table(self, info: DatasetInfo, found: Found, size: int) -> SourceTable:
        images = np.load(found.location)
        labels = np.load(Path(found.location).with_name("labels.npy")).tolist()
        ids = [f"all/{i}" for i in range(len(images))]
        return SourceTable(
            info.name,
            Path(found.location),
            found.fingerprint,
            info.classes,
            ids,
            ["all"] * len(ids),
            labels,
            lambda i: images[i],
            info.recipe,
            info.channels,
        )

    def download(self, info: DatasetInfo, data_dir: Path, size: int, progress: bool = True) -> None:
        raise DataError(f"{info.name}: no download. {self.how_to_get(info, data_dir)}")

    def how_to_get(self, info: DatasetInfo, data_dir: Path) -> str:
        return f"Fix: save images.npy and labels.npy in {data_dir / info.name}/"


def test_a_registered_source_is_listed_and_loaded(data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """A source kind and a dataset registered from outside: `con2 data list` and `load_one_class` need nothing else."""
    from con2.data import registry

    monkeypatch.setattr(registry, "SOURCES", dict(registry.SOURCES))
    monkeypatch.setattr(registry, "DATASETS", dict(registry.DATASETS))
    register_source(NpyPair())
    register_dataset(
        DatasetInfo(
            "toy",
            "Toy",
            "smoke",
            "npy-pair",
            ("a", "b"),
            ("a",),
            protocol="holdout",
            recipe="resize",
            channels=1,
            paper_size=8,
            in_paper=False,
        )
    )
    assert main(["data", "list", "--data-dir", str(data_dir)]) == 0
    out = capsys.readouterr().out
    assert "toy                    smoke    npy-pair     no" in out
    assert f"toy: save images.npy and labels.npy in {data_dir / 'toy'}/" in out
    rng = np.random.default_rng(0)
    (data_dir / "toy").mkdir()
    np.save(data_dir / "toy" / "images.npy", rng.integers(0, 256, (30, 8, 8, 1), dtype=np.uint8))
    np.save(data_dir / "toy" / "labels.npy", np.array([0] * 20 + [1] * 10))
    d = load_one_class("toy", data_dir, "a", seed=0, size=8)
    assert len(d.train) + d.n_normal_test == 20 and d.n_anomalous == 10 and d.train.shape[1:] == (8, 8, 1)
    assert main(["data", "list", "--data-dir", str(data_dir)]) == 0
    assert "toy                    smoke    npy-pair     yes      8px" in capsys.readouterr().out
    with pytest.raises(ValueError, match="registered twice"):
        register_source(type("Other", (NpyPair,), {})())
    with pytest.raises(ValueError, match="no source of kind 'nosuch'"):
        register_dataset(DatasetInfo("toy2", "Toy", "smoke", "nosuch", ("a",), ("a",)))


def test_every_dataset_has_a_registered_source_and_find_source_is_offline(data_dir: Path) -> None:
    from con2.data import DATASETS, SOURCES

    assert set(SOURCES) == {"medmnist", "kaggle", "torchvision", "manual", "embedded"}
    assert {info.source for info in DATASETS.values()} == set(SOURCES)
    with pytest.raises(DatasetMissing, match="breastmnist.npz not found"):
        find_source("breastmnist", data_dir, 28)
    write_medmnist_npz(data_dir / "breastmnist.npz", MED)
    assert find_source("breastmnist", data_dir, 28).location == data_dir.absolute() / "breastmnist.npz"
    assert find_source("digits", data_dir, 8).location == "scikit-learn"  # embedded: present without files
    assert prepare_dataset("digits", data_dir, 8).directory is None and not (cache_root(data_dir) / "digits").exists()


def test_cli_get_embedded(data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["data", "get", "digits", "--data-dir", str(data_dir)]) == 0
    out = capsys.readouterr().out
    assert "digits 8px: 1797 images (8, 8, 1) in memory (nothing to cache)" in out
    assert "source embedded (no files)" in out
    assert "normal class 0: 119 train, test 59 normal + 540 anomalous" in out


def test_unwritable_cache_is_a_clear_error(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_medmnist_npz(data_dir / "breastmnist.npz", MED)
    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("")
    monkeypatch.setenv("CON2_CACHE_DIR", str(blocker))
    with pytest.raises(DataError, match=r"breastmnist: cannot write the prepared cache .*CON2_CACHE_DIR"):
        load_one_class("breastmnist", data_dir)


def test_parallel_preparations_agree(data_dir: Path, isolated_env: Path) -> None:
    """Two processes preparing the same cache at once: both succeed, one cache results."""
    import subprocess
    import sys

    make_br35h(data_dir, n_no=30, n_yes=10)
    code = (
        "import sys; from con2.data import load_one_class; "
        f"d = load_one_class('br35h', {str(data_dir)!r}, size=24); print(d.manifest['split_sha256'])"
    )
    env = {**os.environ, "CON2_CACHE_DIR": str(isolated_env)}
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env, text=True) for _ in range(2)
    ]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs) and outs[0] == outs[1] and len(outs[0]) == 64
    assert not no_partials(isolated_env)


def test_cli_list_says_where_it_looked_and_how_to_look_elsewhere(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Issue 46, point 7: without --data-dir, `con2 data list` says it looked in ./data, the default, and how
    to point it at data already on disk elsewhere, before offering downloads."""
    write_medmnist_npz(data_dir / "medmnist" / "breastmnist.npz", MED)
    monkeypatch.delenv("CON2_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    here = tmp_path.resolve() / "data"
    assert (
        out.splitlines()[0] == f"data_dir: {here}  (the default, ./data: neither --data-dir nor $CON2_DATA_DIR given)"
    )
    hint = f"Looked only in {here}. Data already on disk elsewhere: `con2 data list --data-dir DIR` or "
    hint += "`export CON2_DATA_DIR=DIR`"
    assert hint in out and out.index(hint) < out.index("To get what is missing:")
    monkeypatch.setenv("CON2_DATA_DIR", str(data_dir))
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"data_dir: {data_dir.resolve()}  ($CON2_DATA_DIR)"
    assert next(line.split() for line in out.splitlines() if line.startswith("breastmnist"))[3] == "yes"
