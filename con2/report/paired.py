"""Paired comparisons of methods, and the marks they give a table: what the builders share to compare.

On the same test images (:func:`compare`, :func:`paired_over_classes`; the comparisons tables, Table 1's
and the natural summary's marks, the claims tables, the length study's claims, the reproduction
verdict's orderings): each method's main variant (every headline score) against a reference
(``report.compare_to``: ``method`` or ``method/score``, default the subject's first score, e.g. CON2
(NND)), as the difference of AUROCs (method − reference, percent) with a 95% interval, a two-sided
p-value and whether it holds after Holm's correction over the table's comparisons (``report.alpha``,
default 0.05).

The test (:func:`con2.maths.stats.delong_paired`): per normal class, the runs of both methods are paired
by seed; each pair must have scored the same test images (``scores.csv``: same index, same labels).
The difference of the seed means has DeLong's variance over test images, with all seeds of both
methods as scorers of the same images (their correlation through the shared test set is counted),
plus the variance of the per-seed differences over seeds divided by their number (training
randomness; nothing with one seed). DeLong rather than a paired bootstrap: it is exact for the
U-statistic, deterministic (a record or table rebuilt from the same runs gives the same p-value),
and fast; the tests check it against a paired bootstrap that resamples the same images for both
methods. Several normal classes (the natural datasets' one-vs-rest tasks) are averaged with their
variances summed as if independent (they share test images under other labels: an approximation).
Reading ``scores.csv`` beside each record in runs.csv is the one thing here not read from a record:
each is checked (:func:`con2.aggregate.score_files.read_run_scores`: numbers, labels, the row's test
counts and AUROC), and a bad one leaves its comparison undone with the reason in its row, never stops
the table.

Over seeds alone (:func:`paired_interval`: the budget bound, the combination study): a 95% t-interval
of the per-seed differences.

The marks: :data:`HOLDS` (†, a difference from the reference that holds after Holm) and
:data:`BEATS_FLOOR` (‡, above the floor), with the notes that explain them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.score_files import ScoresSource, expected_of_row, scores_file
from con2.maths.stats import LEVEL, delong_paired, holm, normal_interval, normal_sf, t_quantile
from con2.report.format import MISSING
from con2.report.methods import Methods, subject_of
from con2.report.select import headline, main_runs, report_block

ALPHA = 0.05
HOLDS = "†"  # Table 1's mark: a difference from the reference that holds after Holm
COLUMNS = [
    "dataset",
    "method",
    "score",
    "reference",
    "diff",
    "lo",
    "hi",
    "se",
    "p",
    "p_holm",
    "holds",
    "n_classes",
    "n_seeds",
    "seeds_min",
    "reason",
]


# ----------------------------------------------------------------------------- settings
def alpha(config: Mapping[str, Any]) -> float:
    """The family-wise error rate (``report.alpha``, default 0.05)."""
    return float((config.get("report") or {}).get("alpha", ALPHA))


def reference_pair(config: Mapping[str, Any], runs: pd.DataFrame, names: Methods) -> tuple[str, str] | None:
    """The reference ``(method, score)``: ``report.compare_to`` (``method`` or ``method/score``),
    default the subject; a method alone means its first headline score. ``None`` without one."""
    spec = str((config.get("report") or {}).get("compare_to") or names.subject or "")
    method, _, score = spec.partition("/")
    if not method:
        return None
    if score:
        return method, score
    scores = subject_of(config, runs, names, method=method).scores
    return (method, scores[0]) if scores else None


# ----------------------------------------------------------------------------- per-image scores
def _main(runs: pd.DataFrame, config: Mapping[str, Any]) -> pd.DataFrame:
    return main_runs(headline(runs), report_block(config))


def trains_nothing(runs: pd.DataFrame) -> bool:
    """Whether every run of ``runs`` (rows of runs.csv) trained nothing, as its record says: ``steps`` 0, or
    no ``steps`` and ``epochs`` 0 (a floor, a zero-shot method: ``max_steps: 0``). An external program's
    record, which states neither, is not known to train nothing."""
    if runs.empty:
        return False
    nan = pd.Series(np.nan, index=runs.index)
    steps = pd.to_numeric(runs.get("steps", nan), errors="coerce")
    epochs = pd.to_numeric(runs.get("epochs", nan), errors="coerce")
    return bool(((steps == 0) | (steps.isna() & (epochs == 0))).all())


def one_run_for_every_seed(runs: pd.DataFrame) -> bool:
    """Whether ``runs`` (one method's, one normal class) are one run that trained nothing
    (:func:`trains_nothing`): its seed changes nothing, so it is paired with every seed of the other
    method, whatever its name (``report.floors`` or not), as its identical runs on every seed would be."""
    return runs["seed"].nunique() == 1 and trains_nothing(runs)


def _seed_pairs(ref: pd.DataFrame, other: pd.DataFrame) -> list[tuple[pd.Series, pd.Series]]:
    """The (reference run, other run) pairs of one normal class: by seed, except that a side that is one
    run which trained nothing (:func:`one_run_for_every_seed`) is paired with every seed of the other."""
    ref_one, other_one = one_run_for_every_seed(ref), one_run_for_every_seed(other)
    if ref_one and other_one:
        return [(ref.iloc[0], other.iloc[0])]
    if ref_one:
        return [(ref.iloc[0], other[other["seed"] == s].iloc[0]) for s in sorted(set(other["seed"]))]
    if other_one:
        return [(ref[ref["seed"] == s].iloc[0], other.iloc[0]) for s in sorted(set(ref["seed"]))]
    seeds = sorted(set(ref["seed"]) & set(other["seed"]))
    return [(ref[ref["seed"] == s].iloc[0], other[other["seed"] == s].iloc[0]) for s in seeds]


def _paired_class(
    ref: pd.DataFrame,
    other: pd.DataFrame,
    ref_score: str,
    score: str,
    scores: ScoresSource,
) -> tuple[Any, str]:
    """:func:`~con2.maths.stats.delong_paired` of one normal class (a run per seed, paired as
    :func:`_seed_pairs` says), or ``(None, why)``."""
    pairs = _seed_pairs(ref, other)
    if not pairs:
        return None, "no seed run by both"
    labels, a, b = None, [], []
    for rr, ro in pairs:
        checked = [
            (row["record"], scores.test(row["record"], expected_of_row(row, col)))
            for row, col in ((rr, ref_score), (ro, score))
        ]
        for record, got in checked:
            if not got.found:
                return None, "no scores.csv beside a record"
            if got.frame is None:
                return None, f"{scores_file(record)} {got.problem}"
        sr, so = (got.frame for _, got in checked)
        assert sr is not None and so is not None  # checked above
        if not sr.index.equals(so.index) or not (sr["label"].to_numpy() == so["label"].to_numpy()).all():
            return None, "the two runs scored different test images"
        if labels is not None and not np.array_equal(labels, sr["label"].to_numpy()):
            return None, "the seeds scored different test images"
        labels = sr["label"].to_numpy()
        a.append(so[score].to_numpy(dtype=np.float64))
        b.append(sr[ref_score].to_numpy(dtype=np.float64))
    assert labels is not None  # seeds is not empty: the loop set it
    res = delong_paired(labels, np.stack(a), np.stack(b))
    return (res, "") if not res.reason else (None, res.reason)


def paired_over_classes(
    ref: pd.DataFrame,
    other: pd.DataFrame,
    ref_score: str,
    score: str,
    scores: ScoresSource,
) -> dict[str, Any]:
    """``other`` minus ``ref`` (rows of the run frame, one score each), paired per normal class and seed
    (:func:`_paired_class`: a side whose one run trained nothing pairs with every seed of the other), the
    classes averaged with their variances summed: ``diff``, ``lo``, ``hi``, ``se`` (AUROC percent), ``p``,
    ``n_classes``, ``n_seeds`` (the most seeds a class paired), ``seeds_min`` (the fewest) and ``reason``
    (why nothing was paired; "" otherwise)."""
    results, why, seeds, fewest = [], "", 0, 0
    for c in sorted(set(ref["normal_class"]) & set(other["normal_class"])):
        res, why_c = _paired_class(
            ref[ref["normal_class"] == c], other[other["normal_class"] == c], ref_score, score, scores
        )
        if res is None:
            why = why or f"class {c}: {why_c}"
            continue
        results.append(res)
        seeds, fewest = max(seeds, res.n_seeds), min(fewest or res.n_seeds, res.n_seeds)
    out: dict[str, Any] = {"n_classes": len(results), "n_seeds": seeds, "seeds_min": fewest, "reason": ""}
    if not results:
        out["reason"] = why or "no normal class run by both"
        return out
    diff = float(np.mean([r.diff for r in results]))
    se = math.sqrt(sum(r.se**2 for r in results)) / len(results)
    lo, hi = normal_interval(diff, se, LEVEL)
    p = 2 * normal_sf(abs(diff) / se) if se > 0 else (1.0 if diff == 0 else 0.0)
    return {**out, "diff": 100 * diff, "lo": 100 * lo, "hi": 100 * hi, "se": 100 * se, "p": p}


def compare(
    runs: pd.DataFrame,
    config: Mapping[str, Any],
    dataset: str,
    names: Methods,
    ref: tuple[str, str] | None = None,
    *,
    scores: ScoresSource,
) -> pd.DataFrame:
    """Every main (method, headline score) of ``dataset`` against the reference (``ref``, default
    ``report.compare_to``), paired on the per-image scores of ``scores`` (a table's: the aggregation's
    bundle): :data:`COLUMNS` (differences, intervals and standard errors in AUROC
    percent; ``holds``: Holm-adjusted p <= alpha). A method whose one run trained nothing (a floor), reference or
    not, is paired with every seed of the other (:func:`_seed_pairs`). ``names``: the caller's
    :class:`~con2.report.methods.Methods` (derived once, e.g. ``ReportInputs.names``)."""
    ref = ref or reference_pair(config, runs, names)
    sel = _main(runs[runs["dataset"] == dataset], config) if not runs.empty else runs
    if ref is None or sel.empty:
        return pd.DataFrame(columns=COLUMNS)
    ref_rows = sel[(sel["method"] == ref[0]) & (sel["score"] == ref[1])]
    pairs = sorted(
        {(m, s) for m, s in zip(sel["method"], sel["score"]) if (m, s) != ref}, key=lambda p: names.pair_key(*p)
    )
    rows = []
    for m, s in pairs:
        other = sel[(sel["method"] == m) & (sel["score"] == s)]
        result = paired_over_classes(ref_rows, other, ref[1], s, scores)
        if ref_rows.empty:
            result["reason"] = f"no run of the reference {names.pair_label(*ref)}"
        rows.append({"dataset": dataset, "method": m, "score": s, "reference": f"{ref[0]}/{ref[1]}", **result})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["p_holm"] = holm(frame["p"].to_numpy(dtype=np.float64)) if len(frame) else []
    frame["holds"] = (frame["p_holm"] <= alpha(config)).astype(bool)
    return frame


def p_text(p: float) -> str:
    """A p-value as a cell: ``<0.001``, three decimals, or :data:`~con2.report.format.MISSING`."""
    if p is None or not np.isfinite(p):
        return MISSING
    return "<0.001" if p < 0.001 else f"{p:.3f}"


# ----------------------------------------------------------------------------- over seeds
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


# ----------------------------------------------------------------------------- the marks (Table 1, natural summary)
def holding_marks(
    runs: pd.DataFrame, config: Mapping[str, Any], datasets: list[str], scores: ScoresSource, names: Methods
) -> dict[tuple[str, str, str], str]:
    """``{(dataset, method, score): "†"}`` for each difference from the reference that holds after Holm."""
    if runs is None or runs.empty:
        return {}
    marks = {}
    for d in datasets:
        frame = compare(runs, config, d, names, scores=scores)
        for r in frame[frame["holds"]].to_dict("records"):
            marks[(d, r["method"], r["score"])] = HOLDS
    return marks


BEATS_FLOOR = "‡"  # Table 1's mark: above the floor (report.floors) after Holm


def floor_marks(
    runs: pd.DataFrame, config: Mapping[str, Any], datasets: list[str], scores: ScoresSource, names: Methods
) -> tuple[dict[tuple[str, str, str], str], str]:
    """``({(dataset, method, score): "‡"}, note)``: each method above the first floor of ``report.floors``
    on the same test images after Holm (over the floor's comparisons on that dataset); the floor trains
    nothing, so its one run is paired with every seed of the other. ``({}, "")`` without a floor run."""
    if runs is None or runs.empty:
        return {}, ""
    floors = [f for f in names.floors if f in set(runs["method"])]
    if not floors:
        return {}, ""
    floor_scores = subject_of(config, runs, names, method=floors[0]).scores
    if not floor_scores:
        return {}, ""
    ref = (floors[0], floor_scores[0])
    marks = {}
    for d in datasets:
        frame = compare(runs, config, d, names, ref, scores=scores)
        for r in frame[frame["holds"] & (frame["diff"] > 0)].to_dict("records"):
            if r["method"] not in names.floors:
                marks[(d, r["method"], r["score"])] = BEATS_FLOOR
    note = (
        f"{BEATS_FLOOR}: above the floor, {names.pair_label(*ref)}, which trains nothing, on the same test images "
        f"after Holm's correction (DeLong's paired test, α = {alpha(config):g}; the floor's one run paired with "
        "every seed); a cell without it has not been shown to beat doing nothing."
    )
    return marks, note


def mark_note(config: Mapping[str, Any], runs: pd.DataFrame, names: Methods) -> str:
    """The note under a table that carries :data:`HOLDS`."""
    ref = reference_pair(config, runs, names)
    label = names.pair_label(*ref) if ref else "the reference"
    return (
        f"{HOLDS}: differs from {label} on the same test images after Holm's correction (DeLong's paired test, "
        f"α = {alpha(config):g}; the comparisons tables)."
    )


# ----------------------------------------------------------------------------- the paper's number
def inside_text(paper_mean: float, lo: float, hi: float) -> str:
    """``"inside"`` / ``"outside"`` our interval, or ``""`` when there is none."""
    if not (np.isfinite(lo) and np.isfinite(hi) and np.isfinite(paper_mean)):
        return ""
    return "inside" if lo <= paper_mean <= hi else "outside"
