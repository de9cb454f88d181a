"""What one Snakemake invocation knows of the grid's data: a :class:`~con2.workflow.session.Session`'s data check,
which ``workflow/rules/common.smk`` binds as ``D``.

Each (dataset, size) of the grid is checked once by rule ``prepare_data`` (its marker,
``results/data/<dataset>/<size>px.json``), and the ``data_status`` checkpoint gathers the markers into
``results/data/status.json`` (:data:`DATA_STATUS`). :class:`DataCheck` answers what the rules ask of
that: what a check depends on (``prepare_data``'s params), whether a dataset's files were on disk at the
start, which runs are in the DAG before the check (their data on disk) and which wait for it, and whether
the status file is an input. Snakemake's own state reaches it as two callables: the named targets (known
only once the Snakefile has been read) and the checkpoint's content (known only once that job has run).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from con2 import paths as P
from con2.data import DataError, find_source
from con2.data.data_dir import absolute_data_dir
from con2.data.source import Found
from con2.grid import experiments as E
from con2.workflow.status import awaits_training, checked_in, same_folder
from con2.workflow.targets import Targets
from con2.workflow.wildcards import Wildcards

DATA_STATUS = f"{P.DATA_ROOT}/status.json"


class DataCheck:
    """The grid's data as one invocation finds and checks them.

    Args:
        config: the profile (``data_dir``, ``download``, ``strict``).
        runs: the grid's runs.
        targets: what the named targets train, asked when the DAG is built (a session's ``targets``).
        data_status: the data-status checkpoint's content, ``{"<dataset>/<size>": marker}``.

    ``data_dir`` is checked by the session before its grid is built (:func:`con2.grid.checks.check_data_dir`).
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        runs: Sequence[E.Run],
        targets: Callable[[], Targets],
        data_status: Callable[[], Mapping[str, Any]],
    ) -> None:
        self.data_dir = absolute_data_dir(config["data_dir"])  # how messages name it
        self.given_dir = str(config["data_dir"])  # as the profile spells it: a marker's folder is compared with it
        self.download = bool(config.get("download", True))
        self.strict = bool(config.get("strict", False))
        self.runs = list(runs)
        self.data_targets = E.data_targets(self.runs)
        self._targets = targets
        self._data_status = data_status
        self._on_disk: dict[tuple[str, int], bool] = {}  # (dataset, size) -> on disk at the start
        self._ready: dict[str, bool] = {}  # run key -> in the DAG before the data check

    def found_on_disk(self, dataset: str, size: int | str) -> Found | None:
        """The data layer's Found for the dataset under data_dir (no network), or None."""
        try:
            return find_source(dataset, self.data_dir, int(size))
        except DataError:
            return None

    def embedded_source(self, dataset: str, size: int | str) -> str | None:
        """The fingerprint of a dataset kept without files (a description, not a path, as its
        location: scikit-learn's digits), else None."""
        found = self.found_on_disk(dataset, size)
        return None if found is None or isinstance(found.location, Path) else found.fingerprint

    def awaits_data(self, dataset: str, size: int | str) -> bool:
        """True if a run of the grid on this dataset at this size would train now (no record yet, or a
        changed config): a run that reads the data, not only its record."""
        return any(
            awaits_training(r.record, r.config_file)
            for r in self.runs
            if r.dataset == dataset and r.data_size == int(size)
        )

    def params(self, dataset: str, size: int | str) -> dict[str, Any]:
        """prepare_data's params: what its outcome depends on. A dataset found ready keeps the value it
        was checked with (no re-check, so no rerun) while data_dir names the folder it was checked in
        and its files are still there, or while no run of it would train (a table rebuild of a
        finished grid reads records only) and data_dir holds no other copy of it. It is checked again
        where data_dir names another folder that holds the dataset, runs left to train or not (a
        finished grid pointed at a changed copy then ends by saying that its records were trained on
        other images: :func:`con2.workflow.status.other_data`), and where its files are gone from data_dir
        (a run deleted after its data) with runs left to train, so data missing there skip the dataset
        instead of failing its training jobs. A skipped one is checked
        again when data_dir, download or strict change or when its files appear on disk (`con2 data
        get`). A dataset without files (the embedded digits) depends on none of these: its value is
        its source's fingerprint alone. (A data check that runs again would hide, until it has run,
        the runs of that dataset whose setting changed: in Snakemake 9 the jobs below a job that must
        run are not checked on their own, and an `ancient` input does not pass the rerun down.)"""
        embedded = self.embedded_source(dataset, size)
        if embedded:
            return {"embedded": embedded}
        marker = Path(P.data_marker(dataset, size))
        if marker.is_file():
            try:
                found = json.loads(marker.read_text())
            except (OSError, ValueError):
                found = {}
            if "check" in found and not self._targets().trains_anything:  # a rebuild: the data stay as last checked
                return dict(found["check"])
            if found.get("status") == "ok" and "check" in found:
                here = same_folder(checked_in(found), self.given_dir)
                on_disk = self.on_disk_at_start(dataset, size)
                another_copy = on_disk and not here  # a finished grid pointed at other files: check those
                if (here and on_disk) or not (self.awaits_data(dataset, size) or another_copy):
                    return dict(found["check"])
        return {
            "data_dir": str(self.data_dir),
            "download": self.download,
            "strict": self.strict,
            "on_disk": self.found_on_disk(dataset, size) is not None,
        }

    def check(self, wildcards: Wildcards) -> dict[str, Any]:
        """prepare_data's params for the job's dataset and size (:meth:`params`)."""
        return self.params(wildcards.dataset, wildcards.size)

    def on_disk_at_start(self, dataset: str, size: int | str) -> bool:
        """True if the dataset's files were under data_dir when the workflow started (asked once)."""
        key = (dataset, int(size))
        if key not in self._on_disk:
            self._on_disk[key] = self.found_on_disk(dataset, size) is not None
        return self._on_disk[key]

    def ready(self, run: E.Run) -> bool:
        """True for a run in the DAG before the data check: its dataset's files are on disk when the
        workflow starts, and it trains or its data marker is there. (A finished run whose marker is
        gone waits for the check: a marker that a job writes anew makes every run reading it "updated
        by another job", `ancient` or not, and the run would retrain.) Decided once, at the start."""
        if run.key not in self._ready:
            self._ready[run.key] = self.on_disk_at_start(run.dataset, run.data_size) and (
                os.path.exists(P.data_marker(run.dataset, run.data_size))
                or awaits_training(run.record, run.config_file)
            )
        return self._ready[run.key]

    def ready_runs(self) -> list[E.Run]:
        """The runs in the DAG before the data check: every run with strict=true, else the `ready` ones.
        Snakemake knows their jobs from its first line, so its step total stays put through the data
        check; a dataset that is fetched (or skipped) joins after the check (`checked_runs`). One
        found on disk whose check then fails (a damaged copy) fails its training jobs with the
        check's error instead of being skipped."""
        return list(self.runs) if self.strict else [r for r in self.runs if self.ready(r)]

    def checked_runs(self) -> list[E.Run]:
        """The other runs whose data prepare_data found ready (or downloaded): known after the data check
        (the checkpoint is asked even when every run is `ready`, so an input function calling this waits
        for it)."""
        if self.strict:
            return []
        status = self._data_status()
        return [
            r
            for r in self.runs
            if not self.ready(r) and (status.get(f"{r.dataset}/{r.data_size}") or {}).get("status") == "ok"
        ]

    def status_file(self, wildcards: Wildcards | None = None) -> list[str]:
        """The data status a table's notes read: the checkpoint's file; in a rebuild, the file as the
        last check left it, and none where a dataset was never checked (a rebuild checks no data)."""
        if self._targets().trains_anything or all(os.path.exists(P.data_marker(d, s)) for d, s in self.data_targets):
            return [DATA_STATUS]
        return []

    def status_input(self, wildcards: Wildcards | None = None) -> list[str]:
        """The data-status checkpoint as an input of rules whose inputs depend on it (none when
        strict; in a rebuild, the file as the last check left it: :meth:`status_file`)."""
        return [] if self.strict else self.status_file()
