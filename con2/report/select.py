"""What every table builder selects from the tidy run frame (``runs.csv``, :mod:`con2.aggregate.runs_csv`).

The table builders (:mod:`con2.builders`: the method tables, ablations, per class, silhouette, compute,
reproduction, the comparisons and learning curves) share these helpers.
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
from con2.paper_names import dataset_label
from con2.report.artefacts import ReportInputs
from con2.report.format import cell, with_interval
from con2.report.methods import Subject

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
    lo: float = np.nan  # the 95% interval of the mean over seeds (con2.maths.stats.seed_mean_interval)
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

    def columns(self, prefix: str = "ours_", interval: bool = False) -> dict[str, Any]:
        """The cell's columns in a table's frame (its CSV): ``<prefix>mean``, ``<prefix>std``, ``<prefix>n``,
        ``<prefix>over`` and, with ``interval``, ``<prefix>lo``, ``<prefix>hi`` (``ours_...`` where a
        published number sits beside ours; a cell with no run: NaN, 0 and "")."""
        out = {f"{prefix}mean": self.mean, f"{prefix}std": self.std, f"{prefix}n": self.n, f"{prefix}over": self.over}
        if interval:
            out.update({f"{prefix}lo": self.lo, f"{prefix}hi": self.hi})
        return out


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


def reading_cell(runs: pd.DataFrame, dataset: str, row: Mapping[str, Any]) -> tuple[float, float, int, int]:
    """``(mean, std, seeds, classes)`` of one row on one dataset: per-class seed means, then their mean.

    The std is over seeds for one normal class, over the per-class means for several.
    """
    sel = runs[
        (runs["dataset"] == dataset)
        & (runs["method"] == row["method"])
        & (runs["variant"] == row["variant"])
        & (runs["score"] == row["score"])
    ]
    if sel.empty:
        return np.nan, np.nan, 0, 0
    per_class = sel.groupby("normal_class")["auroc"].agg(["mean", "std", "count"])
    if len(per_class) == 1:
        c = per_class.iloc[0]
        return float(c["mean"]), float(c["std"]), int(c["count"]), 1
    return (
        float(per_class["mean"].mean()),
        float(per_class["mean"].std()),
        int(per_class["count"].min()),
        len(per_class),
    )
