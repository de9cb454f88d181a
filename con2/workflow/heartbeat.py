"""A sign of life when the console has been quiet: what each running job is doing (issue 46, point 2).

Snakemake prints a job's start and end, and a training job its first epoch and its result; in
between, two runs scoring kept the default profile's console silent for 5 min 23 s. :class:`Heartbeat`,
a logging filter on Snakemake's logger installed by the Snakefile's ``onstart``, notes each job's
start (its one-line message and its log file, from the job-info record), its end (job-finished and
job-error records) and the time of the last record the console got; :func:`start_heartbeat` then
checks every few seconds and, once the console has had nothing for :data:`QUIET_SECONDS`
(``$CON2_QUIET_SECONDS``), logs one line naming each running job, how long it has run and the last
line of its log (a training job writes one per epoch and, while it scores, one at most every 30 s:
``scoring: 12 of 41 passes, about 3.2 min left``):

    con2 grid: still working (45 s without a line): train breastmnist/1 con2/invert seed 1, 4 min 10 s in,
    log: "scoring: 12 of 41 passes, about 3.2 min left"; ...

So the console shows a line at least every ``QUIET_SECONDS`` plus :data:`CHECK_SECONDS` while a job
runs, and never more often than that when the jobs print nothing themselves. The bookkeeping and
the line are pure (:meth:`Heartbeat.tick` takes the time); only the thread reads the clock.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from con2.text import terminal_safe
from con2.workflow.console import event_name
from con2.workflow.eta import format_duration

__all__ = [
    "CHECK_SECONDS",
    "QUIET_SECONDS",
    "Heartbeat",
    "RunningJob",
    "last_log_line",
    "quiet_seconds",
    "start_heartbeat",
    "still_working",
]

QUIET_SECONDS = 45.0  # the console's longest silence while a job runs (the issue asks for 30-60 s)
CHECK_SECONDS = 5.0  # how often the thread looks: a line comes 45-50 s after the last one
SHOWN_JOBS = 4  # jobs named on one line; the others are counted
LOG_CHARS = 120  # of a log's last line
TAIL_BYTES = 4096  # read from a log's end to find its last line


def quiet_seconds(environ: dict[str, str] | None = None) -> float:
    """:data:`QUIET_SECONDS`, or ``$CON2_QUIET_SECONDS`` where it is a positive number (the tests' 1 s)."""
    value = (os.environ if environ is None else environ).get("CON2_QUIET_SECONDS", "")
    try:
        seconds = float(value)
    except ValueError:
        return QUIET_SECONDS
    return seconds if seconds > 0 else QUIET_SECONDS


@dataclass(frozen=True)
class RunningJob:
    """A job in flight: its one-line message (``train digits/0 con2/invert seed 0``), when it started
    (``time.time()``) and its log file, if it has one."""

    message: str
    started: float
    log: str | None = None


def last_log_line(path: str | None) -> str | None:
    """The last non-empty line of the log at ``path`` (its last part after a carriage return, cut to
    :data:`LOG_CHARS`, control characters escaped), or ``None``: no log, empty or unreadable."""
    if not path:
        return None
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - TAIL_BYTES))
            tail = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [line.split("\r")[-1].strip() for line in tail.splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return None
    line = lines[-1]
    return terminal_safe(line if len(line) <= LOG_CHARS else line[: LOG_CHARS - 3] + "...")


def still_working(
    jobs: Iterable[RunningJob], now: float, quiet: float, tail: Callable[[str | None], str | None] = last_log_line
) -> str:
    """The line: each running job (longest running first, :data:`SHOWN_JOBS` of them), how long it has
    run and the last line of its log (``tail``)."""
    ordered = sorted(jobs, key=lambda j: j.started)
    parts = []
    for job in ordered[:SHOWN_JOBS]:
        text = f"{terminal_safe(job.message)}, {format_duration(max(0.0, now - job.started))} in"
        line = tail(job.log)
        parts.append(f'{text}, log: "{line}"' if line else f"{text}, nothing in its log yet")
    if len(ordered) > SHOWN_JOBS:
        parts.append(f"(+{len(ordered) - SHOWN_JOBS} more jobs)")
    return f"con2 grid: still working ({format_duration(quiet)} without a line): " + "; ".join(parts)


class Heartbeat(logging.Filter):
    """Notes the jobs in flight and the last record logged; :meth:`tick` gives the line once the
    console has been quiet for ``quiet`` seconds while a job runs (then not again for ``quiet``)."""

    def __init__(self, quiet: float = QUIET_SECONDS, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.quiet, self.clock = quiet, clock
        self.running: dict[str, RunningJob] = {}
        self.last = clock()  # when the console last got a record
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        event, now = event_name(record), self.clock()
        with self._lock:
            self.last = now
            if event == "job_info":
                logs = [str(f).split(" (")[0] for f in getattr(record, "log", None) or ()]
                message = getattr(record, "rule_msg", None) or getattr(record, "rule_name", None) or "a job"
                self.running[str(getattr(record, "jobid", ""))] = RunningJob(
                    str(message), now, logs[0] if logs else None
                )
            elif event in ("job_finished", "job_error"):
                self.running.pop(str(getattr(record, "job_id", getattr(record, "jobid", ""))), None)
        return True

    def tick(self, now: float) -> str | None:
        """The line if the console has had nothing for ``quiet`` seconds while a job runs, else ``None``."""
        with self._lock:
            if not self.running or now - self.last < self.quiet:
                return None
            jobs = list(self.running.values())
        return still_working(jobs, now, self.quiet)


def start_heartbeat(logger: logging.Logger, quiet: float | None = None, every: float = CHECK_SECONDS) -> Heartbeat:
    """Install a :class:`Heartbeat` on ``logger`` (replacing an earlier one) and a daemon thread that logs
    its line when there is one, every ``every`` seconds (at most a quarter of the quiet time); a failure
    there is never the workflow's. ``quiet``: default :func:`quiet_seconds`."""
    for f in [f for f in logger.filters if isinstance(f, Heartbeat)]:
        logger.removeFilter(f)
    beat = Heartbeat(quiet_seconds() if quiet is None else quiet)
    logger.addFilter(beat)
    stop = threading.Event()
    every = min(every, beat.quiet / 4)  # a short quiet time (the tests') is looked at as often

    def loop() -> None:
        while not stop.wait(every):
            if not any(f is beat for f in logger.filters):  # replaced: this thread's work is over
                return
            try:
                line = beat.tick(time.time())
                if line:
                    logger.info(line)
            except Exception:  # a sign of life must never stop a workflow
                continue

    threading.Thread(target=loop, name="con2-heartbeat", daemon=True).start()
    return beat
