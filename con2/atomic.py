"""Atomic file writes: the one implementation every writer of the package uses.

A file (or folder) is written under a unique temporary name in its destination folder and renamed
into place only once complete, so a crash, a kill or a full disk never leaves a file that a later
run would take for a good one, and two processes writing the same file never share a temporary
name. Temporary names are ``.<name>.partial-<pid>-<random>``; on any error the temporary is
deleted and a write failure is re-raised as an ``OSError`` naming the *final* path (see
:func:`con2.errors.write_failure` for the message the command line prints).

Only the standard library is imported here, so the command line can use it at start-up.
"""

from __future__ import annotations

import errno
import os
import shlex
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

PARTIAL = ".partial-"


def partial_name(final: Path) -> Path:
    """A unique temporary sibling of ``final`` (same folder, so the rename is atomic)."""
    return final.with_name(f".{final.name}{PARTIAL}{os.getpid()}-{os.urandom(3).hex()}")


def remove(path: Path) -> None:
    """Delete a file or folder tree if it exists."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink(missing_ok=True)


def install(src: Path, final: Path) -> None:
    """Move ``src`` onto ``final`` in one rename (a folder written atomically replaces the folder at ``final``).

    Raises:
        IsADirectoryError: ``src`` is a file and ``final`` a folder: a file is never written over a folder,
            whose contents (someone's files) would be removed without a word.
    """
    if final.is_dir() and not final.is_symlink():
        if not src.is_dir():
            raise IsADirectoryError(errno.EISDIR, folder_in_the_way(final), str(final))
        shutil.rmtree(final)
    os.replace(src, final)


def folder_in_the_way(path: Path) -> str:
    """The message for a folder at ``path`` where con2 writes (or removes) a file: it is left as it is."""
    try:
        entries = sum(1 for _ in path.iterdir())
    except OSError:
        entries = 0
    return (
        f"{path} is a folder ({entries} entr{'y' if entries == 1 else 'ies'}) where con2 writes a file; it is left as "
        f"it is. Fix: move it out of the way (mv {shlex.quote(str(path))} elsewhere) and rerun"
    )


def _about(exc: OSError, tmp: Path) -> bool:
    """Whether ``exc`` is about the temporary (or has no path at all, like a failed ``write``)."""
    return exc.filename is None or str(exc.filename).startswith(str(tmp))


@contextmanager
def atomic_path(final: Path) -> Iterator[Path]:
    """Yield a temporary path; on success rename it to ``final``, on any error delete it.

    Works for files and folders. An existing ``final`` is replaced (folders: removed first). An
    ``OSError`` raised while writing the temporary is re-raised naming ``final``.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial_name(final)
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"internal: {tmp} was not written")
        install(tmp, final)
    except OSError as exc:
        if _about(exc, tmp):
            raise OSError(exc.errno, exc.strerror or str(exc), str(final)) from exc
        raise
    finally:
        remove(tmp)


def write_bytes_atomic(path: Path, data: bytes | bytearray | memoryview) -> None:
    """Write ``data`` to ``path`` atomically, flushed to the disk (``fsync``) before the rename."""
    with atomic_path(Path(path)) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    write_bytes_atomic(path, text.encode())


def partials(folder: Path) -> list[Path]:
    """Leftovers of interrupted writes (``.*.partial-*``) in ``folder``."""
    return sorted(folder.glob(f".*{PARTIAL}*")) if folder.is_dir() else []


def clean_partials(folder: Path) -> None:
    """Remove leftovers of interrupted writes in ``folder`` (call it only while no one else writes there)."""
    for p in partials(folder):
        remove(p)


class NotARegularFile(Exception):
    """A file that con2 opens for itself (a lock) is a symbolic link, not a regular file, or a hard link.

    Attributes:
        path: the path opened.
        problem: ``a symbolic link (to TARGET)``, ``not a regular file`` or ``hard-linked to another file``.
        target: a link's target (``None`` for the others).
    """

    def __init__(self, path: Path, problem: str, target: str | None = None) -> None:
        super().__init__(f"{path} is {problem}")
        self.path, self.problem, self.target = path, problem, target


def open_regular(path: Path, mode: int = 0o644) -> int:
    """Open (creating) ``path`` read-write without following a symbolic link (``O_NOFOLLOW``) and without
    waiting on a FIFO (``O_NONBLOCK``), then refuse what is not a regular file of one name (checked
    on the open file, so no swap in between is missed). The caller owns the returned descriptor.

    Raises:
        NotARegularFile: a symbolic link, a FIFO, a device, a socket, a folder or a hard link;
        OSError: any other failure to open it.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, mode)
    except OSError as exc:
        if path.is_symlink():  # ELOOP (Linux), EMLINK (FreeBSD), EFTYPE (NetBSD)
            try:
                target = os.readlink(path)
            except OSError:
                target = "?"
            raise NotARegularFile(path, f"a symbolic link (to {target})", target) from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):
            raise NotARegularFile(path, "not a regular file") from None
        raise
    st = os.fstat(fd)
    problem = "not a regular file" if not stat.S_ISREG(st.st_mode) else "hard-linked to another file"
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:  # writing it would write that other file
        os.close(fd)
        raise NotARegularFile(path, problem)
    return fd


def open_regular_file(path: Path) -> BinaryIO:
    """``path``, a regular file (a link to one is followed), opened for reading without waiting: a FIFO, a
    device or a folder at a name con2 reads (``record.json``, ``scores.csv``) is refused at once, never read
    (a FIFO would block the reader forever, ``/dev/zero`` never end).

    Raises:
        NotARegularFile: ``path`` is no regular file; FileNotFoundError and other ``OSError``: as ``open``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotARegularFile(Path(path), "not a regular file (a folder, a FIFO or a device)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular_file`)."""
    with open_regular_file(path) as handle:
        return handle.read()
