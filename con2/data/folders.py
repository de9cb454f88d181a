"""Image folder trees: listing class folders, checking layouts, fingerprints and readers.

Only image files count (``.jpg .jpeg .png .bmp .tif .tiff .webp``, any case); hidden files and
macOS resource forks (``._*``, ``__MACOSX``, ``.DS_Store``) are ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from con2.data.base import DataError
from con2.data.cache import SourceTable
from con2.data.fileops import text_digest
from con2.text import terminal_safe

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"}


def is_image(path: Path) -> bool:
    """True for an image file that is not a hidden file or resource fork."""
    return path.suffix.lower() in IMAGE_SUFFIXES and not path.name.startswith(".")


def list_images(folder: Path, recursive: bool = False) -> list[Path]:
    """Sorted image files in ``folder`` (and its subfolders, skipping ``__MACOSX``, if ``recursive``)."""
    paths = folder.rglob("*") if recursive else folder.iterdir()
    return sorted(
        p
        for p in paths
        if p.is_file()
        and is_image(p)
        and "__MACOSX" not in p.parts
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def require_dirs(dataset: str, root: Path, relative: Sequence[str], fix: str) -> None:
    """Raise a :class:`DataError` naming the first missing or empty class folder under ``root``."""
    for rel in relative:
        d = root / rel
        if not d.is_dir():
            raise DataError(f"{dataset}: class folder {d} is missing. {fix}")
        if not any(is_image(p) for p in (d.rglob("*") if d.is_dir() else [])):
            raise DataError(f"{dataset}: class folder {d} holds no images. {fix}")


def check_distinct(dataset: str, folders: Sequence[Path], fix: str, error: type[DataError] = DataError) -> None:
    """Refuse two class folders that are one folder (a symlink to another class, or from ``train/`` to
    ``test/``): its images would be filed under both, each one a duplicate note.

    Raises:
        ``error``: naming both folders and the fix.
    """
    seen: dict[Path, Path] = {}
    for folder in folders:
        real = folder.resolve()
        if real in seen:
            raise error(
                f"{dataset}: {terminal_safe(str(folder))} is the same folder as {terminal_safe(str(seen[real]))} (a "
                f"symlink): its images would be both classes' or both splits' images. Fix: replace the link by the "
                f"class's own images. {fix}"
            )
        seen[real] = folder


def has_control(name: str) -> bool:
    """Whether ``name`` holds a control character (a line break, an escape, a bidirectional override):
    :func:`con2.text.terminal_safe` would escape it."""
    return terminal_safe(name) != name


def other_files(folder: Path) -> list[Path]:
    """The entries of ``folder`` that are neither an image file (:func:`is_image`) nor hidden or a resource
    fork (``.*``, ``__MACOSX``): other files and subfolders, sorted (a class folder of a declared dataset holds
    images only: anything else would be left out without a word)."""
    return sorted(
        p
        for p in folder.iterdir()
        if not p.name.startswith(".") and p.name != "__MACOSX" and not (p.is_file() and is_image(p))
    )


def outside(path: Path, root: Path) -> bool:
    """Whether ``path``, its symbolic links followed, lies outside ``root`` (its links followed too)."""
    real, base = path.resolve(), root.resolve()
    return real != base and base not in real.parents


def fingerprint(root: Path, files: Sequence[Path]) -> str:
    """sha256 of the relative paths, sizes and mtimes of ``files`` (cheap: no file is read): the listing's
    identity, never the cache's key (the files' content is: :func:`con2.data.cache.source_key`)."""
    rows = []
    for f in files:
        st = f.stat()
        rows.append(f"{f.relative_to(root).as_posix()}\t{st.st_size}\t{st.st_mtime_ns}")
    return text_digest("\n".join(rows))


def open_image(path: Path) -> Image.Image:
    """Open and fully decode an image file."""
    with Image.open(path) as img:
        img.load()
        return img.copy()


def folder_table(
    dataset: str,
    root: Path,
    layout: Sequence[tuple[str, str, str]],
    classes: Sequence[str],
    recipe: str,
    channels: int,
    recursive: bool = False,
) -> SourceTable:
    """A :class:`~con2.data.cache.SourceTable` of a class-folder tree.

    Args:
        dataset: registered name (for messages).
        root: the folder the layout is relative to.
        layout: ``(source split, class name, folder relative to root)`` triples.
        classes: all class names (labels index into it).
        recipe, channels: preprocessing (see :mod:`con2.data.images`).
        recursive: also read images in subfolders of each class folder.
    """

    files: list[Path] = []
    ids, splits, labels = [], [], []
    for split, cls, rel in layout:
        for f in list_images(root / rel, recursive=recursive):
            files.append(f)
            ids.append(f.relative_to(root).as_posix())
            splits.append(split)
            labels.append(list(classes).index(cls))
    return SourceTable(
        dataset=dataset,
        location=root,
        fingerprint=fingerprint(root, files),
        classes=tuple(classes),
        ids=ids,
        splits=splits,
        labels=labels,
        read=lambda i: open_image(files[i]),
        recipe=recipe,
        channels=channels,
        files=tuple(files),
    )
