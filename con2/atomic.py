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

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
    """Move ``src`` onto ``final`` in one rename (a folder at ``final`` is removed first)."""
    if final.is_dir() and not final.is_symlink():
        shutil.rmtree(final)
    os.replace(src, final)


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
