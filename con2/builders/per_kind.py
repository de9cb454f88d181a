"""AUROC per anomaly kind of one dataset (the MVTec convention; one table per dataset whose records keep one).

A declared ``mvtec`` tree (``test/<anomaly kind>/``, :mod:`con2.data.own_folder`) gives every record an AUROC per
anomaly kind of every score column (``metrics.auroc_by_kind``: over the normal test images and that kind's
anomalies alone), which the aggregation keeps in ``runs.csv``'s ``auroc_by_kind``
(:func:`con2.aggregate.runs_csv.by_kind_text`). This table sets them side by side, one row per main variant's
headline score (the floors first), one column per kind and ``all`` (the AUROC over every test image, of the same
runs), so a user sees which defects a method misses.
"""

from __future__ import annotations

import pandas as pd

from con2.aggregate.runs_csv import dataset_level, kind_aurocs, summarize
from con2.paper_names import dataset_label
from con2.report.artefacts import ReportInputs
from con2.report.format import CELL_NOTE, MISSING, Table, cell
from con2.report.notes import absent_notes
from con2.report.select import headline, main_runs, report_block, with_best

ALL = "all"  # the column of the AUROC over every test image (the run's own AUROC)
KIND_NAMED_ALL = "all (kind)"  # an anomaly kind whose folder is named "all", beside the column ALL
KIND_KEYS = ["normal_class", "method", "score", "kind"]


def kind_rows(sel: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, score, kind) of the runs of ``sel`` that keep per-kind AUROCs: ``normal_class``,
    ``method``, ``score``, ``seed``, ``kind`` and ``auroc``, with kind :data:`ALL` for the run's own AUROC (the
    rows without per-kind AUROCs are left out, so ``all`` averages the same runs as the kinds; a kind named
    ``all`` is :data:`KIND_NAMED_ALL`)."""
    rows = []
    columns = ["normal_class", "method", "score", "seed", "kind", "auroc"]
    if sel.empty or "auroc_by_kind" not in sel.columns:
        return pd.DataFrame(columns=columns)
    for r in sel.itertuples(index=False):
        kinds = kind_aurocs(r.auroc_by_kind)
        if not kinds:
            continue
        key = (str(r.normal_class), str(r.method), str(r.score), int(r.seed))
        rows += [(*key, KIND_NAMED_ALL if kind == ALL else kind, value) for kind, value in kinds.items()]
        rows.append((*key, ALL, float(r.auroc)))
    return pd.DataFrame(rows, columns=columns)


def kind_order(kinds: pd.Series) -> list[str]:
    """The table's columns: the anomaly kinds by name, then :data:`ALL`."""
    return [*sorted({str(k) for k in kinds} - {ALL}), ALL]


def kind_cells(level: pd.DataFrame) -> dict[tuple[str, str, str], str]:
    """``{(method, score, kind): cell}`` of :func:`~con2.aggregate.runs_csv.dataset_level`'s frame: the mean of
    the normal classes' seed means, ± over seeds (one class) or class means (several), and ``[c×s]``."""
    return {
        (str(r.method), str(r.score), str(r.kind)): cell(
            r.mean, r.std, int(r.n_classes), int(r.seeds_min), int(r.seeds_max)
        )
        for r in level.itertuples(index=False)
    }


def empty_notes(dataset: str, sel: pd.DataFrame, inputs: ReportInputs) -> list[str]:
    """Why the table of ``dataset`` has no row: no run of a main variant
    (:func:`~con2.report.notes.absent_notes`: not in the profile, skipped for want of data, not run yet), or
    runs whose records keep no AUROC per anomaly kind."""
    if sel.empty:
        return absent_notes([dataset], inputs.config, inputs.status)
    return [
        f"No record of {dataset_label(dataset)} keeps an AUROC per anomaly kind: only a folder declared with the "
        "mvtec layout (test/<anomaly kind>/) gives them (docs/own_data.md)."
    ]


def per_kind(inputs: ReportInputs) -> Table:
    """AUROC (%) per anomaly kind of one dataset: a row per main variant's headline score (the floors first,
    CON2 (Best) as a method of its own where ``report.best_variant`` names it), a column per anomaly kind and
    ``all``; each cell the mean over seeds ± their std where there are several, with ``[c×s]``."""
    dataset = inputs.dataset
    inputs = with_best(inputs)
    runs, names = headline(inputs.frame("runs")), inputs.names
    rep = report_block(inputs.config)
    sel = main_runs(runs[runs["dataset"] == dataset], rep) if not runs.empty else runs
    long = kind_rows(sel)
    summ = summarize(long, keys=KIND_KEYS)
    level = dataset_level(summ, keys=["method", "score", "kind"])
    kinds = kind_order(level["kind"]) if not level.empty else []
    pairs = sorted(dict.fromkeys(zip(level["method"], level["score"])), key=lambda p: names.pair_key(*p))
    cells = kind_cells(level)
    rows = [[names.pair_label(m, s), *(cells.get((m, s, k), MISSING) for k in kinds)] for m, s in pairs]
    frame = level.rename(columns={"mean": "auroc_mean", "std": "auroc_std"})
    frame = frame[["method", "score", "kind", "auroc_mean", "auroc_std", "n_classes", "seeds_min", "seeds_max"]]
    frame.insert(0, "dataset", dataset)
    frame["label"] = [names.pair_label(m, s) for m, s in zip(frame["method"], frame["score"])]
    frame["series"] = [pairs.index((m, s)) for m, s in zip(frame["method"], frame["score"])]  # the rows' order
    frame = frame.sort_values(["series", "kind"], key=lambda c: c.map(kinds.index) if c.name == "kind" else c)
    notes = [
        "Each anomaly kind's AUROC is over the normal test images and that kind's anomalies alone (the MVTec "
        f"convention: a low one is a defect the method misses); {ALL}: over every test image, of the same runs.",
        CELL_NOTE,
    ]
    return Table(
        f"per_kind_{dataset}",
        f"{dataset_label(dataset)}: AUROC (%) per anomaly kind",
        ["Method", *kinds],
        rows,
        frame.reset_index(drop=True),
        notes if rows else empty_notes(dataset, sel, inputs),
        empty="(no runs)" if sel.empty else "(no AUROC per anomaly kind)",
    )
