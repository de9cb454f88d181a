"""The paper's tables, built from the tidy run frame of :mod:`con2.report.collect`.

Every builder has one signature, ``build(inputs: ReportInputs) -> Table``: it reads the fields of
:class:`~con2.report.artefacts.ReportInputs` that its entry in :data:`con2.report.artefacts.TABLES`
lists (the runs, one row per run and score; the paper's numbers; the profile's ``report`` block;
...), and :func:`build_table` builds any table of that registry by name. Which runs feed a table is
decided from what the records say (method, score, and the tags of the method's card: contexts,
number of contexts, loss), not from variant names, so a renamed variant still lands in the right
column. Each method's "main" variant (``report.main_variants``, default ``default``) is the one
compared across methods. No method is named here: labels and the paper's rows come from the
methods' specs and cards (:mod:`con2.report.methods`), and the tables about one method (its scores
side by side, contexts, loss terms, number of contexts, silhouette) read the runs of
``report.subject``, the method the paper is about.

``report`` keys used here (all optional)::

    subject: con2                   # the method the paper is about (its tables are empty without it)
    medical: [breastmnist, ...]     # datasets of the medical tables (Table 1, alt contexts)
    natural: [cifar10, ...]         # datasets of the natural-image tables
    main_variants: {con2: invert}
    main_context: invert            # the subject's main context (default: its main variant's contexts tag)
    contexts: [invert, flip, equalize]  # columns of the context tables (default: the contexts its runs have)
    paper_epochs: 2048              # for the compute table's extrapolation

Every cell says what it averages (``[c×s]``: c normal classes × s seeds, see
:data:`~con2.report.format.CELL_NOTE`). Tables that set cells of one run family side by side (the
context, multiple-context, loss and silhouette tables) compare like with like: per dataset they
use only the normal classes that every column ran. Differences are taken from the shown, rounded
values. Only headline scores are tabulated (``nnd``, not ``nnd@<reading>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from con2.report.artefacts import TABLES, ReportInputs
from con2.report.bound import bound_rows
from con2.report.bound import verdict_lines as budget_lines
from con2.report.collect import dataset_level, summarize
from con2.report.comparisons import holding_marks, inside_text, mark_note, verdict_uncertainty_lines
from con2.report.format import CELL_NOTE, MISSING, Table, cell, shown, shown_diff, signed, with_interval
from con2.report.methods import Methods, Subject, lacking_weights, method_names, missing_weights_notes, subject_of
from con2.report.paper import (
    dataset_label,
    dataset_names,
    disagreement_notes,
    external_code_notes,
    paper_row,
    paper_value,
)

LOADED_CPU_SHARE = 0.8  # a training job that got less of the CPU it asked for ran under load
ReportCfg = Mapping[str, Any]


# ----------------------------------------------------------------------------- selection helpers
def report_block(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config's ``report`` block with defaults filled in."""
    rep = dict(config.get("report") or {})
    rep.setdefault("medical", [])
    rep.setdefault("natural", [])
    rep.setdefault("main_variants", {})
    rep.setdefault("paper_epochs", 2048)
    return rep


def headline(runs: pd.DataFrame) -> pd.DataFrame:
    """Rows of headline scores only (``nnd``, ``lh``, ``knn``...; not ``<score>@<reading>``)."""
    if runs.empty or "headline" not in runs.columns:
        return runs
    return runs[runs["headline"].fillna(True).astype(bool)]


def main_variant(rep: ReportCfg, method: str) -> str:
    return str((rep.get("main_variants") or {}).get(method, "default"))


def main_runs(runs: pd.DataFrame, rep: ReportCfg) -> pd.DataFrame:
    """Rows of each method's main variant."""
    if runs.empty:
        return runs
    keep = runs.apply(lambda r: r["variant"] == main_variant(rep, r["method"]), axis=1)
    return runs[keep.astype(bool)]


def subject_and_names(runs: pd.DataFrame, config: Mapping[str, Any]) -> tuple[Subject, Methods]:
    """The profile's subject (``report.subject``) and the method names, from the runs and the specs."""
    names = method_names(config, runs)
    return subject_of(config, runs, names), names


def main_context(rep: ReportCfg, subject: Subject) -> str:
    """The subject's main context (``report.main_context``, else its main variant's ``contexts`` tag):
    the context of the paper's rows that have one (Table 1, loss ablation, k = 2)."""
    return str(rep.get("main_context") or subject.main_context or "")


def ordered_datasets(present: list[str], *preferred: list[str]) -> list[str]:
    """``present`` ordered by the preferred lists first, then alphabetically."""
    order: list[str] = []
    for lst in preferred:
        order += [d for d in lst if d in present and d not in order]
    return order + sorted(d for d in present if d not in order)


def profile_datasets(config: Mapping[str, Any], status: Mapping[str, Mapping[str, Any]] | None = None) -> set[str]:
    """The datasets the profile's grid runs: those its ``experiments`` name (``only_datasets`` applied)
    and every dataset of the data status (the grid's data, checked by the workflow)."""
    from con2.grid.experiments import as_list

    only = set(as_list(config.get("only_datasets")))
    named = {d for exp in (config.get("experiments") or {}).values() for d in as_list((exp or {}).get("datasets"))}
    checked = {str(m.get("dataset", key.split("/")[0])) for key, m in (status or {}).items()}
    return {d for d in named if not only or d in only} | checked


def _why_skipped(marker: Mapping[str, Any]) -> str:
    """The data layer's reason without its own fix list ("pneumoniamnist.npz not found in ...")."""
    reason = " ".join(str(marker.get("reason", "its data were not found")).split())
    why = reason.split(" Fix: ")[0].removeprefix(f"{marker.get('dataset', '')}: ").rstrip(".")
    return why + (
        " (download: false in the profile)" if "(download: false" in reason and "(download" not in why else ""
    )


def absent_notes(
    absent: list[str], config: Mapping[str, Any], status: Mapping[str, Mapping[str, Any]] | None
) -> list[str]:
    """Why each dataset of a table has no run: not in the profile, or in it but skipped for want of
    data (why, and the fix: ``con2 data get`` or ``--config data_dir=...`` for data already on disk,
    from the data status the workflow wrote), or in it with no record yet."""
    skipped: dict[str, Mapping[str, Any]] = {}
    for key, marker in (status or {}).items():
        if marker.get("status") == "skipped":
            skipped.setdefault(str(marker.get("dataset", key.split("/")[0])), marker)
    in_profile = profile_datasets(config, status)
    notes = []
    outside = [dataset_label(d) for d in absent if d not in in_profile]
    if outside:
        notes.append(f"Not in this profile: {', '.join(outside)} (no experiment of the profile names them).")
    for d in absent:
        if d in skipped:
            marker = skipped[d]
            fix = marker.get("fix") or f"con2 data get {d} --data-dir DIR"
            notes.append(
                f"{dataset_label(d)}: in this profile but skipped, its data are missing ({_why_skipped(marker)}). "
                f"Fix: `{fix}`, or for data already on disk elsewhere `--config data_dir=DIR`; then run the "
                "same snakemake command again."
            )
    pending = [dataset_label(d) for d in absent if d in in_profile and d not in skipped]
    if pending:
        notes.append(
            f"In this profile, no run of a main variant here yet: {', '.join(pending)} (the workflow's last lines "
            "say what is missing)."
        )
    return notes


def _classes_text(classes: list[str]) -> str:
    classes = sorted(classes, key=_class_sort_key)
    return ", ".join(classes) if len(classes) <= 4 else f"{len(classes)} classes"


