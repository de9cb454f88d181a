"""One Snakemake invocation's view of the grid: its runs, their data and what each rule reads.

:class:`Session` is built once, when the Snakefile is read, from the profile (``config``): the grid
of runs (every name and config checked once), the records on disk at the start, and what the
targets named on the command line train (:mod:`con2.workflow.targets`). Its methods are the
Snakemake input, params and priority functions of the rules (each takes the job's ``wildcards``);
``workflow/rules/common.smk`` binds them. Snakemake's own state reaches it as two callables: the
named targets (known only once the Snakefile has been read) and the data-status checkpoint's file
(known only once that job has run). What it knows of the data (on disk at the start, what a data
check depends on, which runs wait for it) is its :attr:`Session.data`, a
:class:`~con2.workflow.data_check.DataCheck`; its data methods only hand a job's wildcards to it.

Two inputs per record set (:class:`RecordSet`): a rule's records are those of the runs scheduled before
the data check (``.ready``, :meth:`Session.ready_runs`: Snakemake knows their jobs from its first line) plus
those whose data the check found (``.checked``, :meth:`Session.checked_runs`): an input function that waits
for a checkpoint holds back only its own files.
"""

from __future__ import annotations

import glob
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from snakemake.exceptions import WorkflowError

from con2 import paths as P
from con2.aggregate.seal import seal_problem
from con2.config import RUNTIME_KEYS
from con2.data import DataError, normal_classes
from con2.data.data_dir import absolute_data_dir
from con2.grid import experiments as E
from con2.grid.checks import check_data_dir
from con2.grid.workflow_grid import workflow_grid
from con2.report.artefacts import FIGURES, TABLES, Artefact, figure_targets, study_figures, table_targets
from con2.run.rundir import SCORES, VALIDATION, score_file_state
from con2.workflow.console import HashedDict, HashedList, hashed
from con2.workflow.data_check import DATA_STATUS as DATA_STATUS  # the rules' S.DATA_STATUS
from con2.workflow.data_check import DataCheck
from con2.workflow.eta import job_priority, weigh_runs
from con2.workflow.status import awaits_training, unknown_class
from con2.workflow.targets import Targets

RUNS_CSV = "results/evaluation/runs.csv"
SUMMARY_CSV = "results/evaluation/summary.csv"
SKIPPED_CSV = "results/evaluation/skipped.csv"  # the records the aggregation left out: file, problem, fix
SCORES_BUNDLE = P.scores_bundle(RUNS_CSV)  # the per-image scores of the runs of runs.csv
SCOPES_ROOT = "results/evaluation/scopes"  # a study's aggregate: <scope>.csv, .skipped.csv, .scores.json.gz
SCOPE_AGGREGATE_SUFFIXES = (".csv", ".skipped.csv", ".scores.json.gz")
SCORE_RUNTIME_CSV = "results/score_runtime/score_runtime.csv"
TABLES_ROOT, FIGURES_ROOT = "results/tables", "results/figures"  # where table_targets and figure_targets write
TABLE_SUFFIXES = ("csv", "md", "tex", "html")  # the files of one table's job (workflow/rules/tables.smk)
DATA_PRIORITY = 2000  # above every train priority: a dataset is checked and prepared before training starts


class Wildcards(Protocol):
    """A job's wildcards as Snakemake passes them (``snakemake.io.Wildcards``): the names of its rule's output
    pattern as attributes; a rule has those its pattern names (a run's rule: ``dataset`` to ``seed``; the
    data rules: ``dataset``, ``size``; a scoped table's aggregation: ``scope``). An input function that
    reads none takes ``None`` where no job is at hand (a target's inputs)."""

    dataset: str
    normal_class: str
    method: str
    variant: str
    seed: str
    size: str
    scope: str


