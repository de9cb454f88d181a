"""The fidelity table: every reading of the paper side by side, each against the current default.

Each row of ``report.fidelity.rows`` names one setting: a method, the variant it was trained as,
and the score column it is read by (a headline score such as ``nnd``, or another reading of the
same runs such as ``nnd@encoder/original``, which needs no retraining). For every dataset of
``report.fidelity.datasets`` a cell is the mean ± std over the seeds of that (method, variant,
column) on the dataset's normal class(es); Δ is the difference to the reference row, computed
from the rounded values shown; the paper's number for the row's method sits beside it::

    report:
      fidelity:
        datasets: [breastmnist, digits]
        reference: as printed               # the label of the row the others are compared with
        rows:
          - {label: as printed, method: con2, variant: invert, score: nnd, change: "the current default"}
          - {label: x^C vs training set as printed, method: con2, variant: invert, score: nnd@encoder/original}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.cards import base_score
from con2.paper_names import dataset_label, dataset_names
from con2.report.artefacts import ReportInputs
from con2.report.format import Table, mean_std, signed
from con2.report.methods import Methods
from con2.report.notes import no_runs
from con2.report.paper import disagreement_notes, paper_value
from con2.report.select import reading_cell


def _target(names: Methods, row: Mapping[str, Any]) -> tuple[str, str] | None:
    """The paper's row (method, score) of a fidelity row's method and base score, if any."""
    return names.paper_row(row["method"], base_score(row["score"]))


def paper_row_value(
    paper: pd.DataFrame, config: Mapping[str, Any], names: Methods, context: str, dataset: str, row: Mapping[str, Any]
) -> tuple[float, float] | None:
    """The paper's number for the row's method and base score on ``dataset`` (Table 1, the subject's
    main context where the paper's row has a score), if any."""
    target = _target(names, row)
    if target is None:
        return None
    dmap = dataset_names(config)
    pm, ps = target
    return paper_value(paper, "table1_medical", dmap.get(dataset, dataset), pm, ps, context if ps else "")


def fidelity(inputs: ReportInputs) -> Table:
    """Rows: ``report.fidelity.rows``; per dataset: ours (mean ± std), Δ to the reference row, the paper's."""
    return fidelity_table(
        inputs, "fidelity", "Fidelity: each reading of the paper against the current default, AUROC (%)"
    )


def fidelity_native(inputs: ReportInputs) -> Table:
    """The native-resolution study (``report.fidelity_native``): 64 px from the native file vs upsampled."""
    return fidelity_table(
        inputs,
        "fidelity_native",
        "Native-resolution study: 64 px from the native 64 px file against 28 px upsampled, AUROC (%)",
    )


def fidelity_length(inputs: ReportInputs) -> Table:
    """The length study (``report.fidelity_length``): 128 epochs at 28 px, against the default's 10."""
    return fidelity_table(inputs, "fidelity_length", "Length study: 128 epochs at 28 px, AUROC (%)")


def fidelity_table(inputs: ReportInputs, name: str, title: str) -> Table:
    """A fidelity-family table from ``report.<name>`` (datasets, reference, rows); see the module docstring."""
    runs, paper, config = inputs.frame("runs"), inputs.frame("paper"), inputs.config
    spec = (config.get("report") or {}).get(name) or {}
    rows_cfg: list[Mapping[str, Any]] = list(spec.get("rows") or [])
    datasets = [d for d in spec.get("datasets") or [] if d in set(runs["dataset"])] if not runs.empty else []
    reference = spec.get("reference") or (rows_cfg[0]["label"] if rows_cfg else None)
    ref_row = next((r for r in rows_cfg if r["label"] == reference), None)
    names = inputs.names
    main = (config.get("report") or {}).get("main_context")
    context = str(main or inputs.subject.main_context or "")

    def _paper(d: str, r: Mapping[str, Any]) -> tuple[float, float] | None:
        return paper_row_value(paper, config, names, context, d, r)

    paper_ds = [d for d in datasets if any(_paper(d, r) for r in rows_cfg)]

    columns = ["Setting", "Change from the default"]
    for d in datasets:
        columns += [dataset_label(d), "Δ"]
    columns += [f"Paper {dataset_label(d)}" for d in paper_ds]

    ref_shown = {d: reading_cell(runs, d, ref_row)[0] if ref_row else np.nan for d in datasets}
    body, data, counts = [], [], set()
    for row in rows_cfg:
        cells = [str(row["label"]), str(row.get("change", ""))]
        for d in datasets:
            mean, std, n, classes = reading_cell(runs, d, row)
            counts.add((d, n, classes))
            shown = round(mean, 1) if not np.isnan(mean) else np.nan
            diff = shown - round(ref_shown[d], 1) if row is not ref_row and not np.isnan(ref_shown[d]) else np.nan
            cells += [
                mean_std(mean, std) + (f" (n={n})" if 0 < n < _expected(runs, d) else ""),
                signed(diff) if row is not ref_row else "ref.",
            ]
            pv = _paper(d, row)
            data.append(
                {
                    "setting": row["label"],
                    "method": row["method"],
                    "variant": row["variant"],
                    "score": row["score"],
                    "dataset": d,
                    "ours_mean": mean,
                    "ours_std": std,
                    "seeds": n,
                    "classes": classes,
                    "diff_to_reference": diff,
                    "paper_mean": pv[0] if pv else np.nan,
                    "paper_std": pv[1] if pv else np.nan,
                }
            )
        for d in paper_ds:
            cells.append(mean_std(*(_paper(d, row) or (np.nan, np.nan))))
        body.append(cells)

    notes = [
        "AUROC (%), mean ± std over training seeds; Δ: difference to the reference row from the rounded values shown."
    ]
    per_dataset: dict[str, set[tuple[int, int]]] = {}
    for d, n, classes in sorted(counts):
        if n:
            per_dataset.setdefault(d, set()).add((n, classes))
    for d, seen in per_dataset.items():
        desc = ", ".join(f"{n} seeds x {c} normal class{'es' if c > 1 else ''}" for n, c in sorted(seen))
        notes.append(f"{dataset_label(d)}: {desc} per cell.")
    if reference:
        notes.append(f"Reference row: {reference!r}" + (" (the current default)." if name == "fidelity" else "."))
    missing = [r["label"] for r in rows_cfg if all(reading_cell(runs, d, r)[2] == 0 for d in datasets)]
    if missing:
        notes.append(f"Not run yet: {', '.join(missing)}.")
    dmap = dataset_names(config)
    in_column = {(dmap.get(d, d), *target) for d in paper_ds for r in rows_cfg if (target := _target(names, r))}
    table1 = paper[paper["table"] == "table1_medical"]
    keys = table1[["dataset", "method", "score"]].itertuples(index=False, name=None)
    notes += disagreement_notes(paper, table1[[key in in_column for key in keys]])  # the paper column is Table 1's
    frame = pd.DataFrame(
        data,
        columns=[
            "setting",
            "method",
            "variant",
            "score",
            "dataset",
            "ours_mean",
            "ours_std",
            "seeds",
            "classes",
            "diff_to_reference",
            "paper_mean",
            "paper_std",
        ],
    )
    return Table(name, title, columns, body if datasets else [], frame, notes, empty=no_runs(inputs, name))


def _expected(runs: pd.DataFrame, dataset: str) -> int:
    """The most seeds any run group of ``dataset`` has (cells with fewer are marked)."""
    sel = runs[runs["dataset"] == dataset]
    if sel.empty:
        return 0
    return int(sel.groupby(["normal_class", "method", "variant", "score"])["seed"].nunique().max())
