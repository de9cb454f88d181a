"""The paper's artefacts: one registry per kind, read by the workflow and by the builders alike.

:data:`TABLES` and :data:`FIGURES` map each artefact's name to an :class:`Artefact`: the function
that makes it, what that function reads and, for an artefact made once per dataset, the
``report`` key that lists the datasets. The Snakefile turns every entry into one rule and its
targets (``results/tables/<name>.{csv,md,tex,html}``, ``results/figures/<name>.{png,pdf}``; an
artefact with ``each`` gives ``<name>_<dataset>`` per dataset of ``report.<each>``), and the rules'
scripts call ``TABLES[name].builder()(inputs)`` / ``FIGURES[name].builder()(inputs, png, pdf)``: a function of
:mod:`con2.builders`, one module per family.
Every table builder has the signature ``build(inputs: ReportInputs) -> Table`` and every figure
builder ``draw(inputs: ReportInputs, png, pdf) -> None``; a builder reads only the fields of
:class:`ReportInputs` its entry lists in ``reads`` (a rule gives exactly those files).

No heavy import here: the Snakefile imports this module to name its targets, so pandas is loaded
by :meth:`ReportInputs.load` only, and a builder's module when :meth:`Artefact.builder` is called.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pandas as pd

    from con2.aggregate.score_files import ScoresSource
    from con2.report.methods import Methods, Subject

# What a builder may read: the files a rule hands its script (``runs``: results/evaluation/runs.csv
# or a study's own; ``paper``: paper_numbers.csv; ``hours``: paper_compute_hours.csv; ``measured``:
# the score-runtime measurements; ``table``: the CSV of the table a figure draws; ``status``: the
# data status of the grid, results/data/status.json, which says which datasets were skipped for want
# of data and why; ``gpu``: the folder benchmarks/measured/, whose *gpu_fidelity*.jsonl lines are the
# GPU runs; ``scores``: the per-image scores of the runs of ``runs``, the bundle the aggregation
# writes beside it, con2.aggregate.bundle.ScoresBundle; ``references``: reference_numbers.csv, published
# numbers of other sources than the paper, each naming its source), and ``panels``, the files of the runs
# the workflow picks for the PCA figure (:class:`PcaPanel`: each run's record, features.npz and scores.csv,
# named by the rule: its records as inputs, all three in a param). An artefact opens no other file.
FILE_INPUTS: tuple[str, ...] = ("runs", "paper", "hours", "measured", "table", "status", "gpu", "scores", "references")
INPUTS: tuple[str, ...] = (*FILE_INPUTS, "panels")
# inputs a rule may lack (a checkout without benchmarks/measured/): the builder then gets None
OPTIONAL_INPUTS: frozenset[str] = frozenset({"gpu", "status"})  # status: none in a rebuild before any data check
# the inputs that are frames (:meth:`ReportInputs.frame`)
Frame = Literal["runs", "paper", "hours", "measured", "table", "gpu", "references"]


@dataclass(frozen=True)
class PcaPanel:
    """One panel of the PCA figure: the files of one run that the figure's rule names.

    Attributes:
        title: the panel's title where its record cannot be read.
        record: the run's ``record.json`` (an input of the rule: its train job writes it last).
        features: the run's ``features.npz`` (identity-view representations per split and context).
        scores: the run's ``scores.csv`` (its test labels).
    """

    title: str
    record: str
    features: str
    scores: str

    @property
    def files(self) -> tuple[str, str, str]:
        """The three files the figure opens for this panel."""
        return self.record, self.features, self.scores


@dataclass(frozen=True)
class Artefact:
    """One table or figure of the registry.

    Attributes:
        name: the target's stem (``<name>_<dataset>`` per dataset with ``each``).
        builder_path: ``"module:function"`` of its builder.
        reads: the fields of :class:`ReportInputs` the builder reads (of :data:`INPUTS`; the
            config and the dataset always come).
        about: one line saying what it shows.
        each: a ``report`` key listing datasets, or a key of :data:`DERIVED_EACH` (datasets derived from the
            ``report`` block and the registry): one artefact per dataset (``ReportInputs.dataset``).
        table: a figure's table (``reads`` holds ``table``): the name of the table whose CSV it draws.
        starts_first: its job is the longest of the steps after the runs (it resamples every run's scores), so
            Snakemake starts it before the other tables and figures (its rule's ``priority``) rather than
            leaving it to run alone at the end (issue 58: 4.7 s, the first CIFAR-10 command's last step).
    """

    name: str
    builder_path: str
    reads: tuple[str, ...]
    about: str
    each: str | None = None
    table: str | None = None
    starts_first: bool = False

    def __post_init__(self) -> None:
        unknown = [r for r in self.reads if r not in INPUTS]
        if unknown:
            raise ValueError(f"artefact {self.name!r} reads {unknown}; the inputs are {list(INPUTS)}")
        if ("table" in self.reads) != (self.table is not None):
            raise ValueError(f"artefact {self.name!r}: name its table exactly when it reads one")

    @property
    def stem(self) -> str:
        """The file stem as a Snakemake pattern (``per_class_{dataset}`` with ``each``)."""
        return f"{self.name}_{{dataset}}" if self.each else self.name

    def stems(self, report: Mapping[str, Any]) -> list[str]:
        """The file stems of a profile's ``report`` block (one per listed dataset with ``each``)."""
        if not self.each:
            return [self.name]
        derived = DERIVED_EACH.get(self.each)
        datasets = derived(report) if derived is not None else report.get(self.each) or []
        return [f"{self.name}_{d}" for d in datasets]

    def builder(self) -> Callable[..., Any]:
        """The builder function (imports its module)."""
        module, _, attr = self.builder_path.partition(":")
        return getattr(importlib.import_module(module), attr)


def shown_datasets(report: Mapping[str, Any]) -> list[str]:
    """The datasets a profile's tables show (``report.medical``, ``natural``, ``per_class``), in that order."""
    keys = ("medical", "natural", "per_class")
    return list(dict.fromkeys(str(d) for key in keys for d in report.get(key) or []))


def kinds_datasets(report: Mapping[str, Any]) -> list[str]:
    """The datasets of the tables (:func:`shown_datasets`) whose records keep an AUROC per anomaly kind: the
    folders this process registered from the profile with the ``mvtec`` layout (``test/<anomaly kind>/``;
    :func:`con2.data.profile_datasets.register_profile_datasets`, which the workflow calls before it names its
    targets). Read from the module's registry where it is loaded, never imported here: a process that loaded
    no declared folder (the Snakefile of a profile without one) has none, and keeps its parse light."""
    own = sys.modules.get("con2.data.own_folder")
    declared: Mapping[str, Any] = getattr(own, "DECLARED", {}) if own is not None else {}
    return [d for d in shown_datasets(report) if getattr(declared.get(d), "layout", "") == "mvtec"]


# ``each`` values whose datasets are derived from the ``report`` block (and the registry), not listed in it.
DERIVED_EACH: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {"anomaly_kinds": kinds_datasets}


def _table(name: str, about: str, reads: tuple[str, ...] = ("runs", "paper"), *, module: str, **kw: Any) -> Artefact:
    """A table whose builder is the function ``name`` of ``con2.builders.<module>``."""
    return Artefact(name, f"con2.builders.{module}:{name}", reads, about, **kw)


def _registry(*artefacts: Artefact) -> dict[str, Artefact]:
    return {a.name: a for a in artefacts}


TABLES: dict[str, Artefact] = _registry(
    _table(
        "table1_medical",
        "Table 1: medical AUROC, the paper's numbers beside ours",
        ("runs", "paper", "status", "scores"),  # its † marks: the paired comparisons
        module="method_tables",
    ),
    _table("nnd_vs_lh", "the subject's scores side by side (report.subject)", module="ablations"),
    _table("loss_ablation", "L_Context / L_Content ablation", ("runs",), module="ablations"),
    _table("alt_contexts", "invert / flip / equalize on the medical datasets", module="ablations"),
    _table(
        "natural_summary",
        "natural-image summary over normal classes",
        ("runs", "paper", "status", "scores", "references"),  # its † marks, as Table 1's; other sources' numbers
        module="method_tables",
    ),
    _table("all_contexts", "every context and both scores on the natural datasets", module="ablations"),
    _table("multi_context", "k = 2..8 contexts", ("runs",), module="ablations"),
    _table("silhouette", "context silhouette (the table behind the figure)", ("runs",), module="silhouette"),
    _table("score_runtime", "S_NND vs S_LH timing (the table behind the figure)", ("measured",), module="compute"),
    _table("compute_cost", "time and memory per run", ("runs", "hours"), module="compute"),
    _table(
        "reproduction",
        "every paper number next to ours",
        ("runs", "paper", "gpu", "scores"),  # its orderings: the paired comparisons
        module="reproduction",
    ),
    _table(
        "fidelity",
        "every reading of the paper (training settings, scoring readings) against the default",
        module="fidelity",
    ),
    _table("fidelity_native", "the native-resolution study: 64 px native against upsampled", module="fidelity"),
    _table("fidelity_length", "the length study: 128 epochs at 28 px with the learning curve", module="fidelity"),
    _table(
        "budget_bound",
        "how far each measured budget goes: CON2 as printed against content alone and SimCLR (report.bound)",
        ("runs", "gpu"),
        module="bound",
    ),
    _table(
        "per_class",
        "AUROC per normal class of each dataset of report.per_class",
        ("runs", "status"),
        each="per_class",
        module="per_class",
    ),
    _table(
        "per_kind",
        "AUROC per anomaly kind of each dataset declared as an mvtec tree (test/<kind>/), the MVTec convention",
        ("runs", "status"),
        each="anomaly_kinds",
        module="per_kind",
    ),
    _table(
        "comparisons",
        "each method against report.compare_to on the same test images: difference, 95% interval, p, Holm",
        ("runs", "scores"),
        module="comparisons",
        each="comparisons",
    ),
    _table(
        "claims",
        "which of the paper's claims on a dataset hold at this budget (report.claims): paired tests, Holm",
        ("runs", "paper", "scores", "references"),
        module="claims",
        each="claims",
    ),
    _table(
        "operating_points",
        "average precision and sensitivity at 95% specificity per dataset and method, from each run's scores.csv",
        ("runs", "scores"),
        module="operating",
        starts_first=True,  # 1,000 bootstrap resamples of each run's AP
    ),
    _table(
        "learning_curve",
        "AUROC after each scored epoch (score_at), per method; the records' curves, from the scores bundle",
        ("runs", "scores"),
        module="curves",
    ),
    _table(
        "length_curve",
        "the length study's learning curves (report.scopes.length_curve: CIFAR-10's 128 epochs) per class and series",
        ("runs", "scores", "paper", "references"),  # each series' published number, for the figure's mark
        module="length",
    ),
    _table(
        "length_claims",
        "the paper's claims after the length study's last epoch (report.length_claims): per class and paired, Holm",
        ("runs", "scores"),
        module="length",
    ),
    _table(
        "missing",
        "every dataset skipped for want of data and every method variant without its pretrained weights: why, the fix",
        ("runs", "status"),
        module="missing",
    ),
)

# The file every short "missing" note of a table or figure points to: the ``missing`` table, which
# holds the long fixes (download commands, where to put the files) in one place.
MISSING_FILE = "results/tables/missing.md"

FIGURES: dict[str, Artefact] = _registry(
    Artefact(
        "silhouette",
        "con2.builders.figures:silhouette_figure",
        ("table",),
        "context silhouette per dataset and variant",
        table="silhouette",
    ),
    Artefact(
        "score_runtime",
        "con2.builders.figures:score_runtime_figure",
        ("measured",),
        "S_NND vs S_LH runtime and memory scaling",
    ),
    Artefact(
        "pca_representations",
        "con2.builders.figures:pca_figure",
        ("panels",),
        "2-D PCA of the representations in both contexts, each test image joined to its twin",
    ),
    Artefact(
        "per_class",
        "con2.builders.figures:per_class_figure",
        ("table",),
        "bars of AUROC per normal class (report.per_class)",
        each="per_class",
        table="per_class",
    ),
    Artefact(
        "learning_curve",
        "con2.builders.figures:learning_curve_figure",
        ("table", "status"),
        "AUROC against epoch per method, mean ± std over seeds (report.curves)",
        each="curves",
        table="learning_curve",
    ),
    Artefact(
        "length_curve",
        "con2.builders.figures:length_curve_figure",
        ("table", "status"),
        "the length study's AUROC against epoch, a panel per normal class, every series (report.length_curve)",
        each="length_curve",
        table="length_curve",
    ),
)


@dataclass(frozen=True, eq=False, kw_only=True)
class ReportInputs:
    """Everything a builder may read; each builder reads the fields its :class:`Artefact` lists.

    Attributes:
        config: the profile config (its ``report`` block above all).
        runs: the tidy run frame (:func:`con2.aggregate.runs_csv.load_runs`), one row per run and score.
        paper: the paper's numbers (:func:`con2.report.paper.load_paper_numbers`).
        hours: the paper's GPU hours per run (:func:`con2.report.paper.load_compute_hours`).
        measured: the score-runtime measurements (``workflow/scripts/score_runtime.py``'s CSV).
        table: the frame of the table a figure draws (its CSV, normal classes as strings).
        status: the grid's data status (``{"<dataset>/<size>": marker}``, ``status`` ``ok`` or
            ``skipped`` with ``reason`` and ``fix``: :func:`con2.workflow.status.check_dataset`);
            ``None`` where not given (a dataset absent from the runs is then "not run", no reason).
        dataset: the dataset of an artefact made per dataset (``each``), else "".
        panels: the files of each PCA panel's run (:class:`PcaPanel`), as the figure's rule names them.
        gpu: the GPU runs of ``benchmarks/gpu_fidelity.py`` (:func:`con2.report.gpu_runs.read_gpu_lines`).
        scores: the per-image scores of the runs of ``runs`` (:class:`con2.aggregate.bundle.ScoresBundle`,
            the aggregation's bundle, or :data:`con2.aggregate.score_files.RUN_FOLDERS` where a caller reads the
            run folders on purpose); ``None``: not given (:meth:`score_source` refuses).
        references: published numbers of other sources than the paper, each row naming its source
            (:func:`con2.report.paper.load_reference_numbers`: CSI's repository on CIFAR-10).
        outside_grid: the records of ``runs.csv`` outside the profile's grid (``in_grid`` false: another
            profile's, or trained under another configuration), left out of ``runs`` unless the profile
            sets ``report.include_outside_grid``.

    The method names (:attr:`names`) and the subject (:attr:`subject`) are derived from ``config`` and
    ``runs`` once, on first use: a builder and the helpers it calls share them.
    """

    config: Mapping[str, Any] = field(default_factory=dict)
    runs: pd.DataFrame | None = None
    paper: pd.DataFrame | None = None
    hours: pd.DataFrame | None = None
    measured: pd.DataFrame | None = None
    table: pd.DataFrame | None = None
    status: Mapping[str, Mapping[str, Any]] | None = None
    dataset: str = ""
    panels: tuple[PcaPanel, ...] = ()
    gpu: pd.DataFrame | None = None
    scores: ScoresSource | None = None
    references: pd.DataFrame | None = None
    outside_grid: tuple[str, ...] = ()

    @property
    def report(self) -> Mapping[str, Any]:
        """The config's ``report`` block ({} without one)."""
        return self.config.get("report") or {}

    @cached_property
    def names(self) -> Methods:
        """How every method is named, ordered and joined to the paper's rows: the config's ``paper_names``, the
        registered specs and the cards of ``runs`` (:func:`con2.report.methods.method_names`), derived once."""
        from con2.report.methods import method_names  # lazy: pandas, which the Snakefile's parse must not import

        return method_names(self.config, self.runs)

    @cached_property
    def subject(self) -> Subject:
        """The method the paper is about (``report.subject``) as ``runs`` and its spec describe it
        (:func:`con2.report.methods.subject_of`), derived once."""
        from con2.report.methods import subject_of  # lazy: pandas, as above

        return subject_of(self.config, self.frame("runs"), self.names)

    def score_source(self) -> ScoresSource:
        """Where the per-image scores are read: the source given as ``scores`` (a rule's, the bundle); never a
        default, so no builder reads a run folder that its caller did not name.

        Raises:
            ValueError: these inputs lack it (a builder called without the scores it reads).
        """
        if self.scores is None:
            raise ValueError("a builder reads 'scores', which these inputs lack (list it in the artefact's reads)")
        return self.scores

    def frame(self, name: Frame) -> pd.DataFrame:
        """The frame ``name`` of a builder that reads it (its entry lists it in ``reads``).

        Raises:
            ValueError: these inputs lack it (a builder called without an input it reads).
        """
        value: pd.DataFrame | None = getattr(self, name)
        if value is None:
            raise ValueError(f"a builder reads {name!r}, which these inputs lack (list it in the artefact's reads)")
        return value

    @classmethod
    def load(
        cls,
        artefact: Artefact,
        files: Mapping[str, str],
        config: Mapping[str, Any],
        dataset: str = "",
        panels: Sequence[Sequence[str]] = (),
    ) -> ReportInputs:
        """Read the files ``artefact`` reads (``files``: input name -> path; others are ignored); ``panels``:
        the PCA figure's ``(title, record, features, scores)`` per panel, the rule's param (:class:`PcaPanel`).

        Raises:
            ValueError: ``files`` lacks one the artefact reads (the rule must list it as an input), or the runs
                CSV is not the one the aggregation sealed in the scores bundle given beside it
                (:func:`con2.aggregate.bundle.check_runs_seal`).
        """
        import pandas as pd  # lazy: the Snakefile imports this module without pandas

        from con2.aggregate.bundle import ScoresBundle, check_runs_seal  # lazy: pandas, as above
        from con2.aggregate.csv_text import from_csv_frame  # lazy: pandas, as above
        from con2.aggregate.runs_csv import load_runs  # lazy: it imports pandas, which the Snakefile's parse must not
        from con2.report.paper import (  # lazy: pandas, as above
            load_compute_hours,
            load_paper_numbers,
            load_reference_numbers,
        )

        readers: dict[str, Callable[[str], Any]] = {
            "runs": load_runs,
            "paper": load_paper_numbers,
            "hours": load_compute_hours,
            "measured": pd.read_csv,
            "table": lambda p: from_csv_frame(pd.read_csv(p, dtype={"normal_class": str, "classes": str})),
            "status": lambda p: json.loads(Path(p).read_text()),
            "gpu": _read_gpu_folder,
            "scores": ScoresBundle.read,
            "references": load_reference_numbers,
        }
        wanted = [r for r in artefact.reads if r in FILE_INPUTS and (r in files or r not in OPTIONAL_INPUTS)]
        missing = [r for r in wanted if r not in files]
        if missing:
            raise ValueError(f"{artefact.name} reads {missing}: give the rule these inputs ({list(files)} given)")
        if "runs" in wanted and files.get("scores"):  # the aggregation's seal: a hand-edited runs CSV is refused
            check_runs_seal(files["runs"], files["scores"])
        frames = {r: readers[r](files[r]) for r in wanted}
        outside: tuple[str, ...] = ()
        runs = frames.get("runs")
        if runs is not None and "in_grid" in runs.columns:  # one profile's tables show that profile's runs
            in_grid = runs["in_grid"].fillna(True).astype(bool)
            outside = tuple(sorted(runs.loc[~in_grid, "record"].astype(str).unique()))
            if not (config.get("report") or {}).get("include_outside_grid", False):
                frames["runs"] = runs.loc[in_grid].reset_index(drop=True)
        return cls(
            config=config,
            dataset=dataset,
            panels=tuple(PcaPanel(*(str(part) for part in panel)) for panel in panels),
            outside_grid=outside,
            **frames,
        )


def targets(registry: Mapping[str, Artefact], report: Mapping[str, Any], root: str, exts: Sequence[str]) -> list[str]:
    """Every file of a registry's artefacts for a profile's ``report`` block, in registry order."""
    return [f"{root}/{s}.{ext}" for a in registry.values() for s in a.stems(report) for ext in exts]


def table_targets(report: Mapping[str, Any], root: str = "results/tables") -> list[str]:
    """Every table file (csv, md, tex, html) of a profile."""
    return targets(TABLES, report, root, ("csv", "md", "tex", "html"))


def figure_targets(report: Mapping[str, Any], root: str = "results/figures") -> list[str]:
    """Every figure file (png, pdf) of a profile."""
    return targets(FIGURES, report, root, ("png", "pdf"))


def study_figures(report: Mapping[str, Any], scopes: Collection[str], root: str = "results/figures") -> list[str]:
    """The figure files (png, pdf) of the figures that draw a study's table (a scope of ``report.scopes``, e.g.
    the length study's curves): `snakemake studies` builds them with the study's tables."""
    drawn = {n: a for n, a in FIGURES.items() if a.table in scopes}
    return targets(drawn, report, root, ("png", "pdf"))


def _read_gpu_folder(folder: str) -> pd.DataFrame:
    """The GPU runs in ``folder``'s ``*gpu_fidelity*.jsonl`` files (:func:`con2.report.gpu_runs.read_gpu_lines`)."""
    from con2.report.gpu_runs import read_gpu_lines  # lazy: the Snakefile imports this module without pandas

    return read_gpu_lines(sorted(Path(folder).glob("*gpu_fidelity*.jsonl")))
