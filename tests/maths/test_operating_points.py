"""Operating points (con2.maths.operating) against slow, obviously correct references written here:
AP against scikit-learn, the 95%-specificity point and the validation threshold against a brute-force
sweep of every threshold, Clopper-Pearson against scipy's exact binomial test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.metrics import average_precision_score, roc_curve

from con2.maths.operating import (
    average_precision,
    average_precision_of,
    clopper_pearson,
    fpr_at_tpr,
    normal_quantile,
    operating_points,
    rates_at,
    resampled_average_precision,
)


def scored(seed: int, n0: int, n1: int, ties: bool) -> tuple[np.ndarray, np.ndarray]:
    """Labels ``[n0 + n1]`` and scores, anomalies shifted up; ``ties``: scores rounded to few values."""
    rng = np.random.default_rng(seed)
    scores = np.concatenate([rng.normal(0, 1, n0), rng.normal(1, 1, n1)])
    if ties:
        scores = np.round(scores * 2) / 2
    labels = np.concatenate([np.zeros(n0, int), np.ones(n1, int)])
    perm = rng.permutation(n0 + n1)
    return labels[perm], scores[perm]


CASES = [(seed, n0, n1, ties) for seed in range(4) for n0, n1 in ((114, 42), (20, 3), (7, 50)) for ties in (0, 1)]


@pytest.mark.parametrize(("seed", "n0", "n1", "ties"), CASES)
def test_average_precision_equals_scikit_learn(seed: int, n0: int, n1: int, ties: bool) -> None:
    labels, scores = scored(seed, n0, n1, ties)
    ours = average_precision_of(scores[labels == 0][None], scores[labels == 1][None])[0]
    assert ours == pytest.approx(average_precision_score(labels, scores), abs=1e-12)
    ap = average_precision(labels, scores)
    assert ap["ap"] == pytest.approx(100 * average_precision_score(labels, scores), abs=1e-10)
    assert ap["lo"] <= ap["ap"] <= ap["hi"]


@pytest.mark.parametrize("ties", [False, True])
def test_the_ap_interval_is_a_stratified_bootstrap_and_repeats(ties: bool) -> None:
    """The interval is the 2.5/97.5% quantiles of AP over resamples drawn within each class (a slow loop
    with scikit-learn here; ``ties``: scores on few values, so a resample's repeats and ties share steps), and
    the same scores give the same interval."""
    labels, scores = scored(7, 60, 25, ties)
    normal, anomalous = scores[labels == 0], scores[labels == 1]
    rng = np.random.default_rng(0)
    n_idx = rng.integers(0, normal.size, (1000, normal.size))
    a_idx = rng.integers(0, anomalous.size, (1000, anomalous.size))
    slow = [
        average_precision_score(
            np.r_[np.zeros(normal.size), np.ones(anomalous.size)], np.r_[normal[n_idx[b]], anomalous[a_idx[b]]]
        )
        for b in range(1000)
    ]
    lo, hi = np.quantile(slow, [0.025, 0.975])
    ap = average_precision(labels, scores)
    assert (ap["lo"], ap["hi"]) == pytest.approx((100 * lo, 100 * hi), abs=1e-9)
    assert average_precision(labels, scores) == ap


@pytest.mark.parametrize(("seed", "n0", "n1", "ties"), CASES)
def test_resampled_ap_counts_equal_sorting_each_resample(seed: int, n0: int, n1: int, ties: bool) -> None:
    """The counting form gives, resample by resample, the AP of the resampled scores themselves."""
    labels, scores = scored(seed, n0, n1, ties)
    normal, anomalous = scores[labels == 0], scores[labels == 1]
    rng = np.random.default_rng(seed)
    n_idx, a_idx = rng.integers(0, n0, (230, n0)), rng.integers(0, n1, (230, n1))  # 230: a partial last block
    slow = average_precision_of(normal[n_idx], anomalous[a_idx])
    assert resampled_average_precision(normal, anomalous, n_idx, a_idx) == pytest.approx(slow, abs=1e-12)


def brute_force_best(labels: np.ndarray, scores: np.ndarray, specificity: float) -> tuple[float, float]:
    """(sensitivity, specificity) of the best threshold: every candidate (each score, and below all), flag
    strictly above; the highest sensitivity among those keeping ``specificity``, then the highest specificity."""
    best = (-1.0, -1.0)
    for t in [-math.inf, *sorted(set(scores.tolist()))]:
        spec = float(np.mean(scores[labels == 0] <= t))
        sens = float(np.mean(scores[labels == 1] > t))
        if spec >= specificity - 1e-12:
            best = max(best, (sens, spec))
    return best


@pytest.mark.parametrize(("seed", "n0", "n1", "ties"), CASES)
def test_the_95_percent_specificity_point_is_the_best_threshold_of_a_sweep(seed, n0, n1, ties) -> None:
    labels, scores = scored(seed, n0, n1, ties)
    point = operating_points(labels, scores)["at_specificity"]
    sens, spec = brute_force_best(labels, scores, 0.95)
    assert point["sensitivity"] == pytest.approx(100 * sens)
    assert point["specificity"] == pytest.approx(100 * spec)
    # the threshold reported gives exactly these rates when applied by hand
    t = point["threshold"]
    assert np.mean(scores[labels == 1] > t) == pytest.approx(sens)


def brute_force_fpr_at_tpr(labels: np.ndarray, scores: np.ndarray, tpr: float) -> tuple[float, float]:
    """(FPR, TPR) of the sweep: every candidate threshold, flag at or above it; the highest threshold whose
    TPR reaches ``tpr`` (the lowest FPR among them)."""
    for t in sorted(set(scores.tolist()), reverse=True):
        sens = float(np.mean(scores[labels == 1] >= t))
        if sens >= tpr - 1e-12:
            return float(np.mean(scores[labels == 0] >= t)), sens
    raise AssertionError("unreachable: the lowest score flags every anomaly")


@pytest.mark.parametrize(("seed", "n0", "n1", "ties"), CASES)
def test_fpr_at_95_tpr_is_the_sweeps_and_scikit_learns(seed, n0, n1, ties) -> None:
    labels, scores = scored(seed, n0, n1, ties)
    point = operating_points(labels, scores)["fpr_at_tpr"]
    fpr, tpr = brute_force_fpr_at_tpr(labels, scores, 0.95)
    assert (point["fpr"], point["tpr"]) == pytest.approx((100 * fpr, 100 * tpr))
    # scikit-learn's ROC curve (anomalies positive): the FPR at its first point with TPR >= 95%
    fprs, tprs, _ = roc_curve(labels, scores)
    assert point["fpr"] == pytest.approx(100 * fprs[np.argmax(tprs >= 0.95 - 1e-12)])
    k = round(fpr * n0)
    assert (point["fpr_lo"], point["fpr_hi"]) == pytest.approx(tuple(100 * x for x in clopper_pearson(k, n0)))


def test_fpr_at_tpr_of_a_perfect_and_a_reversed_score() -> None:
    labels = np.array([0, 0, 0, 0, 1, 1])
    assert fpr_at_tpr(labels, np.array([0.0, 1, 2, 3, 4, 5]))["fpr"] == 0.0
    assert fpr_at_tpr(labels, np.array([5.0, 4, 3, 2, 1, 0]))["fpr"] == 100.0


@pytest.mark.parametrize(("seed", "n_val"), [(s, n) for s in range(3) for n in (1, 19, 20, 21, 78, 300)])
def test_the_validation_threshold_is_the_smallest_keeping_95_percent_of_its_normals(seed, n_val) -> None:
    """Brute force: the smallest validation score with at least 95% of the validation normals at or below it."""
    rng = np.random.default_rng(seed)
    val = np.round(rng.normal(0, 1, n_val), 1)  # ties included
    keeps = [v for v in sorted(set(val.tolist())) if np.mean(val <= v) >= 0.95 - 1e-12]
    assert normal_quantile(val) == min(keeps)
    labels, scores = scored(seed, 50, 20, False)
    out = operating_points(labels, scores, validation_normal=val)["from_validation"]
    t = min(keeps)
    assert out["threshold"] == t
    assert out["sensitivity"] == pytest.approx(100 * np.mean(scores[labels == 1] > t))
    assert out["specificity"] == pytest.approx(100 * np.mean(scores[labels == 0] <= t))


@pytest.mark.parametrize(("k", "n"), [(0, 10), (1, 10), (5, 10), (10, 10), (41, 42), (3, 114), (57, 300)])
def test_clopper_pearson_equals_scipys_exact_binomial_interval(k: int, n: int) -> None:
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert clopper_pearson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_rates_carry_their_exact_intervals_in_percent() -> None:
    labels = np.array([0] * 10 + [1] * 4)
    scores = np.array([0.0] * 9 + [5.0] + [1.0, 4.5, 6.0, 7.0])
    r = rates_at(labels, scores, 4.0)  # flags 3 of 4 anomalies and 1 of 10 normals
    assert (r["sensitivity"], r["specificity"]) == (75.0, 90.0)
    sens = binomtest(3, 4).proportion_ci(method="exact")
    spec = binomtest(9, 10).proportion_ci(method="exact")
    assert (r["sensitivity_lo"], r["sensitivity_hi"]) == pytest.approx((100 * sens.low, 100 * sens.high))
    assert (r["specificity_lo"], r["specificity_hi"]) == pytest.approx((100 * spec.low, 100 * spec.high))


def test_a_dataset_without_validation_normals_has_no_validation_threshold() -> None:
    labels, scores = scored(0, 30, 10, False)
    assert operating_points(labels, scores)["from_validation"] is None
    assert operating_points(labels, scores, validation_normal=np.array([]))["from_validation"] is None


@pytest.mark.parametrize(
    ("labels", "scores", "needle"),
    [
        ([0, 1, 1], [0.1, float("nan"), 0.3], "non-finite"),
        ([0, 2, 1], [0.1, 0.2, 0.3], r"0 \(normal\) or 1"),
        ([1, 1, 1], [0.1, 0.2, 0.3], "both normal"),
        ([0, 1], [0.1, 0.2, 0.3], "one length"),
    ],
)
def test_bad_scores_are_refused_with_the_reason(labels, scores, needle) -> None:
    with pytest.raises(ValueError, match=needle):
        average_precision(np.array(labels), np.array(scores))
