"""One Snakemake invocation's view of the grid: its runs, their data, their jobs and the records each rule reads.

:class:`Session` is built once, when the Snakefile is read, from the profile (``config``): the grid
of runs (every name and config checked once), the records on disk at the start, and what the
targets named on the command line train (:mod:`con2.workflow.targets`). Snakemake's own state reaches
it as two callables: the named targets (known only once the Snakefile has been read) and the
data-status checkpoint's file (known only once that job has run). Its methods answer which runs are
available and which records the aggregations read; ``workflow/rules/common.smk`` binds them, and binds
the parts it holds, each answering the rules directly:

* :attr:`Session.data`, a :class:`~con2.workflow.data_check.DataCheck`: the data on disk at the start,
  what a data check depends on, which runs wait for it;
* :attr:`Session.jobs`, a :class:`~con2.workflow.run_jobs.RunJobs`: each run's jobs (their config,
  settings, priority, resources);
* :attr:`Session.files`, an :class:`~con2.workflow.artefact_files.ArtefactFiles`: the profile's tables,
  figures and aggregates as files, and which of them a report finds built.

Two inputs per record set (:class:`RecordSet`): a rule's records are those of the runs in the DAG before
the data check (``.ready``, :meth:`DataCheck.ready_runs`: Snakemake knows their jobs from its first line) plus
those whose data the check found (``.checked``, :meth:`DataCheck.checked_runs`): an input function that waits
for a checkpoint holds back only its own files.
"""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from con2 import paths as P
from con2.data import DataError, normal_classes
from con2.data.data_dir import absolute_data_dir
from con2.grid import experiments as E
from con2.grid.checks import check_data_dir
from con2.grid.workflow_grid import workflow_grid
from con2.report.artefacts import TABLES
from con2.run.rundir import SCORES, VALIDATION, score_file_state
from con2.workflow.artefact_files import RUNS_CSV as RUNS_CSV  # the rules' S.RUNS_CSV, and so on
from con2.workflow.artefact_files import SCORE_RUNTIME_CSV as SCORE_RUNTIME_CSV
from con2.workflow.artefact_files import SCORES_BUNDLE as SCORES_BUNDLE
from con2.workflow.artefact_files import SKIPPED_CSV as SKIPPED_CSV
from con2.workflow.artefact_files import SUMMARY_CSV as SUMMARY_CSV
from con2.workflow.artefact_files import ArtefactFiles
from con2.workflow.console import HashedDict, HashedList, hashed
from con2.workflow.data_check import DATA_STATUS as DATA_STATUS  # the rules' S.DATA_STATUS
from con2.workflow.data_check import DataCheck
from con2.workflow.run_jobs import RunJobs
from con2.workflow.status import awaits_training, unknown_class
from con2.workflow.targets import Targets
from con2.workflow.wildcards import Wildcards

DATA_PRIORITY = 2000  # above every train priority: a dataset is checked and prepared before training starts


@dataclass(frozen=True)
class RecordSet:
    """One set of records a rule needs, as its two input functions (the module's docstring says why two):
    :meth:`ready`, the records of the runs in the DAG before the data check, and :meth:`checked`, those of the
    runs whose data the check found. ``select(wildcards, checked)`` picks either half."""

    select: Callable[[Wildcards | None, bool], list[str]]

    def ready(self, wildcards: Wildcards | None = None) -> list[str]:
        """The records of the runs in the DAG before the data check."""
        return self.select(wildcards, False)

    def checked(self, wildcards: Wildcards | None = None) -> list[str]:
        """The records of the runs whose data the check found (waits for the data-status checkpoint)."""
        return self.select(wildcards, True)


def method_regex(methods: Sequence[str] | frozenset[str]) -> str:
    """A wildcard constraint matching exactly these method names (or nothing)."""
    return "|".join(sorted(methods)) if methods else "(?!x)x"


def registry_normal_classes(name: str) -> list[str]:
    """The registry's normal classes of a dataset (one run each)."""
    try:
        return list(normal_classes(name))
    except DataError as exc:
        raise E.GridError(f"datasets.{name}: {exc}") from None


def method_rule_files(basedir: Path, extra: Sequence[str]) -> list[str]:
    """Rule files of methods with their own rules: workflow/rules/methods/*.smk and ``extra_rules``."""
    files = sorted(glob.glob(str(basedir / P.RULE_METHODS_DIR / "*.smk")))
    return files + [str(Path(f).resolve()) for f in extra]