def like_with_like(sel: pd.DataFrame, by: str, column: str) -> tuple[pd.DataFrame, list[str]]:
    """Per dataset, keep only the normal classes that every value of ``by`` (every column) ran.

    A cell averaging ten normal classes is never set beside one averaging a single class: both
    average the classes they share. ``column`` names a column in the notes ("context", "k").
    Returns the rows kept and one note per dataset that lost some.
    """
    if sel.empty:
        return sel, []
    kept, notes = [], []
    for d, g in sel.groupby("dataset", sort=False):
        per_column = [set(cg["normal_class"]) for _, cg in g.groupby(by, dropna=False, sort=False)]
        common = set.intersection(*per_column)
        if not common:
            kept.append(g)
            notes.append(
                f"{dataset_label(d)}: each {column} ran other normal classes; each cell averages its own ([c×s])."
            )
            continue
        if any(cols != common for cols in per_column):
            every = set.union(*per_column)
            notes.append(
                f"{dataset_label(d)}: each cell averages normal class(es) {_classes_text(list(common))} only, the ones "
                f"every {column} ran ({len(every)} classes ran in some; per_class_{d}, where it exists, "
                "shows each class)."
            )
        kept.append(g[g["normal_class"].isin(common)])
    return pd.concat(kept), notes


def _level(runs: pd.DataFrame, keys: list[str], value: str = "auroc") -> pd.DataFrame:
    """Dataset-level mean/std (classes collapsed) keyed by ``keys`` (which must include dataset)."""
    return dataset_level(
        summarize(runs, value, keys=[*keys, "normal_class"] if "normal_class" not in keys else keys), keys
    )


@dataclass(frozen=True)
class Stat:
    """One cell: mean, std, n (seeds or classes, as :func:`~con2.report.collect.dataset_level`) and
    what it averages (normal classes, fewest and most seeds of a class)."""

    mean: float = np.nan
    std: float = np.nan
    n: int = 0
    n_classes: int = 0
    seeds_min: int = 0
    seeds_max: int = 0
    lo: float = np.nan  # the 95% interval of the mean over seeds (con2.maths.stats.summary_interval)
    hi: float = np.nan

    def text(self, digits: int = 1, interval: bool = False) -> str:
        """The cell; with ``interval`` (``report.intervals``) its 95% interval of the mean too."""
        text = cell(self.mean, self.std, self.n_classes, self.seeds_min, self.seeds_max, digits)
        return with_interval(text, self.lo, self.hi, digits) if interval else text

    @property
    def over(self) -> str:
        """``"10×1"`` (empty when there is no run)."""
        if not self.n_classes:
            return ""
        seeds = f"{self.seeds_min}" if self.seeds_min == self.seeds_max else f"{self.seeds_min}-{self.seeds_max}"
        return f"{self.n_classes}×{seeds}"


def _lookup(level: pd.DataFrame, **match: Any) -> Stat:
    if level.empty:
        return Stat()
    sel = np.ones(len(level), dtype=bool)
    for k, v in match.items():
        sel &= (level[k] == v).to_numpy()
    hit = level[sel]
    if hit.empty:
        return Stat()
    r = hit.iloc[0]
    return Stat(
        float(r["mean"]),
        float(r["std"]),
        int(r["n"]),
        int(r["n_classes"]),
        int(r["seeds_min"]),
        int(r["seeds_max"]),
        float(r.get("lo", np.nan)),
        float(r.get("hi", np.nan)),
    )


def _paper_label(pm: str, ps: str) -> str:
    return f"{pm} ({ps})" if ps else pm


# ----------------------------------------------------------------------------- method x dataset tables
def method_table(
    name: str,
    title: str,
    runs: pd.DataFrame,
    paper: pd.DataFrame,
    config: Mapping[str, Any],
    datasets: list[str],
    paper_table: str | None,
    status: Mapping[str, Mapping[str, Any]] | None = None,
) -> Table:
    """Rows: our methods (main variants, the subject first) each followed by the paper's row; then
    paper-only rows.

    Columns: the group's datasets (the paper's order first). Numbers are dataset-level means; each
    of our cells says over how many normal classes and seeds, and a note names every column whose
    methods ran different classes (compare those across rows in ``per_class_<dataset>``). A method
    of the profile's experiments that has no run because its pretrained weights are missing is
    named in a note with how to get them, and a dataset without runs with why (:func:`absent_notes`).
    """
    rep = report_block(config)
    runs = headline(runs)
    subject, names = subject_and_names(runs, config)
    paper_context = main_context(rep, subject)
    dmap = dataset_names(config)
    inv_d = {v: k for k, v in dmap.items()}
    psel = paper[paper["table"] == paper_table] if paper_table else paper.iloc[0:0]
    paper_ds = [inv_d.get(d, d) for d in dict.fromkeys(psel["dataset"])]
    ours = main_runs(runs[runs["dataset"].isin(datasets)], rep) if not runs.empty else runs
    cols = ordered_datasets(list(dict.fromkeys([*paper_ds, *datasets])), paper_ds, datasets)
    level = _level(ours, ["dataset", "method", "score"])
    pairs = sorted(dict.fromkeys(zip(level["method"], level["score"])), key=lambda p: names.pair_key(*p))
    rows, data, midrules, used_paper = [], [], [], set()
    intervals = bool(rep.get("intervals"))
    marks = holding_marks(ours, config, cols)

    def paper_cell(pm: str, ps: str, d: str) -> tuple[float, float] | None:
        return paper_value(psel, None, dmap.get(d, d), pm, ps, paper_context if ps else "")

    for m, s in pairs:
        cells = []
        target = names.paper_row(m, s)
        for d in cols:
            st = _lookup(level, dataset=d, method=m, score=s)
            pv = paper_cell(*target, d) if target else None
            cells.append(st.text(interval=intervals) + marks.get((d, m, s), ""))
            data.append(
                {
                    "dataset": d,
                    "method": m,
                    "score": s,
                    "variant": main_variant(rep, m),
                    "ours_mean": st.mean,
                    "ours_std": st.std,
                    "ours_n": st.n,
                    "ours_over": st.over,
                    "ours_lo": st.lo,
                    "ours_hi": st.hi,
                    "holds": bool(marks.get((d, m, s))),
                    "paper_method": _paper_label(*target) if target else "",
                    "paper_mean": pv[0] if pv else np.nan,
                    "paper_std": pv[1] if pv else np.nan,
                    "diff": shown_diff(st.mean, pv[0]) if pv else np.nan,
                }
            )
        rows.append([names.pair_label(m, s), "ours", *cells])
        if target and any(paper_cell(*target, d) for d in cols):
            rows.append(
                [
                    _paper_label(*target),
                    "paper",
                    *[cell(*(paper_cell(*target, d) or (np.nan, np.nan)), 0, 0) for d in cols],
                ]
            )
            used_paper.add(target[0])
    if len(psel):
        midrules.append(len(rows))
    for pm in dict.fromkeys(psel["method"]):
        if pm in used_paper:
            continue
        fam = psel.loc[psel["method"] == pm, "family"].iloc[0]
        cells = []
        for d in cols:
            pv = paper_value(psel, None, dmap.get(d, d), pm)
            cells.append(cell(*(pv or (np.nan, np.nan)), 0, 0))
            if pv:
                data.append(
                    {
                        "dataset": d,
                        "method": "",
                        "score": "",
                        "variant": "",
                        "ours_mean": np.nan,
                        "ours_std": np.nan,
                        "ours_n": 0,
                        "ours_over": "",
                        "ours_lo": np.nan,
                        "ours_hi": np.nan,
                        "holds": False,
                        "paper_method": pm,
                        "paper_mean": pv[0],
                        "paper_std": pv[1],
                        "diff": np.nan,
                    }
                )
        rows.append([pm, f"paper ({fam})" if fam else "paper", *cells])
    notes = [
        f"AUROC (%), mean ± std; {CELL_NOTE} Paper: as published (3 seeds; over every normal class).",
        "Ours use each method's main variant "
        f"({', '.join(f'{m}: {main_variant(rep, m)}' for m in dict.fromkeys(m for m, _ in pairs)) or 'none run'}).",
    ]
    if not ours.empty:
        notes.append(budget_note(ours, names, rep))
    if intervals:
        notes.append("(a–b): the 95% t-interval of our mean over seeds (report.intervals; none with one seed).")
    if marks:
        notes.append(mark_note(config, ours))
    for d in cols:
        classes = {
            m: frozenset(ours.loc[(ours["dataset"] == d) & (ours["method"] == m), "normal_class"]) for m, _ in pairs
        }
        classes = {m: c for m, c in classes.items() if c}
        if len(set(classes.values())) > 1:
            spread = "; ".join(f"{names.label(m)} {_classes_text(list(c))}" for m, c in classes.items())
            notes.append(
                f"{dataset_label(d)}: the methods ran different normal classes ({spread}): compare them per class in "
                f"per_class_{d} (where that table exists), not across these rows."
            )
    notes += absent_notes([d for d in cols if d not in set(ours["dataset"])], config, status)
    notes += missing_weights_notes(config, runs, cols)
    notes += external_code_notes(m for m in psel["method"] if m not in used_paper)
    notes += disagreement_notes(paper, psel[psel["dataset"].isin([dmap.get(d, d) for d in cols])])
    frame = pd.DataFrame(
        data,
        columns=[
            "dataset",
            "method",
            "score",
            "variant",
            "ours_mean",
            "ours_std",
            "ours_n",
            "ours_over",
            "ours_lo",
            "ours_hi",
            "holds",
            "paper_method",
            "paper_mean",
            "paper_std",
            "diff",
        ],
    )
    return Table(name, title, ["Method", "Source", *[dataset_label(d) for d in cols]], rows, frame, notes, midrules)


