"""Kaggle datasets (Kvasir, BR35H, Pneumonia, Melanoma, Muffin vs Chihuahua, Dogs vs Cats).

Found on disk first: an unzipped folder in ``<data_dir>/<name>/`` (or its layout root directly
in ``<data_dir>``), else a zip there (``<slug>.zip`` as the ``kaggle`` CLI names it, or
``archive.zip`` as the website names it), which is extracted. Otherwise ``con2 data get NAME``
downloads it with the ``kaggle`` package API (credentials: ``KAGGLE_API_TOKEN``, or
``KAGGLE_USERNAME`` + ``KAGGLE_KEY``, or ``kaggle.json`` in ``$KAGGLE_CONFIG_DIR`` / ``~/.kaggle``)
into a temporary folder, extracts and checks the layout, and only then moves it into place.

The network is touched only in :func:`_kaggle_api` (import + authenticate) and
:func:`_kaggle_fetch` (the download): tests replace those two.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import zipfile
from collections.abc import Callable, Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from con2.data.base import DataError, DatasetMissing
from con2.data.cache import Found, SourceTable
from con2.data.fileops import PARTIAL, atomic_path, extract_into, partial_name, remove, text_digest
from con2.data.folders import fingerprint, folder_table, open_image, require_dirs
from con2.data.source import DatasetInfo, Source
from con2.errors import write_failure
from con2.text import shell_command

DOGS_CATS_RE = re.compile(r"^(?:.*/)?(cat|dog)\.(\d+)\.jpg$")
DOGS_CATS_TRAIN_MAX = 10000  # N < 10000 trains, N >= 10000 tests (Golan and El-Yaniv 2018)


@dataclass(frozen=True)
class KaggleSpec:
    """Where a Kaggle dataset comes from and how its unzipped folder is laid out.

    Attributes:
        ref: ``OWNER/SLUG`` of a dataset, or the competition name.
        competition: True for a competition (``kaggle competitions download -c``).
        root: folder of the layout inside the unzipped download ("" = its top level).
        layout: ``(source split, class, folder relative to root)`` triples; every folder must exist.
    """

    ref: str
    competition: bool
    root: str
    layout: tuple[tuple[str, str, str], ...]

    @property
    def slug(self) -> str:
        return self.ref.split("/")[-1]

    @property
    def url(self) -> str:
        if self.competition:
            return f"https://www.kaggle.com/competitions/{self.ref}/data"
        return f"https://www.kaggle.com/datasets/{self.ref}"

    def command(self, dest: Path) -> str:
        """The ``kaggle`` CLI command that downloads it into ``dest``, quoted for a shell."""
        if self.competition:
            return shell_command("kaggle", "competitions", "download", "-c", self.ref, "-p", dest)
        return shell_command("kaggle", "datasets", "download", "-d", self.ref, "-p", dest, "--unzip")


def _split_layout(splits: Sequence[str], classes: Sequence[str]) -> tuple[tuple[str, str, str], ...]:
    return tuple((s, c, f"{s}/{c}") for s in splits for c in classes)


KVASIR_CLASSES = (
    "dyed-lifted-polyps",
    "dyed-resection-margins",
    "esophagitis",
    "normal-cecum",
    "normal-pylorus",
    "normal-z-line",
    "polyps",
    "ulcerative-colitis",
)

SPECS: dict[str, KaggleSpec] = {
    "kvasir": KaggleSpec(
        "meetnagadia/kvasir-dataset", False, "kvasir-dataset", tuple(("all", c, c) for c in KVASIR_CLASSES)
    ),
    "br35h": KaggleSpec("ahmedhamada0/brain-tumor-detection", False, "", (("all", "no", "no"), ("all", "yes", "yes"))),
    "pneumonia": KaggleSpec(
        "paultimothymooney/chest-xray-pneumonia",
        False,
        "chest_xray",
        _split_layout(("train", "val", "test"), ("NORMAL", "PNEUMONIA")),
    ),
    "melanoma": KaggleSpec(
        "hasnainjaved/melanoma-skin-cancer-dataset-of-10000-images",
        False,
        "melanoma_cancer_dataset",
        _split_layout(("train", "test"), ("benign", "malignant")),
    ),
    "muffin-vs-chihuahua": KaggleSpec(
        "samuelcortinhas/muffin-vs-chihuahua-image-classification",
        False,
        "",
        _split_layout(("train", "test"), ("chihuahua", "muffin")),
    ),
    "dogs-vs-cats": KaggleSpec("dogs-vs-cats", True, "", ()),
}


# --------------------------------------------------------------------------- messages


def get_command(name: str, data_dir: Path) -> str:
    """``con2 data get NAME --data-dir DIR``, quoted for a shell."""
    return shell_command("con2", "data", "get", name, "--data-dir", data_dir)


def _manual_fix(name: str, spec: KaggleSpec, data_dir: Path) -> str:
    if spec.competition:
        return (
            f"Fix: run `{get_command(name, data_dir)}` (Kaggle credentials and the rules accepted at "
            f"https://www.kaggle.com/competitions/{spec.ref}/rules), or download train.zip from {spec.url} "
            f"and put it in {data_dir / name}/."
        )
    where = data_dir / name / spec.root if spec.root else data_dir / name
    return (
        f"Fix: run `{get_command(name, data_dir)}` (needs Kaggle credentials), or run "
        f"`{spec.command(data_dir / name)}`, or download {spec.url} by hand and unzip it so that {where}/ "
        f"holds {', '.join(sorted({rel.split('/')[0] for _, _, rel in spec.layout}))}."
    )


def credentials_help(name: str, spec: KaggleSpec, data_dir: Path) -> str:
    """How to supply Kaggle credentials, and the manual alternative."""
    cfg = Path(os.environ.get("KAGGLE_CONFIG_DIR", Path.home() / ".kaggle"))
    rules = f" and accept the rules at https://www.kaggle.com/competitions/{spec.ref}/rules" if spec.competition else ""
    return (
        f"Fix: create an API token at https://www.kaggle.com/settings/api and save it as {cfg / 'kaggle.json'} "
        f"(chmod 600), or export KAGGLE_USERNAME and KAGGLE_KEY (or KAGGLE_API_TOKEN){rules}; then run "
        f"`{get_command(name, data_dir)}`. Without an account: download {spec.url} by hand into "
        f"{data_dir / name}/."
    )


def find_credentials() -> str | None:
    """Which Kaggle credential would be used (a description), or ``None`` if there is none."""
    if os.environ.get("KAGGLE_API_TOKEN"):
        return "KAGGLE_API_TOKEN"
    if os.environ.get("KAGGLE_USERNAME") and os.environ.get("KAGGLE_KEY"):
        return "KAGGLE_USERNAME/KAGGLE_KEY"
    dirs = [Path(os.environ["KAGGLE_CONFIG_DIR"])] if os.environ.get("KAGGLE_CONFIG_DIR") else []
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    dirs += [Path.home() / ".kaggle", xdg / "kaggle"]
    for d in dirs:
        for f in ("kaggle.json", "access_token", "credentials.json"):  # credentials.json: `kaggle auth login`
            if (d / f).is_file():
                return str(d / f)
    return None


# --------------------------------------------------------------------------- locating


def _candidate_roots(name: str, spec: KaggleSpec, data_dir: Path) -> list[Path]:
    roots = [data_dir / name / spec.root, data_dir / spec.slug / spec.root]
    if spec.root:
        roots.append(data_dir / spec.root)
    return [r for i, r in enumerate(roots) if r not in roots[:i]]


def _archives(name: str, spec: KaggleSpec, data_dir: Path) -> list[Path]:
    names = [f"{spec.slug}.zip", "archive.zip"]
    return [d / n for d in (data_dir / name, data_dir) for n in names if (d / n).is_file()][:1]


def find_root(name: str, spec: KaggleSpec, data_dir: Path) -> Path | None:
    """The layout root on disk (checked), or ``None`` if nothing of the dataset is there.

    Raises:
        DataError: a root exists but a class folder of the layout is missing or empty.
    """
    for root in _candidate_roots(name, spec, data_dir):
        if root.is_dir() and any((root / rel).is_dir() for _, _, rel in spec.layout):
            require_dirs(name, root, [rel for _, _, rel in spec.layout], _manual_fix(name, spec, data_dir))
            return root
    return None


def _check_layout(name: str, spec: KaggleSpec, data_dir: Path) -> Callable[[Path], None]:
    def check(folder: Path) -> None:
        if spec.competition:
            return
        root = folder / spec.root
        require_dirs(name, root, [rel for _, _, rel in spec.layout], _manual_fix(name, spec, data_dir))

    return check


def locate(name: str, data_dir: Path) -> Path:
    """Find dataset ``name`` under ``data_dir`` (extracting a local zip if that is all there is).

    Returns the layout root (for Dogs vs Cats: the folder or zip of ``train``).

    Raises:
        DataError: missing (with the command and credentials that fix it), or malformed.
    """
    spec = SPECS[name]
    if spec.competition:
        return _locate_dogs_cats(name, spec, data_dir)
    root = find_root(name, spec, data_dir)
    if root is not None:
        return root
    for archive in _archives(name, spec, data_dir):
        extract_into(archive, data_dir / name, name, _check_layout(name, spec, data_dir))
        root = find_root(name, spec, data_dir)
        if root is not None:
            return root
    looked = ", ".join(str(r) for r in _candidate_roots(name, spec, data_dir))
    raise DatasetMissing(
        f"{name}: not found (looked for {looked} and a {spec.slug}.zip). {_manual_fix(name, spec, data_dir)}"
    )


def _locate_dogs_cats(name: str, spec: KaggleSpec, data_dir: Path) -> Path:
    fix = _manual_fix(name, spec, data_dir)
    for base in (data_dir / name, data_dir):
        if (base / "train").is_dir() and any(DOGS_CATS_RE.match(p.name) for p in (base / "train").iterdir()):
            return base / "train"
        if (base / "train.zip").is_file():
            _check_dogs_cats_zip(name, base / "train.zip", fix)
            return base / "train.zip"
        outer = base / f"{spec.slug}.zip"
        if outer.is_file():
            _unpack_train_zip(name, outer, data_dir / name / "train.zip", fix)
            return data_dir / name / "train.zip"
    raise DatasetMissing(
        f"{name}: not found (looked for train/, train.zip and {spec.slug}.zip in {data_dir / name}). {fix}"
    )


def _check_dogs_cats_zip(name: str, path: Path, fix: str) -> list[str]:
    try:
        with zipfile.ZipFile(path) as zf:
            names = [n for n in zf.namelist() if DOGS_CATS_RE.match(n)]
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataError(f"{name}: {path} is truncated or not a zip ({exc}). Delete it. {fix}") from exc
    classes = {DOGS_CATS_RE.match(n).group(1) for n in names}  # type: ignore[union-attr]
    if classes != {"cat", "dog"}:
        raise DataError(f"{name}: {path} holds no cat.N.jpg / dog.N.jpg images of both classes. {fix}")
    return names


def _unpack_train_zip(name: str, outer: Path, final: Path, fix: str) -> None:
    """Copy ``train.zip`` out of the competition's ``dogs-vs-cats.zip`` (atomically, checked)."""
    with atomic_path(final) as tmp:
        try:
            with zipfile.ZipFile(outer) as zf, zf.open("train.zip") as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except (zipfile.BadZipFile, KeyError, OSError, EOFError) as exc:
            if isinstance(exc, OSError) and write_failure(exc) is not None:
                raise  # a full or read-only disk, not a bad archive
            raise DataError(f"{name}: {outer} is truncated or has no train.zip ({exc}). Delete it. {fix}") from exc
        _check_dogs_cats_zip(name, tmp, fix)


