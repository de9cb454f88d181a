"""The profile's tables and figures as files: which ones the targets `all` and `studies` build, what each
one's job reads from other jobs, and which of them a report finds built.

:class:`ArtefactFiles` is built once per invocation from the profile's ``report`` block (by the
:class:`~con2.workflow.session.Session`, which refuses to start on an edited runs CSV:
:meth:`ArtefactFiles.check_seals`). The paths here are where the aggregation, the score-runtime
measurement and the table and figure rules write (``workflow/rules/*.smk`` name them as ``S.RUNS_CSV`` and so on).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from snakemake.exceptions import WorkflowError

from con2 import paths as P
from con2.aggregate.seal import seal_problem
from con2.report.artefacts import FIGURES, TABLES, Artefact, figure_targets, study_figures, table_targets

RUNS_CSV = "results/evaluation/runs.csv"
SUMMARY_CSV = "results/evaluation/summary.csv"
SKIPPED_CSV = "results/evaluation/skipped.csv"  # the records the aggregation left out: file, problem, fix
SCORES_BUNDLE = P.scores_bundle(RUNS_CSV)  # the per-image scores of the runs of runs.csv
SCOPES_ROOT = "results/evaluation/scopes"  # a study's aggregate: <scope>.csv, .skipped.csv, .scores.json.gz
SCOPE_AGGREGATE_SUFFIXES = (".csv", ".skipped.csv", ".scores.json.gz")
SCORE_RUNTIME_CSV = "results/score_runtime/score_runtime.csv"
TABLES_ROOT, FIGURES_ROOT = "results/tables", "results/figures"  # where table_targets and figure_targets write
TABLE_SUFFIXES = ("csv", "md", "tex", "html")  # the files of one table's job (workflow/rules/tables.smk)


class ArtefactFiles:
    """The files of the profile's tables, figures and aggregates.

    Args:
        report: the profile's ``report`` block.
        scopes: ``{study: its experiments}`` (``report.scopes``): built when named, or by `studies`.
        reporting: the invocation is ``snakemake --report``: `all` and `studies` ask only for what is
            built (:meth:`on_disk`), so a partial grid's report shows what exists.
    """

    def __init__(self, report: Mapping[str, Any], scopes: Mapping[str, Sequence[str]], reporting: bool) -> None:
        self.report = report
        self.scopes = scopes
        self.reporting = reporting
        tables = table_targets(report)
        self.table_files = [f for f in tables if Path(f).stem not in scopes]
        self.study_files = [f for f in tables if Path(f).stem in scopes]
        self.figure_files = figure_targets(report)
        # the figures that draw a study's table (the length study's curves): `studies` builds them with their tables
        self.study_figure_files = study_figures(report, scopes)
        # the aggregates the tables read, named by `all` and `studies` themselves: Snakemake 9 rebuilds a missing
        # intermediate file only for a job that must run, so a deleted runs.csv (or one an aggregation that
        # failed left missing) under up-to-date tables was never brought back ("Nothing to be done")
        self.aggregate_files = [RUNS_CSV, SUMMARY_CSV, SKIPPED_CSV, SCORES_BUNDLE]
        self.study_aggregate_files = [
            f"{SCOPES_ROOT}/{scope}{suffix}" for scope in scopes for suffix in SCOPE_AGGREGATE_SUFFIXES
        ]

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