def table1_medical(inputs: ReportInputs) -> Table:
    """Table 1: AUROC on the medical datasets, every method, the paper's numbers beside ours."""
    runs, paper, config = inputs.runs, inputs.paper, inputs.config
    rep = report_block(config)
    return method_table(
        "table1_medical",
        "Medical anomaly detection: AUROC (%), ours beside the paper's Table 1",
        runs,
        paper,
        config,
        list(rep["medical"]),
        "table1_medical",
        inputs.status,
    )


def with_best_rows(runs: pd.DataFrame, config: Mapping[str, Any]) -> tuple[pd.DataFrame, Mapping[str, Any]]:
    """The runs with the subject's ``report.best_variant`` (CON2 (Best): the context chosen per normal
    class, ``contexts: [best]``) shown as a method of its own, ``<subject>/<variant>`` labelled
    ``<label> (Best)``, with no paper row (the paper prints CON2 (Best) only in a figure), and the
    config whose ``main_variants`` names it; both unchanged without ``best_variant`` or such runs."""
    rep = config.get("report") or {}
    subject, variant = rep.get("subject"), rep.get("best_variant")
    if not subject or not variant or runs.empty:
        return runs, config
    hit = (runs["method"] == subject) & (runs["variant"] == variant)
    if not hit.any():
        return runs, config
    name = f"{subject}/{variant}"
    best = runs[hit].copy()
    best["method"] = name
    label = next(
        (str(v) for v in best.get("method_label", pd.Series(dtype=object)) if isinstance(v, str) and v), subject
    )
    best["method_label"] = f"{label} (Best)"
    for col in ("paper_method", "paper_score", "compute_name"):
        if col in best.columns:
            best[col] = None
    report = {**rep, "main_variants": {**(rep.get("main_variants") or {}), name: variant}}
    return pd.concat([runs, best], ignore_index=True), {**config, "report": report}


def natural_summary(inputs: ReportInputs) -> Table:
    """Natural-image summary: AUROC per dataset (mean over normal classes), the paper's beside ours
    (and CON2 (Best), ``report.best_variant``, as a row of its own)."""
    paper = inputs.paper
    runs, config = with_best_rows(inputs.runs, inputs.config)
    rep = report_block(config)
    return method_table(
        "natural_summary",
        "Natural images: AUROC (%) averaged over normal classes, ours beside the paper's",
        runs,
        paper,
        config,
        list(rep["natural"]),
        "table_all_contexts_natural",
        inputs.status,
    )


# ----------------------------------------------------------------------------- the subject's ablations
def _no_subject(name: str, title: str, columns: list[str]) -> Table:
    note = "report.subject is not set: no method to tabulate (set it to the method the paper is about)."
    return Table(name, title, columns, [], pd.DataFrame(columns=columns), [note])


def nnd_vs_lh(inputs: ReportInputs) -> Table:
    """The subject's scores side by side per dataset (its main variant: the same runs), with the
    paper's where published, and their difference when it has two."""
    runs, paper, config = inputs.runs, inputs.paper, inputs.config
    rep = report_block(config)
    runs = headline(runs)
    subject, names = subject_and_names(runs, config)
    if subject.method is None:
        return _no_subject("nnd_vs_lh", "The subject's scores side by side", ["Dataset"])
    dmap = dataset_names(config)
    sel = main_runs(runs[runs["method"] == subject.method], rep) if not runs.empty else runs
    level = _level(sel, ["dataset", "score"])
    scores = list(subject.scores)
    labels = [names.score_label(subject.method, s) for s in scores]
    context = main_context(rep, subject)
    datasets = ordered_datasets(list(dict.fromkeys(level["dataset"])), rep["medical"], rep["natural"])
    rows, data, shown_paper = [], [], []
    for d in datasets:
        cells, pcells, means = [], [], []
        for s in scores:
            st = _lookup(level, dataset=d, score=s)
            means.append(st.mean)
            target = names.paper_row(subject.method, s)
            prow = paper_row(paper, None, dmap.get(d, d), *target, context) if target else None
            shown_paper += [] if prow is None else [prow]
            pv = None if prow is None else (float(prow["auroc_mean"]), float(prow["auroc_std"]))
            cells.append(st.text())
            pcells.append(cell(*(pv or (np.nan, np.nan)), 0, 0))
            data.append(
                {
                    "dataset": d,
                    "score": s,
                    "ours_mean": st.mean,
                    "ours_std": st.std,
                    "ours_n": st.n,
                    "ours_over": st.over,
                    "paper_mean": pv[0] if pv else np.nan,
                    "paper_std": pv[1] if pv else np.nan,
                }
            )
        diff = [signed(shown_diff(means[0], means[1]))] if len(scores) == 2 else []
        rows.append([dataset_label(d), *cells, *diff, *pcells])
    frame = pd.DataFrame(
        data, columns=["dataset", "score", "ours_mean", "ours_std", "ours_n", "ours_over", "paper_mean", "paper_std"]
    )
    diff_col = [f"{labels[0]} − {labels[1]}"] if len(scores) == 2 else []
    diff_note = f" {diff_col[0]} is the difference of the shown values." if diff_col else ""
    return Table(
        "nnd_vs_lh",
        f"{subject.label}: {' vs '.join(labels)} score, AUROC (%)",
        ["Dataset", *[f"{lab} (ours)" for lab in labels], *diff_col, *[f"{lab} (paper)" for lab in labels]],
        rows,
        frame,
        [
            f"{subject.label} {subject.main_variant} runs (every score from the same runs); {CELL_NOTE}{diff_note} "
            f"Paper values: the paper's rows of these scores ({context or 'any'} context), from any of its tables.",
            *disagreement_notes(paper, pd.DataFrame(shown_paper)),
        ],
    )