# --------------------------------------------------------------------------- tables


def dogs_cats_table(name: str, location: Path, recipe: str, channels: int) -> SourceTable:
    """Dogs vs Cats from ``train/`` or ``train.zip``: ``N < 10000`` trains, the rest tests."""

    if location.is_dir():
        files = sorted(p for p in location.iterdir() if DOGS_CATS_RE.match(p.name))
        names = [p.name for p in files]
        fp = fingerprint(location, files)
        sources = tuple(files)

        def read(i: int) -> Image.Image:
            return open_image(files[i])
    else:
        names = sorted(_check_dogs_cats_zip(name, location, ""))
        st = location.stat()
        fp = text_digest(f"{location.name}\t{st.st_size}\t{st.st_mtime_ns}")
        sources = (location,)
        handle: dict[str, zipfile.ZipFile] = {}

        def read(i: int) -> Image.Image:

            zf = handle.setdefault("zf", zipfile.ZipFile(location))
            with zf.open(names[i]) as f, Image.open(io.BytesIO(f.read())) as img:
                img.load()
                return img.copy()

    ids, splits, labels = [], [], []
    for n in names:
        m = DOGS_CATS_RE.match(n)
        assert m is not None
        ids.append(n.split("/")[-1])
        splits.append("train" if int(m.group(2)) < DOGS_CATS_TRAIN_MAX else "test")
        labels.append(0 if m.group(1) == "cat" else 1)
    return SourceTable(name, location, fp, ("cat", "dog"), ids, splits, labels, read, recipe, channels, files=sources)


