"""What runs cost: time and memory per run (extrapolated to the paper's epochs) and the
score-runtime measurements of ``workflow/scripts/score_runtime.py``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from con2.paper_names import dataset_label, dataset_names
from con2.report.artefacts import ReportInputs
from con2.report.format import MISSING, Table
from con2.report.select import ordered_datasets, report_block

LOADED_CPU_SHARE = 0.8  # a training job that got less of the CPU it asked for ran under load


def compute_cost(inputs: ReportInputs) -> Table:
    """Compute per run: training and scoring time, peak memory, the load they were measured under;
    extrapolated to the paper's epochs (with a warning when the measurements were taken under load)."""
    runs, config, hours = inputs.frame("runs"), inputs.config, inputs.hours
    rep = report_block(config)
    dmap = dataset_names(config)
    names = inputs.names
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