def loss_ablation(inputs: ReportInputs) -> Table:
    """The subject's loss ablation: one column per value of its runs' ``loss`` tag (the main
    variant's first, then in the order of the profile's ``variants``), every score, at its main context."""
    runs, config = inputs.runs, inputs.config
    rep = report_block(config)
    runs = headline(runs)
    subject, names = subject_and_names(runs, config)
    title = f"{subject.label} loss ablation: AUROC (%) per loss"
    if subject.method is None:
        return _no_subject("loss_ablation", title, ["Dataset", "Score"])
    context = main_context(rep, subject)
    reference = subject.reference.get("loss")
    sel = subject.runs(runs, contexts=[context] if context else None, loss=None)
    ablated: set[str] = set()
    if not sel.empty:
        sel = sel.assign(loss=subject.losses(sel)).dropna(subset=["loss"])
        ablated = set(sel.loc[sel["loss"] != reference, "dataset"])
        sel = sel[sel["dataset"].isin(ablated)]
    # the main variant's loss first, then the others in the order the profile lists their variants
    rank = {v: i for i, v in enumerate(config.get("variants") or {})}
    seen = sorted(zip(sel.get("variant", []), sel.get("loss", [])), key=lambda vl: (rank.get(vl[0], len(rank)), vl[0]))
    losses = [x for x in dict.fromkeys([reference, *(loss for _, loss in seen)]) if x is not None]
    sel, like_notes = like_with_like(sel, "loss", "loss")
    level = _level(sel, ["dataset", "loss", "score"])
    rows, data = [], []
    for d in ordered_datasets(sorted(ablated), rep["medical"], rep["natural"]):
        for s in subject.scores:
            cells = []
            for loss in losses:
                st = _lookup(level, dataset=d, loss=loss, score=s)
                cells.append(st.text())
                data.append(
                    {"dataset": d, "score": s, "loss": loss, "mean": st.mean, "std": st.std, "n": st.n, "over": st.over}
                )
            rows.append([dataset_label(d), names.score_label(subject.method, s), *cells])
    frame = pd.DataFrame(data, columns=["dataset", "score", "loss", "mean", "std", "n", "over"])
    return Table(
        "loss_ablation",
        title,
        ["Dataset", "Score", *[f"loss: {str(x).replace('_', ' ')}" for x in losses]],
        rows,
        frame,
        [
            f"{subject.label} runs with context {context or 'any'}, one column per value of their loss tag "
            f"({reference} is the main variant's). Only datasets with at least one run of another loss are listed. "
            f"{CELL_NOTE}",
            *like_notes,
        ],
    )


def context_table(
    name: str,
    title: str,
    runs: pd.DataFrame,
    paper: pd.DataFrame,
    config: Mapping[str, Any],
    datasets: list[str],
    paper_table: str,
) -> Table:
    """Rows (dataset, score, source); columns the subject's contexts (like with like per dataset).

    Columns: ``report.contexts``, else every context the subject's runs have (its main one first);
    ``{scores}`` in ``title`` becomes its score labels.
    """
    rep = report_block(config)
    runs = headline(runs)
    subject, names = subject_and_names(runs, config)
    if subject.method is None:
        return _no_subject(name, title.format(scores="every score"), ["Dataset", "Score", "Source"])
    dmap = dataset_names(config)
    labels = [names.score_label(subject.method, s) for s in subject.scores]
    sel = subject.runs(runs)
    present = sorted({str(c) for c in sel["contexts"].dropna()}) if not sel.empty else []
    first = main_context(rep, subject)
    contexts = [str(c) for c in rep.get("contexts") or [first, *(c for c in present if c != first)] if c]
    sel = sel[sel["contexts"].isin(contexts) & sel["dataset"].isin(datasets)] if not sel.empty else sel
    sel, like_notes = like_with_like(sel, "contexts", "context")
    level = _level(sel, ["dataset", "contexts", "score"])
    psel = paper[paper["table"] == paper_table]
    inv_d = {v: k for k, v in dmap.items()}
    shown_ds = ordered_datasets(
        list(
            dict.fromkeys(
                [*level["dataset"], *[inv_d.get(d, d) for d in psel["dataset"] if inv_d.get(d, d) in datasets]]
            )
        ),
        datasets,
    )
    rows, data, midrules = [], [], []
    for d in shown_ds:
        midrules.append(len(rows))
        for s, label in zip(subject.scores, labels):
            ours, theirs, have_paper = [], [], False
            target = names.paper_row(subject.method, s)
            for c in contexts:
                st = _lookup(level, dataset=d, contexts=c, score=s)
                pv = paper_value(psel, None, dmap.get(d, d), *target, c) if target else None
                have_paper |= pv is not None
                ours.append(st.text())
                theirs.append(cell(*(pv or (np.nan, np.nan)), 0, 0))
                data.append(
                    {
                        "dataset": d,
                        "score": s,
                        "context": c,
                        "ours_mean": st.mean,
                        "ours_std": st.std,
                        "ours_n": st.n,
                        "ours_over": st.over,
                        "paper_mean": pv[0] if pv else np.nan,
                        "paper_std": pv[1] if pv else np.nan,
                        "diff": shown_diff(st.mean, pv[0]) if pv else np.nan,
                    }
                )
            rows.append([dataset_label(d), label, "ours", *ours])
            if have_paper:
                rows.append([dataset_label(d), label, "paper", *theirs])
    frame = pd.DataFrame(
        data,
        columns=[
            "dataset",
            "score",
            "context",
            "ours_mean",
            "ours_std",
            "ours_n",
            "ours_over",
            "paper_mean",
            "paper_std",
            "diff",
        ],
    )
    loss = subject.reference.get("loss")
    return Table(
        name,
        title.format(scores=" and ".join(labels)),
        ["Dataset", "Score", "Source", *contexts],
        rows,
        frame,
        [
            f"{subject.label} with one context each (the runs' contexts tag{f', loss {loss}' if loss else ''}); "
            f"AUROC (%), mean ± std; {CELL_NOTE} Per dataset, every context column averages the same normal classes.",
            *like_notes,
            *disagreement_notes(
                paper, psel[psel["dataset"].isin([dmap.get(d, d) for d in shown_ds]) & psel["context"].isin(contexts)]
            ),
        ],
        midrules,
    )


def alt_contexts(inputs: ReportInputs) -> Table:
    """Alternative context augmentations (invert / flip / equalize) on the medical datasets."""
    runs, paper, config = inputs.runs, inputs.paper, inputs.config
    rep = report_block(config)
    natural = set(rep["natural"])
    present = [d for d in dict.fromkeys(runs["dataset"]) if d not in natural] if not runs.empty else []
    datasets = list(dict.fromkeys([*rep["medical"], *present]))
    return context_table(
        "alt_contexts",
        "Alternative context augmentations on the medical datasets: AUROC (%)",
        runs,
        paper,
        config,
        datasets,
        "table_alt_contexts",
    )


def all_contexts(inputs: ReportInputs) -> Table:
    """All context augmentations and every score on the natural-image datasets."""
    runs, paper, config = inputs.runs, inputs.paper, inputs.config
    rep = report_block(config)
    return context_table(
        "all_contexts",
        "All context augmentations on the natural-image datasets: AUROC (%), {scores}",
        runs,
        paper,
        config,
        list(rep["natural"]),
        "table_all_contexts_natural",
    )


