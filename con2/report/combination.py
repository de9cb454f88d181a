"""Whether the paper's silences together lift CON2 as printed (issue 33): the reproduction verdict's
combination line.

Each reading the paper leaves open (BatchNorm statistics per context, SimCLR-strength views, the
literal x^C bank) moved CON2 on BreastMNIST when measured alone. This module reads the records of
their combinations and says, every number from the records, whether any of them brings CON2 above
content alignment alone and SimCLR + kNN on the ``target`` dataset (paired over seeds, Holm over
every candidate x reference test) without falling below CON2 as printed on the ``guard`` datasets::

    report:
      combination:
        target: breastmnist
        guard: [br35h, digits]
        reference: {label: "CON2 as printed", method: con2, variant: invert, score: nnd}
        candidates:            # rows: label, method, variant, score (a record's reading)
          - {label: "BatchNorm per context + SimCLR-strength views", method: con2, variant: bn_strength, score: nnd}
        against:
          - {label: "content alone", method: con2, variant: content_only, score: nnd}
          - {label: "SimCLR + kNN", method: simclr, variant: default, score: knn}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from con2.maths.stats import holm, t_sf
from con2.paper_names import dataset_label
from con2.report.bound import paired_interval
from con2.report.format import signed

ALPHA = 0.05


@dataclass(frozen=True)
class Test:
    """One paired comparison over seeds: ``candidate - against`` on one dataset."""

    candidate: str
    against: str
    diff: float  # mean of the per-seed differences, AUROC points
    low: float  # 95% t-interval of that mean (NaN with fewer than two seeds)
    high: float
    n: int  # seeds both have
    p: float  # two-sided paired t-test (NaN with fewer than two seeds or no spread)
    p_holm: float = math.nan


def seed_values(runs: pd.DataFrame, dataset: str, row: Mapping[str, Any]) -> dict[int, float]:
    """``{seed: AUROC}`` of one row's runs on one dataset (one normal class: the set's own)."""
    sel = runs[
        (runs["dataset"] == dataset)
        & (runs["method"] == row["method"])
        & (runs["variant"] == row["variant"])
        & (runs["score"] == row["score"])
    ]
    return {int(s): float(a) for s, a in zip(sel["seed"], sel["auroc"])}


def paired_p(a: Mapping[int, float], b: Mapping[int, float]) -> float:
    """Two-sided p of a paired t-test of ``b - a`` over the seeds both have (NaN: < 2 seeds or no spread)."""
    seeds = sorted(set(a) & set(b))
    diffs = np.array([b[s] - a[s] for s in seeds], dtype=float)
    if diffs.size < 2 or float(diffs.std(ddof=1)) == 0.0:
        return math.nan
    stat = float(diffs.mean()) / (float(diffs.std(ddof=1)) / math.sqrt(diffs.size))
    return 2.0 * t_sf(abs(stat), diffs.size - 1)


def paired_tests(
    runs: pd.DataFrame, dataset: str, candidates: Sequence[Mapping[str, Any]], against: Sequence[Mapping[str, Any]]
) -> list[Test]:
    """Every measured candidate against every measured reference on ``dataset``, Holm-adjusted together."""
    tests = []
    for c in candidates:
        cv = seed_values(runs, dataset, c)
        for r in against:
            rv = seed_values(runs, dataset, r)
            diff, low, high, n = paired_interval(rv, cv)
            if n:
                tests.append(Test(str(c["label"]), str(r["label"]), diff, low, high, n, paired_p(rv, cv)))
    adjusted = holm([t.p for t in tests])
    return [Test(**{**t.__dict__, "p_holm": float(q)}) for t, q in zip(tests, adjusted)]


def _mean_text(values: Mapping[int, float]) -> str:
    v = np.array(list(values.values()), dtype=float)
    spread = f" ± {v.std(ddof=1):.1f}" if v.size > 1 else ""
    return f"{v.mean():.1f}{spread} ({v.size} seed{'s' if v.size != 1 else ''})"


def _test_text(t: Test) -> str:
    interval = f" [{t.low:+.1f}, {t.high:+.1f}]" if np.isfinite(t.low) else ""
    p = f", Holm p {t.p_holm:.3f}" if np.isfinite(t.p_holm) else ", no p (too few seeds or no spread)"
    return f"{signed(t.diff)}{interval} vs {t.against}{p}"


def beats(t: Test) -> bool:
    """A candidate beats a reference when its paired mean difference is positive and Holm's p < 0.05."""
    return t.diff > 0 and np.isfinite(t.p_holm) and t.p_holm < ALPHA


def combination_lines(runs: pd.DataFrame, spec: Mapping[str, Any]) -> list[str]:
    """The verdict's combination lines (``report.combination``), or [] where no candidate was run on
    the target. Every number is read from ``runs`` (the records' long table)."""
    if not spec or runs is None or runs.empty:
        return []
    target = str(spec["target"])
    candidates, against = list(spec.get("candidates") or []), list(spec.get("against") or [])
    measured = [(c, seed_values(runs, target, c)) for c in candidates]
    measured = [(c, v) for c, v in measured if v]
    if not measured:
        return []
    tests = paired_tests(runs, target, [c for c, _ in measured], against)
    name = dataset_label(target)
    cells = []
    for c, v in measured:
        mine = [t for t in tests if t.candidate == c["label"]]
        cells.append(f"{c['label']} {_mean_text(v)}" + (": " + "; ".join(_test_text(t) for t in mine) if mine else ""))
    refs = [(r, seed_values(runs, target, r)) for r in against]
    ref_text = ", ".join(f"{r['label']} {_mean_text(v)}" for r, v in refs if v)
    lines = [f"On {name}: " + ". ".join(cells) + "." + (f" References: {ref_text}." if ref_text else "")]

    best, best_values = max(measured, key=lambda cv: float(np.mean(list(cv[1].values()))))
    mine = [t for t in tests if t.candidate == best["label"]]
    missing = [str(r["label"]) for r, v in refs if not v]
    won = bool(mine) and all(beats(t) for t in mine) and not missing
    if won:
        verdict = f"**{best['label']} brings CON2 above every reference on {name}** (Holm p < {ALPHA})"
    else:
        lost = [t.against for t in mine if not beats(t)]
        why = "; ".join(
            [f"not significantly above {', '.join(lost)}"] * bool(lost)
            + [f"{', '.join(missing)} not measured on {name}"] * bool(missing)
        )
        verdict = f"**No combination brings CON2 above every reference on {name}**: the best, {best['label']}: {why}"
    reference = spec.get("reference")
    guards = []
    for d in spec.get("guard") or []:
        if not reference:
            break
        diff, low, high, n = paired_interval(seed_values(runs, str(d), reference), seed_values(runs, str(d), best))
        if not n:
            guards.append(f"is not measured on {dataset_label(str(d))}")
            continue
        interval = f" [{low:+.1f}, {high:+.1f}]" if np.isfinite(low) else " (one seed: no interval)"
        fell = np.isfinite(high) and high < 0
        word = "falls below" if fell else "does not fall below"
        guards.append(f"{word} {reference['label']} on {dataset_label(str(d))} ({signed(diff)}{interval}, {n} seeds)")
    tail = "".join(f"; it {g}" for g in guards)
    return [*lines, verdict + tail + "."]
