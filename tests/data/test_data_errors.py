"""Bad input gives one clear DataError (dataset, file, fix) and leaves no partial file behind;
the real download code paths run with the network replaced at its boundary."""

from __future__ import annotations

import errno
import hashlib
import io
import urllib.error
from pathlib import Path

import numpy as np
import pytest
from data_fixtures import (  # noqa: F401  (isolated_env is autouse)
    data_dir,
    dogs_cats_competition_zip,
    isolated_env,
    make_br35h,
    make_cifar10,
    make_imagenet30,
    make_kvasir,
    make_melanoma,
    make_pneumonia,
    no_partials,
    tar_gz,
    write_medmnist_npz,
    zip_tree,
)

from con2.data import (
    DataError,
    DatasetMissing,
    kaggle_source,
    load_one_class,
    medmnist_source,
    prepare_dataset,
)

MED_COUNTS = {"train": [3, 5], "val": [1, 1], "test": [2, 4]}


def truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


# --------------------------------------------------------------------------- names


def test_unknown_dataset() -> None:
    with pytest.raises(DataError, match=r"unknown dataset 'imagenet31'.*imagenet30.*con2 data list"):
        load_one_class("imagenet31", None)


def test_unknown_normal_class(data_dir: Path) -> None:
    with pytest.raises(DataError, match=r"cifar10: unknown normal class 'zebra'.*airplane"):
        load_one_class("cifar10", data_dir, normal_class="zebra")


def test_missing_dataset_names_the_command(data_dir: Path) -> None:
    with pytest.raises(
        DatasetMissing,
        match=r"kvasir: not found.*con2 data get kvasir.*kaggle datasets download -d meetnagadia/kvasir-dataset",
    ):
        load_one_class("kvasir", data_dir)
    with pytest.raises(DatasetMissing, match=r"imagenet30: .*gdown 1B5c39Fc3haOPzlehzmpTLz6xLtGyKEy4.*one_class_train"):
        load_one_class("imagenet30", data_dir)
    with pytest.raises(DatasetMissing, match=r"cifar100: cifar-100-python/ not found.*con2 data get cifar100"):
        load_one_class("cifar100", data_dir)


# --------------------------------------------------------------------------- damaged files


def test_truncated_npz(data_dir: Path) -> None:
    path = write_medmnist_npz(data_dir / "medmnist" / "breastmnist.npz", MED_COUNTS)
    truncate(path)
    with pytest.raises(DataError) as err:
        load_one_class("breastmnist", data_dir)
    msg = str(err.value)
    assert "breastmnist" in msg and str(path) in msg and "truncated" in msg and "con2 data get breastmnist" in msg


def test_npz_with_wrong_keys(data_dir: Path) -> None:
    np.savez(data_dir / "breastmnist.npz", images=np.zeros((2, 28, 28), np.uint8))
    with pytest.raises(DataError, match=r"breastmnist: .*breastmnist\.npz lacks keys"):
        load_one_class("breastmnist", data_dir)


def test_truncated_kaggle_zip_leaves_nothing(data_dir: Path, tmp_path: Path) -> None:
    src = make_melanoma(tmp_path / "src").parent
    (data_dir / "melanoma").mkdir()
    archive = zip_tree(src, data_dir / "melanoma" / "melanoma-skin-cancer-dataset-of-10000-images.zip")
    truncate(archive, 0.6)
    with pytest.raises(DataError) as err:
        load_one_class("melanoma", data_dir)
    msg = str(err.value)
    assert "melanoma" in msg and str(archive) in msg and "con2 data get melanoma" in msg
    assert sorted(p.name for p in (data_dir / "melanoma").iterdir()) == [archive.name]
    assert not no_partials(data_dir)


def test_truncated_dogs_cats_zip(data_dir: Path) -> None:
    from data_fixtures import make_dogs_cats

    folder = make_dogs_cats(data_dir)
    truncate(folder / "train.zip")
    with pytest.raises(DataError, match=r"dogs-vs-cats: .*train\.zip is truncated.*con2 data get dogs-vs-cats"):
        load_one_class("dogs-vs-cats", data_dir)


