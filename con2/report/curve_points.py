"""The learning curves as points: one row per (run, score, epoch), read from the records' curves.

Every run with ``score_at`` carries its learning curve in its record (``curve``: the AUROC of every
score column at each scored epoch, :mod:`con2.run.curve`); the aggregation copies the curves of the
records ``runs.csv`` lists into its scores bundle (:func:`con2.aggregate.bundle.bundle_bytes`), where
these functions read them. The learning-curve table, the length study's tables, the reproduction
verdict and the curve figures share them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from con2.aggregate.score_files import ScoresSource
from con2.report.methods import Methods
from con2.report.select import headline, main_runs

POINT_KEYS = ["dataset", "normal_class", "method", "variant", "score", "seed", "epoch"]


def primary_score(names: Methods, method: str, scores: list[str]) -> str:
    """The method's first headline score (its spec's order), else the first of ``scores`` alphabetically."""
    order = [s for s in names.info(method).score_order if s in scores]
    return order[0] if order else sorted(scores)[0]


def curve_points(
    runs: pd.DataFrame, names: Methods, rep: Mapping[str, Any], scores: ScoresSource
) -> tuple[pd.DataFrame, list[str]]:
    """One row per (run, epoch) of each method's main variant and headline score, from the records'
    curves (as ``scores`` holds them: a table's, the aggregation's bundle); and the records that
    could not be read (missing or invalid)."""
    return curve_rows(main_runs(headline(runs), rep) if not runs.empty else runs, names, scores)


def curve_rows(
    sel: pd.DataFrame,
    names: Methods,
    scores: ScoresSource,
    pick: Callable[[str, list[str]], list[str]] | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """One row per (run, score, epoch) of the runs of ``sel``, from the records' curves; and the records that
    could not be read. ``pick(method, scores)``: the scores drawn per run (default: its method's first)."""
    rows, unreadable = [], []
    for (method, record), grp in sel.groupby(["method", "record"], sort=True):
        present = list(grp["score"])
        picked = pick(method, present) if pick else [primary_score(names, method, present)]
        curve = scores.curve(str(record))
        if curve is None:
            unreadable.append(str(record))
            continue
        views = curve.get("views")
        for point, score in ((p, s) for s in picked for p in curve.get("points", [])):
            if score in point["auroc"]:
                first = grp.iloc[0]
                rows.append(
                    {
                        **{k: first[k] for k in ("dataset", "normal_class", "method", "variant", "seed")},
                        "score": score,
                        "epoch": int(point["epoch"]),
                        "auroc": float(point["auroc"][score]),
                        "views": "own test views" if views is None else f"{views} views",
                    }
                )
    return pd.DataFrame(rows, columns=[*POINT_KEYS, "auroc", "views"]), unreadable


def curve_frame(table: pd.DataFrame, dataset: str) -> dict[str, pd.DataFrame]:
    """The learning-curve table's rows of ``dataset``, one frame per series label, sorted by epoch."""
    sub = table[table["dataset"] == dataset] if len(table) else table
    return {label: g.sort_values("epoch") for label, g in sub.groupby("label", sort=False)} if len(sub) else {}
