"""The learning-curve table: each method's headline AUROC after each scored epoch, over seeds.

Every run with ``score_at`` carries its learning curve in its record (``curve``: the AUROC of every
score column at each scored epoch, :mod:`con2.run.curve`). The aggregation copies the curves of
the records ``runs.csv`` lists into its scores bundle (:func:`con2.aggregate.bundle.bundle_bytes`), an
input of this table's rule, which reads them there; it keeps each method's main variant
(``report.main_variants``) and its headline score (the first of the method's scores: ``nnd`` for
CON2, ``knn`` for SimCLR), and averages like every other table: per normal class over seeds, then
over classes. The figure ``learning_curve_<dataset>`` draws its CSV.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from con2.aggregate.runs_csv import dataset_level, summarize
from con2.aggregate.score_files import ScoresSource
from con2.paper_names import dataset_label
from con2.report.artefacts import ReportInputs
from con2.report.format import CELL_NOTE, MISSING, Table, cell
from con2.report.methods import Methods
from con2.report.select import headline, main_runs, ordered_datasets, report_block

POINT_KEYS = ["dataset", "normal_class", "method", "variant", "score", "seed", "epoch"]
COLUMNS = [
    "dataset",
    "method",
    "variant",
    "score",
    "label",
    "epoch",
    "mean",
    "std",
    "n",
    "n_classes",
    "seeds_min",
    "seeds_max",
    "views",
]


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


def learning_curve(inputs: ReportInputs) -> Table:
    """Rows: dataset x method (main variant, headline score); columns: the scored epochs."""
    rep = report_block(inputs.config)
    runs, names = inputs.frame("runs"), inputs.names
    points, unreadable = curve_points(runs, names, rep, inputs.score_source())
    table = curve_table(
        "learning_curve",
        "Learning curves: AUROC (%) after each scored epoch",
        points,
        rep,
        names,
        lambda m, v, s: names.pair_label(m, s) if s else names.label(m),
        unreadable,
    )
    table.notes.insert(
        0,
        "AUROC (%) of each method's main variant and headline score after each scored epoch (config score_at), "
        f"mean ± std; {CELL_NOTE}",
    )
    if not table.rows:
        table.notes.append("No run of this profile carries a learning curve (set score_at in the profile's run block).")
    return table


def curve_table(
    name: str,
    title: str,
    points: pd.DataFrame,
    rep: Mapping[str, Any],
    names: Methods,
    label_of: Callable[[str, str, str], str],
    unreadable: list[str],
) -> Table:
    """Rows: dataset x (method, variant, score) of ``points`` (:func:`curve_rows`), labelled by ``label_of``
    (``label_of(method, variant, "")`` names a series in the notes); columns: the scored epochs; each cell
    the mean over classes of the seed means (:data:`CELL_NOTE`)."""
    keys = ["dataset", "method", "variant", "score", "epoch"]
    level = dataset_level(summarize(points, "auroc", [*keys[:-1], "normal_class", "epoch"]), keys)
    views = points.groupby(keys[:-1])["views"].agg(lambda v: ", ".join(sorted(set(v)))) if len(points) else None
    datasets = ordered_datasets(list(dict.fromkeys(level["dataset"])), rep["medical"], rep["natural"])
    epochs = sorted({int(e) for e in level["epoch"]})
    body, data = [], []
    for d in datasets:
        sub = level[level["dataset"] == d]
        triples = sorted(
            dict.fromkeys(zip(sub["method"], sub["variant"], sub["score"])),
            key=lambda t: (names.pair_key(t[0], t[2]), t[1]),
        )
        for m, v, s in triples:
            label = label_of(m, v, s)
            cells = []
            for e in epochs:
                hit = sub[(sub["method"] == m) & (sub["variant"] == v) & (sub["score"] == s) & (sub["epoch"] == e)]
                if hit.empty:
                    cells.append(MISSING)
                    continue
                r = hit.iloc[0]
                cells.append(cell(r["mean"], r["std"], int(r["n_classes"]), int(r["seeds_min"]), int(r["seeds_max"])))
                data.append(
                    {
                        **{k: r[k] for k in ("dataset", "method", "variant", "score")},
                        "label": label,
                        "epoch": e,
                        **{k: r[k] for k in ("mean", "std", "n", "n_classes", "seeds_min", "seeds_max")},
                        "views": views.get((d, m, v, s), "") if views is not None else "",
                    }
                )
            body.append([dataset_label(d), label, *cells])
    notes = []
    if views is not None and len(views):
        notes.append(
            "Test views of the curve points: "
            + "; ".join(f"{label_of(m, v, '')} on {dataset_label(d)}: {w}" for (d, m, v, _), w in views.items())
            + " (the final column of the other tables uses the run's own test views)."
        )
    if unreadable:
        notes.append(f"{len(unreadable)} record(s) listed in runs.csv could not be read: {', '.join(unreadable[:3])}.")
    frame = pd.DataFrame(data, columns=COLUMNS)
    header = ["Dataset", "Method", *[f"epoch {e}" for e in epochs]]
    return Table(name, title, header, body, frame, notes)


def curve_frame(table: pd.DataFrame, dataset: str) -> dict[str, pd.DataFrame]:
    """The learning-curve table's rows of ``dataset``, one frame per series label, sorted by epoch."""
    sub = table[table["dataset"] == dataset] if len(table) else table
    return {label: g.sort_values("epoch") for label, g in sub.groupby("label", sort=False)} if len(sub) else {}