def multi_context(inputs: ReportInputs) -> Table:
    """The multiple-context ablation: AUROC against the number of contexts k of the subject's runs
    (the main variant's k and context, and every run with a larger k)."""
    runs, config = inputs.runs, inputs.config
    rep = report_block(config)
    runs = headline(runs)
    subject, names = subject_and_names(runs, config)
    title = f"Multiple contexts: {subject.label} AUROC (%) against the number of contexts k"
    if subject.method is None:
        return _no_subject("multi_context", title, ["Dataset", "Score"])
    ref_k = subject.reference.get("n_contexts")
    ref_k = float(ref_k) if isinstance(ref_k, (int, float)) and not pd.isna(ref_k) else np.nan
    context = main_context(rep, subject)
    sel = subject.runs(runs, k=None)
    if not sel.empty:
        sel = sel[(sel["contexts"] == context) | (sel["n_contexts"] > ref_k)]
        multi = set(sel.loc[sel["n_contexts"] > ref_k, "dataset"])
        sel = sel[sel["dataset"].isin(multi)]
    sel, like_notes = like_with_like(sel, "n_contexts", "k")
    level = _level(sel, ["dataset", "n_contexts", "score"])
    ks = sorted({int(k) for k in level["n_contexts"]}) if not level.empty else ([int(ref_k)] if ref_k == ref_k else [])
    rows, data = [], []
    for d in ordered_datasets(list(dict.fromkeys(level["dataset"])), rep["medical"], rep["natural"]):
        for s in subject.scores:
            cells = []
            for k in ks:
                st = _lookup(level, dataset=d, n_contexts=float(k), score=s)
                cells.append(st.text())
                data.append(
                    {"dataset": d, "score": s, "k": k, "mean": st.mean, "std": st.std, "n": st.n, "over": st.over}
                )
            rows.append([dataset_label(d), names.score_label(subject.method, s), *cells])
    frame = pd.DataFrame(data, columns=["dataset", "score", "k", "mean", "std", "n", "over"])
    base = f"k = {int(ref_k)} is the main variant ({context})" if ref_k == ref_k else "k: the runs' n_contexts tag"
    return Table(
        "multi_context",
        title,
        ["Dataset", "Score", *[f"k = {k}" for k in ks]],
        rows,
        frame,
        [
            f"k: the number of contexts of the {subject.label} runs (their n_contexts tag, the identity included); "
            f"{base}. Only datasets with a run of larger k are listed. {CELL_NOTE}",
            *like_notes,
        ],
    )


# ----------------------------------------------------------------------------- per class, silhouette, compute
def per_class(inputs: ReportInputs) -> Table:
    """AUROC per normal class of one dataset, each method's main variant (mean ± std over seeds), and
    CON2 (Best) (``report.best_variant``) as a method of its own."""
    dataset = inputs.dataset
    runs, config = with_best_rows(inputs.runs, inputs.config)
    rep = report_block(config)
    runs = headline(runs)
    names = method_names(config, runs)
    sel = main_runs(runs[runs["dataset"] == dataset], rep) if not runs.empty else runs
    summ = summarize(sel, keys=["normal_class", "method", "score"])
    pairs = sorted(dict.fromkeys(zip(summ["method"], summ["score"])), key=lambda p: names.pair_key(*p))
    classes = sorted(dict.fromkeys(summ["normal_class"]), key=_class_sort_key)
    rows = []
    for c in classes:
        cells = []
        for m, s in pairs:
            hit = summ[(summ["normal_class"] == c) & (summ["method"] == m) & (summ["score"] == s)]
            cells.append(
                cell(hit["mean"].iloc[0], hit["std"].iloc[0], 1, int(hit["n"].iloc[0])) if len(hit) else MISSING
            )
        rows.append([c, *cells])
    if classes:
        last = []
        for m, s in pairs:
            g = summ[(summ["method"] == m) & (summ["score"] == s)]
            std = g["mean"].std(ddof=1) if len(g) > 1 else np.nan
            last.append(cell(g["mean"].mean(), std, len(g), int(g["n"].min()), int(g["n"].max())))
        rows.append(["mean", *last])
    seeds = sorted({int(n) for n in summ["n"]}) if not summ.empty else []
    if not seeds:
        over = "no runs"
    elif seeds == [1]:
        over = "one seed per class, so a class's cell is that run's AUROC ([1×1]) and has no ±"
    else:
        span = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
        over = (
            f"a class's cell is the mean ± std of its {span} seeds ([1×s]; the mean alone where a class has one seed)"
        )
    frame = summ.rename(columns={"mean": "auroc_mean", "std": "auroc_std"})
    frame.insert(0, "dataset", dataset)
    # the figure of this table reads its series' labels and order from here
    frame["label"] = [names.pair_label(m, s) for m, s in zip(frame["method"], frame["score"])]
    frame["series"] = [pairs.index((m, s)) for m, s in zip(frame["method"], frame["score"])]
    return Table(
        f"per_class_{dataset}",
        f"{dataset_label(dataset)}: AUROC (%) per normal class",
        ["Normal class", *[names.pair_label(m, s) for m, s in pairs]],
        rows,
        frame,
        [
            f"One-vs-rest: the class is normal, every other test image anomalous; {over}. Last row: the mean over the "
            "c classes a method ran, ± the std of the class means ([c×s]).",
            *(absent_notes([dataset], config, inputs.status) if summ.empty else []),
        ],
    )


def _class_sort_key(c: str) -> tuple[int, Any]:
    return (0, int(c)) if str(c).isdigit() else (1, str(c))


def variant_label(row: Mapping[str, Any], names: Methods, plain_loss: Any = None) -> str:
    """``CON2 invert``, ``CON2 k4``, ``CON2 invert (context only)``, ``SimCLR default``...: the method's
    label, its contexts tag (else the variant) and its loss tag unless it is ``plain_loss``."""
    ctx = row.get("contexts")
    ctx = ctx if isinstance(ctx, str) and ctx else row["variant"]
    loss = row.get("loss")
    extra = f" ({str(loss).replace('_', ' ')})" if isinstance(loss, str) and loss not in (plain_loss, "") else ""
    return f"{names.label(row['method'])} {ctx}{extra}"


def silhouette(inputs: ReportInputs) -> Table:
    """Silhouette of the test representations labelled by context, per dataset and variant (like with like)."""
    runs, config = inputs.runs, inputs.config
    rep = report_block(config)
    subject, names = subject_and_names(headline(runs), config)
    sel = runs.dropna(subset=["silhouette"]) if not runs.empty else runs
    if not sel.empty:
        sel = sel.drop_duplicates(subset=["dataset", "normal_class", "method", "variant", "seed"]).copy()
        plain = subject.reference.get("loss")
        sel["label"] = [
            variant_label(r, names, plain if r["method"] == subject.method else None) for r in sel.to_dict("records")
        ]
    else:
        sel = sel.assign(label=pd.Series(dtype=str))
    sel, like_notes = like_with_like(sel, "label", "variant")
    empty = pd.DataFrame(columns=["dataset", "label", "mean", "std", "n", "n_classes", "seeds_min", "seeds_max"])
    level = _level(sel, ["dataset", "label"], "silhouette") if not sel.empty else empty
    # which normal classes each bar of the figure averages (like with like may keep only some)
    classes = sel.groupby(["dataset", "label"])["normal_class"].agg(lambda c: _classes_text(list(set(c))))
    level = level.assign(
        classes=[classes.get((d, lab), "") for d, lab in zip(level["dataset"], level["label"])] if len(level) else []
    )
    labels = sorted(dict.fromkeys(level["label"]), key=lambda s: (0 if "(" not in s else 1, s))
    datasets = ordered_datasets(list(dict.fromkeys(level["dataset"])), rep["medical"], rep["natural"])
    rows = []
    for d in datasets:
        rows.append([dataset_label(d), *[_lookup(level, dataset=d, label=lab).text(digits=3) for lab in labels]])
    return Table(
        "silhouette",
        "Silhouette score of the representations labelled by context (both contexts of every test image)",
        ["Dataset", *labels],
        rows,
        level.rename(columns={"label": "variant"}),
        [
            "Cosine silhouette in [-1, 1] of the identity-view encoder outputs; mean ± std; "
            f"{CELL_NOTE} Per dataset, every variant averages the same normal classes. High = the context clusters "
            "exist.",
            *like_notes,
        ],
    )