@dataclass(frozen=True)
class RecordSet:
    """One set of records a rule needs, as its two input functions (the module's docstring says why two):
    :meth:`ready`, the records of the runs scheduled before the data check, and :meth:`checked`, those of the
    runs whose data the check found. ``select(wildcards, checked)`` picks either half."""

    select: Callable[[Wildcards | None, bool], list[str]]

    def ready(self, wildcards: Wildcards | None = None) -> list[str]:
        """The records of the runs scheduled before the data check."""
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
    """The grid as one invocation schedules it.

    Args:
        config: the profile (validated by the Snakefile).
        basedir: the workflow's folder (where ``workflow/rules/methods/`` lives).
        targets: the targets named on the command line (empty: `all`), asked when the DAG is built.
        data_status: the data-status checkpoint's content, ``{"<dataset>/<size>": marker}``.
        report: the invocation is ``snakemake --report``: it trains nothing (:class:`Targets`), and `all` and
            `studies` ask only for what is on disk (:meth:`on_disk`), so a partial grid's report shows what exists.

    Raises:
        GridError: the profile names something that does not exist, or a run's config is invalid.
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
        self.run_index = E.run_index(self.runs)
        self.data = DataCheck(config, self.runs, lambda: self.targets, data_status)  # the data check's side
        self.data_targets = self.data.data_targets
        # every record on disk at the start (aggregation reads all of them, not only the grid's), and
        # the record.json files whose folders are not a run key (a copied seed0.bak): never a run
        self.records_on_disk, others = P.records_on_disk()
        self.not_run_records = hashed(others, "not_runs")
        self.report: Mapping[str, Any] = config.get("report") or {}
        self.scopes: dict[str, list[str]] = dict(self.report.get("scopes") or {})  # studies: built when named
        tables = table_targets(self.report)
        self.table_files = [f for f in tables if Path(f).stem not in self.scopes]
        self.study_files = [f for f in tables if Path(f).stem in self.scopes]
        self.figure_files = figure_targets(self.report)
        # the figures that draw a study's table (the length study's curves): `studies` builds them with their tables
        self.study_figure_files = study_figures(self.report, self.scopes)
        # the aggregates the tables read, named by `all` and `studies` themselves: Snakemake 9 rebuilds a missing
        # intermediate file only for a job that must run, so a deleted runs.csv (or one an aggregation that
        # failed left missing) under up-to-date tables was never brought back ("Nothing to be done")
        self.aggregate_files = [RUNS_CSV, SUMMARY_CSV, SKIPPED_CSV, SCORES_BUNDLE]
        self.study_aggregate_files = [
            f"{SCOPES_ROOT}/{scope}{suffix}" for scope in self.scopes for suffix in SCOPE_AGGREGATE_SUFFIXES
        ]
        self._score_states: list[tuple[str, str]] | None = None  # see _score_files
        self.check_seals()

    def check_seals(self) -> None:
        """Refuse to start while a runs CSV the tables read (``runs.csv``, a study's) is not the file the
        aggregation wrote beside its scores bundle (:func:`con2.aggregate.seal.seal_problem`: edited by hand),
        once, before any job: every table job used to fail on the seal, one traceback each, and Snakemake then
        deleted the tables and figures they had built (issue 57, item 7). An absent runs CSV is none of this
        check's business: `all` rebuilds it (:attr:`aggregate_files`).

        Raises:
            WorkflowError: the file, what is wrong and the fix (delete it; the aggregation writes it anew).
        """
        for runs_csv in (RUNS_CSV, *(f"{SCOPES_ROOT}/{scope}.csv" for scope in self.scopes)):
            problem = seal_problem(runs_csv, P.scores_bundle(runs_csv)) if os.path.lexists(runs_csv) else None
            if problem:
                raise WorkflowError(f"con2 workflow: {problem}")

    def report_files(self) -> list[str]:
        """The files ``snakemake --report`` embeds for the profile: each table's HTML page (the studies'
        too), each figure's PNG, and the aggregation's ``summary.csv``."""
        pages = [f for f in (*self.table_files, *self.study_files, *self.figure_files) if f.endswith((".html", ".png"))]
        return [*pages, SUMMARY_CSV]

    # -------------------------------------------------------------------------------------- runs
    @property
    def targets(self) -> Targets:
        """What the named targets train (read when the DAG is built: Snakemake sets them after parsing)."""
        return Targets(self._targets(), self.scopes, self.reporting)

    def on_disk(self, files: Sequence[str]) -> list[str]:
        """``files`` as inputs of `all` and `studies`: all of them, but in a report only those :meth:`built`. A
        report builds nothing, and Snakemake refuses one whose DAG holds a report file not built (issue 58, item
        2: a partial grid's report stopped on its first missing figure); :func:`con2.workflow.startup.prepare_report`
        lists the others on the report's first page."""
        return [f for f in files if self.built(f)] if self.reporting else list(files)

    def built(self, path: str) -> bool:
        """Whether ``path`` and every other output of its table's or figure's job (the same name with another
        suffix: CSV, Markdown, LaTeX, HTML; PNG, PDF) are on disk, with every file that job reads from another
        job (:meth:`_job_reads`: the aggregate, the score-runtime measurements, a figure's table): a job with
        one of them missing would be in a report's DAG, and Snakemake refuses a report whose DAG holds a report
        file not built (and warns of every output it has no record of)."""
        stem = os.path.splitext(path)[0]
        return all(os.path.isfile(f) for f in (*self._artefact_outputs.get(stem, [path]), *self._job_reads(stem)))

    def _job_reads(self, stem: str) -> list[str]:
        """The files another job writes that the job of a table or figure (``stem``: its path without suffix)
        reads: its runs CSV and what the aggregation writes beside it (a study's, or every record's), the
        score-runtime measurements, and for a figure that draws a table, that table's files and what it reads."""
        artefact = self._artefacts.get(stem)
        if artefact is None:
            return []
        reads: list[str] = []
        if "runs" in artefact.reads:
            scoped = artefact.name in self.scopes
            reads += (
                [f"{SCOPES_ROOT}/{artefact.name}{suffix}" for suffix in SCOPE_AGGREGATE_SUFFIXES]
                if scoped
                else self.aggregate_files
            )
        if "measured" in artefact.reads:
            reads.append(SCORE_RUNTIME_CSV)
        if artefact.table is not None:
            table = TABLES[artefact.table]
            dataset = stem.rsplit("/", 1)[1][len(artefact.name) + 1 :] if artefact.each else ""
            drawn = f"{TABLES_ROOT}/{table.name}_{dataset}" if table.each else f"{TABLES_ROOT}/{table.name}"
            reads += [f"{drawn}.{suffix}" for suffix in TABLE_SUFFIXES] + self._job_reads(drawn)
        return reads

    @cached_property
    def _artefacts(self) -> dict[str, Artefact]:
        """``{a table's or figure's path without suffix: its entry}`` for the profile's ``report`` block."""
        out: dict[str, Artefact] = {}
        for registry, root in ((TABLES, TABLES_ROOT), (FIGURES, FIGURES_ROOT)):
            for artefact in registry.values():
                out.update({f"{root}/{stem}": artefact for stem in artefact.stems(self.report)})
        return out

    @cached_property
    def _artefact_outputs(self) -> dict[str, list[str]]:
        """``{path without suffix: the files of the profile's tables and figures with that name}``."""
        groups: dict[str, list[str]] = {}
        for f in (*self.table_files, *self.study_files, *self.figure_files, *self.study_figure_files):
            groups.setdefault(os.path.splitext(f)[0], []).append(f)
        return groups

    def run_of(self, wildcards: Wildcards, method: str | None = None) -> E.Run:
        """The grid's Run for a job's wildcards (``method`` for rules whose output names it literally)."""
        method = method or getattr(wildcards, "method", None)
        if method is None:
            raise WorkflowError(
                "this rule's output has no {method} wildcard: use data_marker_for('<method>') / "
                "run_settings_for('<method>')"
            )
        key = P.run_key(wildcards.dataset, wildcards.normal_class, method, wildcards.variant, wildcards.seed)
        try:
            return self.run_index[key]
        except KeyError:
            raise WorkflowError(
                f"{key} is not a run of this profile's grid (see `experiments` in the config)"
            ) from None

    @cached_property
    def priorities(self) -> dict[str, int]:
        """{run key: Snakemake priority} (:func:`con2.workflow.eta.job_priority`): a run whose cost the ETA
        cannot price from the others first (a method of unknown views, a floor that trains nothing), then the
        larger runs (con2.workflow.eta's weights, sizes from the sizes table)."""
        return {key: job_priority(p) for key, p in weigh_runs(self.runs, None, None).items()}

    def train_priority(self, wildcards: Wildcards) -> int:
        """Longest first (issue 36): a run of a method whose cost the ETA cannot price (I-JEPA-AD's
        ViT) starts at once, so its pace is known early, then the runs by planned cost. A grid whose
        longest run starts last ends with one job slot idle."""
        try:
            return self.priorities.get(self.run_of(wildcards).key, 0)
        except Exception:  # a priority never stops the workflow: an unplannable grid runs in Snakemake's order
            return 0

    def run_config_file(self, wildcards: Wildcards) -> str:
        """The resolved config a `con2 train` job reads (results/configs/<key>.<hash>.yaml)."""
        return self.run_of(wildcards).config_file

    def run_config_text(self, wildcards: Wildcards, output: Any) -> str:
        """The run_config job's param: the YAML text of the run's resolved config. The file's name
        carries the config hash, so a file never holds another config than the grid's (files of older
        hashes stay, unread); a name of another hash is refused."""
        run = self.run_of(wildcards)
        if run.config_file != output.config:
            raise WorkflowError(
                f"{output.config}: this profile's run {run.key} has config hash {run.config_hash}: {run.config_file}"
            )
        return E.run_config_text(run.run_config)

    def data_marker(self, wildcards: Wildcards, method: str | None = None) -> str:
        """The prepare_data output a run needs (the rule marks it ancient: re-checking data never retrains)."""
        run = self.run_of(wildcards, method)
        return P.data_marker(run.dataset, run.data_size)

    def trains(self, wildcards: Wildcards, method: str | None = None) -> bool:
        """True if the run would train now (no record, or its config changed): its data marker need not
        be `ancient`. (An `ancient` marker whose prepare_data job must run, after a change to its
        code say, hides the run from Snakemake 9 until that job has run: a record named as the
        target would be left untrained by an invocation that ends "done".)"""
        run = self.run_of(wildcards, method)
        return awaits_training(run.record, run.config_file)

    def run_settings(self, wildcards: Wildcards, method: str) -> dict[str, Any]:
        """A baseline rule's params: the run's resolved config (every RunConfig key but the runtime ones)."""
        return dict(self.run_of(wildcards, method).config)

    def runtime_set(self, wildcards: Wildcards, threads: int) -> list[str]:
        """`con2 train --set` arguments of the runtime keys the profile sets, threads the job's own (a
        list, each quoted by the train command's `:q`). A param computed from the job's threads is
        never a rerun trigger: right for keys that never change results (data_dir, device, ...)."""
        values = {k: self.config[k] for k in RUNTIME_KEYS if k in self.config}
        values["threads"] = threads
        return [f"{k}={json.dumps(v)}" for k, v in values.items()]

    def train_resource(self, name: str, default: Any) -> Callable[[Wildcards], Any]:
        """A training job's resource from `resources` (per dataset, then profile-wide)."""

        def get(wildcards: Wildcards) -> Any:
            ds = (self.config["datasets"].get(wildcards.dataset) or {}).get("resources") or {}
            return ds.get(name, (self.config.get("resources") or {}).get(name, default))

        return get

    def grid_hashes(self) -> HashedDict | HashedList:
        """{run key: config hash} of the grid (None for runs of own-rule methods, which keep no hash)."""
        return hashed(self.grid.hashes(), "grid")

    # -------------------------------------------------------------------------------------- data
    def data_check(self, wildcards: Wildcards) -> dict[str, Any]:
        """prepare_data's params for the job's dataset and size (:meth:`DataCheck.params`)."""
        return self.data.params(wildcards.dataset, wildcards.size)

    def ready_runs(self) -> list[E.Run]:
        """The runs scheduled before the data check (:meth:`DataCheck.ready_runs`)."""
        return self.data.ready_runs()

    def checked_runs(self) -> list[E.Run]:
        """The runs that joined after the data check found their data (:meth:`DataCheck.checked_runs`)."""
        return self.data.checked_runs()

    def available_runs(self) -> list[E.Run]:
        """The runs whose data are ready (after the data check); in a rebuild, the finished runs."""
        if not self.targets.trains_grid:
            return self.finished_runs()
        return self.ready_runs() + self.checked_runs()

    def finished_runs(self) -> list[E.Run]:
        """The grid's runs a rebuild reads as inputs: a record, its config unchanged and its data
        marker there, so no job above it has a reason to run. Any other record on disk is read as it
        is (`records_outside`)."""
        return [
            r
            for r in self.runs
            if not awaits_training(r.record, r.config_file) and os.path.exists(P.data_marker(r.dataset, r.data_size))
        ]

    def status_file(self, wildcards: Wildcards | None = None) -> list[str]:
        """The data status a table's notes read (:meth:`DataCheck.status_file`)."""
        return self.data.status_file()

    def status_input(self, wildcards: Wildcards | None = None) -> list[str]:
        """The data-status checkpoint as an input of the rules that wait for it (:meth:`DataCheck.status_input`)."""
        return self.data.status_input()

    # -------------------------------------------------------------------------------------- records
    def scoped_experiments(self) -> set[str]:
        """The experiments of every scoped table (`report.scopes`, e.g. the fidelity study)."""
        return {e for exps in self.scopes.values() for e in exps}

    def scoped_only(self, run: E.Run) -> bool:
        """True for a run that only scoped tables need (they train it when named)."""
        return bool(run.experiments) and set(run.experiments) <= self.scoped_experiments()

    def _runs(self, checked: bool) -> list[E.Run]:
        return self.checked_runs() if checked else self.ready_runs()

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
