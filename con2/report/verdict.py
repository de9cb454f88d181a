"""The reproduction report's verdict: per method, its budget beside the paper's, how far from the
paper it is, the readings the fidelity study tried and what stays unexplained."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.cards import base_score
from con2.aggregate.score_files import ScoresSource
from con2.paper_names import dataset_label, dataset_names
from con2.report.budget import budget_of, paper_budget_text
from con2.report.curves import curve_points
from con2.report.fidelity import reading_cell
from con2.report.format import shown_diff, signed
from con2.report.methods import Methods, subject_of
from con2.report.select import ReportCfg, main_context, main_runs, report_block


def _fidelity_readings(
    runs: pd.DataFrame, config: Mapping[str, Any], method: str, score: str
) -> list[tuple[str, str, float]]:
    """``(label, dataset, mean)`` of every fidelity row (``report.fidelity.rows``) of ``method`` whose
    column reads ``score`` and that has runs here, on every fidelity dataset."""
    spec = (config.get("report") or {}).get("fidelity") or {}
    out = []
    for row in spec.get("rows") or []:
        if row.get("method") != method or base_score(row.get("score", "")) != score:
            continue
        for d in spec.get("datasets") or []:
            mean = reading_cell(runs, d, row)[0]
            if not np.isnan(mean):
                out.append((str(row["label"]), str(d), mean))
    return out


def _curve_text(
    runs: pd.DataFrame,
    names: Methods,
    rep: ReportCfg,
    method: str,
    score: str,
    dataset: str,
    scores: ScoresSource,
) -> str:
    """``"learning curve 55.0 (epoch 2) -> 57.7 (epoch 10)"`` of the method's main runs, or ""."""
    points, _ = curve_points(runs[(runs["method"] == method) & (runs["dataset"] == dataset)], names, rep, scores)
    points = points[points["score"] == score]
    if points["epoch"].nunique() < 2:
        return ""
    mean = points.groupby("epoch")["auroc"].mean()
    return f"learning curve {mean.iloc[0]:.1f} (epoch {mean.index[0]}) -> {mean.iloc[-1]:.1f} (epoch {mean.index[-1]})"


NOTHING_TO_COMPARE = (
    "**Verdict:** nothing to compare yet: no run of this profile matches a published number. "
    "`snakemake --cores 2 all --config data_dir=DIR` trains them (results/tables/missing.md names what is "
    "missing and how to get it)."
)


def verdict_lines(
    runs: pd.DataFrame,
    frame: pd.DataFrame,
    config: Mapping[str, Any],
    names: Methods,
    scores: ScoresSource,
) -> list[str]:
    """The reproduction report's opening: per method (each of our scores with a paper row), the budget
    it ran at beside the paper's, how far from the paper it is, the readings the fidelity study tried
    and the best of them, and what stays unexplained. Every number comes from the records."""
    rep = report_block(config)
    if frame.empty or runs.empty:
        return []
    subject = subject_of(config, runs, names)
    context = main_context(rep, subject)
    inv_d = {v: k for k, v in dataset_names(config).items()}
    matched = frame.dropna(subset=["ours_mean"])
    matched = matched[matched["context"].isin(["", context])].drop_duplicates(subset=["ours", "dataset"])
    if matched.empty:
        return [NOTHING_TO_COMPARE]
    lines = [f"**Verdict** (the paper trained {paper_budget_text(rep)}):", ""]
    for what in sorted(dict.fromkeys(matched["ours"]), key=lambda w: names.pair_key(*w.split("/", 1))):
        m, s = what.split("/", 1)
        rows = matched[matched["ours"] == what]
        mine = main_runs(runs[runs["method"] == m], rep)
        budget = budget_of(mine, names)
        gaps = [
            f"{r['dataset']} {r['ours_mean']:.1f} vs {r['paper_mean']:.1f} ({signed(r['diff'])})"
            for _, r in rows.iterrows()
        ]
        parts = [f"- **{names.pair_label(m, s)}** at {budget.text()}: " + "; ".join(gaps) + "."]
        readings = _fidelity_readings(runs, config, m, s)
        unexplained = []
        if readings:
            tried = sorted({label for label, _, _ in readings})
            sets = sorted({dataset_label(d) for _, d, _ in readings})
            parts.append(f"Readings tried: {len(tried)} (fidelity study, {', '.join(sets)}).")
        for _, r in rows.iterrows():
            d = inv_d.get(r["dataset"], r["dataset"])
            on_d = [(label, mean) for label, ds, mean in readings if ds == d]
            paper_mean, paper_std = float(r["paper_mean"]), float(r["paper_std"])
            tolerance = paper_std if np.isfinite(paper_std) else 0.0
            if r["within_paper_std"] is True or abs(float(r["diff"])) <= tolerance:
                parts.append(f"{r['dataset']}: reproduces (within the paper's std).")
                continue
            if r.get("paper_inside") is True:  # a paper number without a std, or a wide one of ours
                parts.append(f"{r['dataset']}: reproduces (the paper's number lies inside our 95% interval).")
                continue
            if on_d:
                label, best = max(on_d, key=lambda x: x[1])
                gap = shown_diff(best, paper_mean)
                parts.append(f"Best reading on {r['dataset']}: {label!r} {best:.1f} ({signed(gap)} from the paper).")
                if abs(gap) <= tolerance or gap > 0:
                    parts.append(f"{r['dataset']}: the gap closes under that reading.")
                    continue
            curve = _curve_text(runs, names, rep, m, s, d, scores)
            unexplained.append(f"{r['dataset']} {signed(r['diff'])}" + (f" ({curve})" if curve else ""))
        if unexplained:
            cause = (
                "our budget is below the paper's, so its length and resolution are not ruled out"
                if budget.below_paper(int(rep["paper_epochs"]))
                else "at the paper's budget"
            )
            after = "after every reading tried" if readings else "(the fidelity study has not run this method)"
            parts.append(f"Unexplained {after}: {', '.join(unexplained)}; {cause}.")
        lines.append(" ".join(parts))
    return [*lines, ""]