def compute_cost(inputs: ReportInputs) -> Table:
    """Compute per run: training and scoring time, peak memory, the load they were measured under;
    extrapolated to the paper's epochs (with a warning when the measurements were taken under load)."""
    runs, config, hours = inputs.runs, inputs.config, inputs.hours
    rep = report_block(config)
    dmap = dataset_names(config)
    names = method_names(config, runs)
    cols = [
        "dataset",
        "method",
        "variant",
        "device",
        "runs",
        "epochs",
        "fit_min",
        "score_s",
        "wall_min",
        "peak_mb",
        "bench_max_rss_mb",
        "cpu_share",
        "load_average",
        "s_per_epoch",
        "h_at_paper_epochs",
        "paper_gpu_h",
    ]
    if runs.empty:
        return Table("compute_cost", "Compute cost per run", cols, [], pd.DataFrame(columns=cols))
    per_run = runs.drop_duplicates(subset=["dataset", "normal_class", "method", "variant", "seed"])
    per_run = per_run.assign(device=per_run["machine"].fillna(per_run["device"]))  # the CPU model or GPU name
    data = []
    for (d, m, v, dev), g in per_run.groupby(["dataset", "method", "variant", "device"], dropna=False, sort=False):
        epochs = g["epochs"].astype(float)
        s_per_epoch = (g["fit_seconds"] / epochs.replace(0, np.nan)).mean()
        ph = np.nan
        if hours is not None and names.compute_name(m):
            hit = hours[(hours["method"] == names.compute_name(m)) & (hours["dataset"] == dmap.get(d, d))]
            ph = float(hit["gpu_hours_per_run"].iloc[0]) if len(hit) else np.nan
        data.append(
            {
                "dataset": d,
                "method": m,
                "variant": v,
                "device": dev,
                "runs": len(g),
                "epochs": epochs.mean(),
                "fit_min": g["fit_seconds"].mean() / 60,
                "score_s": g["score_seconds"].mean(),
                "wall_min": g["wall_seconds"].mean() / 60,
                "peak_mb": g["peak_memory_mb"].mean(),
                "bench_max_rss_mb": g["bench_max_rss_mb"].mean(),
                "cpu_share": g["cpu_share"].mean(),
                "load_average": g["load_average"].mean(),
                "s_per_epoch": s_per_epoch,
                "h_at_paper_epochs": s_per_epoch * float(rep["paper_epochs"]) / 3600
                if pd.notna(s_per_epoch)
                else np.nan,
                "paper_gpu_h": ph,
            }
        )
    frame = pd.DataFrame(data, columns=cols)
    order = {
        d: i
        for i, d in enumerate(ordered_datasets(list(dict.fromkeys(frame["dataset"])), rep["medical"], rep["natural"]))
    }
    frame = frame.sort_values(
        by=["dataset", "method", "variant"], key=lambda s: s.map(order) if s.name == "dataset" else s
    )
    rows, flagged = [], []

    def num(x: float, digits: int = 1) -> str:
        return MISSING if pd.isna(x) else f"{x:.{digits}f}"

    for r in frame.to_dict("records"):
        loaded = pd.notna(r["cpu_share"]) and r["cpu_share"] < LOADED_CPU_SHARE
        unknown = pd.isna(r["cpu_share"]) and pd.isna(r["load_average"])
        mark = "*" if loaded else ("?" if unknown else "")
        if mark and pd.notna(r["h_at_paper_epochs"]):
            flagged.append(f"{dataset_label(r['dataset'])} {r['method']} {r['variant']}")
        rows.append(
            [
                dataset_label(r["dataset"]),
                r["method"],
                r["variant"],
                str(r["device"]),
                str(r["runs"]),
                num(r["epochs"], 0),
                num(r["fit_min"], 2),
                num(r["score_s"]),
                num(r["wall_min"], 2),
                num(r["peak_mb"], 0),
                num(r["bench_max_rss_mb"], 0),
                num(r["cpu_share"], 2) + mark,
                num(r["load_average"], 1),
                num(r["s_per_epoch"], 2) + mark,
                num(r["h_at_paper_epochs"]) + mark,
                num(r["paper_gpu_h"]),
            ]
        )
    header = [
        "Dataset",
        "Method",
        "Variant",
        "Device",
        "Runs",
        "Epochs",
        "Fit (min)",
        "Score (s)",
        "Wall (min)",
        "Peak MB",
        "RSS MB (benchmark)",
        "CPU share",
        "Load (1 min)",
        "s / epoch",
        f"h at {rep['paper_epochs']} ep",
        "Paper GPU h",
    ]
    notes = [
        "Fit, score and peak memory from the run records; RSS and CPU time from Snakemake's benchmark files. "
        "CPU share = CPU seconds / (wall seconds x threads) of the training job (approximate: sampled every 30 s): "
        f"about 1 on an idle machine; * marks < {LOADED_CPU_SHARE} (the job waited for the CPU: measured under load), "
        "? an unknown load. Load (1 min): the system load average the record gives, where it gives one. "
        f"'h at {rep['paper_epochs']} ep' extrapolates the measured seconds per epoch on the same device; paper GPU "
        "hours as reported (single RTX 2080Ti/3090/4090, 2048 epochs).",
    ]
    if flagged:
        notes.append(
            f"WARNING: 'h at {rep['paper_epochs']} ep' of {len(flagged)} row(s) ({', '.join(flagged[:6])}"
            f"{', ...' if len(flagged) > 6 else ''}) is extrapolated from fit times measured under load or under an "
            "unknown load: an upper bound, not the cost on an idle machine (measure it idle, e.g. "
            "benchmarks/throughput.py)."
        )
    return Table(
        "compute_cost", "Compute cost per run (means over seeds and normal classes)", header, rows, frame, notes
    )


# ----------------------------------------------------------------------------- budget and verdict
# The paper's training budget (its appendix): ResNet18 with 512-d features (width 64), 224 px inputs
# on the medical datasets, 3 seeds; its epochs are `report.paper_epochs` (2048).
PAPER_IMAGE_SIZE, PAPER_WIDTH, PAPER_SEEDS = 224, 64, 3


