"""SIGTERM and SIGINT for the workflow and its training jobs (issue 27, point 13; issue 36, point 10).

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

SIGINT sent to Snakemake's pid alone (`kill -INT PID`, not Ctrl-C, which signals the whole group)
reached Snakemake only: it printed "Terminating processes on user request" and its `con2 train`
jobs trained on for minutes (Snakemake's cancel waits for its running jobs). :func:`terminate_jobs_on_sigint`
keeps Ctrl-C as it was (the KeyboardInterrupt Snakemake expects, the jobs stopped by their own SIGINT)
and sends SIGTERM to the jobs still running :data:`SIGINT_GRACE_SECONDS` later, which only a pid-only
SIGINT leaves.

Where SIGINT arrives ignored (SIG_IGN, what a non-interactive shell gives a job it starts with `&`),
the handler is not installed and Snakemake keeps ignoring SIGINT, as Python, Snakemake and the classic
Unix programs do: without job control that background job shares the script's process group, and the
inherited "ignore" is what keeps a Ctrl-C meant for the script (or its foreground command) from
stopping hours of training. Such a workflow stops with `kill PID` (SIGTERM, above).

`con2 train` itself takes SIGTERM as Ctrl-C (:func:`sigterm_as_interrupt`): it stops with "con2:
interrupted; rerun the same command to resume from the last checkpoint", its `finally` clauses run
(no half-written temporary file is left), and the checkpoint, written atomically, stays resumable.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading

__all__ = ["descendants", "sigterm_as_interrupt", "terminate_jobs_on_sigint", "terminate_jobs_on_sigterm"]

SIGINT_GRACE_SECONDS = 10.0  # after SIGINT, jobs still running this long after are sent SIGTERM


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


def terminate_jobs_on_sigint(grace: float = SIGINT_GRACE_SECONDS) -> None:
    """Make SIGINT stop this process's jobs too, where it reached this process alone (module docstring):
    KeyboardInterrupt at once, as Python's default, and SIGTERM to the jobs still running ``grace``
    seconds later. Left alone where SIGINT is ignored (a background job of a non-interactive shell)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # inherited "ignore": kept on purpose (module docstring); `kill PID` (SIGTERM) still stops the workflow
        return
    me = os.getpid()

    def stop_the_rest() -> None:
        for pid in descendants(me):
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:  # exited meanwhile
                pass

    def handler(signum: int, frame: object) -> None:
        timer = threading.Timer(grace, stop_the_rest)
        # never keeps the process alive: Snakemake's cancel waits for its running jobs, so it is alive
        # when the timer fires while a job runs on, and exits without waiting for it once they stopped
        timer.daemon = True
        timer.start()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)


def sigterm_as_interrupt() -> None:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does (in the main thread; nothing elsewhere)."""
    try:
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    except ValueError:  # not the main thread (con2 called as a library): leave the handler alone
        pass
