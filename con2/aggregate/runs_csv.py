"""``runs.csv``: its columns, the file read back, and its means over seeds.

The aggregation (:mod:`con2.aggregate.collect`) writes one row per (run, score) with the columns
:data:`RUN_COLUMNS`; every table reads it back through :func:`load_runs` and averages it with
:func:`summarize` (over seeds) and :func:`dataset_level` (over normal classes).

Aggregation conventions (documented because the paper does not spell them out):

* over seeds: mean and sample standard deviation (``ddof = 1``; one seed gives no std), and the
  95% t-interval of the mean (Welch's over the classes of a dataset; :mod:`con2.maths.stats`);
* per dataset: the mean over normal classes of the per-class seed means; the std is the std over
  seeds for a dataset with one normal class, and the std over the per-class means for a dataset
  with several (the paper's natural-image summaries, e.g. CIFAR-10 94.6 +- 3.6, spread over
  classes).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.cards import CARD_COLUMNS
from con2.aggregate.csv_text import from_csv_frame

RUN_KEYS = ["dataset", "normal_class", "method", "variant", "seed"]
GROUP_KEYS = ["dataset", "normal_class", "method", "variant", "score"]

RUN_COLUMNS = [
    *RUN_KEYS,
    "score",
    "headline",
    "auroc",
    "auroc_lo",  # the run's 95% DeLong interval (record metrics.auroc_ci; NaN for older records)
    "auroc_hi",
    "auroc_se",
    "auroc_by_kind",  # this score's AUROC per anomaly kind, JSON {kind: AUROC} (record metrics.auroc_by_kind; "": none)
    "silhouette",
    "fit_seconds",
    "score_seconds",
    "wall_seconds",
    "curve_seconds",  # the learning curve's scoring during training (record timing; NaN: no curve, or an older record)
    "sessions",  # the training sessions a resumed run took (record timing; NaN: a record older than issue 32)
    "peak_memory_mb",
    "bench_seconds",
    "bench_max_rss_mb",
    "bench_cpu_seconds",
    "cpu_share",
    "load_average",
    "epochs",
    "steps",
    "n_train",
    "n_test",
    "n_anomalous",
    "n_val",  # normal validation images scored (record n_val; NaN: none scored, or a record older than issue 35)
    "chosen_context",  # CON2 (Best)'s choice (record metrics.chosen_context; "" for every other run)
    "data_format",  # the record's data_source.format ("image-folder": a re-encoded copy, tables note it; "": official)
    "device",
    "machine",
    "threads",
    "image_size",
    "width",
    "encoder",
    "tta",
    "test_views",  # what the record says of its headline's test views (CSI: "40 views, features averaged"; "": tta)
    "contexts",
    "n_contexts",
    "loss",
    *CARD_COLUMNS,
    "config_hash",
    "record",
    "in_grid",
]


def by_kind_text(by_kind: Any, score: str) -> str:
    """The cell ``auroc_by_kind`` of a (run, score) row: the record's ``metrics.auroc_by_kind`` (``{kind:
    {score column: AUROC}}``, the MVTec convention of a declared mvtec tree) for ``score``, as JSON ``{kind:
    AUROC}`` with the kinds sorted; "" where the record keeps none, or none of ``score`` (a kind whose entry
    is no finite number is left out)."""
    if not isinstance(by_kind, Mapping):
        return ""
    out: dict[str, float] = {}
    for kind, columns in by_kind.items():
        value = columns.get(score) if isinstance(columns, Mapping) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[str(kind)] = float(value)
    return json.dumps(dict(sorted(out.items()))) if out else ""


def kind_aurocs(text: Any) -> dict[str, float]:
    """The ``{kind: AUROC}`` of an ``auroc_by_kind`` cell (:func:`by_kind_text`); {} for "", a missing cell
    (NaN, a runs CSV written before the column) or text that is not such JSON."""
    if not isinstance(text, str) or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {
        str(k): float(v)
        for k, v in value.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }


def is_headline(score: str) -> bool:
    """Headline scores are the plain names (``nnd``); ``<score>@<reading>`` keys are extra readings."""
    return "@" not in str(score)


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
    Columns: keys, mean, std, n (seeds for one class, classes otherwise), n_classes, the
    fewest and most seeds of a class (``seeds_min``, ``seeds_max``): what a cell averages, and
    ``lo``, ``hi``: the 95% interval of the mean over seeds (:func:`con2.maths.stats.seed_mean_interval`;
    NaN when a class has a single seed).
    """
    from con2.maths.stats import seed_mean_interval  # lazy: it loads scipy, which collecting records never needs

    keys = keys or ["dataset", "method", "variant", "score"]
    cols = [*keys, "mean", "std", "n", "n_classes", "seeds_min", "seeds_max", "lo", "hi"]
    if summary.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for key, grp in summary.groupby(keys, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        seeds = (int(grp["n"].min()), int(grp["n"].max()))
        ci = seed_mean_interval(grp["mean"].tolist(), grp["std"].tolist(), grp["n"].tolist())
        if len(grp) == 1:
            row = grp.iloc[0]
            rows.append((*key, row["mean"], row["std"], row["n"], 1, *seeds, ci.lo, ci.hi))
        else:
            rows.append((*key, grp["mean"].mean(), grp["mean"].std(ddof=1), len(grp), len(grp), *seeds, ci.lo, ci.hi))
    return pd.DataFrame(rows, columns=cols)


def load_runs(path: str | Path) -> pd.DataFrame:
    """Read ``runs.csv`` back with names as strings (normal class ``"0"`` stays ``"0"``) and as they were before
    the aggregation wrote them (:func:`con2.aggregate.csv_text.csv_frame`)."""
    text_cols = [
        "dataset",
        "normal_class",
        "method",
        "variant",
        "score",
        "auroc_by_kind",
        "contexts",
        "loss",
        *CARD_COLUMNS,
        "device",
        "machine",
        "encoder",
        "test_views",
        "config_hash",
        "record",
    ]
    df = from_csv_frame(pd.read_csv(path, dtype={c: str for c in text_cols}))  # as the aggregation wrote them
    for c in RUN_COLUMNS:
        if c not in df.columns:
            df[c] = True if c == "in_grid" else np.nan
    # "" (no per-kind AUROCs) reads back as NaN, and a column of nothing else as float64, which a text fill
    # no longer fits (pandas 3 warns, pandas 4 raises): the text, cell by cell
    df["auroc_by_kind"] = [v if isinstance(v, str) else "" for v in df["auroc_by_kind"]]
    df["headline"] = df["score"].map(is_headline).astype(bool)
    df["in_grid"] = df["in_grid"].astype(bool)
    return df[RUN_COLUMNS]
