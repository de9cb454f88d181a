"""What the workflow prints of its own: the grid's ETA line after each finished training job, and the
last lines of every invocation (datasets skipped, records left out, the command that fixes each).

The ETA line is printed under Snakemake's "N of M steps" by :class:`~con2.workflow.console.GridProgress`
(installed by the Snakefile's ``onstart``); :mod:`con2.workflow.eta` says how it is estimated.
"""

from __future__ import annotations

import atexit
import collections
import glob
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from con2.report.artefacts import MISSING_FILE
from con2.run.provenance import cpu_device_name
from con2.text import terminal_safe
from con2.workflow.artefact_files import RUNS_CSV, SKIPPED_CSV
from con2.workflow.eta import AfterRuns, WeighedRun, after_runs, eta_line, grid_eta, weigh_runs
from con2.workflow.session import Session
from con2.workflow.status import closing_lines


@cache
def device_name(device: str) -> str | None:
    """This device's name as the throughput table names devices: the GPU's (nvidia-smi) when the
    profile trains on CUDA, else the CPU's model and precision; None if it cannot be told."""
    if device.startswith("cuda") or (device == "auto" and shutil.which("nvidia-smi")):
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.SubprocessError):
            return None
        names = out.stdout.strip().splitlines()
        return names[0].strip() if names else None
    return cpu_device_name()


SERIAL = "aggregate"  # the aggregation of the grid's records: every table of the grid waits for it
AFTER_RULES = (SERIAL, "aggregate_scope")  # a study's aggregation reads the records on disk: no wait
AFTER_PREFIXES = ("table_", "figure_")  # the rules of the tables and figures (workflow/rules/*.smk)


def after_the_runs(rule: str) -> bool:
    """Whether a job of ``rule`` is a step after the training runs: an aggregation, a table or a figure."""
    return rule in AFTER_RULES or rule.startswith(AFTER_PREFIXES)


def finished_at(outputs: Sequence[str], since: float) -> float | None:
    """When a job that writes ``outputs`` finished in this invocation (its last output's mtime), or
    ``None``: an output missing or older than ``since`` (still to be written)."""
    try:
        times = [os.stat(o).st_mtime for o in outputs]
    except OSError:
        return None
    return max(times) if times and min(times) >= since else None


