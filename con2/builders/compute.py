"""What runs cost: time and memory per run (extrapolated to the paper's epochs) and the
score-runtime measurements of ``workflow/scripts/score_runtime.py``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from con2.paper_names import dataset_label, dataset_names
from con2.report.artefacts import ReportInputs
from con2.report.format import MISSING, Table
from con2.report.methods import Methods
from con2.report.select import ordered_datasets, report_block

LOADED_CPU_SHARE = 0.8  # a training job that got less of the CPU it asked for ran under load

# the frame's columns, one row per (dataset, method, variant, device)
_COLUMNS = [
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


def compute_cost(inputs: ReportInputs) -> Table:
    """Compute per run: training and scoring time, peak memory, the load they were measured under;
    extrapolated to the paper's epochs (with a warning when the measurements were taken under load)."""
    runs, config, hours = inputs.frame("runs"), inputs.config, inputs.hours
    rep, dmap, names = report_block(config), dataset_names(config), inputs.names
    if runs.empty:
        return Table("compute_cost", "Compute cost per run", list(_COLUMNS), [], pd.DataFrame(columns=_COLUMNS))
    frame = _sorted(_cost_frame(runs, rep, dmap, names, hours), rep)
    rows, flagged = [], []
    for r in frame.to_dict("records"):
        mark = _load_mark(r["cpu_share"], r["load_average"])
        if mark and pd.notna(r["h_at_paper_epochs"]):
            flagged.append(f"{dataset_label(r['dataset'])} {r['method']} {r['variant']}")
        rows.append(_shown_row(r, mark))
    return Table(
        "compute_cost",
        "Compute cost per run (means over seeds and normal classes)",
        _header(rep["paper_epochs"]),
        rows,
        frame,
        _notes(rep["paper_epochs"], flagged),
    )


def _cost_frame(
    runs: pd.DataFrame, rep: dict[str, Any], dmap: dict[str, str], names: Methods, hours: pd.DataFrame | None
) -> pd.DataFrame:
    """One row of :data:`_COLUMNS` per (dataset, method, variant, device): means over its runs (each run
    once, whatever its score columns), its seconds per epoch extrapolated to the paper's epochs (``rep``), the
    paper's GPU hours (``hours``, under the paper's names: ``dmap``, ``names``) beside them."""
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
    return pd.DataFrame(data, columns=_COLUMNS)


def _sorted(frame: pd.DataFrame, rep: dict[str, Any]) -> pd.DataFrame:
    """The rows in the report's dataset order (the medical datasets, then the natural), then by method and variant."""
    order = {
        d: i
        for i, d in enumerate(ordered_datasets(list(dict.fromkeys(frame["dataset"])), rep["medical"], rep["natural"]))
    }
    return frame.sort_values(
        by=["dataset", "method", "variant"], key=lambda s: s.map(order) if s.name == "dataset" else s
    )


def _load_mark(cpu_share: float, load_average: float) -> str:
    """``*``: measured under load (a CPU share under :data:`LOADED_CPU_SHARE`); ``?``: under an unknown load."""
    if pd.notna(cpu_share) and cpu_share < LOADED_CPU_SHARE:
        return "*"
    return "?" if pd.isna(cpu_share) and pd.isna(load_average) else ""


def _num(x: float, digits: int = 1) -> str:
    """``x`` with ``digits`` decimals; a missing number as :data:`~con2.report.format.MISSING`."""
    return MISSING if pd.isna(x) else f"{x:.{digits}f}"


def _shown_row(r: dict, mark: str) -> list[str]:
    """One row of the table as shown; ``mark`` (:func:`_load_mark`) beside every number the load changes."""
    return [
        dataset_label(r["dataset"]),
        r["method"],
        r["variant"],
        str(r["device"]),
        str(r["runs"]),
        _num(r["epochs"], 0),
        _num(r["fit_min"], 2),
        _num(r["score_s"]),
        _num(r["wall_min"], 2),
        _num(r["peak_mb"], 0),
        _num(r["bench_max_rss_mb"], 0),
        _num(r["cpu_share"], 2) + mark,
        _num(r["load_average"], 1),
        _num(r["s_per_epoch"], 2) + mark,
        _num(r["h_at_paper_epochs"]) + mark,
        _num(r["paper_gpu_h"]),
    ]


def _header(paper_epochs: object) -> list[str]:
    """The shown columns' names, one per entry of :data:`_COLUMNS`."""
    return [
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
        f"h at {paper_epochs} ep",
        "Paper GPU h",
    ]


def _notes(paper_epochs: object, flagged: list[str]) -> list[str]:
    """Where the numbers come from and what the marks mean; a warning naming the ``flagged`` rows, whose
    extrapolation rests on times measured under load or under an unknown load."""
    notes = [
        "Fit, score and peak memory from the run records; RSS and CPU time from Snakemake's benchmark files. "
        "CPU share = CPU seconds / (wall seconds x threads) of the training job (approximate: sampled every 30 s): "
        f"about 1 on an idle machine; * marks < {LOADED_CPU_SHARE} (the job waited for the CPU: measured under load), "
        "? an unknown load. Load (1 min): the system load average the record gives, where it gives one. "
        f"'h at {paper_epochs} ep' extrapolates the measured seconds per epoch on the same device; paper GPU "
        "hours as reported (single RTX 2080Ti/3090/4090, 2048 epochs).",
    ]
    if flagged:
        notes.append(
            f"WARNING: 'h at {paper_epochs} ep' of {len(flagged)} row(s) ({', '.join(flagged[:6])}"
            f"{', ...' if len(flagged) > 6 else ''}) is extrapolated from fit times measured under load or under an "
            "unknown load: an upper bound, not the cost on an idle machine (measure it idle, e.g. "
            "benchmarks/throughput.py)."
        )
    return notes


def score_runtime(inputs: ReportInputs) -> Table:
    """The score-runtime measurements (from ``workflow/scripts/score_runtime.py``) as a table."""
    measured = inputs.frame("measured")
    names = inputs.names  # the scores' labels and colours, from the method specs
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
