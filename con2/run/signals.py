"""SIGTERM for the workflow and its training jobs (issue 27, point 13).

Snakemake 9 answers SIGTERM (what `timeout`, a cluster's time limit or `kill PID` send to its pid
alone) with a "graceful" stop: it waits for the running jobs to finish (`con2 train` trains on, for
hours) and prints "Will exit after finishing currently running jobs" at each turn of its scheduler.
Its local jobs run in Snakemake's own process group, so only Ctrl-C (SIGINT to the whole group)
reached them. Snakemake has no option to change that, so the workflow installs its own handler
(:func:`terminate_jobs_on_sigterm`, from the Snakefile's ``onstart``: after Snakemake installs its
own, before the first job): it sends SIGTERM to every process below Snakemake (the job shells and
the `con2 train` processes under them, gathered before any is signalled) and then stops Snakemake
as Ctrl-C does (KeyboardInterrupt: its jobs are cancelled, it exits non-zero). SIGTERM, not SIGINT,
is forwarded: a process started in the background by a non-interactive shell (`snakemake ... &` in
a batch script) inherits SIGINT ignored, never SIGTERM.

`con2 train` itself takes SIGTERM as Ctrl-C (:func:`sigterm_as_interrupt`): it stops with "con2:
interrupted; rerun the same command to resume from the last checkpoint", its `finally` clauses run
(no half-written temporary file is left), and the checkpoint, written atomically, stays resumable.
"""

from __future__ import annotations

import os
import signal
import subprocess

__all__ = ["descendants", "sigterm_as_interrupt", "terminate_jobs_on_sigterm"]


def _parents() -> dict[int, int]:
    """{pid: parent pid} of every process (Linux: /proc; elsewhere: `ps`)."""
    out: dict[int, int] = {}
    if os.path.isdir("/proc/self"):
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat", "rb") as f:
                        stat = f.read()
                except OSError:  # gone meanwhile
                    continue
                out[int(name)] = int(stat[stat.rindex(b")") + 2 :].split()[1])  # the comm may hold spaces
        return out
    lines = subprocess.run(["ps", "-A", "-o", "pid=", "-o", "ppid="], capture_output=True, text=True).stdout
    for line in lines.splitlines():
        pid, ppid = line.split()
        out[int(pid)] = int(ppid)
    return out


def descendants(pid: int) -> list[int]:
    """The pids of every process below ``pid`` (children first)."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(0), []):
            found.append(child)
            todo.append(child)
    return found


def terminate_jobs_on_sigterm() -> None:
    """Make SIGTERM stop this process's jobs and then this process, as Ctrl-C does (module docstring)."""
    stopping = False

    def handler(signum: int, frame: object) -> None:
        nonlocal stopping
        for pid in descendants(os.getpid()):  # all gathered first: a shell's child outlives its shell
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:  # exited meanwhile
                pass
        if not stopping:  # a second SIGTERM only signals again: Snakemake is already cancelling its jobs
            stopping = True
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def sigterm_as_interrupt() -> None:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does (in the main thread; nothing elsewhere)."""
    try:
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    except ValueError:  # not the main thread (con2 called as a library): leave the handler alone
        pass