def test_truncated_cifar_pickle(data_dir: Path, isolated_env: Path) -> None:
    root = make_cifar10(data_dir)
    truncate(root / "data_batch_3")
    with pytest.raises(DataError, match=r"cifar10: .*data_batch_3 is not the official file .*con2 data get cifar10"):
        load_one_class("cifar10", data_dir, size=32)
    assert not (isolated_env / "cifar10" / "32px" / "manifest.json").exists()


class WritesAFile:
    """A pickle payload: unpickling it with ``pickle.load`` creates ``path`` (as code in a hostile file would)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def hostile_pickle(path: Path, marker: Path) -> None:
    import pickle

    proof = marker.with_name(f"{marker.name}-proof")
    pickle.loads(pickle.dumps(WritesAFile(proof), protocol=2)).close()
    assert proof.exists()  # the payload is real: plain pickle runs it
    path.write_bytes(pickle.dumps({"data": WritesAFile(marker), "labels": [0]}, protocol=2))


def test_cifar_file_not_matching_the_official_md5_is_never_unpickled(data_dir: Path, tmp_path: Path) -> None:
    from con2.data import cifar_source

    root = make_cifar10(data_dir)
    marker = tmp_path / "PWNED"
    hostile_pickle(root / "data_batch_2", marker)  # replaces a trusted file: its md5 is no longer the listed one
    with pytest.raises(DataError) as err:
        load_one_class("cifar10", data_dir, size=32)
    msg = str(err.value)
    assert f"{root / 'data_batch_2'} is not the official file (md5 " in msg and "so it is not opened" in msg
    assert f"expected {cifar_source.OFFICIAL_MD5['cifar10']['data_batch_2']}" in msg and "con2 data get cifar10" in msg
    assert not marker.exists()


def test_cifar_unpickler_refuses_globals_a_batch_does_not_hold(data_dir: Path, tmp_path: Path) -> None:
    """Defence in depth: even a file whose md5 is listed builds only numpy arrays and plain values."""
    from data_fixtures import trust_cifar

    root = make_cifar10(data_dir)
    marker = tmp_path / "PWNED"
    hostile_pickle(root / "data_batch_2", marker)
    trust_cifar("cifar10", root / "data_batch_2")
    with pytest.raises(
        DataError, match=r"data_batch_2 is truncated or not a CIFAR pickle \(global io\.open is not part"
    ):
        load_one_class("cifar10", data_dir, size=32)
    assert not marker.exists()


def test_cifar_archive_not_matching_the_official_md5_is_not_extracted(data_dir: Path, tmp_path: Path) -> None:
    tar_gz(make_cifar10(tmp_path / "src"), data_dir / "cifar-10-python.tar.gz", trusted=False)
    with pytest.raises(DataError, match=r"cifar-10-python\.tar\.gz is not the official file \(md5 "):
        load_one_class("cifar10", data_dir, size=32)
    assert sorted(p.name for p in data_dir.iterdir()) == ["cifar-10-python.tar.gz"] and not no_partials(data_dir)


def test_cifar_checksum_table_is_torchvisions() -> None:
    import torchvision.datasets as tvd
    from data_fixtures import _OFFICIAL_MD5  # the real table (each test sees a copy)

    from con2.data import cifar_source

    for name, cls in (("cifar10", tvd.CIFAR10), ("cifar100", tvd.CIFAR100)):
        expected = {cls.filename: cls.tgz_md5, **dict(cls.train_list), **dict(cls.test_list)}
        expected[cls.meta["filename"]] = cls.meta["md5"]
        assert _OFFICIAL_MD5[name] == expected
        assert cifar_source.SPECS[name].folder == cls.base_folder and cifar_source.SPECS[name].archive == cls.filename
    assert cifar_source.OFFICIAL_MD5 is not _OFFICIAL_MD5


def refusing(real, blocked: Path):
    """``real(path, ...)``, except that reading ``blocked`` fails as it does for a user without read
    permission (we may run as root, which ignores permission bits)."""

    def wrapper(path, *args, **kwargs):
        if path == blocked:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    return wrapper


@pytest.mark.parametrize("what", ["class folder", "image"])
def test_unreadable_data_is_neither_a_write_failure_nor_damage(
    what: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from con2.data import folders

    root = make_melanoma(data_dir)
    if what == "class folder":
        blocked = root / "test" / "benign"
        monkeypatch.setattr(Path, "iterdir", refusing(Path.iterdir, blocked))
    else:
        blocked = sorted((root / "train" / "benign").iterdir())[0]
        monkeypatch.setattr(folders, "open_image", refusing(folders.open_image, blocked))
    with pytest.raises(DataError) as err:
        load_one_class("melanoma", data_dir)
    msg = str(err.value)
    assert msg.startswith(f"melanoma: cannot read {blocked}: permission denied. Fix: make it readable"), msg
    assert "do not delete it" in msg and "write" not in msg and "decode" not in msg


def test_missing_cifar_batch(data_dir: Path) -> None:
    root = make_cifar10(data_dir)
    (root / "data_batch_5").unlink()
    with pytest.raises(DataError, match=r"cifar10: .*data_batch_5 is missing"):
        load_one_class("cifar10", data_dir, size=32)


def test_missing_class_directory(data_dir: Path) -> None:
    root = make_melanoma(data_dir)
    import shutil

    shutil.rmtree(root / "test" / "malignant")
    with pytest.raises(DataError) as err:
        load_one_class("melanoma", data_dir)
    msg = str(err.value)
    assert "melanoma" in msg and str(root / "test" / "malignant") in msg and "missing" in msg
    assert "con2 data get melanoma" in msg


def test_missing_class_directory_imagenet30(data_dir: Path) -> None:
    import shutil

    root = make_imagenet30(data_dir, n_train=1, n_test=1)
    shutil.rmtree(root / "one_class_test" / "tank")
    with pytest.raises(DataError, match=r"imagenet30: class folder .*one_class_test/tank is missing.*gdown"):
        load_one_class("imagenet30", data_dir, normal_class="acorn")


def test_empty_class_directory(data_dir: Path) -> None:
    root = make_br35h(data_dir)
    for p in (root / "yes").iterdir():
        p.unlink()
    with pytest.raises(DataError, match=r"br35h: class folder .*yes holds no images"):
        load_one_class("br35h", data_dir)


def test_undecodable_image_leaves_no_cache(data_dir: Path, isolated_env: Path) -> None:
    root = make_kvasir(data_dir, per_class=2)
    bad = next((root / "polyps").iterdir())
    bad.write_bytes(b"not a jpeg")
    with pytest.raises(DataError, match=rf"kvasir: cannot decode polyps/{bad.name}"):
        load_one_class("kvasir", data_dir)
    cache = isolated_env / "kvasir" / "28px"
    assert not (cache / "images.npy").exists() and not (cache / "manifest.json").exists()
    assert not no_partials(isolated_env)


# --------------------------------------------------------------------------- Kaggle downloads


class FakeKaggleApi:
    """Stands in for ``KaggleApi`` after authentication; ``serve`` is the zip it 'downloads'."""

    def __init__(self, serve: Path | None = None, error: BaseException | None = None) -> None:
        self.serve, self.error, self.calls = serve, error, []

    def _download(self, ref: str, path: str) -> None:
        self.calls.append(ref)
        if self.error is not None:
            raise self.error
        assert self.serve is not None
        (Path(path) / self.serve.name).write_bytes(self.serve.read_bytes())

    def dataset_download_files(self, dataset, path=None, force=False, quiet=True, unzip=False, licenses=None):
        self._download(dataset, path)

    def competition_download_files(self, competition, path=None, force=False, quiet=True):
        self._download(competition, path)


def with_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAGGLE_USERNAME", "someone")
    monkeypatch.setenv("KAGGLE_KEY", "0123")


def test_no_kaggle_credentials(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    called = []
    monkeypatch.setattr(kaggle_source, "_kaggle_api", lambda: called.append(1))
    with pytest.raises(DataError) as err:
        prepare_dataset("kvasir", data_dir, 28, download=True)
    msg = str(err.value)
    assert msg.startswith("kvasir: no Kaggle credentials")
    assert "kaggle.json" in msg and "KAGGLE_USERNAME" in msg and "KAGGLE_KEY" in msg
    assert f"con2 data get kvasir --data-dir {data_dir}" in msg
    assert not called and list(data_dir.iterdir()) == []


def test_kaggle_authenticate_system_exit(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with_credentials(monkeypatch)

    def refuse():
        raise SystemExit(1)

    monkeypatch.setattr(kaggle_source, "_kaggle_api", refuse)
    with pytest.raises(DataError, match=r"br35h: Kaggle authentication failed.*kaggle\.json.*KAGGLE_USERNAME"):
        prepare_dataset("br35h", data_dir, 28, download=True)
    assert list(data_dir.iterdir()) == []


def test_kaggle_no_network(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import requests

    with_credentials(monkeypatch)
    api = FakeKaggleApi(error=requests.exceptions.ConnectionError("Max retries exceeded: Name or service not known"))
    monkeypatch.setattr(kaggle_source, "_kaggle_api", lambda: api)
    with pytest.raises(DataError) as err:
        prepare_dataset("pneumonia", data_dir, 28, download=True)
    msg = str(err.value)
    assert msg.startswith("pneumonia: cannot reach Kaggle") and "no network" in msg
    assert "paultimothymooney/chest-xray-pneumonia" in msg and "con2 data get pneumonia" in msg
    assert api.calls == ["paultimothymooney/chest-xray-pneumonia"]
    assert list(data_dir.iterdir()) == []


def test_kaggle_forbidden_competition(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with_credentials(monkeypatch)
    api = FakeKaggleApi(error=RuntimeError("403 Client Error: Forbidden for url"))
    monkeypatch.setattr(kaggle_source, "_kaggle_api", lambda: api)
    with pytest.raises(DataError, match=r"dogs-vs-cats: Kaggle refused.*rules.*competitions/dogs-vs-cats/rules"):
        prepare_dataset("dogs-vs-cats", data_dir, 28, download=True)


def test_kaggle_download_then_load(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with_credentials(monkeypatch)
    src = make_pneumonia(tmp_path / "src").parent  # the zip holds chest_xray/... at its top
    api = FakeKaggleApi(serve=zip_tree(src, tmp_path / "chest-xray-pneumonia.zip"))
    monkeypatch.setattr(kaggle_source, "_kaggle_api", lambda: api)
    prep = prepare_dataset("pneumonia", data_dir, 16, download=True, progress=False)
    assert prep.images.shape[1:] == (16, 16, 1)
    assert (data_dir / "pneumonia" / "chest_xray" / "train" / "NORMAL").is_dir()
    assert not list((data_dir / "pneumonia").glob("*.zip")) and not no_partials(data_dir)
    d = load_one_class("pneumonia", data_dir, size=16)
    assert (len(d.train), d.n_normal_test, d.n_anomalous) == (5, 4, 6)
    prepare_dataset("pneumonia", data_dir, 16, download=True)  # present now: no second download
    assert len(api.calls) == 1


def test_kaggle_download_with_missing_class_leaves_nothing(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    with_credentials(monkeypatch)
    root = make_kvasir(tmp_path / "src", per_class=1)
    shutil.rmtree(root / "esophagitis")
    monkeypatch.setattr(
        kaggle_source,
        "_kaggle_api",
        lambda: FakeKaggleApi(serve=zip_tree(root.parent, tmp_path / "kvasir-dataset.zip")),
    )
    with pytest.raises(DataError, match=r"kvasir: class folder .*esophagitis is missing"):
        prepare_dataset("kvasir", data_dir, 28, download=True)
    assert not (data_dir / "kvasir" / "kvasir-dataset").exists() and not no_partials(data_dir)


def test_kaggle_truncated_download_leaves_nothing(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_credentials(monkeypatch)
    z = zip_tree(make_br35h(tmp_path / "src"), tmp_path / "brain-tumor-detection.zip")
    truncate(z, 0.7)
    monkeypatch.setattr(kaggle_source, "_kaggle_api", lambda: FakeKaggleApi(serve=z))
    with pytest.raises(DataError, match=r"br35h: .*brain-tumor-detection\.zip is (truncated|not a readable)"):
        prepare_dataset("br35h", data_dir, 28, download=True)
    assert list(data_dir.iterdir()) == []


def test_kaggle_competition_download(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAGGLE_API_TOKEN", "token")
    api = FakeKaggleApi(serve=dogs_cats_competition_zip(tmp_path / "dl" / "dogs-vs-cats.zip"))
    monkeypatch.setattr(kaggle_source, "_kaggle_api", lambda: api)
    prepare_dataset("dogs-vs-cats", data_dir, 12, download=True, progress=False)
    assert api.calls == ["dogs-vs-cats"]
    assert sorted(p.name for p in (data_dir / "dogs-vs-cats").iterdir()) == ["train.zip"]
    d = load_one_class("dogs-vs-cats", data_dir, "cat", size=12)
    assert (len(d.train), d.n_normal_test, d.n_anomalous) == (4, 3, 3) and d.train.shape[1:] == (12, 12, 3)


def test_kaggle_credentials_file_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert kaggle_source.find_credentials() is None
    cfg = tmp_path / "kcfg"
    cfg.mkdir()
    (cfg / "kaggle.json").write_text('{"username": "u", "key": "k"}')
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(cfg))
    assert kaggle_source.find_credentials() == str(cfg / "kaggle.json")


# --------------------------------------------------------------------------- MedMNIST downloads


def serve_file(src: Path):
    def fetch(url: str, dest: Path, progress: bool = True) -> None:
        assert url.startswith("https://zenodo.org/records/10519652/files/")
        dest.write_bytes(src.read_bytes())

    return fetch


def test_medmnist_download_wrong_md5_leaves_nothing(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = write_medmnist_npz(tmp_path / "served" / "breastmnist.npz", MED_COUNTS)
    monkeypatch.setattr(medmnist_source, "_fetch_url", serve_file(src))
    with pytest.raises(DataError) as err:
        prepare_dataset("breastmnist", data_dir, 28, download=True)
    msg = str(err.value)
    assert msg.startswith("breastmnist: the download of https://zenodo.org") and "md5" in msg
    assert "750601b1f35ba3300ea97c75c52ff8f6" in msg and "con2 data get breastmnist" in msg
    assert not (data_dir / "medmnist" / "breastmnist.npz").exists() and not no_partials(data_dir)


def test_medmnist_download_ok(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write_medmnist_npz(tmp_path / "served" / "pneumoniamnist_64.npz", MED_COUNTS, size=64)
    md5 = hashlib.md5(src.read_bytes()).hexdigest()
    monkeypatch.setitem(
        medmnist_source.MEDMNIST, "pneumoniamnist", {**medmnist_source.MEDMNIST["pneumoniamnist"], 64: md5}
    )
    monkeypatch.setattr(medmnist_source, "_fetch_url", serve_file(src))
    prep = prepare_dataset("pneumoniamnist", data_dir, 64, download=True, progress=False)
    assert (data_dir / "medmnist" / "pneumoniamnist_64.npz").is_file()
    assert prep.manifest["source"]["checksums"]["md5"] == md5
    d = load_one_class("pneumoniamnist", data_dir, size=64)
    assert (len(d.train), d.n_normal_test, d.n_anomalous) == (3, 2, 4)


def test_medmnist_no_network(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(url, dest, progress=True):
        dest.write_bytes(b"PK\3\4partial")  # a few bytes arrived, then the connection died
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(medmnist_source, "_fetch_url", offline)
    with pytest.raises(
        DataError,
        match=r"octmnist: cannot download https://zenodo.org.*octmnist\.npz.*no network\?.*con2 data get octmnist",
    ):
        prepare_dataset("octmnist", data_dir, 28, download=True)
    assert not (data_dir / "medmnist" / "octmnist.npz").exists() and not no_partials(data_dir)


def test_fetch_url_streams_with_real_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``_fetch_url`` itself, with ``urlopen`` (the socket) replaced."""
    payload = b"x" * 3_000_000

    class Resp(io.BytesIO):
        headers = {"Content-Length": str(len(payload))}

    monkeypatch.setattr(medmnist_source.urllib.request, "urlopen", lambda url, timeout: Resp(payload))
    medmnist_source._fetch_url("https://example/x.npz", tmp_path / "x.npz", progress=False)
    assert (tmp_path / "x.npz").read_bytes() == payload


