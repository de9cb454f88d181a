"""What the rule of each table and figure reads and is built from (one rule per entry of
:data:`con2.report.artefacts.TABLES` and :data:`~con2.report.artefacts.FIGURES`).

A rule's inputs are the files its builder reads (``reads`` of its :class:`Artefact`); its params are
the profile settings it is built from, so changing one that shapes it rebuilds it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from con2 import paths as P
from con2.config import RUNTIME_KEYS
from con2.report.artefacts import TABLES, Artefact
from con2.resources import resource
from con2.run.rundir import FEATURES, RECORD, SCORES
from con2.workflow.artefact_files import RUNS_CSV, SCORE_RUNTIME_CSV
from con2.workflow.console import HashedDict, HashedList, hashed
from con2.workflow.last_profile import UNBUILT_KEY
from con2.workflow.session import Session
from con2.workflow.wildcards import Wildcards

# profile keys that never shape a table or figure (where things run, how data are fetched, the
# training jobs' resources, extra rule files, the score-runtime measurement's own settings)
NOT_REPORT_KEYS = {*RUNTIME_KEYS, "download", "strict", "resources", "extra_rules", "score_runtime", UNBUILT_KEY}


def stable_path(path: str | Path) -> str:
    """``path`` relative to the working directory when inside it (a moved checkout keeps its input
    sets), else absolute (a copy of the workflow elsewhere names the installed package the same way)."""
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else os.path.abspath(path)


class ArtefactRules:
    """Inputs, params and captions of the artefact rules of one :class:`Session`."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.paper_numbers = stable_path(resource("paper_numbers.csv"))  # package data: wherever con2 is installed
        self.paper_hours = stable_path(resource("paper_compute_hours.csv"))
        self.reference_numbers = stable_path(resource("reference_numbers.csv"))
        self.gpu_measured = os.path.relpath(session.basedir / "benchmarks" / "measured")

    def table_runs(self, table: str) -> str:
        """The runs CSV a table reads: its scope's (`report.scopes`) or every record's."""
        return f"results/evaluation/scopes/{table}.csv" if table in self.session.scopes else RUNS_CSV

    def pca_runs(self) -> list[tuple[str, str]]:
        """(title, run directory) per dataset of report.pca: the main variant of report.subject (the
        method the paper is about), first class and seed; none without a subject."""
        report = self.session.report
        subject = report.get("subject")
        variant = (report.get("main_variants") or {}).get(subject, "default")
        runs = self.session.available_runs() if subject else []
        out = []
        for dataset in report.get("pca", []):
            cands = [r for r in runs if r.dataset == dataset and r.method == subject and r.variant == variant]
            if cands:
                r = min(cands, key=lambda r: (r.seed, r.normal_class))
                out.append((f"{dataset} (normal: {r.normal_class}), {r.method} {r.variant}, seed {r.seed}", r.run_dir))
        return out

    def pca_records(self, wildcards: Wildcards | None = None) -> list[str]:
        """The records of the PCA runs: the figure rule's inputs (their train jobs write them last)."""
        return [f"{d}/{RECORD}" for _, d in self.pca_runs()]

    def pca_panels(self, wildcards: Wildcards | None = None) -> list[tuple[str, str, str, str]]:
        """(title, record, features, scores) per PCA panel (:class:`con2.report.artefacts.PcaPanel`): every
        file the figure opens, named by its rule. A param, not inputs: no rule declares a run's features.npz
        or scores.csv as an output (a method that keeps no features writes none), so Snakemake could not
        tell which job writes them; the records, which a run writes after both, are its inputs."""
        return [(title, f"{d}/{RECORD}", f"{d}/{FEATURES}", f"{d}/{SCORES}") for title, d in self.pca_runs()]

    def inputs(self, artefact: Artefact) -> dict[str, Any]:
        """The inputs of a table's or figure's rule: the files its builder reads (`scores`: the bundle
        the aggregation writes beside the runs CSV, also given to every rule that reads that CSV: it seals
        it); for `panels`, the records of the PCA runs and the data status (the files of its panels: the
        param `panels`, :meth:`pca_panels`)."""
        s = self.session
        files: dict[str, Any] = {
            "runs": self.table_runs(artefact.name),
            "paper": self.paper_numbers,
            "hours": self.paper_hours,
            "measured": SCORE_RUNTIME_CSV,
            "table": f"results/tables/{TABLES[artefact.table].stem}.csv" if artefact.table else None,
            "status": s.data.status_file,  # which datasets were skipped for want of data (a table's notes say why)
            "gpu": self.gpu_measured if os.path.isdir(self.gpu_measured) else None,  # the GPU runs' lines, if any
            "scores": P.scores_bundle(self.table_runs(artefact.name)),  # the aggregation's copy of the score files
            "references": self.reference_numbers,  # other sources' published numbers, each naming its source
            "panels": None,
        }
        reads = [*artefact.reads, *(["scores"] if "runs" in artefact.reads else [])]  # the bundle seals the CSV
        inputs = {name: files[name] for name in dict.fromkeys(reads) if files[name]}
        if "panels" in artefact.reads:
            inputs.update(records=self.pca_records, status=s.data.status_input)
        return inputs

    def settings(self) -> dict[str, Any]:
        """The profile as the builders read it (`report:` above all; also the variants' order, the
        experiments, paper_names), without the keys that never shape an artefact (NOT_REPORT_KEYS)."""
        config = self.session.config
        return {k: config[k] for k in sorted(config) if k not in NOT_REPORT_KEYS}  # sorted: key order changes nothing

    def params(self, artefact: Artefact) -> dict[str, HashedDict | HashedList | Callable[..., Any]]:
        """The params that make a table or figure beyond its name: the settings it is built from (a
        rerun trigger) and, for the PCA figure, its panels' files (:meth:`pca_panels`)."""
        params: dict[str, HashedDict | HashedList | Callable[..., Any]] = {
            "settings": hashed(self.settings(), "settings")
        }
        if "panels" in artefact.reads:
            params["panels"] = self.pca_panels
        return params

    @staticmethod
    def label(artefact: Artefact) -> str:
        """The artefact's file stem in a rule's message ({wildcards.dataset} for one made per dataset)."""
        return artefact.stem.replace("{dataset}", "{wildcards.dataset}")

    def caption(self, name: str) -> str:
        """The report caption of an artefact (a generic one where no file exists)."""
        path = self.session.basedir / "workflow" / "report" / f"{name}.rst"
        return str(path if path.is_file() else self.session.basedir / "workflow" / "report" / "artefact.rst")
