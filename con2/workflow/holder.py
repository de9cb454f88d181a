"""Which workflow run holds a results folder: a second launch names the first (issue 57, item 8).

Two ``snakemake`` launches in one folder share its outputs; Snakemake refuses the second with a lock error
or, for outputs the first has write-protected, a ``ProtectedOutputException`` that names neither the other
run nor what to do. The launch that executes jobs writes :data:`HOLDER` (its pid, command line and start)
when its first job starts and removes it when it exits; a later launch that finds the file held by a live
``snakemake`` process says so in its first line, with the fix. Launches that share no output still run side
by side (Snakemake allows it), so this is a line, not a refusal. A file left by a killed run names a process
that is gone (or no longer ``snakemake``) and is ignored.
"""

from __future__ import annotations

import atexit
import json
import os
import shlex
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from con2.atomic import atomic_path
from con2.text import terminal_safe

__all__ = ["HOLDER", "claim", "held_by", "holder_line", "release"]

#: the run holding the results folder (hidden: the tables' readers never see it)
HOLDER = "results/.con2-run.json"


def _is_snakemake(pid: int) -> bool:
    """Whether ``pid`` is a live process whose command line names snakemake (a reused pid is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's: its command line says whose it is
        pass
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc (macOS): a live pid is taken at its word
    return b"snakemake" in cmdline


def claim(argv: Sequence[str], path: str | Path = HOLDER) -> dict[str, Any]:
    """Write this process as the folder's holder (atomically) and remove it again at exit; the record."""
    record = {"pid": os.getpid(), "command": shlex.join(str(a) for a in argv), "started": time.time()}
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:
        tmp.write_text(json.dumps(record))
    atexit.register(release, path)
    return record


def release(path: str | Path = HOLDER) -> None:
    """Remove the holder file if this process wrote it (another launch's stays)."""
    held = _read(Path(path))
    if held is not None and held.get("pid") == os.getpid():
        Path(path).unlink(missing_ok=True)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        held = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return held if isinstance(held, dict) and isinstance(held.get("pid"), int) else None


def held_by(path: str | Path = HOLDER) -> dict[str, Any] | None:
    """The live other ``snakemake`` run holding the folder (its record), or None."""
    held = _read(Path(path))
    if held is None or held["pid"] == os.getpid() or not _is_snakemake(held["pid"]):
        return None
    return held


def holder_line(held: Mapping[str, Any]) -> str:
    """The one line a second launch prints: which run holds the folder, since when, and the fix."""
    started = held.get("started")
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if isinstance(started, (int, float)) else "?"
    return terminal_safe(
        f"con2 workflow: another snakemake run holds this results folder (pid {held['pid']}, since {since}: "
        f"{held.get('command', '?')}); this launch can only run what that one does not write, and Snakemake stops "
        f"it on a lock or a write-protected output otherwise: wait for pid {held['pid']} to end, or stop it with "
        f"`kill -TERM {held['pid']}` (its runs keep their checkpoints and the same command resumes them)"
    )