def _run_level(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run (the run frame has one per score)."""
    return runs.drop_duplicates(subset=["dataset", "normal_class", "method", "variant", "seed"])


def _usual(values: Mapping[str, Any], unit: str, names: Mapping[str, str] | None = None) -> str:
    """``"10 epochs (PANDA 15)"``: the most common value, and the keys (labelled) that differ from it."""
    shown_values = {k: v for k, v in values.items() if pd.notna(v)}
    if not shown_values:
        return f"? {unit}".strip()
    counts = pd.Series(list(shown_values.values())).value_counts()
    usual = counts.index[0]
    others = [f"{(names or {}).get(k, k)} {_num(v)}" for k, v in shown_values.items() if v != usual]
    return f"{_num(usual)} {unit}".strip() + (f" ({', '.join(others)})" if others else "")


def _num(value: Any) -> str:
    return (
        str(int(value))
        if isinstance(value, (int, float, np.integer, np.floating)) and float(value).is_integer()
        else str(value)
    )


@dataclass(frozen=True)
class Budget:
    """What a set of runs trained at: epochs, input sizes, encoder widths and seeds, as text."""

    epochs: str
    image_size: str
    width: str
    seeds: str
    max_epochs: float
    max_image_size: float

    untrained: str = ""  # methods that train nothing (an external program, a zero-shot model)
    machines: str = ""  # the CPU models / GPU names the runs ran on

    def text(self) -> str:
        on = f", on {self.machines}" if self.machines else ""
        if self.epochs.startswith("?") and self.untrained:  # nothing here was trained
            return f"no training ({self.untrained}), {self.seeds}{on}"
        trained = f"{self.epochs} at {self.image_size}, ResNet18 width {self.width}, {self.seeds}"
        return trained + (f"; no training: {self.untrained}" if self.untrained else "") + on

    def below_paper(self, paper_epochs: int) -> bool:
        return self.max_epochs < paper_epochs or self.max_image_size < PAPER_IMAGE_SIZE


def budget_of(runs: pd.DataFrame, names: Methods) -> Budget:
    """The budget of runs (rows of the run frame): per method epochs and seeds, per dataset the input size."""
    r = _run_level(runs)
    labels = {m: names.label(m) for m in r["method"].unique()}
    steps, most_epochs = r.groupby("method")["steps"].max(), r.groupby("method")["epochs"].max()
    untrained = [m for m in labels if steps.get(m) == 0 or (pd.isna(steps.get(m)) and pd.isna(most_epochs.get(m)))]
    trained = r[~r["method"].isin(untrained)]
    epochs = trained.groupby("method")["epochs"].max().to_dict()
    sizes = trained.groupby("dataset")["image_size"].max().to_dict()
    widths = trained.groupby("method")["width"].max().to_dict()
    seeds = r.groupby(["method", "dataset", "normal_class"])["seed"].nunique().groupby("method").max().to_dict()
    machines = sorted({str(x) for x in r["machine"].dropna()}) if "machine" in r else []
    return Budget(
        epochs=_usual(epochs, "epochs", labels),
        image_size=_usual(sizes, "px", {d: dataset_label(d) for d in sizes}),
        width=_usual(widths, "", labels),
        seeds=_usual(seeds, "seeds", labels),
        max_epochs=float(np.nanmax(list(epochs.values()) or [np.nan])),
        max_image_size=float(np.nanmax(list(sizes.values()) or [np.nan])),
        untrained=", ".join(untrained),  # method names (validated), not labels: a note is not escaped
        machines=", ".join(machines),
    )


def paper_budget_text(rep: ReportCfg) -> str:
    """The paper's budget as text (its epochs from ``report.paper_epochs``)."""
    width = f"ResNet18 width {PAPER_WIDTH} (512-d)"
    return f"{rep['paper_epochs']} epochs at {PAPER_IMAGE_SIZE} px, {width}, {PAPER_SEEDS} seeds"


def budget_note(ours: pd.DataFrame, names: Methods, rep: ReportCfg) -> str:
    """The note under Table 1: the budget "ours" trained at, beside the paper's."""
    return f"Budget of ours: {budget_of(ours, names).text()}; the paper's: {paper_budget_text(rep)}."


def _fidelity_readings(
    runs: pd.DataFrame, config: Mapping[str, Any], method: str, score: str
) -> list[tuple[str, str, float]]:
    """``(label, dataset, mean)`` of every fidelity row (``report.fidelity.rows``) of ``method`` whose
    column reads ``score`` and that has runs here, on every fidelity dataset."""
    from con2.report.fidelity import _cell
    from con2.report.methods import base_score

    spec = (config.get("report") or {}).get("fidelity") or {}
    out = []
    for row in spec.get("rows") or []:
        if row.get("method") != method or base_score(row.get("score", "")) != score:
            continue
        for d in spec.get("datasets") or []:
            mean = _cell(runs, d, row)[0]
            if not np.isnan(mean):
                out.append((str(row["label"]), str(d), mean))
    return out


def _curve_text(runs: pd.DataFrame, names: Methods, rep: ReportCfg, method: str, score: str, dataset: str) -> str:
    """``"learning curve 55.0 (epoch 2) -> 57.7 (epoch 10)"`` of the method's main runs, or ""."""
    from con2.report.curves import curve_points

    points, _ = curve_points(runs[(runs["method"] == method) & (runs["dataset"] == dataset)], names, rep)
    points = points[points["score"] == score]
    if points["epoch"].nunique() < 2:
        return ""
    mean = points.groupby("epoch")["auroc"].mean()
    return f"learning curve {mean.iloc[0]:.1f} (epoch {mean.index[0]}) -> {mean.iloc[-1]:.1f} (epoch {mean.index[-1]})"


NOTHING_TO_COMPARE = (
    "**Verdict:** nothing to compare yet: no run of this profile matches a published number. "
    "`snakemake --cores 2 all --config data_dir=DIR` trains them (Table 1's notes name what is missing)."
)


def verdict_lines(runs: pd.DataFrame, frame: pd.DataFrame, config: Mapping[str, Any], names: Methods) -> list[str]:
    """The reproduction report's opening: per method (each of our scores with a paper row), the budget
    it ran at beside the paper's, how far from the paper it is, the readings the fidelity study tried
    and the best of them, and what stays unexplained. Every number comes from the records."""
    rep = report_block(config)
    if frame.empty or runs.empty:
        return []
    subject = subject_of(config, runs, names)
    context = main_context(rep, subject)
    inv_d = {v: k for k, v in dataset_names(config).items()}
    matched = frame.dropna(subset=["ours_mean"])
    matched = matched[matched["context"].isin(["", context])].drop_duplicates(subset=["ours", "dataset"])
    if matched.empty:
        return [NOTHING_TO_COMPARE]
    lines = [f"**Verdict** (the paper trained {paper_budget_text(rep)}):", ""]
    for what in sorted(dict.fromkeys(matched["ours"]), key=lambda w: names.pair_key(*w.split("/", 1))):
        m, s = what.split("/", 1)
        rows = matched[matched["ours"] == what]
        mine = main_runs(runs[runs["method"] == m], rep)
        budget = budget_of(mine, names)
        gaps = [
            f"{r['dataset']} {r['ours_mean']:.1f} vs {r['paper_mean']:.1f} ({signed(r['diff'])})"
            for _, r in rows.iterrows()
        ]
        parts = [f"- **{names.pair_label(m, s)}** at {budget.text()}: " + "; ".join(gaps) + "."]
        readings = _fidelity_readings(runs, config, m, s)
        unexplained = []
        if readings:
            tried = sorted({label for label, _, _ in readings})
            sets = sorted({dataset_label(d) for _, d, _ in readings})
            parts.append(f"Readings tried: {len(tried)} (fidelity study, {', '.join(sets)}).")
        for _, r in rows.iterrows():
            d = inv_d.get(r["dataset"], r["dataset"])
            on_d = [(label, mean) for label, ds, mean in readings if ds == d]
            paper_mean, paper_std = float(r["paper_mean"]), float(r["paper_std"])
            tolerance = paper_std if np.isfinite(paper_std) else 0.0
            if r["within_paper_std"] is True or abs(float(r["diff"])) <= tolerance:
                parts.append(f"{r['dataset']}: reproduces (within the paper's std).")
                continue
            if on_d:
                label, best = max(on_d, key=lambda x: x[1])
                gap = shown_diff(best, paper_mean)
                parts.append(f"Best reading on {r['dataset']}: {label!r} {best:.1f} ({signed(gap)} from the paper).")
                if abs(gap) <= tolerance or gap > 0:
                    parts.append(f"{r['dataset']}: the gap closes under that reading.")
                    continue
            curve = _curve_text(runs, names, rep, m, s, d)
            unexplained.append(f"{r['dataset']} {signed(r['diff'])}" + (f" ({curve})" if curve else ""))
        if unexplained:
            cause = (
                "our budget is below the paper's, so its length and resolution are not ruled out"
                if budget.below_paper(int(rep["paper_epochs"]))
                else "at the paper's budget"
            )
            tried = "every reading tried" if readings else "no reading tried yet"
            parts.append(f"Unexplained after {tried}: {', '.join(unexplained)}; {cause}.")
        lines.append(" ".join(parts))
    return [*lines, ""]


# ----------------------------------------------------------------------------- reproduction report
def _ours_for_paper_row(
    runs: pd.DataFrame, row: Mapping[str, Any], config: Mapping[str, Any], names: Methods
) -> tuple[Stat, str]:
    """Our dataset-level number for one paper row: ``(stat, what)``. A paper row with a context is
    matched by the ``contexts`` tag of the method's runs (at its main variant's loss and k), where
    they have one; otherwise by the method's main variant."""
    rep = report_block(config)
    dmap = dataset_names(config)
    mmap = names.paper_rows()
    inv_d = {v: k for k, v in dmap.items()}
    d = inv_d.get(row["dataset"])
    pm, ps, ctx = row["method"], row["score"], row["context"]
    candidates = [(m, s) for (m, s), (tm, ts) in mmap.items() if tm == pm and (ts == ps or not ts or not ps)]
    if ps:
        candidates = [c for c in candidates if mmap[c][1] in (ps, "")] or candidates
        exact = [c for c in candidates if mmap[c][1] == ps]
        candidates = exact or candidates
    if d is None or not candidates or runs.empty:
        return Stat(), ""
    m, s = candidates[0]
    view = subject_of(config, runs, names, method=m)
    if ctx and view.main_context:
        sel = view.runs(runs, contexts=[ctx])
    else:
        sel = main_runs(runs[runs["method"] == m], rep)
    sel = sel[(sel["dataset"] == d) & (sel["score"] == s)]
    if sel.empty:
        return Stat(), f"{m}/{s}"
    return _lookup(_level(sel, ["dataset"]), dataset=d), f"{m}/{s}"


def reproduction(inputs: ReportInputs) -> Table:
    """Every published number next to ours and the difference (ours − paper, from the shown values)."""
    runs, paper, config = inputs.runs, inputs.paper, inputs.config
    runs = headline(runs)
    names = method_names(config, runs)
    lacking = {m for m, _ in lacking_weights(config, runs, None)}  # methods left out for want of their weights
    needs_weights = {row[0] for (m, _), row in names.paper_rows().items() if m in lacking}
    data, rows = [], []
    for r in paper.to_dict("records"):
        st, what = _ours_for_paper_row(runs, r, config, names)
        pstd = r["auroc_std"] if pd.notna(r["auroc_std"]) else np.nan
        diff = shown_diff(st.mean, r["auroc_mean"])
        within = bool(abs(diff) <= shown(pstd)) if pd.notna(diff) and pd.notna(pstd) else None
        inside = inside_text(r["auroc_mean"], st.lo, st.hi)  # the paper's number against our 95% interval
        data.append(
            {
                **{k: r[k] for k in ("table", "dataset", "method", "family", "context", "score")},
                "paper_mean": r["auroc_mean"],
                "paper_std": pstd,
                "ours": what,
                "ours_mean": st.mean,
                "ours_std": st.std,
                "ours_n": st.n,
                "ours_over": st.over,
                "ours_lo": st.lo,
                "ours_hi": st.hi,
                "diff": diff,
                "within_paper_std": within,
                "paper_inside": {"inside": True, "outside": False}.get(inside),
            }
        )
        note = "not run" if pd.isna(st.mean) else ("n/a" if not what else ("within std" if within else ""))
        note = ", ".join(x for x in (note, f"paper {inside} our CI" if inside else "") if x)
        note = "needs weights (Table 1's notes)" if pd.isna(st.mean) and r["method"] in needs_weights else note
        rows.append(
            [
                r["table"],
                r["dataset"],
                r["method"],
                r["context"] or MISSING,
                r["score"] or MISSING,
                cell(r["auroc_mean"], pstd, 0, 0),
                st.text(interval=bool(report_block(config).get("intervals"))),
                signed(diff),
                note,
            ]
        )
    frame = pd.DataFrame(data)
    matched = frame.dropna(subset=["ours_mean"]) if not frame.empty else frame
    with_std = matched.dropna(subset=["paper_std"]) if not matched.empty else matched
    n_within = int(with_std["within_paper_std"].sum()) if not with_std.empty else 0
    lead = [
        f"**Summary: {len(matched)} of {len(frame)} published numbers have a counterpart in these runs; "
        f"{n_within} of the {len(with_std)} of those with a published std are within it** "
        "(|ours − paper| ≤ paper std, on the shown values)."
        if len(matched)
        else f"**Summary: none of the {len(frame)} published numbers has a counterpart in these runs yet.**"
    ]
    verdict = verdict_lines(inputs.runs, frame, config, names)  # every reading's column, not only headlines
    lead = [
        *(verdict or ([] if len(matched) else [NOTHING_TO_COMPARE])),
        *verdict_uncertainty_lines(runs, frame, paper, config, names),  # inside/outside, the paper's orderings
        *bound_lead(inputs),  # how far each measured budget goes (report.bound)
        *lead,
    ]
    notes = [
        f"{CELL_NOTE} Differences and 'within std' use the shown (rounded) values. A paper number without a std "
        "(zero-shot rows, PANDA's) is printed alone and has no 'within std'.",
        "'paper inside/outside our CI': the published mean against the 95% t-interval of our mean over seeds "
        "(ours_lo, ours_hi in the CSV; none with one seed).",
        *disagreement_notes(paper, paper, each_row_own=True),
    ]
    if len(matched):
        notes.append(
            f"Mean difference {matched['diff'].mean():+.1f}, mean absolute difference "
            f"{matched['diff'].abs().mean():.1f} "
            "AUROC points (ours − paper). Budgets differ unless the paper profile ran: see the compute table."
        )
    return Table(
        "reproduction",
        "Reproduction report: every published AUROC (%) next to ours",
        ["Table", "Dataset", "Method", "Context", "Score", "Paper", "Ours", "Ours − paper", "Note"],
        rows,
        frame,
        notes,
        lead=lead,
    )


def outside_grid_note(runs: pd.DataFrame) -> str | None:
    """The note every table gets when the aggregation holds records outside the profile's grid."""
    if runs.empty or "in_grid" not in runs.columns:
        return None
    outside = runs.loc[~runs["in_grid"].fillna(True).astype(bool), "record"].nunique()
    if not outside:
        return None
    return (
        f"runs.csv holds {outside} run(s) outside this profile's grid (in_grid = False: another profile's, or a "
        "dataset unavailable now); they are included where they fit. Delete a run's directory to drop it."
    )


def score_runtime(inputs: ReportInputs) -> Table:
    """The score-runtime measurements (from ``workflow/scripts/score_runtime.py``) as a table."""
    measured = inputs.measured
    names = method_names()
    rows = []
    for r in measured.to_dict("records"):
        rows.append(
            [
                names.any_score_label(r["score"]),
                r["sweep"],
                str(int(r["n_train"])),
                str(int(r["n_batches"])),
                f"{1000 * r['seconds']:.1f}" if r["seconds"] < 10 else f"{1000 * r['seconds']:,.0f}",
                f"{r['memory_mb']:.1f}" if r["memory_mb"] < 100 else f"{r['memory_mb']:,.0f}",
            ]
        )
    meta = measured.iloc[0] if len(measured) else None
    notes = []
    if meta is not None:
        notes.append(
            f"Synthetic features, d = {int(meta['dim'])}, {int(meta['views'])} test-time views, batches of "
            f"{int(meta['batch_size'])} test images, device {meta['device']}; time = median over "
            f"{int(meta['repeats']) if 'repeats' in meta and pd.notna(meta['repeats']) else '?'} repeat(s) of fitting "
            "(LH: mean and covariance) plus scoring every batch, summed over views; memory = what the score keeps "
            "(NND: views x n x d floats, LH: views x d x d)."
        )
        notes.append("Times under about 1 ms are mostly Python and timer overhead: compare the larger n and batches.")
    return Table(
        "score_runtime",
        "Runtime and memory of the S_NND and S_LH scores",
        ["Score", "Sweep", "n (train)", "Batches", "Time (ms)", "Memory (MB)"],
        rows,
        measured,
        notes,
    )


def bound_lead(inputs: ReportInputs) -> list[str]:
    """The verdict's bound (``report.bound``): one line per measured budget, CON2 as printed against
    content alone and SimCLR, and what no CPU can settle (:mod:`con2.report.bound`)."""
    spec = inputs.report.get("bound") or {}
    if not spec or inputs.runs is None:
        return []
    lines = budget_lines(bound_rows(inputs.runs, inputs.gpu, spec), spec)
    return [f"**How far each budget goes** (the budget_bound table): {' '.join(lines)}"] if lines else []


def build_table(name: str, inputs: ReportInputs) -> Table:
    """The table ``name`` of :data:`~con2.report.artefacts.TABLES` from ``inputs``, with the note on
    records outside the profile's grid where it reads runs."""
    table = TABLES[name].builder()(inputs)
    if inputs.runs is not None and (note := outside_grid_note(inputs.runs)):
        table.notes.append(note)
    return table
