"""How far each measured budget goes: CON2 as printed against content alignment alone and SimCLR.

The reproduction verdict's bound (issue 24). For every budget of ``report.bound`` that has been
measured, on one dataset: CON2 as printed, content alignment alone (L_Context dropped) and SimCLR
+ kNN, mean ± std over seeds, and the two differences to CON2 with a 95% interval over seeds (the
runs are paired by seed: a t-interval of the per-seed differences; one seed gives no interval).
CPU budgets are read from the records (``runs``), GPU budgets from the JSON lines that
``benchmarks/gpu_fidelity.py`` writes into ``benchmarks/measured/`` (``gpu``)::

    report:
      bound:
        dataset: breastmnist
        budgets:                  # records: the variant of each of the three
          - {label: "28 px, 10 epochs", con2: invert, content: content_only, simclr: default}
        gpu:                      # benchmarks/measured lines: their `setting`, at `epochs` and `image_size`
          - {label: "224 px, 2048 epochs", epochs: 2048, image_size: 224,
             con2: as printed, content: content only, simclr: SimCLR + kNN}
        unsettled: "2048 epochs at 224 px"   # what no CPU can settle (named while it has no lines)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from con2.maths.stats import t_quantile
from con2.report.artefacts import ReportInputs
from con2.report.format import Table, mean_std, signed
from con2.report.missing import no_runs

ROLES = (("con2", "CON2 as printed", "nnd"), ("content", "content alone", "nnd"), ("simclr", "SimCLR + kNN", "knn"))


def paired_interval(a: Mapping[int, float], b: Mapping[int, float]) -> tuple[float, float, float, int]:
    """``(mean, low, high, n)`` of ``b - a`` over the seeds both have: a 95% t-interval of the
    per-seed differences (NaN bounds for fewer than two seeds)."""
    seeds = sorted(set(a) & set(b))
    diffs = np.array([b[s] - a[s] for s in seeds], dtype=float)
    if diffs.size == 0:
        return math.nan, math.nan, math.nan, 0
    mean = float(diffs.mean())
    if diffs.size < 2:
        return mean, math.nan, math.nan, 1
    half = t_quantile(0.975, diffs.size - 1) * float(diffs.std(ddof=1)) / math.sqrt(diffs.size)
    return mean, mean - half, mean + half, int(diffs.size)


def _record_seeds(runs: pd.DataFrame, dataset: str, variant: str, method: str, score: str) -> dict[int, float]:
    sel = runs[
        (runs["dataset"] == dataset)
        & (runs["method"] == method)
        & (runs["variant"] == variant)
        & (runs["score"] == score)
    ]
    return {int(s): float(a) for s, a in zip(sel["seed"], sel["auroc"])}


def _gpu_seeds(gpu: pd.DataFrame, spec: Mapping[str, Any], setting: str) -> dict[int, float]:
    if gpu is None or gpu.empty:
        return {}
    sel = gpu[
        (gpu["setting"] == setting)
        & (gpu["epochs"] == int(spec.get("epochs", 0)))
        & (gpu["image_size"] == int(spec.get("image_size", 224)))
        & (gpu["data_size"] == int(spec.get("data_size", 28)))
    ]
    return {int(s): float(a) for s, a in zip(sel["seed"], sel["auroc"])}


def _machines(runs: pd.DataFrame, dataset: str, variants: Sequence[str]) -> str:
    """The machines (CPU model names, or devices) the runs of these variants ran on (runs.csv's ``machine``)."""
    sel = runs[(runs["dataset"] == dataset) & (runs["variant"].isin(list(variants)))]
    column = "machine" if "machine" in sel else "device"
    names = {str(m) for m in sel[column].dropna().unique()} if column in sel else set()
    return ", ".join(sorted(names)) or "?"


def bound_rows(runs: pd.DataFrame, gpu: pd.DataFrame | None, spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per budget of ``spec`` with any measurement: the three methods' per-seed AUROCs,
    their means and stds, and the paired differences (content - CON2, SimCLR - CON2)."""
    dataset = str(spec.get("dataset") or "breastmnist")
    out = []
    budgets = [(b, "cpu") for b in spec.get("budgets") or []] + [(b, "gpu") for b in spec.get("gpu") or []]
    for budget, kind in budgets:
        seeds: dict[str, dict[int, float]] = {}
        for role, _, score in ROLES:
            if role not in budget:
                seeds[role] = {}
            elif kind == "cpu":
                method = "simclr" if role == "simclr" else "con2"
                seeds[role] = _record_seeds(runs, dataset, str(budget[role]), method, score)
            else:
                seeds[role] = _gpu_seeds(gpu, budget, str(budget[role]))
        if not any(seeds.values()):
            continue
        row: dict[str, Any] = {"budget": str(budget["label"]), "source": kind, "dataset": dataset}
        for role, _, _ in ROLES:
            vals = np.array(list(seeds[role].values()), dtype=float)
            row[f"{role}_mean"] = float(vals.mean()) if vals.size else math.nan
            row[f"{role}_std"] = float(vals.std(ddof=1)) if vals.size > 1 else math.nan
            row[f"{role}_seeds"] = int(vals.size)
        for role in ("content", "simclr"):
            mean, low, high, n = paired_interval(seeds["con2"], seeds[role])
            row.update({f"{role}_minus_con2": mean, f"{role}_low": low, f"{role}_high": high, f"{role}_pairs": n})
        if kind == "cpu":
            row["machine"] = _machines(runs, dataset, [str(budget[r]) for r, _, _ in ROLES if r in budget])
        else:
            files = gpu["file"].unique() if gpu is not None and not gpu.empty else []
            row["machine"] = ", ".join(sorted({f.split("_")[0] for f in files})) or "gpu"
        out.append(row)
    return out


def _diff(row: Mapping[str, Any], role: str) -> str:
    mean, low, high = row[f"{role}_minus_con2"], row[f"{role}_low"], row[f"{role}_high"]
    if math.isnan(mean):
        return "–"
    if math.isnan(low):
        return f"{signed(round(mean, 1))} (1 seed)"
    return f"{signed(round(mean, 1))} [{low:+.1f}, {high:+.1f}]"


def verdict_lines(rows: Sequence[Mapping[str, Any]], spec: Mapping[str, Any]) -> list[str]:
    """One sentence per budget measured, and what no CPU can settle."""
    lines = []
    for r in rows:
        if math.isnan(r["con2_mean"]):
            lines.append(f"{r['budget']} ({r['machine']}): CON2 as printed not measured yet.")
            continue
        said = f"{r['budget']} ({r['machine']}): CON2 as printed {mean_std(r['con2_mean'], r['con2_std'])}"
        for role, name, _ in ROLES[1:]:
            diff, low, high, pairs = (r[f"{role}_minus_con2"], r[f"{role}_low"], r[f"{role}_high"], r[f"{role}_pairs"])
            if math.isnan(diff):
                continue
            if not math.isnan(low) and (low > 0 or high < 0):  # the interval excludes 0
                said += f"; {name} {'above' if low > 0 else 'below'} it by {abs(diff):.1f} (95% interval over seeds)"
            else:
                said += f"; {name} {signed(round(diff, 1))}, not decided at {pairs} paired seed(s)"
        lines.append(said + ".")
    unsettled = spec.get("unsettled")
    gpu_labels = {r["budget"] for r in rows if r["source"] == "gpu"}
    missing = [b["label"] for b in spec.get("gpu") or [] if b["label"] not in gpu_labels]
    if unsettled and missing:
        lines.append(
            f"Not measured: {', '.join(missing)}. What no CPU can settle is {unsettled}: "
            "`bash benchmarks/gpu_call.sh` on one GPU."
        )
    return lines


def budget_bound(inputs: ReportInputs) -> Table:
    """Rows: the budgets of ``report.bound`` measured; columns: the three methods and the differences."""
    spec = inputs.report.get("bound") or {}
    runs = inputs.runs if inputs.runs is not None else pd.DataFrame(columns=["dataset"])
    rows = bound_rows(runs, inputs.gpu, spec)
    columns = [
        "Budget",
        "Source",
        "CON2 as printed",
        "Content alone",
        "SimCLR + kNN",
        "Content − CON2",
        "SimCLR − CON2",
    ]
    body = [
        [
            r["budget"],
            f"{r['source'].upper()}: {r['machine']}",
            *(mean_std(r[f"{role}_mean"], r[f"{role}_std"]) + f" (n={r[f'{role}_seeds']})" for role, _, _ in ROLES),
            _diff(r, "content"),
            _diff(r, "simclr"),
        ]
        for r in rows
    ]
    notes = [
        "AUROC (%) on " + str(spec.get("dataset") or "breastmnist") + ", mean ± std over seeds (n); differences: "
        "mean over seeds of the per-seed difference, [95% t-interval over seeds].",
        *verdict_lines(rows, spec),
    ]
    if not rows:
        notes.insert(0, "No budget of report.bound measured yet: `snakemake studies` trains the CPU ones.")
    frame = pd.DataFrame(rows)
    return Table(
        "budget_bound",
        "How far each budget goes: CON2 as printed against content alone and SimCLR",
        columns,
        body,
        frame,
        notes,
        empty=no_runs(inputs, "budget_bound"),
    )