# --------------------------------------------------------------------------- download


def _kaggle_api() -> Any:
    """Import the ``kaggle`` package and authenticate (network boundary; raises SystemExit
    without credentials)."""
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):  # kaggle prints its own help
        from kaggle.api.kaggle_api_extended import (
            KaggleApi,  # lazy: the kaggle package reads credentials on import: only when a download is asked for
        )

        api = KaggleApi()
        api.authenticate()
    return api


def _kaggle_fetch(api: Any, spec: KaggleSpec, dest: Path) -> None:
    """Download the dataset's zip into ``dest`` (network boundary)."""
    if spec.competition:
        api.competition_download_files(spec.ref, path=str(dest), quiet=False)
    else:
        api.dataset_download_files(spec.ref, path=str(dest), quiet=False, unzip=False)


def _fetch_error(name: str, spec: KaggleSpec, data_dir: Path, exc: BaseException) -> DataError:
    """One clear message for a failed Kaggle download."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    text = f"{exc!r}"
    if status in (401, 403) or re.search(r"\b40[13]\b|Forbidden|Unauthorized", text):
        return DataError(
            f"{name}: Kaggle refused the download of {spec.ref} ({text}): wrong credentials, or the rules "
            f"are not accepted. {credentials_help(name, spec, data_dir)}"
        )
    if status is None and isinstance(exc, (ConnectionError, TimeoutError, OSError)):
        return DataError(
            f"{name}: cannot reach Kaggle to download {spec.ref} ({text}); no network? "
            f"{_manual_fix(name, spec, data_dir)}"
        )
    return DataError(f"{name}: the Kaggle download of {spec.ref} failed ({text}). {_manual_fix(name, spec, data_dir)}")


def download_dataset(name: str, data_dir: Path) -> Path:
    """Download dataset ``name`` from Kaggle into ``<data_dir>/<name>/`` and return its root.

    Raises:
        DataError: no credentials, no network, rules not accepted, a corrupt archive or layout.
    """
    spec = SPECS[name]
    if find_credentials() is None:
        raise DataError(
            f"{name}: no Kaggle credentials (checked KAGGLE_API_TOKEN, KAGGLE_USERNAME/KAGGLE_KEY, and kaggle.json, "
            f"access_token, credentials.json in $KAGGLE_CONFIG_DIR, ~/.kaggle, ~/.config/kaggle). "
            f"{credentials_help(name, spec, data_dir)}"
        )
    data_dir.mkdir(parents=True, exist_ok=True)
    for stale in data_dir.glob(f".{name}{PARTIAL}*"):
        remove(stale)
    work = partial_name(data_dir / name)
    work.mkdir()
    try:
        try:
            api = _kaggle_api()
        except ImportError as exc:
            raise DataError(
                f"{name}: the kaggle package cannot be imported ({exc}). Fix: `pip install kaggle six`."
            ) from exc
        except (SystemExit, Exception) as exc:
            raise DataError(
                f"{name}: Kaggle authentication failed ({exc!r}). {credentials_help(name, spec, data_dir)}"
            ) from exc
        try:
            _kaggle_fetch(api, spec, work)
        except (SystemExit, Exception) as exc:
            raise _fetch_error(name, spec, data_dir, exc) from exc
        zips = sorted(work.glob("*.zip"))
        if not zips:
            raise DataError(
                f"{name}: the Kaggle download of {spec.ref} left no zip in {work}. {_manual_fix(name, spec, data_dir)}"
            )
        if spec.competition:
            _unpack_train_zip(name, zips[0], data_dir / name / "train.zip", _manual_fix(name, spec, data_dir))
        else:
            extract_into(zips[0], data_dir / name, name, _check_layout(name, spec, data_dir))
    finally:
        remove(work)
    return locate(name, data_dir)


def how_to_get(name: str, data_dir: Path) -> str:
    """``con2 data get`` with credentials, the ``kaggle`` command, or the page to download by hand."""
    spec = SPECS[name]
    return (
        f"`{get_command(name, data_dir)}` with Kaggle credentials (~/.kaggle/kaggle.json or "
        f"KAGGLE_USERNAME/KAGGLE_KEY), or `{spec.command(data_dir / name)}`, or {spec.url} by hand into "
        f"{data_dir / name}/"
    )


class KaggleSource(Source):
    """Kaggle datasets and competitions (``kind = "kaggle"``), laid out as :data:`SPECS` says."""

    kind = "kaggle"

    def find(self, info: DatasetInfo, data_dir: Path, size: int) -> Found:
        """Locate the dataset (extracting a local zip) and list its samples (no image is read)."""
        spec = SPECS[info.name]
        root = locate(info.name, data_dir)
        if spec.competition:
            t = dogs_cats_table(info.name, root, info.recipe, info.channels)
        else:
            t = folder_table(info.name, root, spec.layout, info.classes, info.recipe, info.channels)
        return Found(t.location, t.fingerprint, data_dir, listing=t, files=t.files)

    def table(self, info: DatasetInfo, found: Found, size: int) -> SourceTable:
        assert found.listing is not None  # find lists the folders
        return found.listing

    def download(self, info: DatasetInfo, data_dir: Path, size: int, progress: bool = True) -> None:
        download_dataset(info.name, data_dir)

    def how_to_get(self, info: DatasetInfo, data_dir: Path) -> str:
        return how_to_get(info.name, data_dir)


SOURCE = KaggleSource()
