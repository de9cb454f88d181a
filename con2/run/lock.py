"""One writer per run directory: an ``flock`` on its ``.lock`` file.

A second writer stops at once naming the holder (pid, host, start time, command); a lock left by a
killed process never blocks, since the operating system drops an ``flock`` with its process; a
lock file that is a link, or not a regular file, is refused, never followed.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import socket
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from con2.atomic import NotARegularFile, open_regular
from con2.errors import RunDirError
from con2.text import shell_command


def _holder_text(fd: int) -> str:
    for _ in range(20):  # a new holder writes its details right after taking the lock
        os.lseek(fd, 0, os.SEEK_SET)
        raw = os.read(fd, 4096)
        if raw:
            try:
                h = json.loads(raw)
                return f"pid {h['pid']} on host {h['host']}, started {h['started']} (`{h['command']}`)"
            except (ValueError, KeyError, TypeError):
                break
        time.sleep(0.05)
    return "a process that did not say who it is"


def link_refusal(path: Path) -> RunDirError:
    """The one-line refusal of a run file that is a symbolic link (names its target, which stays untouched)."""
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return RunDirError(
        f"{path} is a symbolic link (to {target}); a run directory holds its own files, and con2 neither writes "
        f"nor reads them through a link (a write would land in {target}, a read take another run's file). Fix: "
        f"remove the link (`{shell_command('rm', path)}`), or replace it with a copy of the file it points to, then "
        f"rerun; {target} is untouched"
    )


def _open_lock(path: Path) -> int:
    """Open the lock file for writing without following a link (:func:`con2.atomic.open_regular`): a
    ``.lock`` that is a symbolic link, a hard link to another file or not a regular file is refused,
    and never written.

    Raises:
        RunDirError: ``path`` is a link or not a regular file (the message names the fix).
    """

    try:
        return open_regular(path)
    except NotARegularFile as exc:
        if exc.target is not None:
            raise link_refusal(path) from None
        raise _not_a_lock(path, exc.problem) from None


def _not_a_lock(path: Path, problem: str) -> RunDirError:
    return RunDirError(
        f"{path} is {problem}; con2 writes its lock there and will not write into another file. Fix: remove it "
        f"(`{shell_command('rm', '-r', path)}`; a hard link's other names keep the data) and rerun"
    )


def _acquire(path: Path) -> int:
    """Open and ``flock`` ``path`` without waiting; ``RunDirError`` naming the holder if it is taken,
    or refusing a ``path`` that is a link (see :func:`_open_lock`)."""

    while True:
        fd = _open_lock(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder_text(fd)
            os.close(fd)
            raise RunDirError(
                f"run directory {path.parent} is in use by another writer: {holder}. Fix: wait for it to finish "
                f"(or stop it), then rerun this command: it resumes from the last checkpoint. Two writers in one "
                f"run directory would do the work twice"
            ) from None
        except OSError:
            os.close(fd)
            raise
        try:  # a holder that was releasing may have unlinked the file we opened: then take the new one
            if os.fstat(fd).st_ino == os.lstat(path).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def holder_of(path: Path) -> str | None:
    """Who holds the lock file ``path`` now (:func:`locked`), or None: no such regular file, or no holder. Creates
    and writes nothing: a reader (``con2 evaluate --out``) asks before it reads a run directory it does not own."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder_text(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the lock file ``path`` (exclusive, non-blocking) with its holder's details; remove it on release.

    Not re-entrant: :func:`con2.run.runner.run` is the one place that locks a run directory, so a second
    lock of the same directory, even from the same process, is another writer and stops.

    Raises:
        RunDirError: another writer holds it, or ``path`` is a link or not a regular file.
    """
    fd = _acquire(path)
    try:
        details = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "command": " ".join(sys.argv)[:300],
        }
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(details).encode())
        yield
    finally:
        try:
            os.unlink(path)  # while still holding it; a waiter that opened it retries (see _acquire)
        except OSError:
            pass
        os.close(fd)
