"""Run records -> tidy tables: one row per (run, score), then means and stds over seeds.

Only records are read (through :func:`con2.records.read_record`, which validates them and names
the file and field on failure); the optional Snakemake ``benchmark:`` TSV of a run adds its
measured wall time and peak memory. Nothing here imports torch or the training code.

Aggregation conventions (documented because the paper does not spell them out):

* over seeds: mean and sample standard deviation (``ddof = 1``; one seed gives no std);
* per dataset: the mean over normal classes of the per-class seed means; the std is the std over
  seeds for a dataset with one normal class, and the std over the per-class means for a dataset
  with several (the paper's natural-image summaries, e.g. CIFAR-10 94.6 +- 3.6, spread over
  classes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from con2.records import read_record

RUN_KEYS = ["dataset", "normal_class", "method", "variant", "seed"]
GROUP_KEYS = ["dataset", "normal_class", "method", "variant", "score"]

RUN_COLUMNS = [
    *RUN_KEYS, "score", "auroc", "silhouette", "fit_seconds", "score_seconds", "wall_seconds",
    "peak_memory_mb", "bench_seconds", "bench_max_rss_mb", "epochs", "steps", "n_train", "n_test",
    "n_anomalous", "device", "image_size", "width", "tta", "contexts", "n_contexts", "loss",
    "config_hash", "record",
]  # fmt: skip


def context_fields(config: Mapping[str, Any]) -> tuple[str | None, float, str | None]:
    """``(contexts label, number of contexts k, loss)`` from a record's config (CON2-style params).

    ``params.n_contexts > 0`` is the k-context ablation; otherwise ``k = len(contexts) + 1``.
    Methods without these params give ``(None, nan, None)``.
    """
    params = config.get("params") or {}
    n = params.get("n_contexts") or 0
    ctx = params.get("contexts")
    if n:
        return f"k{int(n)}", float(n), params.get("loss", "full")
    if ctx is None:
        return None, float("nan"), params.get("loss")
    names = [ctx] if isinstance(ctx, str) else list(ctx)
    return "+".join(names) if len(names) == 1 else ",".join(names), float(len(names) + 1), params.get("loss", "full")


def read_benchmark(path: str | Path | None) -> tuple[float, float]:
    """``(seconds, max_rss MB)`` of a Snakemake benchmark TSV (last row), or NaNs when absent."""
    if path is None or not Path(path).is_file():
        return float("nan"), float("nan")
    try:
        df = pd.read_csv(path, sep="\t")
        row = df.iloc[-1]
        rss = pd.to_numeric(row.get("max_rss", np.nan), errors="coerce")
        return float(row.get("s", np.nan)), float(rss)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, IndexError, ValueError):
        return float("nan"), float("nan")


def record_rows(record: Mapping[str, Any], source: str = "", benchmark: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per score of one validated record."""
    cfg = record.get("config") or {}
    contexts, k, loss = context_fields(cfg)
    bench_s, bench_rss = read_benchmark(benchmark)
    timing = record["timing"]
    base = {
        "dataset": record["dataset"], "normal_class": str(record["normal_class"]), "method": record["method"],
        "variant": record["variant"], "seed": int(record["seed"]),
        "silhouette": record["metrics"].get("silhouette"),
        "fit_seconds": timing["fit_seconds"], "score_seconds": timing["score_seconds"],
        "wall_seconds": timing["wall_seconds"], "peak_memory_mb": record.get("peak_memory_mb"),
        "bench_seconds": bench_s, "bench_max_rss_mb": bench_rss,
        "epochs": record.get("epochs"), "steps": record.get("steps"), "n_train": record["n_train"],
        "n_test": record["n_test"], "n_anomalous": record["n_anomalous"], "device": record.get("device"),
        "image_size": cfg.get("image_size"), "width": cfg.get("width"), "tta": cfg.get("tta"),
        "contexts": contexts, "n_contexts": k, "loss": loss, "config_hash": record["config_hash"],
        "record": source,
    }  # fmt: skip
    return [{**base, "score": name, "auroc": float(value)} for name, value in sorted(record["metrics"]["auroc"].items())]


def collect_runs(records: Iterable[str | Path], benchmarks: Mapping[str, str | Path] | None = None) -> pd.DataFrame:
    """Read every record (validated) into one tidy frame with :data:`RUN_COLUMNS`.

    Args:
        records: paths of ``record.json`` files.
        benchmarks: optional ``{record path: benchmark TSV path}``.
    """
    rows: list[dict[str, Any]] = []
    for path in records:
        rec = read_record(path)
        rows += record_rows(rec, str(path), (benchmarks or {}).get(str(path)))
    df = pd.DataFrame(rows, columns=RUN_COLUMNS)
    return df.sort_values([*RUN_KEYS, "score"], kind="stable").reset_index(drop=True)


def summarize(runs: pd.DataFrame, value: str = "auroc", keys: list[str] | None = None) -> pd.DataFrame:
    """Mean, sample std and count of ``value`` over seeds per ``keys`` (default :data:`GROUP_KEYS`)."""
    keys = keys or GROUP_KEYS
    cols = [*keys, "mean", "std", "n"]
    if runs.empty:
        return pd.DataFrame(columns=cols)
    g = runs.dropna(subset=[value]).groupby(keys, dropna=False, sort=True)[value]
    out = g.agg(mean="mean", std=lambda s: s.std(ddof=1) if len(s) > 1 else np.nan, n="count").reset_index()
    return out[cols]


def dataset_level(summary: pd.DataFrame, keys: list[str] | None = None) -> pd.DataFrame:
    """Collapse normal classes: mean of class means; std over seeds (one class) or over class means.

    ``summary`` comes from :func:`summarize`; ``keys`` default to dataset, method, variant, score.
    Columns: keys, mean, std, n (seeds for one class, classes otherwise), n_classes.
    """
    keys = keys or ["dataset", "method", "variant", "score"]
    cols = [*keys, "mean", "std", "n", "n_classes"]
    if summary.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for key, grp in summary.groupby(keys, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        if len(grp) == 1:
            row = grp.iloc[0]
            rows.append((*key, row["mean"], row["std"], row["n"], 1))
        else:
            rows.append((*key, grp["mean"].mean(), grp["mean"].std(ddof=1), len(grp), len(grp)))
    return pd.DataFrame(rows, columns=cols)


def load_runs(path: str | Path) -> pd.DataFrame:
    """Read ``runs.csv`` back with names as strings (normal class ``"0"`` stays ``"0"``)."""
    text_cols = ["dataset", "normal_class", "method", "variant", "score", "contexts", "loss", "device", "config_hash", "record"]
    df = pd.read_csv(path, dtype={c: str for c in text_cols})
    for c in RUN_COLUMNS:
        if c not in df.columns:
            df[c] = np.nan
    return df[RUN_COLUMNS]
