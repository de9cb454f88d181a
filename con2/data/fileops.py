"""Locks, archive extraction and checksums for the data layer.

Everything the data layer writes goes through :mod:`con2.atomic` (a unique temporary name in the
destination folder, renamed into place only once complete and verified), so an interrupted
download or preparation never leaves a file that a later run would take for a good one.
Temporary names contain ``.partial-``.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from con2.atomic import (
    PARTIAL,
    NotARegularFile,
    atomic_path,
    clean_partials,
    install,
    open_regular,
    partial_name,
    remove,
)
from con2.errors import DataError, write_failure

__all__ = [
    "PARTIAL",
    "atomic_path",
    "clean_partials",
    "extract_archive",
    "extract_into",
    "file_digest",
    "file_lock",
    "partial_name",
    "remove",
    "text_digest",
]


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (POSIX ``flock``; a no-op where unavailable),
    so parallel jobs (Snakemake) do not prepare the same cache at the same time.

    Raises:
        DataError: ``path`` is a symbolic link, a FIFO, a device, a folder or a hard link (opened
            without following or waiting, see :func:`con2.atomic.open_regular`; never written).
    """
    try:
        import fcntl  # lazy: fcntl is POSIX-only (Windows has no flock): imported where a lock is taken
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = open_regular(path)
    except NotARegularFile as exc:
        raise DataError(
            f"the cache's lock {path} is {exc.problem}; con2 locks a regular file of its own there and neither "
            f"follows nor waits on anything else. Fix: remove it (`rm -r {shlex.quote(str(path))}`; a link's "
            f"target is untouched) and rerun"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def file_digest(path: Path, algo: str = "md5", chunk: int = 1 << 20) -> str:
    """Hex digest of a file (``md5`` for official archives, ``sha256`` for our caches)."""
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def text_digest(text: str) -> str:
    """sha256 of a string (used for fingerprints and manifests)."""
    return hashlib.sha256(text.encode()).hexdigest()


def extract_archive(archive: Path, dest: Path, dataset: str) -> None:
    """Extract a zip or tar archive into the new folder ``dest`` (atomically).

    Raises:
        DataError: the archive is truncated, corrupt or of an unknown kind.
    """
    fix = f"Fix: delete {archive} and run `con2 data get {dataset}` (or download it again by hand)."
    with atomic_path(dest) as tmp:
        tmp.mkdir()
        try:
            if zipfile.is_zipfile(archive):
                with zipfile.ZipFile(archive) as zf:
                    zf.extractall(tmp)
            elif archive.name.endswith((".tar", ".tar.gz", ".tgz")) and tarfile.is_tarfile(archive):
                with tarfile.open(archive) as tf:
                    try:
                        tf.extractall(tmp, filter="data")  # refuses absolute paths and links out of tmp
                    except TypeError:  # pragma: no cover - Python < 3.11.4 has no filters
                        tf.extractall(tmp)
            else:
                raise DataError(f"{dataset}: {archive} is not a readable zip or tar archive (truncated?). {fix}")
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError) as exc:
            if isinstance(exc, OSError) and write_failure(exc) is not None:
                raise  # a full or read-only disk, not a bad archive
            raise DataError(f"{dataset}: {archive} is truncated or corrupt ({exc}). {fix}") from exc


def extract_into(archive: Path, target: Path, name: str, check: Callable[[Path], Any]) -> None:
    """Extract ``archive`` next to ``target``, run ``check`` on the extracted folder, then move
    its entries into ``target``. Nothing lands in ``target`` unless extraction and check pass."""
    tmp = partial_name(target)
    try:
        extract_archive(archive, tmp, name)
        check(tmp)
        target.mkdir(parents=True, exist_ok=True)
        for child in tmp.iterdir():
            if child.name == "__MACOSX":
                continue
            install(child, target / child.name)
    finally:
        remove(tmp)
