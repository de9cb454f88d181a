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
from con2.paper_names import dataset_label
from con2.report.artefacts import ReportInputs
from con2.report.curve_points import curve_points
from con2.report.format import CELL_NOTE, MISSING, Table, cell
from con2.report.methods import Methods
from con2.report.select import ordered_datasets, report_block

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