class Session:
    """The grid as one invocation runs it: its runs, which of them are available, and the records
    the aggregations read.

    Args:
        config: the profile (validated by the Snakefile).
        basedir: the workflow's folder (where ``workflow/rules/methods/`` lives).
        targets: the targets named on the command line (empty: `all`), asked when the DAG is built.
        data_status: the data-status checkpoint's content, ``{"<dataset>/<size>": marker}``.
        report: the invocation is ``snakemake --report``: it trains nothing (:class:`Targets`), and `all` and
            `studies` ask only for what is on disk (:meth:`ArtefactFiles.on_disk`), so a partial grid's report
            shows what exists.

    Raises:
        GridError: the profile names something that does not exist, or a run's config is invalid.
        WorkflowError: a runs CSV the tables read was edited by hand (:meth:`ArtefactFiles.check_seals`).
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        basedir: str | Path,
        targets: Callable[[], Sequence[str]],
        data_status: Callable[[], Mapping[str, Any]],
        report: bool = False,
    ) -> None:
        self.config = config
        self.reporting = report
        self.basedir = Path(basedir)
        check_data_dir(absolute_data_dir(config["data_dir"]))  # too long: one line, not a traceback
        self.started = time.time()
        self.strict = bool(config.get("strict", False))
        self._targets = targets
        self.own_rule_files = method_rule_files(self.basedir, config.get("extra_rules", []))
        self.own_rule_methods = {Path(f).stem for f in self.own_rule_files}
        self.grid = workflow_grid(
            config, registry_normal_classes, self.own_rule_methods, self.strict, unknown_class, TABLES
        )
        self.runs = self.grid.runs
        self.data = DataCheck(config, self.runs, lambda: self.targets, data_status)  # the data check's side
        self.jobs = RunJobs(config, self.runs)  # each run's jobs: config, settings, priority, resources
        # every record on disk at the start (aggregation reads all of them, not only the grid's), and
        # the record.json files whose folders are not a run key (a copied seed0.bak): never a run
        self.records_on_disk, others = P.records_on_disk()
        self.not_run_records = hashed(others, "not_runs")
        self.report: Mapping[str, Any] = config.get("report") or {}
        self.scopes: dict[str, list[str]] = dict(self.report.get("scopes") or {})  # studies: built when named
        self.files = ArtefactFiles(self.report, self.scopes, report)  # the tables, figures and aggregates
        self._score_states: list[tuple[str, str]] | None = None  # see _score_files
        self.files.check_seals()

    # -------------------------------------------------------------------------------------- runs
    @property
    def targets(self) -> Targets:
        """What the named targets train (read when the DAG is built: Snakemake sets them after parsing)."""
        return Targets(self._targets(), self.scopes, self.reporting)

    def grid_hashes(self) -> HashedDict | HashedList:
        """{run key: config hash} of the grid (None for runs of own-rule methods, which keep no hash)."""
        return hashed(self.grid.hashes(), "grid")

    def available_runs(self) -> list[E.Run]:
        """The runs whose data are ready (after the data check); in a rebuild, the finished runs."""
        if not self.targets.trains_grid:
            return self.finished_runs()
        return self.data.ready_runs() + self.data.checked_runs()

    def finished_runs(self) -> list[E.Run]:
        """The grid's runs a rebuild reads as inputs: a record, its config unchanged and its data
        marker there, so no job above it has a reason to run. Any other record on disk is read as it
        is (`records_outside`)."""
        return [
            r
            for r in self.runs
            if not awaits_training(r.record, r.config_file) and os.path.exists(P.data_marker(r.dataset, r.data_size))
        ]

    # -------------------------------------------------------------------------------------- records
    def scoped_experiments(self) -> set[str]:
        """The experiments of every scoped table (`report.scopes`, e.g. the fidelity study)."""
        return {e for exps in self.scopes.values() for e in exps}

    def scoped_only(self, run: E.Run) -> bool:
        """True for a run that only scoped tables need (they train it when named)."""
        return bool(run.experiments) and set(run.experiments) <= self.scoped_experiments()

    def _runs(self, checked: bool) -> list[E.Run]:
        return self.data.checked_runs() if checked else self.data.ready_runs()

    @cached_property
    def grid_records(self) -> RecordSet:
        """Records the main aggregation trains (or keeps up to date): every run whose data are
        available, but those only a scoped table needs. Also inputs of the target `all`: Snakemake 9
        rebuilds a deleted file only when a job that must run needs it, and a missing input is no
        reason to run for a job that is not a target, so a finished run deleted from disk left
        `aggregate` up to date, its rows still in the tables. A missing input is such a reason for a
        target without outputs (`all`): the run trains again, and the tables are rebuilt from it."""

        def select(wildcards: Wildcards | None, checked: bool) -> list[str]:
            if not self.targets.trains_grid:  # a rebuild: the finished runs (known from the start; no data check)
                return [] if checked else [r.record for r in self.finished_runs() if not self.scoped_only(r)]
            return [r.record for r in self._runs(checked) if not self.scoped_only(r)]

        return RecordSet(select)

    @cached_property
    def study_records(self) -> RecordSet:
        """Records of the runs of every scoped table (rule `studies`)."""
        scoped = self.scoped_experiments()
        return RecordSet(
            lambda wildcards, checked: [r.record for r in self._runs(checked) if scoped & set(r.experiments)]
        )

    @cached_property
    def all_records(self) -> RecordSet:
        """Records of every run of the grid whose data are available (rule `runs`)."""
        return RecordSet(lambda wildcards, checked: [r.record for r in self._runs(checked)])

    @cached_property
    def scope_records(self) -> RecordSet:
        """Records a scoped table needs (the job's ``wildcards.scope``): the available runs of its experiments
        (naming the table as the target trains only these)."""

        def select(wildcards: Wildcards | None, checked: bool) -> list[str]:
            assert wildcards is not None  # a scoped aggregation's job: its {scope} wildcard
            exps = set(self.scopes[wildcards.scope])
            if not self.targets.trains_scope(wildcards.scope):  # `all` or a rebuild: the finished runs
                return [] if checked else [r.record for r in self.finished_runs() if exps & set(r.experiments)]
            return [r.record for r in self._runs(checked) if exps & set(r.experiments)]

        return RecordSet(select)

    def _stamped(self, paths: Sequence[str], label: str) -> HashedDict | HashedList:
        """Paths with their mtimes (a param: Snakemake compares it, so a change reruns the rule)."""
        return hashed([f"{p}@{os.stat(p).st_mtime_ns}" for p in paths], label)

    def records_outside(self, wildcards: Wildcards | None = None) -> HashedDict | HashedList:
        """Records on disk that the grid does not (re)build: other profiles', or runs of a dataset that
        is unavailable now. Aggregated as they are; their names and mtimes make the aggregation rerun
        when one appears, changes or disappears."""
        tracked = {r.record for r in self.available_runs() if not self.scoped_only(r)}
        return self._stamped([p for p in self.records_on_disk if p not in tracked], "outside")

    def scope_outside(self, wildcards: Wildcards) -> HashedDict | HashedList:
        """Records on disk of the scope's runs that the grid does not rebuild now (their data are
        unavailable): kept, as in `records_outside`."""
        exps = set(self.scopes[wildcards.scope])
        tracked = {*self.scope_records.ready(wildcards), *self.scope_records.checked(wildcards)}
        keys = {r.record for r in self.runs if exps & set(r.experiments)}
        return self._stamped([p for p in self.records_on_disk if p in keys and p not in tracked], "outside")

    def edited_scores(self, wildcards: Wildcards | None = None) -> list[str]:
        """The score files (scores.csv, validation_scores.csv) that are not the ones their run wrote, by content:
        other bytes than the sha256 their record keeps (:func:`con2.run.rundir.score_file_state`; an edit, a file
        sorted within its labels, one restored from a backup with an older mtime), or, beside a record older than
        those sha256s, a scores.csv newer than it. Inputs of the aggregation, which checks each record against its
        score files and copies them into the scores bundle the tables read: such a file joining the inputs reruns
        it, so rebuilds them. Only these: a score file is no declared output, so listing every one would change
        the input set each time a run trains."""
        return [path for path, state in self._score_files() if state == "edited"]

    def gone_scores(self, wildcards: Wildcards | None = None) -> HashedDict | HashedList:
        """The score files whose record keeps their sha256 but which are missing (or no regular file): a param
        of the aggregation (a missing file can be no input), so one disappearing reruns it."""
        return hashed([path for path, state in self._score_files() if state == "gone"], "gone")

    def _score_files(self) -> list[tuple[str, str]]:
        """``(path, state)`` of every score file beside a record on disk (:func:`con2.run.rundir.score_file_state`),
        read once per invocation."""
        if self._score_states is None:
            self._score_states = [
                (os.path.join(os.path.dirname(record), name), score_file_state(record, name))
                for record in self.records_on_disk
                for name in (SCORES, VALIDATION)
            ]
        return self._score_states