class ProgressLine:
    """The grid's progress line: runs done, the ETA and what it rests on.

    Args:
        session: the invocation.
        dag_outputs: the output files of the jobs this invocation runs (Snakemake's DAG, finished jobs
            included: Snakemake drops them when it updates the DAG after the data check).
        slots: training jobs at a time (--cores / threads per job here, --jobs on a cluster).
        dag_jobs: ``(rule, output files)`` of each of those jobs, for the jobs after the runs
            (:func:`after_the_runs`); none: the line counts the training runs alone.
    """

    def __init__(
        self,
        session: Session,
        dag_outputs: Callable[[], Collection[str]],
        slots: Callable[[], int],
        dag_jobs: Callable[[], Collection[tuple[str, Sequence[str]]]] = tuple,
    ) -> None:
        self.session = session
        self._dag_outputs = dag_outputs
        self._slots = slots
        self._dag_jobs = dag_jobs
        self.weighed: dict[str, WeighedRun] = {}  # run key -> its weight (weighed once)
        self.spent: dict[str, Any] = {}  # run key -> the timing of a record written since the start
        self.job_started: dict[str, float] = {}  # output file -> when its job started (GridProgress notes it)

    def training(self) -> list[Any]:
        """The grid's runs this invocation trains: those whose record a job of the DAG writes, now or
        earlier in this invocation."""
        outputs = set(self._dag_outputs())
        return [r for r in self.session.runs if r.record in outputs or r.key in self.weighed]

    def _note_spent(self, runs: list[Any]) -> None:
        """The timing of each record written since the start (the job's own clock: start-up included)."""
        for r in runs:
            if r.key in self.spent:
                continue
            try:
                if os.stat(r.record).st_mtime < self.session.started:
                    continue
                timing = json.loads(Path(r.record).read_text()).get("timing")
                if isinstance(timing, dict) and r.record in self.job_started:
                    timing = {**timing, "job_seconds": os.stat(r.record).st_mtime - self.job_started[r.record]}
                self.spent[r.key] = timing
            except (OSError, ValueError, AttributeError):
                continue

    def line(self) -> str | None:
        """The progress line (None while nothing trains)."""
        runs = self.training()
        if not runs:
            return None
        new = [r for r in runs if r.key not in self.weighed]
        if new:
            data_dir = self.session.data.data_dir
            device = device_name(str(self.session.config.get("device", "auto")))
            self.weighed.update(weigh_runs(new, data_dir if data_dir.is_dir() else None, device))
        self._note_spent(runs)
        now = time.time()  # the runs in flight: how long each has run (what is left of it is what counts)
        running = {
            r.key: now - self.job_started[r.record]
            for r in runs
            if r.key not in self.spent and r.record in self.job_started
        }
        slots = self._slots()
        eta = grid_eta([self.weighed[r.key] for r in runs], self.spent, slots, running, self.after_runs())
        return eta_line(eta, slots, self.unmeasured())

    def after_runs(self) -> AfterRuns:
        """The jobs after the runs in this invocation (:func:`after_the_runs`): how many, how many are
        left (the grid's aggregation among them), and the time each finished one took from its start."""
        jobs = [(rule, list(outs)) for rule, outs in self._dag_jobs() if after_the_runs(rule) and outs]
        left, serial, durations = 0, 0, []
        for rule, outs in jobs:
            end = finished_at(outs, self.session.started)
            if end is None:
                left += 1
                serial += rule == SERIAL
            elif outs[0] in self.job_started:
                durations.append(end - self.job_started[outs[0]])
        return after_runs(len(jobs), left, serial, durations)

    def unmeasured(self) -> str:
        """Why no ETA comes before the first finished run: this device has no measured throughput."""
        device = device_name(str(self.session.config.get("device", "auto")))
        what = f"this device, {device}," if device else "this device"
        return (
            f"{what} has no row in con2/resources/throughput.csv; docs/workflow.md, Cost plan, says how one is measured"
        )


def end_lines(session: Session) -> list[str]:
    """Lines for the end of the run: every dataset skipped (why, the command that fixes it), every
    record the aggregation left out (what is wrong, the fix) and the records aggregated although
    outside this profile's grid; in a rebuild, the runs it left out; and, where it was written, the
    table that holds every fix (MISSING_FILE)."""
    skipped = [SKIPPED_CSV, *sorted(glob.glob("results/evaluation/scopes/*.skipped.csv"))]
    lines = closing_lines(
        session.data.data_targets,
        session.config,
        RUNS_CSV,
        since=session.started,
        methods_missing_weights=session.grid.missing_weights,
        skipped_files=skipped,
        rebuild=not session.targets.trains_anything,
    )
    if not session.targets.trains_anything:  # a rebuild: what it left out, and the command that trains it
        untrained = [r for r in session.runs if not session.scoped_only(r) and not os.path.exists(r.record)]
        if untrained:
            by_dataset = collections.Counter(r.dataset for r in untrained)
            where = ", ".join(f"{d} {n}" for d, n in sorted(by_dataset.items()))
            lines.append(
                f"con2 workflow: a table rebuild trains nothing: {len(untrained)} run(s) of the grid have no record "
                f"yet ({where}) and are not in the tables; `snakemake --cores N all` (with the grid's --config "
                "data_dir=DIR, where their data are) trains them"
            )
    if lines and Path(MISSING_FILE).is_file():
        lines.insert(-1, f"con2 workflow: what is missing and how to get it, in one file: {MISSING_FILE}")
    return lines


def print_at_exit(lines: list[str]) -> None:
    """Print ``lines`` after Snakemake's own last lines (an atexit hook), so they end the output; each line
    escaped (:func:`con2.text.terminal_safe`: a folder or a reason naming a control character cannot forge one)."""
    if lines:
        text = "\n".join(terminal_safe(line) for line in lines)
        atexit.register(lambda: print(text, file=sys.stderr, flush=True))
