"""What every table builder selects from the tidy run frame (``runs.csv``, :mod:`con2.aggregate.runs_csv`).

The table builders (:mod:`~con2.report.summary`, :mod:`~con2.report.ablations`,
:mod:`~con2.report.per_class`, :mod:`~con2.report.silhouette`, :mod:`~con2.report.compute`,
:mod:`~con2.report.reproduction`, and the comparisons and learning curves) share these helpers.
Which runs feed a table is decided from what the records say (method, score, and the tags of the
method's card: contexts, number of contexts, loss), not from variant names, so a renamed variant
still lands in the right column. Each method's "main" variant (``report.main_variants``, default
``default``) is the one compared across methods. No method is named here: labels and the paper's
rows come from the methods' specs and cards (:mod:`con2.report.methods`, derived once per build as the
inputs' ``names`` and ``subject``: :class:`~con2.report.artefacts.ReportInputs`), and the tables about one
method (its scores side by side, contexts, loss terms, number of contexts, silhouette) read the
runs of ``report.subject``, the method the paper is about.

``report`` keys used by the tables (all optional)::

    subject: con2                   # the method the paper is about (its tables are empty without it)
    medical: [breastmnist, ...]     # datasets of the medical tables (Table 1, alt contexts)
    natural: [cifar10, ...]         # datasets of the natural-image tables
    main_variants: {con2: invert}
    main_context: invert            # the subject's main context (default: its main variant's contexts tag)
    contexts: [invert, flip, equalize]  # columns of the context tables (default: the contexts its runs have)
    paper_epochs: 2048              # for the compute table's extrapolation

Every cell says what it averages (``[c×s]``: c normal classes × s seeds, see
:data:`~con2.report.format.CELL_NOTE`). Tables that set cells of one run family side by side (the
context, multiple-context, loss and silhouette tables) compare like with like
(:func:`like_with_like`): per dataset they use only the normal classes that every column ran.
Differences are taken from the shown, rounded values. Only headline scores are tabulated (``nnd``,
not ``nnd@<reading>``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.runs_csv import dataset_level, summarize
from con2.grid.experiments import as_list
from con2.paper_names import dataset_label
from con2.report.artefacts import MISSING_FILE, ReportInputs
from con2.report.format import cell, with_interval
from con2.report.methods import Methods, Subject, lacking_weights, selected_names

ReportCfg = Mapping[str, Any]


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
    """The datasets the profile's grid runs: those its ``experiments`` name (``only_datasets`` applied, and
    those ``only_classes``, ``only_methods`` and ``only_seeds`` keep no run of left out: :func:`selected_names`)
    and every dataset of the data status (the grid's data, checked by the workflow)."""
    only = set(as_list(config.get("only_datasets")))
    named = {d for exp in (config.get("experiments") or {}).values() for d in as_list((exp or {}).get("datasets"))}
    kept = selected_names(config)
    if kept is not None:
        named &= {d for d, _, _ in kept}
    checked = {str(m.get("dataset", key.split("/")[0])) for key, m in (status or {}).items()}
    return {d for d in named if not only or d in only} | checked


def why_skipped(marker: Mapping[str, Any]) -> str:
    """The data layer's reason without its own fix list ("pneumoniamnist.npz not found in ...")."""
    reason = " ".join(str(marker.get("reason", "its data were not found")).split())
    why = reason.split(" Fix: ")[0].removeprefix(f"{marker.get('dataset', '')}: ").rstrip(".")
    return why + (
        " (download: false in the profile)" if "(download: false" in reason and "(download" not in why else ""
    )


def skipped_data(status: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Mapping[str, Any]]:
    """``{dataset: marker}`` of the datasets the data status says were skipped (the first size's marker)."""
    skipped: dict[str, Mapping[str, Any]] = {}
    for key, marker in (status or {}).items():
        if marker.get("status") == "skipped":
            skipped.setdefault(str(marker.get("dataset", key.split("/")[0])), marker)
    return skipped


def skipped_note(dataset: str) -> str:
    """A table's one line on a dataset skipped for want of data; the fix is in the ``missing`` table."""
    return f"{dataset_label(dataset)}: skipped, its data are missing (how to get them: {MISSING_FILE})."


def stale_data_notes(present: list[str], status: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """One line per dataset of a table that has runs but whose data the status says are missing now
    (a rebuild under another ``data_dir``): the numbers are the records already on disk; runs without
    a record were not trained, and the fix is in the ``missing`` table."""
    skipped = skipped_data(status)
    return [
        f"{dataset_label(d)}: skipped now, its data are missing (how to get them: {MISSING_FILE}); the numbers are "
        "its runs already on disk, runs without a record were not trained."
        for d in present
        if d in skipped
    ]


def missing_weights_notes(
    config: Mapping[str, Any], runs: pd.DataFrame, datasets: list[str] | None, names: Methods
) -> list[str]:
    """One short line per (method, variant) of the profile's experiments on ``datasets`` (``None``: all)
    that has no runs there because the pretrained weights its method needs are missing
    (:func:`~con2.report.methods.lacking_weights`, torch-free; labelled by ``names``, the caller's
    :class:`~con2.report.methods.Methods`); the fix is in the ``missing`` table."""
    notes = []
    for lack in lacking_weights(config, runs, datasets, names).values():
        what = "are missing" if lack.missing else "were refused"
        who = f"{lack.label} ({lack.method}/{lack.variant})"
        notes.append(f"{who}: not run, its pretrained weights {what} (how to get them: {MISSING_FILE}).")
    return notes


def absent_notes(
    absent: list[str], config: Mapping[str, Any], status: Mapping[str, Mapping[str, Any]] | None
) -> list[str]:
    """Why each dataset of a table has no run: not in the profile, or in it but skipped for want of
    data (one line pointing to :data:`~con2.report.artefacts.MISSING_FILE`, which says why and how to
    get them, from the data status the workflow wrote), or in it with no record yet."""
    skipped = skipped_data(status)
    in_profile = profile_datasets(config, status)
    notes = []
    outside = [dataset_label(d) for d in absent if d not in in_profile]
    if outside:
        why = "no experiment of the profile names them"
        given = [
            k
            for k in ("only_datasets", "only_classes", "only_methods", "only_seeds")
            if config.get(k) not in (None, "", [])
        ]
        why += f", or {', '.join(given)} leave them out" if given else ""
        notes.append(f"Not in this profile: {', '.join(outside)} ({why}).")
    notes += [skipped_note(d) for d in absent if d in skipped]
    pending = [dataset_label(d) for d in absent if d in in_profile and d not in skipped]
    if pending:
        notes.append(
            f"In this profile, no run of a main variant here yet: {', '.join(pending)} (the workflow's last lines "
            "say what is missing)."
        )
    return notes


def class_sort_key(c: str) -> tuple[int, Any]:
    """Normal classes in numeric order where they are numbers, then by name."""
    return (0, int(c)) if str(c).isdigit() else (1, str(c))


def classes_text(classes: list[str]) -> str:
    classes = sorted(classes, key=class_sort_key)
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
                f"{dataset_label(d)}: each cell averages normal class(es) {classes_text(list(common))} only, the ones "
                f"every {column} ran ({len(every)} classes ran in some; per_class_{d}, where it exists, "
                "shows each class)."
            )
        kept.append(g[g["normal_class"].isin(common)])
    return pd.concat(kept), notes


def level_stats(runs: pd.DataFrame, keys: list[str], value: str = "auroc") -> pd.DataFrame:
    """Dataset-level mean/std (classes collapsed) keyed by ``keys`` (which must include dataset)."""
    return dataset_level(
        summarize(runs, value, keys=[*keys, "normal_class"] if "normal_class" not in keys else keys), keys
    )


@dataclass(frozen=True)
class Stat:
    """One cell: mean, std, n (seeds or classes, as :func:`~con2.aggregate.runs_csv.dataset_level`) and
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


def lookup_stat(level: pd.DataFrame, **match: Any) -> Stat:
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


def with_best(inputs: ReportInputs) -> ReportInputs:
    """``inputs`` with the subject's ``report.best_variant`` (CON2 (Best): the context chosen per normal
    class, ``contexts: [best]``) shown as a method of its own, ``<subject>/<variant>`` labelled
    ``<label> (Best)``, with no paper row (the paper prints CON2 (Best) only in a figure), and the
    config whose ``main_variants`` names it (its method names derived from those runs, once); ``inputs``
    itself without ``best_variant`` or such runs."""
    runs, config = inputs.frame("runs"), inputs.config
    rep = config.get("report") or {}
    subject, variant = rep.get("subject"), rep.get("best_variant")
    if not subject or not variant or runs.empty:
        return inputs
    hit = (runs["method"] == subject) & (runs["variant"] == variant)
    if not hit.any():
        return inputs
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
    return dataclasses.replace(
        inputs, runs=pd.concat([runs, best], ignore_index=True), config={**config, "report": report}
    )
