"""Your own images as a dataset: a folder declared in a workflow profile, no code (issue 59).

A profile's ``datasets.<name>`` entry with a ``folder`` key declares it::

    datasets:
      parts:
        folder: parts              # absolute, or under data_dir
        layout: mvtec              # mvtec | normal_anomalous | class_folders (default: recognised)
        normal: good               # mvtec: the normal folder; normal_anomalous: the normal folder
        anomalous: defect          # normal_anomalous: the anomalous folder
        test_fraction: 0.2         # normal_anomalous and a flat class_folders: the held-out fraction
        image_size: 64             # prepared and trained size (the runs' image_size unless they set one)
        channels: rgb              # rgb | grey
        resize: center_crop        # center_crop (keep the aspect) | resize (stretch) | keep (as they are)

Three layouts (:data:`LAYOUTS`):

* ``mvtec``: ``train/<normal>/``, ``test/<normal>/`` and ``test/<anomaly kind>/`` (MVTec AD's; a
  ``ground_truth/`` folder of masks is ignored). Classes: the normal one, then the kinds; official split.
* ``normal_anomalous``: ``<normal>/`` and ``<anomalous>/``; the test split is drawn by a seeded hash of
  the file ids as BR35H's is (:mod:`con2.data.splits`, ``holdout``): ``test_fraction`` of the normals
  and every anomaly.
* ``class_folders``: one folder per class (torchvision's ImageFolder), each class in turn normal as for
  CIFAR-10: ``train/<class>/`` + ``test/<class>/`` (official split), or ``<class>/`` alone (a seeded
  hash holds out ``test_fraction`` of every class, as for the digits).

The listing is checked before anything is read (:func:`list_folder`), every image when it is decoded
(:meth:`FolderSource.table`'s reader); each problem is one line naming the folder or file, what was
found and the fix, and nothing is prepared. The checks of :mod:`con2.data.folders` are CIFAR-10's
image folder's (file types, two class folders that are one); duplicates are reported by the prepared
cache (:mod:`con2.data.cache`). The prepared cache's key is the content of the files; the declared
settings are kept beside it (a cache of other settings is prepared again), and every run record names
both (``data_source: {format: folder, sha256, settings}``).

Other processes (``con2 train``, the workflow's scripts) learn the declarations from ``$CON2_DATASETS``
(:func:`register_from_environment`): the workflow sets it to their JSON when it registers them; by hand
it may name a profile file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from con2.data.base import DataError, DatasetMissing
from con2.data.cache import Found, SourceTable
from con2.data.data_dir import absolute_data_dir, default_data_dir
from con2.data.folders import (
    IMAGE_SUFFIXES,
    check_distinct,
    fingerprint,
    has_control,
    list_images,
    open_image,
    other_files,
    outside,
)
from con2.data.source import DatasetInfo, Source
from con2.errors import read_failure
from con2.paths import is_name
from con2.text import shell_command, terminal_safe

#: The source kind, and the ``format`` a run record's ``data_source`` names.
FORMAT = "folder"
#: The three layouts a declared folder may have.
LAYOUTS = ("mvtec", "normal_anomalous", "class_folders")
#: The resize policies and the recipe of :mod:`con2.data.images` each one prepares with.
RESIZE = {"center_crop": "short_crop", "resize": "resize", "keep": "native"}
#: The channel settings and the channels each gives.
CHANNELS = {"rgb": 3, "grey": 1}
#: The keys of a declaration (beside the profile's own ``normal_classes``, ``run`` and ``resources``).
KEYS = ("folder", "layout", "normal", "anomalous", "test_fraction", "image_size", "channels", "resize", "title")
#: The environment variable that carries the declarations to other processes.
ENV = "CON2_DATASETS"
#: The folder names of an MVTec AD tree that are no class (its masks), beside ``train/`` and ``test/``.
MVTEC_IGNORED = ("ground_truth",)
_PROFILE_KEYS = ("normal_classes", "run", "resources")


class FolderError(DataError):
    """A declared folder found but refused: ``con2 data list`` shows its source as ``folder``."""

    form = FORMAT


@dataclass(frozen=True)
class FolderSpec:
    """One declared folder dataset.

    Attributes:
        name: the dataset's name (the profile's key).
        folder: the folder as declared: absolute, or relative to ``data_dir``.
        layout: one of :data:`LAYOUTS`, or ``""``: recognised from the folder.
        normal: the normal folder's name (``mvtec``: default ``good``; ``normal_anomalous``: ``normal``).
        anomalous: the anomalous folder's name (``normal_anomalous``; default ``anomalous``).
        test_fraction: the held-out fraction of a split the harness draws (0 < f < 1).
        image_size: the prepared size (and the runs' ``image_size`` unless they set one).
        channels: ``rgb`` or ``grey``.
        resize: one of :data:`RESIZE`.
        title: the name tables show.
        classes: the classes found when it was declared (a process that gets the declaration from
            ``$CON2_DATASETS`` does not list the folder again to register it); ``()``: list it.
    """

    name: str
    folder: str
    layout: str = ""
    normal: str = ""
    anomalous: str = "anomalous"
    test_fraction: float = 0.2
    image_size: int = 64
    channels: str = "rgb"
    resize: str = "center_crop"
    title: str = ""
    classes: tuple[str, ...] = ()

    def root(self, data_dir: Path) -> Path:
        """The folder: the declared path if absolute, else under ``data_dir`` (``~`` expanded, ``..`` kept)."""
        path = Path(self.folder).expanduser()
        return Path(os.path.abspath(path if path.is_absolute() else data_dir / path))

    def normal_name(self, layout: str) -> str:
        """The normal folder's name under ``layout`` (its default where none is declared)."""
        return self.normal or ("good" if layout == "mvtec" else "normal")

    def settings(self, layout: str) -> str:
        """How the files become images, one line (the cache's and the record's ``settings``)."""
        parts = [f"layout={layout}", f"channels={self.channels}", f"resize={self.resize}"]
        if layout != "mvtec":
            parts.append(f"test_fraction={self.test_fraction:g}")
        return " ".join(parts)


@dataclass(frozen=True)
class Listing:
    """A declared folder's samples, checked by their listing.

    Attributes:
        root: the folder.
        layout: the layout found (one of :data:`LAYOUTS`).
        classes: class names (labels index into them); the normal one first where there is one.
        protocol: ``official`` (the folder's own train/test) or ``holdout`` (a seeded hash draws the test split).
        all_anomalies: ``holdout``: every anomaly is a test image (``normal_anomalous``) or only the
            held-out part of each class (``class_folders``).
        rows: ``(source split, class, file)`` of every image, in listing order.
    """

    root: Path
    layout: str
    classes: tuple[str, ...]
    protocol: str
    all_anomalies: bool
    rows: tuple[tuple[str, str, Path], ...]

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(f for _, _, f in self.rows)


# --------------------------------------------------------------------------- declarations


def read_spec(name: str, settings: Mapping[str, Any]) -> FolderSpec:
    """The declaration ``datasets.<name>`` checked key by key (the workflow's schema checks it too).

    Raises:
        DataError: an unknown key or a value out of range, one line naming ``datasets.<name>.<key>`` and the fix.
    """
    where = f"datasets.{terminal_safe(name)}"
    if not is_name(name):
        raise DataError(
            f"{where}: a dataset name is a letter or digit, then letters, digits, '_', '+' or '-'. Fix: rename it"
        )
    unknown = sorted(str(k) for k in settings if k not in (*KEYS, *_PROFILE_KEYS, "classes"))
    if unknown:
        raise DataError(
            f"{where}: unknown key {terminal_safe(unknown[0])!r} of a folder dataset. Fix: use {', '.join(KEYS)}"
        )

    def choice(key: str, allowed: tuple[str, ...] | dict[str, Any], default: str) -> str:
        value = settings.get(key, default)
        if value not in allowed:
            raise DataError(
                f"{where}.{key}: {terminal_safe(repr(value))} is not one of {', '.join(allowed)}. Fix: {key}: "
                f"{next(iter(allowed))}"
            )
        return str(value)

    folder = settings.get("folder")
    if not isinstance(folder, str) or not folder.strip() or has_control(folder):
        raise DataError(
            f"{where}.folder: {terminal_safe(repr(folder))} is no folder name (a path without control characters). "
            "Fix: folder: <absolute path, or a folder under data_dir>"
        )
    layout = choice("layout", ("", *LAYOUTS), "")
    for key in ("normal", "anomalous"):
        if key in settings and not is_name(settings[key]):
            raise DataError(
                f"{where}.{key}: {terminal_safe(repr(settings[key]))} is no folder name of a class (a letter or "
                "digit, then letters, digits, '_', '+' or '-'). Fix: rename the folder and the setting"
            )
    fraction = settings.get("test_fraction", 0.2)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction < 1:
        raise DataError(f"{where}.test_fraction: {fraction!r} is not between 0 and 1. Fix: test_fraction: 0.2")
    size = settings.get("image_size", 64)
    if isinstance(size, bool) or not isinstance(size, int) or not 8 <= size <= 512:
        raise DataError(f"{where}.image_size: {size!r} is not a size of 8..512 px. Fix: image_size: 64")
    title = settings.get("title", name)
    if not isinstance(title, str) or has_control(title):
        raise DataError(f"{where}.title: {terminal_safe(repr(title))} is no one-line title. Fix: title: {name}")
    classes = settings.get("classes") or ()
    return FolderSpec(
        name=name,
        folder=folder,
        layout=layout,
        normal=str(settings.get("normal", "")),
        anomalous=str(settings.get("anomalous", "anomalous")),
        test_fraction=float(fraction),
        image_size=size,
        channels=choice("channels", CHANNELS, "rgb"),
        resize=choice("resize", RESIZE, "center_crop"),
        title=title,
        classes=tuple(str(c) for c in classes),
    )


# --------------------------------------------------------------------------- listing


def how_to_lay_out(spec: FolderSpec, root: Path) -> str:
    """The fix that names the three layouts under ``root``."""
    where = terminal_safe(str(root))
    return (
        f"Fix: lay {where} out as one of: mvtec (train/good/, test/good/, test/<anomaly kind>/), normal_anomalous "
        f"(normal/, anomalous/; names: the settings normal, anomalous), class_folders (<class>/, or train/<class>/ "
        f"and test/<class>/), and name it in datasets.{spec.name}.layout"
    )


def _subfolders(folder: Path) -> list[str]:
    """The names of ``folder``'s visible subfolders, sorted."""
    return sorted(
        p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "__MACOSX"
    )


def detect_layout(spec: FolderSpec, root: Path) -> str:
    """The layout ``root`` has: the declared one, else recognised from its folders.

    Raises:
        FolderError: no layout fits, one line naming what the folder holds and the three layouts.
    """
    if spec.layout:
        return spec.layout
    top = _subfolders(root)
    if "train" in top and "test" in top:
        train, test = _subfolders(root / "train"), _subfolders(root / "test")
        if len(train) == 1 and train[0] in test and len(test) > 1 and set(train) != set(test):
            return "mvtec"
        if train and set(train) == set(test):
            return "class_folders"
    elif {spec.normal_name("normal_anomalous"), spec.anomalous} <= set(top):
        return "normal_anomalous"
    elif len(top) >= 2 and "train" not in top and "test" not in top:
        return "class_folders"
    shown = ", ".join(terminal_safe(n) for n in top[:8]) or "no folders"
    raise FolderError(
        f"{spec.name}: {terminal_safe(str(root))} matches none of the three layouts (it holds {shown}). "
        f"{how_to_lay_out(spec, root)}"
    )


def _check_name(spec: FolderSpec, path: Path, root: Path) -> None:
    """Refuse a file or folder whose name holds a control character, or which leads out of ``root``."""
    if has_control(path.name):
        raise FolderError(
            f"{spec.name}: {terminal_safe(str(path))} has a control character in its name (shown escaped). Fix: "
            "rename it without line breaks, escapes or direction marks"
        )
    if outside(path, root):
        raise FolderError(
            f"{spec.name}: {terminal_safe(str(path))} is a symbolic link to {terminal_safe(str(path.resolve()))}, "
            f"outside the declared folder {terminal_safe(str(root))}. Fix: copy that file or folder into "
            f"{terminal_safe(str(root))} instead of linking it, or declare the folder that holds both"
        )


def _no_other_folders(spec: FolderSpec, root: Path, expected: tuple[str, ...], fix: str) -> None:
    """Refuse a folder beside the layout's own at ``root`` (e.g. a ``validation/``): its images would be left out
    without a word.

    Raises:
        FolderError: naming the folders found and the fix.
    """
    other = [n for n in _subfolders(root) if n not in expected]
    if other:
        raise FolderError(
            f"{spec.name}: {terminal_safe(str(root))} holds {', '.join(terminal_safe(n) for n in other[:5])} beside "
            f"{', '.join(expected)}: its images would be left out. {fix}"
        )


def _class_images(spec: FolderSpec, folder: Path, root: Path, cls: str, what: str) -> list[Path]:
    """The images of one class folder, checked: its name, no link leading out, images only, at least one.

    Raises:
        FolderError: one line naming the folder or file and the fix.
    """
    if not folder.is_dir():
        raise FolderError(f"{spec.name}: {terminal_safe(str(folder))} is missing. {how_to_lay_out(spec, root)}")
    _check_name(spec, folder, root)
    if not is_name(cls):
        raise FolderError(
            f"{spec.name}: class folder {terminal_safe(str(folder))}: its name becomes a class name, a path and a "
            "shell word, so it is a letter or digit, then letters, digits, '_', '+' or '-'. Fix: rename it"
        )
    others = other_files(folder)
    if others:
        kind = "folder" if others[0].is_dir() else "file"
        raise FolderError(
            f"{spec.name}: {terminal_safe(str(folder))} holds {len(others)} entr{'y' if len(others) == 1 else 'ies'} "
            f"that {'is' if len(others) == 1 else 'are'} not an image, e.g. the {kind} "
            f"{terminal_safe(others[0].name)} (images: {' '.join(sorted(IMAGE_SUFFIXES))}). Fix: move it out of "
            f"{terminal_safe(str(root))}"
        )
    images = list_images(folder)
    for image in images:
        _check_name(spec, image, root)
    if not images:
        raise FolderError(
            f"{spec.name}: {what} {terminal_safe(str(folder))} holds no images. Fix: put its images there "
            f"({' '.join(sorted(IMAGE_SUFFIXES))}), or remove the folder"
        )
    return images


def list_folder(spec: FolderSpec, data_dir: Path) -> Listing:
    """Check the declared folder by its listing (no image read) and list its samples.

    Raises:
        DatasetMissing: the folder is not there (the message says where it was looked for);
        FolderError: a layout that matches none of the three, an empty normal folder, a test split
            without anomalies, a file that is not an image, a name with a control character, a link
            leading out of the folder, two class folders that are one, a class name that cannot be one,
            a folder that cannot be listed (no permission: nothing is said to be wrong with it).
    """
    try:
        return _list_folder(spec, data_dir)
    except OSError as exc:  # a folder that cannot be listed: a read, never a write
        raise FolderError(f"{spec.name}: {terminal_safe(read_failure(exc))}") from exc


def _list_folder(spec: FolderSpec, data_dir: Path) -> Listing:
    """:func:`list_folder` but for a folder that cannot be listed (an ``OSError``)."""
    root = spec.root(data_dir)
    if not root.is_dir():
        raise DatasetMissing(
            f"{spec.name}: the declared folder {terminal_safe(str(root))} is not there "
            f"(datasets.{spec.name}.folder: {terminal_safe(spec.folder)}). {how_to_get_text(spec, data_dir)}"
        )
    layout = detect_layout(spec, root)
    fix = how_to_lay_out(spec, root)
    rows: list[tuple[str, str, Path]] = []
    if layout == "mvtec":
        normal = spec.normal_name(layout)
        for split in ("train", "test"):
            if not (root / split).is_dir():
                raise FolderError(f"{spec.name}: {terminal_safe(str(root / split))} is missing (layout mvtec). {fix}")
        _no_other_folders(spec, root, ("train", "test", *MVTEC_IGNORED), fix)
        extra = [n for n in _subfolders(root / "train") if n != normal]
        if extra:
            raise FolderError(
                f"{spec.name}: {terminal_safe(str(root / 'train'))} holds {', '.join(terminal_safe(n) for n in extra)} "
                f"beside the normal folder {normal}: an mvtec tree trains on normal images only. Fix: move them to "
                f"test/, or set datasets.{spec.name}.normal"
            )
        kinds = [n for n in _subfolders(root / "test") if n != normal]
        if not kinds:
            raise FolderError(
                f"{spec.name}: the test split {terminal_safe(str(root / 'test'))} holds no anomalies (no "
                f"test/<anomaly kind>/ beside test/{normal}/); an AUROC needs normal and anomalous test images. "
                f"Fix: add a folder of anomalous test images, e.g. {terminal_safe(str(root / 'test' / 'defect'))}"
            )
        classes = (normal, *kinds)
        folders = [("train", normal, root / "train" / normal)]
        folders += [("test", c, root / "test" / c) for c in classes]
        protocol, all_anomalies = "official", True
    elif layout == "normal_anomalous":
        normal = spec.normal_name(layout)
        classes = (normal, spec.anomalous)
        _no_other_folders(spec, root, classes, fix)
        folders = [("all", c, root / c) for c in classes]
        protocol, all_anomalies = "holdout", True
    else:
        top = _subfolders(root)
        if "train" in top and "test" in top:
            _no_other_folders(spec, root, ("train", "test"), fix)
            classes = tuple(_subfolders(root / "train"))
            if set(_subfolders(root / "test")) != set(classes):
                raise FolderError(
                    f"{spec.name}: {terminal_safe(str(root / 'test'))} has other class folders than "
                    f"{terminal_safe(str(root / 'train'))} ({', '.join(terminal_safe(c) for c in classes[:8])}). {fix}"
                )
            folders = [(s, c, root / s / c) for s in ("train", "test") for c in classes]
            protocol = "official"
        else:
            classes = tuple(top)
            folders = [("all", c, root / c) for c in classes]
            protocol = "holdout"
        if len(classes) < 2:
            raise FolderError(
                f"{spec.name}: {terminal_safe(str(root))} holds {len(classes)} class folder(s); one class normal "
                f"needs another as anomalies. {fix}"
            )
        all_anomalies = protocol == "official"
    check_distinct(spec.name, [f for _, _, f in folders], fix, FolderError)
    for split, cls, folder in folders:
        if layout == "class_folders" or cls == classes[0]:
            what = "class folder" if layout == "class_folders" else "the normal folder"
        else:
            what = "the anomalous folder"
        if layout != "class_folders" and cls != classes[0] and split in ("test", "all"):
            what = "the anomalous folder (the test split's anomalies)"
        rows += [(split, cls, f) for f in _class_images(spec, folder, root, cls, what)]
    if spec.classes and tuple(spec.classes) != classes:
        raise FolderError(
            f"{spec.name}: {terminal_safe(str(root))} holds the classes {', '.join(classes)}, not "
            f"{', '.join(spec.classes)} as when the workflow started. Fix: rerun the workflow (or the command) "
            "with the folder as it is now"
        )
    return Listing(root, layout, classes, protocol, all_anomalies, tuple(rows))


# --------------------------------------------------------------------------- the source


def how_to_get_text(spec: FolderSpec, data_dir: Path) -> str:
    """How a declared dataset is had: its images in its folder, then ``con2 data get``."""
    root = spec.root(data_dir)
    return (
        f"Fix: put the images in {terminal_safe(str(root))} (one of the layouts mvtec, normal_anomalous, "
        f"class_folders: docs/own_data.md), then run "
        f"`{shell_command('con2', 'data', 'get', spec.name, '--data-dir', data_dir)} --profile PROFILE` (PROFILE: "
        "the profile that declares it)"
    )


def read_image(path: Path, spec: FolderSpec, size: int) -> Image.Image:
    """Decode one image of a declared folder; under ``resize: keep`` it must be ``size`` x ``size`` already.

    Raises:
        FolderError: another size under ``keep``, naming the file, both sizes and the fix.
    """
    img = open_image(path)
    if spec.resize == "keep" and img.size != (size, size):
        raise FolderError(
            f"{spec.name}: {terminal_safe(str(path))} is {img.size[0]}x{img.size[1]}, not {size}x{size}: "
            f"`resize: keep` takes every image as it is, so all must be {size}x{size} (mixed sizes, or another "
            f"size asked). Fix: datasets.{spec.name}.resize: center_crop (or resize), or resize the images"
        )
    return img


#: The declared folder datasets of this process, by name.
DECLARED: dict[str, FolderSpec] = {}


def spec_of(info: DatasetInfo) -> FolderSpec:
    """The declaration of a registered folder dataset.

    Raises:
        DataError: ``info`` was not declared in this process.
    """
    try:
        return DECLARED[info.name]
    except KeyError:
        raise DataError(
            f"{info.name}: a folder dataset whose declaration this process does not have. Fix: set {ENV} to the "
            "profile that declares it"
        ) from None


class FolderSource(Source):
    """The folders a profile declares (``kind = "folder"``): listed and checked by :func:`list_folder`."""

    kind = FORMAT

    def find(self, info: DatasetInfo, data_dir: Path, size: int) -> Found:
        spec = spec_of(info)
        listing = list_folder(spec, data_dir)
        files = listing.files
        return Found(
            listing.root,
            fingerprint(listing.root, files),
            data_dir,
            files=files,
            form=FORMAT,
            settings=spec.settings(listing.layout),
        )

    def table(self, info: DatasetInfo, found: Found, size: int) -> SourceTable:
        spec = spec_of(info)
        listing = list_folder(spec, found.data_dir)
        files = listing.files
        root = listing.root
        return SourceTable(
            dataset=info.name,
            location=root,
            fingerprint=found.fingerprint,
            classes=listing.classes,
            ids=[f.relative_to(root).as_posix() for f in files],
            splits=[s for s, _, _ in listing.rows],
            labels=[listing.classes.index(c) for _, c, _ in listing.rows],
            read=lambda i: read_image(files[i], spec, size),
            recipe=RESIZE[spec.resize],
            channels=CHANNELS[spec.channels],
            files=files,
            form=FORMAT,
            settings=spec.settings(listing.layout),
        )

    def download(self, info: DatasetInfo, data_dir: Path, size: int, progress: bool = True) -> None:
        raise DatasetMissing(f"{info.name}: a declared folder has no download. {self.how_to_get(info, data_dir)}")

    def how_to_get(self, info: DatasetInfo, data_dir: Path) -> str:
        return how_to_get_text(spec_of(info), data_dir)

    def default_size(self, info: DatasetInfo) -> int:
        return spec_of(info).image_size


SOURCE = FolderSource()


# --------------------------------------------------------------------------- registration


def _info(spec: FolderSpec, listing: Listing | None) -> DatasetInfo:
    """The registry entry of a declared folder (``listing``: None where the folder is not there yet)."""
    layout = listing.layout if listing else (spec.layout or "class_folders")
    if listing is not None:
        classes = listing.classes
    elif spec.classes:
        classes = spec.classes
    elif layout == "normal_anomalous":
        classes = (spec.normal_name(layout), spec.anomalous)
    else:
        classes = (spec.normal_name(layout),) if spec.layout == "mvtec" else ()
    protocol = listing.protocol if listing else ("official" if layout == "mvtec" else "holdout")
    normals = classes if layout == "class_folders" else classes[:1]
    split = {
        "mvtec": "official: train/<normal>; test = all of test/ (per anomaly kind)",
        "normal_anomalous": f"seeded {1 - spec.test_fraction:g}/{spec.test_fraction:g} of the normal folder; "
        "test = the held-out normals + every anomaly",
        "class_folders": "official: train/<class>; test = all of test/"
        if protocol == "official"
        else f"seeded {1 - spec.test_fraction:g}/{spec.test_fraction:g} of every class; test = the held-out parts",
    }[layout]
    return DatasetInfo(
        spec.name,
        spec.title or spec.name,
        "own",
        FORMAT,
        tuple(classes),
        tuple(normals),
        protocol=protocol,
        test_fraction=spec.test_fraction,
        all_anomalies=listing.all_anomalies if listing else layout != "class_folders",
        recipe=RESIZE[spec.resize],
        channels=CHANNELS[spec.channels],
        paper_size=spec.image_size,
        in_paper=False,
        split=split,
    )


def register_spec(spec: FolderSpec, data_dir: Path | None, strict: bool = True) -> DatasetInfo:
    """Register ``spec`` (its folder listed and checked under ``data_dir`` unless it carries its classes).

    ``strict``: a refused folder raises (the workflow stops on it); else it is registered from its declaration
    alone, and ``con2 data list`` shows it broken with its one line.

    Raises:
        DataError: a built-in dataset's name, or (``strict``) the folder's refusal (a missing folder is
            registered: it shows as missing).
    """
    from con2.data import registry  # lazy: registry imports the sources; it is imported when a folder is registered

    if spec.name in registry.DATASETS and registry.DATASETS[spec.name].source != FORMAT:
        raise DataError(
            f"datasets.{spec.name}.folder: {spec.name} is a built-in dataset. Fix: give your folder another name"
        )
    registry.register_source(SOURCE)
    listing = None
    if not spec.classes:
        try:
            listing = list_folder(spec, data_dir if data_dir is not None else default_data_dir())
        except DatasetMissing:
            listing = None
        except FolderError:
            if strict:
                raise
            listing = None
    info = _info(spec, listing)
    if listing is not None:
        spec = FolderSpec(**{**asdict(spec), "classes": listing.classes, "layout": listing.layout})
    DECLARED[spec.name] = spec
    registry.DATASETS[spec.name] = info  # a declaration replaces this process's earlier one of that name
    return info


def register_folder_dataset(name: str, settings: Mapping[str, Any], config: Mapping[str, Any]) -> DatasetInfo:
    """Register the folder the profile declares as ``datasets.<name>`` (the workflow's hook,
    :func:`con2.data.profile_datasets.register_profile_datasets`), and pass the declaration on to the
    processes the workflow starts (``$CON2_DATASETS``).

    Raises:
        DataError: a bad declaration or a refused folder, one line.
    """
    data_dir = config.get("data_dir")
    spec = read_spec(name, settings)
    info = register_spec(spec, absolute_data_dir(data_dir) if data_dir else None)
    export(DECLARED[name])
    return info


def export(spec: FolderSpec) -> None:
    """Add ``spec`` to ``$CON2_DATASETS`` (JSON ``{name: declaration}``) for the processes started after."""
    try:
        declared = json.loads(os.environ.get(ENV, "") or "{}")
    except ValueError:
        declared = {}
    if not isinstance(declared, dict):
        declared = {}
    entry = {k: v for k, v in asdict(spec).items() if k != "name" and v != ""}  # "": the default, recognised again
    entry["classes"] = list(spec.classes)
    declared[spec.name] = entry
    os.environ[ENV] = json.dumps(declared, sort_keys=True)


def declarations(text: str) -> tuple[dict[str, Mapping[str, Any]], str | None]:
    """``({name: settings}, data_dir)`` of ``$CON2_DATASETS``: JSON ``{name: declaration}`` (what the workflow
    sets), or the path of a profile whose ``datasets`` entries with a ``folder`` are read (and its ``data_dir``).

    Raises:
        DataError: unreadable JSON or profile, one line naming ``$CON2_DATASETS``.
    """
    import yaml  # lazy: yaml only when the variable is set

    text = text.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise DataError(
                f"${ENV} is not the JSON the workflow writes ({exc}). Fix: unset it, or name a profile"
            ) from None
        data_dir = None
    else:
        try:
            profile = yaml.safe_load(Path(text).expanduser().read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise DataError(
                f"${ENV}={terminal_safe(text)}: cannot read that profile ({terminal_safe(str(exc))}). Fix: name the "
                "profile that declares your folder datasets, or unset it"
            ) from None
        value = (profile.get("datasets") or {}) if isinstance(profile, dict) else {}
        data_dir = profile.get("data_dir") if isinstance(profile, dict) else None
    if not isinstance(value, dict):
        raise DataError(f"${ENV} holds no mapping of datasets. Fix: unset it, or name a profile")
    return {str(k): v for k, v in value.items() if isinstance(v, Mapping) and "folder" in v}, data_dir


def register_declared(text: str, data_dir: Path | None = None, strict: bool = True) -> list[str]:
    """Register the folder datasets ``text`` declares (as ``$CON2_DATASETS``: :func:`declarations`), their
    relative folders under ``data_dir`` (``None``: the profile's ``data_dir``, else the default); the names.
    ``strict``: as :func:`register_spec`.

    Raises:
        DataError: a bad declaration or (``strict``) a refused folder, one line.
    """
    declared, profile_dir = declarations(text)
    base = data_dir if data_dir is not None else (Path(profile_dir) if isinstance(profile_dir, str) else None)
    return [register_spec(read_spec(name, settings), base, strict).name for name, settings in declared.items()]


def register_from_environment() -> list[str]:
    """Register the folder datasets ``$CON2_DATASETS`` declares (see :func:`declarations`); the names registered.

    Raises:
        DataError: a bad variable or declaration, one line.
    """
    text = os.environ.get(ENV, "")
    return register_declared(text) if text.strip() else []


def counts_line(info: DatasetInfo, data_dir: Path) -> str:
    """``con2 data list``'s line on a declared folder: its layout, then images per split and class
    (``train: good 20; test: good 5, bar 5, disc 5``).

    Raises:
        DataError: the folder is missing or refused (:func:`list_folder`).
    """
    listing = list_folder(spec_of(info), data_dir)
    per: dict[str, dict[str, int]] = {}
    for split, cls, _ in listing.rows:
        per.setdefault(split, {}).setdefault(cls, 0)
        per[split][cls] += 1
    splits = "; ".join(
        f"{split}: " + ", ".join(f"{c} {n}" for c, n in classes.items()) for split, classes in per.items()
    )
    drawn = f", test split drawn by a seeded hash ({info.test_fraction:g})" if listing.protocol == "holdout" else ""
    return f"{info.name} ({listing.layout}{drawn}): {splits}"
