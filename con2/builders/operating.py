"""The ``operating_points`` table (issue 35): what a threshold buys beyond AUROC, per dataset and method.

Computed at aggregation time from each run's ``scores.csv`` (:mod:`con2.maths.operating`), so a record
written before this table existed gets its operating points without retraining or re-scoring; the
threshold set on the validation normals needs their scores (``validation_scores.csv``, written by runs
since issue 35 where the dataset has a validation split; an older run gets them by re-scoring). One row
per dataset and method (each method's main variant and headline score, the floors first); each cell
is the mean ± std over the runs (seeds, and normal classes where several), the CSV keeps every run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.score_files import ScoresSource, expected_of_row, scores_file
from con2.maths.operating import operating_points as points_of
from con2.maths.stats import mean_interval
from con2.paper_names import dataset_label
from con2.report.artefacts import ReportInputs
from con2.report.format import MISSING, Table, classes_by_seeds
from con2.report.notes import no_runs
from con2.report.select import headline, main_runs, ordered_datasets, report_block

RUN_COLUMNS = ["dataset", "normal_class", "method", "variant", "score", "seed", "record"]


def run_points(row: pd.Series | dict[str, Any], scores: ScoresSource) -> dict[str, Any]:
    """One run's operating points from its ``scores.csv`` (``problem`` says why not): AP with its
    bootstrap interval, the test threshold for 95% specificity and the rates it gives."""
    got = scores.test(row["record"], expected_of_row(row, str(row["score"])))
    if got.frame is None:
        why = got.problem if got.found else "no scores.csv beside the record"
        return {"problem": f"{scores_file(row['record'])}: {why}" if got.found else why}
    frame = got.frame
    labels = frame["label"].to_numpy()
    if len(np.unique(labels)) != 2:
        return {"problem": "the test set lacks normals or anomalies"}
    validation, no_validation = scores.validation(row["record"], str(row["score"]), row.get("n_val"))
    p = points_of(labels, frame[str(row["score"])].to_numpy(dtype=np.float64), validation)
    ap, at, fpr, val = p["ap"], p["at_specificity"], p["fpr_at_tpr"], p["from_validation"] or {}
    return {
        "problem": "",
        "ap": ap["ap"],
        "ap_lo": ap["lo"],
        "ap_hi": ap["hi"],
        "sensitivity_at_95": at["sensitivity"],
        "specificity_at_95": at["specificity"],
        "threshold_at_95": at["threshold"],
        "fpr_at_95_tpr": fpr["fpr"],
        "fpr_at_95_tpr_lo": fpr["fpr_lo"],
        "fpr_at_95_tpr_hi": fpr["fpr_hi"],
        **{f"val_{k}": val.get(k, np.nan) for k in VAL_KEYS},
        "val_problem": no_validation,
    }


VAL_KEYS = (
    "threshold",
    "sensitivity",
    "sensitivity_lo",
    "sensitivity_hi",
    "specificity",
    "specificity_lo",
    "specificity_hi",
)


def operating_frame(runs: pd.DataFrame, config: Mapping[str, Any], scores: ScoresSource) -> pd.DataFrame:
    """Every main run's operating points (one row per run and headline score), from ``scores``."""
    main = main_runs(headline(runs), report_block(config))
    rows = [{**{c: r[c] for c in RUN_COLUMNS}, **run_points(r, scores)} for _, r in main.iterrows()]
    return pd.DataFrame(rows, columns=[*RUN_COLUMNS, "problem"] if not rows else None)


def _cell(values: pd.Series) -> str:
    v = values.dropna().to_numpy(dtype=float)
    if not v.size:
        return MISSING
    return f"{v.mean():.1f} ± {v.std(ddof=1):.1f}" if v.size > 1 else f"{v[0]:.1f}"


def _rate_cell(group: pd.DataFrame, name: str) -> str:
    """A rate at the validation threshold: one run, the value and its exact (Clopper-Pearson) 95%
    interval; several, mean ± std; no run with validation scores, the missing mark."""
    g = group[np.isfinite(group[f"val_{name}"].to_numpy(dtype=float))]
    if g.empty:
        return MISSING
    if len(g) == 1:
        r = g.iloc[0]
        return f"{r[f'val_{name}']:.1f} [{r[f'val_{name}_lo']:.1f}, {r[f'val_{name}_hi']:.1f}]"
    return _cell(g[f"val_{name}"])


def _fpr_cell(group: pd.DataFrame) -> str:
    """FPR at 95% TPR: one run, the value and its exact 95% interval; several, mean ± std."""
    if len(group) == 1:
        r = group.iloc[0]
        return f"{r['fpr_at_95_tpr']:.1f} [{r['fpr_at_95_tpr_lo']:.1f}, {r['fpr_at_95_tpr_hi']:.1f}]"
    return _cell(group["fpr_at_95_tpr"])