def test_medmnist_md5_table_matches_package() -> None:
    info = pytest.importorskip("medmnist.info").INFO
    for flag, md5s in medmnist_source.MEDMNIST.items():
        assert md5s == {28: info[flag]["MD5"], **{s: info[flag][f"MD5_{s}"] for s in (64, 128, 224)}}
        assert medmnist_source.url_and_md5(flag, 28)[0] == info[flag]["url"]


# --------------------------------------------------------------------------- CIFAR downloads (real torchvision code)


class FakeResponse(io.BytesIO):
    def __init__(self, data: bytes, url: str) -> None:
        super().__init__(data)
        self.url, self.length, self.status = url, len(data), 200


def serve_urlopen(monkeypatch: pytest.MonkeyPatch, archive: Path | None, requested: list) -> None:
    """Replace the socket under torchvision's ``download_url`` (HEAD redirect check + download)."""

    def urlopen(req, *a, **kw):
        url = req.full_url if hasattr(req, "full_url") else req
        requested.append(url)
        if archive is None:
            raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")
        return FakeResponse(archive.read_bytes(), url)

    monkeypatch.setattr("urllib.request.urlopen", urlopen)


def test_cifar_download_wrong_md5_leaves_nothing(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tar_gz(make_cifar10(tmp_path / "src"), tmp_path / "cifar-10-python.tar.gz")
    requested: list = []
    serve_urlopen(monkeypatch, archive, requested)
    with pytest.raises(DataError) as err:
        prepare_dataset("cifar10", data_dir, 32, download=True)
    msg = str(err.value)
    assert msg.startswith("cifar10: the downloaded cifar-10-python.tar.gz failed torchvision's md5 check")
    assert "con2 data get cifar10" in msg
    assert any("cifar-10-python.tar.gz" in u for u in requested)
    assert list(data_dir.iterdir()) == []


def test_cifar_download_ok(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torchvision.datasets as tvd

    src = make_cifar10(tmp_path / "src")
    archive = tar_gz(src, tmp_path / "cifar-10-python.tar.gz")
    md5 = lambda p: hashlib.md5(p.read_bytes()).hexdigest()  # noqa: E731
    monkeypatch.setattr(tvd.CIFAR10, "tgz_md5", md5(archive))
    monkeypatch.setattr(
        tvd.CIFAR10, "train_list", [[f"data_batch_{i}", md5(src / f"data_batch_{i}")] for i in range(1, 6)]
    )
    monkeypatch.setattr(tvd.CIFAR10, "test_list", [["test_batch", md5(src / "test_batch")]])
    monkeypatch.setitem(tvd.CIFAR10.meta, "md5", md5(src / "batches.meta"))
    serve_urlopen(monkeypatch, archive, [])
    prepare_dataset("cifar10", data_dir, 32, download=True, progress=False)
    assert sorted(p.name for p in data_dir.iterdir()) == ["cifar-10-batches-py"]
    d = load_one_class("cifar10", data_dir, "ship", size=32)
    assert (len(d.train), d.n_normal_test, d.n_anomalous) == (5, 2, 18)


def test_cifar_no_network(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    serve_urlopen(monkeypatch, None, [])
    with pytest.raises(
        DataError, match=r"cifar100: cannot download cifar-100-python\.tar\.gz.*no network\?.*con2 data get cifar100"
    ):
        prepare_dataset("cifar100", data_dir, 32, download=True)
    assert list(data_dir.iterdir()) == []


def test_cifar_official_archive_on_disk(data_dir: Path, tmp_path: Path) -> None:
    tar_gz(make_cifar10(tmp_path / "src"), data_dir / "cifar-10-python.tar.gz")
    d = load_one_class("cifar10", data_dir, "bird", size=32)
    assert len(d.train) == 5 and (data_dir / "cifar-10-batches-py" / "batches.meta").is_file()


def test_imagenet30_get_gives_instructions(data_dir: Path) -> None:
    with pytest.raises(DataError, match=r"imagenet30: .*manual download.*13xzVuQMEhSnBRZr-YaaO08coLU2dxAUq"):
        prepare_dataset("imagenet30", data_dir, 224, download=True)
