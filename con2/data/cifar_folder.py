"""CIFAR-10 from an image-folder layout: ``data_dir/cifar10/{train,test}/<class>/`` of JPEG or PNG files.

The layout of the common CIFAR image dumps (e.g. the "CIFAR-10-images" folder): one folder per
class under ``train/`` (5000 images each) and ``test/`` (1000 each), 32x32 RGB, the ten official
class names. Such a dump is a *re-encoding* of the official arrays: JPEG dumps differ from the
official pixels (slightly), and even a PNG dump is not the official bytes, so every record of a
run on it names this source (:data:`FORMAT`, with the content checksum of its files) and every
table that shows such a run says so in its note (:func:`con2.report.tables.re_encoded_note`).

The official pickles (:mod:`con2.data.cifar_source`) are preferred when both are present. The
folder is checked by content before anything is prepared: the listing (class names, only JPEG or
PNG files, the counts of :data:`EXPECTED_COUNTS`) when it is found, and every image's size and mode
when it is decoded (:func:`read_checked`). Each problem is one line naming the folder or file, what
was found and the fix.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PIL import Image

from con2.data.base import DataError
from con2.data.cache import Found, SourceTable
from con2.data.folders import check_distinct, fingerprint, list_images, open_image
from con2.source_formats import IMAGE_FOLDER

#: The ``format`` of the source in the prepared cache's manifest, the split manifest and the run record.
FORMAT = IMAGE_FOLDER
#: The suffixes a CIFAR image dump uses (any case); another image format in a class folder is refused.
SUFFIXES = (".jpg", ".jpeg", ".png")
#: Images per class folder in each split of the official CIFAR-10 (tests shrink it for their fixtures).
EXPECTED_COUNTS: dict[str, int] = {"train": 5000, "test": 1000}
#: The side of every image, in pixels.
SIDE = 32
SPLITS = ("train", "test")


class ImageFolderError(DataError):
    """A CIFAR-10 image folder found but broken: its source is the image folder (:data:`FORMAT`), which
    ``con2 data list`` shows beside the problem."""

    form = FORMAT


def folder_root(data_dir: Path) -> Path:
    """Where the image folder of CIFAR-10 is looked for: ``data_dir/cifar10``."""
    return data_dir / "cifar10"


def looks_like_folder(root: Path) -> bool:
    """Whether ``root`` holds an image-folder layout to check (a ``train/`` or ``test/`` folder)."""
    return any((root / split).is_dir() for split in SPLITS)


def how_to_lay_out(root: Path) -> str:
    """The fix that names the expected layout."""
    return (
        f"Fix: lay the images out as {root}/train/<class>/*.jpg|png (5000 per class) and {root}/test/<class>/ "
        f"(1000 per class) for the ten classes airplane ... truck, or use the official pickles "
        f"(`con2 data get cifar10`)."
    )


def check_listing(root: Path, classes: tuple[str, ...]) -> tuple[Path, ...]:
    """Check the layout under ``root`` by its listing (no image read); return its image files in order.

    Raises:
        ImageFolderError: two class folders that are one (a symlink), a missing split or class folder, a folder
            that is not a CIFAR-10 class, a file of another format, or a class folder with another count than
            :data:`EXPECTED_COUNTS`.
    """
    fix = how_to_lay_out(root)
    _check_distinct(root, classes, fix)  # first: a linked folder's count would say less than this
    files: list[Path] = []
    for split in SPLITS:
        base = root / split
        if not base.is_dir():
            raise ImageFolderError(f"cifar10: {base} is missing (found only {_names(root)} in {root}). {fix}")
        found = sorted(p.name for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
        extra = [n for n in found if n not in classes]
        missing = [n for n in classes if n not in found]
        if extra or missing:
            what = "; ".join(
                part
                for part in (
                    f"not CIFAR-10 classes: {', '.join(extra[:5])}" if extra else "",
                    f"missing: {', '.join(missing[:5])}" if missing else "",
                )
                if part
            )
            raise ImageFolderError(f"cifar10: {base} has class folders {found[:12]} ({what}). {fix}")
        for cls in classes:
            folder = base / cls
            images = list_images(folder)
            others = sorted(p.name for p in images if p.suffix.lower() not in SUFFIXES)
            if others:
                raise ImageFolderError(
                    f"cifar10: {folder} holds {len(others)} file(s) that are not JPEG or PNG, e.g. {others[0]}. {fix}"
                )
            expected = EXPECTED_COUNTS[split]
            if len(images) != expected:
                raise ImageFolderError(
                    f"cifar10: {folder} holds {len(images)} images, not CIFAR-10's {expected} per {split} class "
                    f"(an incomplete or different copy). {fix}"
                )
            files += images
    return tuple(files)


def _check_distinct(root: Path, classes: tuple[str, ...], fix: str) -> None:
    """Refuse two class folders (of any split) that are one folder (:func:`con2.data.folders.check_distinct`).

    Raises:
        ImageFolderError: naming both folders and the fix.
    """
    folders = [root / split / cls for split in SPLITS for cls in classes]
    check_distinct("cifar10", folders, fix, ImageFolderError)


def _names(root: Path) -> str:
    try:
        names = sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
    except OSError:
        return "nothing readable"
    return str(names[:8]) if names else "nothing"


def read_checked(path: Path, root: Path) -> Image.Image:
    """Decode ``path`` and check it is a 32x32 RGB (or grayscale) image.

    Raises:
        DataError: another size or mode, naming the file and the fix.
    """
    img = open_image(path)
    if img.size != (SIDE, SIDE) or img.mode not in ("RGB", "L"):
        raise ImageFolderError(
            f"cifar10: {path} is {img.size[0]}x{img.size[1]} {img.mode}, not a {SIDE}x{SIDE} RGB CIFAR-10 image. "
            f"{how_to_lay_out(root)}"
        )
    return img


def find(root: Path, data_dir: Path, classes: tuple[str, ...]) -> Found:
    """The image folder at ``root``, its listing checked (:func:`check_listing`)."""
    files = check_listing(root, classes)
    return Found(root, fingerprint(root, files), data_dir, files=files, form=FORMAT)


def table(root: Path, found: Found, classes: tuple[str, ...]) -> SourceTable:
    """One row per image: ids ``train/<class>/<file>`` and ``test/<class>/<file>``, in listing order."""
    files = found.files or check_listing(root, classes)
    ids, splits, labels = [], [], []
    for f in files:
        split, cls = f.relative_to(root).parts[:2]
        ids.append(f.relative_to(root).as_posix())
        splits.append(split)
        labels.append(classes.index(cls))
    reader: Callable[[int], Image.Image] = lambda i: read_checked(files[i], root)  # noqa: E731
    return SourceTable(
        dataset="cifar10",
        location=root,
        fingerprint=found.fingerprint,
        classes=classes,
        ids=ids,
        splits=splits,
        labels=labels,
        read=reader,
        recipe="resize",
        channels=3,
        files=tuple(files),
        form=FORMAT,
    )