def _ap_interval(group: pd.DataFrame) -> str:
    """One run: its stratified-bootstrap interval; several: the t-interval of the mean over seeds,
    clipped to [0, 100] (an average precision is a percentage: 96.1 to 100.5 read as a bug)."""
    if len(group) == 1:
        r = group.iloc[0]
        return f"{r['ap_lo']:.1f} to {r['ap_hi']:.1f} (bootstrap)"
    by_class = [g["ap"].to_numpy(dtype=float) for _, g in group.groupby("normal_class")]
    m = mean_interval(by_class)
    return f"{max(0.0, m.lo):.1f} to {min(100.0, m.hi):.1f} (over seeds)" if np.isfinite(m.lo) else MISSING


def operating_points(inputs: ReportInputs) -> Table:
    """``operating_points``: average precision, sensitivity at 95% specificity and the false-positive rate at
    95% true-positive rate per dataset and method."""
    runs, config, names = inputs.frame("runs"), inputs.config, inputs.names
    empty = pd.DataFrame(columns=[*RUN_COLUMNS, "problem"])
    frame = operating_frame(runs, config, inputs.score_source()) if not runs.empty else empty
    rep = report_block(config)
    rows, problems = [], []
    for _, r in frame[frame["problem"] != ""].iterrows() if not frame.empty else []:
        run = f"{r['dataset']}/{r['normal_class']} {r['method']}/{r['variant']} seed {r['seed']}"
        problems.append(f"{run}: {r['problem']}")
    present = sorted(set(frame["dataset"])) if not frame.empty else []
    datasets = ordered_datasets(present, rep["medical"], rep["natural"])
    for d in datasets:
        on_d = frame[frame["dataset"] == d]
        pairs = sorted({(m, s) for m, s in zip(on_d["method"], on_d["score"])}, key=lambda p: names.pair_key(*p))
        for m, s in pairs:
            every = on_d[(on_d["method"] == m) & (on_d["score"] == s)]
            g = every[every["problem"] == ""]
            if g.empty:  # every run of it left out: the row stays, saying so
                rows.append([dataset_label(d), names.pair_label(m, s), *[MISSING] * 7, f"0 of {len(every)} runs"])
                continue
            seeds = g.groupby("normal_class")["seed"].nunique()
            over = classes_by_seeds(g["normal_class"].nunique(), int(seeds.min()), int(seeds.max()))
            rows.append(
                [
                    dataset_label(d),
                    names.pair_label(m, s),
                    _cell(g["ap"]),
                    _ap_interval(g),
                    _cell(g["sensitivity_at_95"]),
                    _cell(g["specificity_at_95"]),
                    _fpr_cell(g),
                    _rate_cell(g, "sensitivity"),
                    _rate_cell(g, "specificity"),
                    over,
                ]
            )
    notes = [
        "AP: average precision (%) with the anomalies as positives (chance = the share of anomalies in the test "
        "set); the interval is a stratified bootstrap of the test images for one run, the 95% t-interval of the "
        "mean over seeds for several.",
        "Sens at 95% spec: the sensitivity (%) at the test threshold that keeps at least 95% of the normal test images "
        "normal (Spec: the specificity it gives). The threshold is chosen with the test labels, so it is the best any "
        "threshold can do: an upper bound for a reader who must fix it in advance.",
        "FPR at 95% TPR: the share (%) of normal test images flagged by the highest threshold that flags at least "
        "95% of the anomalies (FPR95, the headline metric of OpenOOD and the out-of-distribution literature; "
        "lower is better), [exact Clopper-Pearson 95% interval] for one run.",
        "At val threshold: the threshold a reader can fix in advance, without the test labels: the 95th percentile "
        "of the normal validation images' scores (MedMNIST's val split, scored with the test images since issue 35), "
        "and the test sensitivity and specificity it gives, [exact Clopper-Pearson 95% interval] for one run. "
        f"{MISSING}: no validation images scored: a dataset without a validation split (BR35H, Kvasir, digits: "
        "carving one from the training normals would change what every method trains on), a run older than "
        "issue 35 (re-score it: `con2 evaluate`), or an external program's run (a rule-based method such as "
        "Pixel NN: `python -m con2.run.external` takes its test scores only, so it has no validation scores).",
        "Computed from each run's scores.csv when the table is built: older records get these numbers too "
        "(`con2 metrics RUN_DIR` prints one run's).",
        "Mean ± std over the runs; Over: normal classes × seeds.",
    ]
    problems = list(dict.fromkeys(problems))  # one line per run, not per score
    if problems:
        notes.append(f"Left out ({len(problems)}): " + "; ".join(problems[:5]) + ("; ..." if len(problems) > 5 else ""))
    header = [
        "Dataset",
        "Method",
        "AP (%)",
        "AP 95% interval",
        "Sens at 95% spec (%)",
        "Spec (%)",
        "FPR at 95% TPR (%)",
        "Sens at val threshold (%)",
        "Spec at val threshold (%)",
        "Over",
    ]
    return Table(
        "operating_points",
        "Operating points: average precision, sensitivity at 95% specificity and FPR at 95% TPR, from the scores",
        header,
        rows,
        frame,
        notes,
        empty=no_runs(inputs, "operating_points"),
    )
