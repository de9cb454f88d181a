"""Uncertainty of AUROCs: DeLong intervals, DeLong's paired test over seeds, Holm, intervals of a mean.

Pure functions on NumPy arrays (no torch, no pandas). AUROCs here are fractions in [0, 1]; the
records and tables print percent (x 100). Anomalies are the positive class, higher score = more
anomalous, ties count one half (the Mann-Whitney convention scikit-learn's ``roc_auc_score`` uses).

* :func:`delong_components`: the AUROC of one or several scorers on the same test images and
  DeLong's structural components, by the fast midrank algorithm of Sun & Xu (2014),
  ``O(N log N)`` per scorer instead of the ``O(m n)`` definition.
* :func:`delong_auc_variance` / :func:`delong_interval`: one run's AUROC, its variance and a 95%
  Wald interval on the AUROC scale, clipped to [0, 1] (pROC's ``ci.auc(method = "delong")``).
* :func:`delong_paired`: method A against method B on the same test images over one or several
  seeds: the difference of the seed means, its variance from DeLong's covariance of all 2S AUROCs
  (each seed of each method is one scorer of the same images, so the seeds' correlation through
  the shared test set is counted, not assumed away), plus the spread of the per-seed differences
  over seeds (training randomness; none with one seed), a 95% interval and a two-sided p-value.
* :func:`holm`: Holm's step-down adjustment of a family of p-values.
* :func:`mean_interval`: the t-interval of a mean over seeds (Welch's over several classes).
* :func:`normal_quantile`, :func:`normal_sf`, :func:`t_quantile`, :func:`t_sf`, :func:`beta_quantile`: scipy.stats'
  ``norm``, ``t`` and ``beta``
  through the ``scipy.special`` functions they call (a table job then never imports scipy.stats).

Degenerate inputs (a class with no image, fewer than two of a class for a variance, all scores
tied: :data:`TIED`) give NaNs and a ``reason``, never an exception, so one odd run does not stop a table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np

LEVEL = 0.95
# Why an interval is undefined although both classes have images: DeLong's variance is zero inside
# (0, 1) only when every positive and every negative compare alike (all scores tied: AUROC 0.5), and
# a zero-width interval there would claim certainty about a scorer that ranks nothing. (At 0 or 1,
# a perfect separation, the zero width is the Wald interval's known degenerate case and is kept.)
TIED = "zero DeLong variance inside (0, 1) (every score tied): the interval is undefined"


def midranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks of ``x`` ``[N]`` with ties given the mean of the ranks they span (``[N]`` float)."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    n = len(x)
    ranks = np.empty(n, dtype=np.float64)
    # run boundaries of equal values: each run of ranks i+1..j gets (i + 1 + j) / 2
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    ends = np.r_[starts[1:], n]
    mid = (starts + 1 + ends) / 2.0
    ranks[order] = np.repeat(mid, ends - starts)
    return ranks


@dataclass(frozen=True)
class Components:
    """AUROCs and DeLong's structural components of ``k`` scorers on the same ``m`` positives and
    ``n`` negatives.

    Attributes:
        auc: ``[k]`` AUROCs in [0, 1].
        v10: ``[k, m]`` per positive: the fraction of negatives it outscores (ties 1/2).
        v01: ``[k, n]`` per negative: the fraction of positives that outscore it (ties 1/2).
    """

    auc: np.ndarray
    v10: np.ndarray
    v01: np.ndarray

    def covariance(self) -> np.ndarray:
        """``[k, k]`` DeLong covariance of the AUROCs: ``S10 / m + S01 / n`` (sample covariances,
        ``ddof = 1``); NaN when a class has fewer than two images."""
        m, n = self.v10.shape[1], self.v01.shape[1]
        k = len(self.auc)
        if m < 2 or n < 2:
            return np.full((k, k), np.nan)
        s10 = np.atleast_2d(np.cov(self.v10, ddof=1))
        s01 = np.atleast_2d(np.cov(self.v01, ddof=1))
        return s10 / m + s01 / n


def delong_components(scores_pos: np.ndarray, scores_neg: np.ndarray) -> Components:
    """Sun & Xu's fast DeLong: AUROCs and structural components of ``k`` scorers.

    Args:
        scores_pos: ``[m]`` or ``[k, m]`` scores of the positives (anomalies), higher = more anomalous.
        scores_neg: ``[n]`` or ``[k, n]`` scores of the negatives (normal images), same scorers.

    Returns:
        :class:`Components` (``k = 1`` for 1-D inputs). ``ValueError`` if a class is empty.
    """
    pos = np.atleast_2d(np.asarray(scores_pos, dtype=np.float64))
    neg = np.atleast_2d(np.asarray(scores_neg, dtype=np.float64))
    if pos.shape[0] != neg.shape[0]:
        raise ValueError(f"{pos.shape[0]} scorers of the positives but {neg.shape[0]} of the negatives")
    k, m = pos.shape
    n = neg.shape[1]
    if m == 0 or n == 0:
        raise ValueError("an AUROC needs at least one positive and one negative")
    v10 = np.empty((k, m))
    v01 = np.empty((k, n))
    auc = np.empty(k)
    for r in range(k):
        tx, ty = midranks(pos[r]), midranks(neg[r])
        tz = midranks(np.concatenate([pos[r], neg[r]]))
        auc[r] = (tz[:m].sum() - m * (m + 1) / 2.0) / (m * n)
        v10[r] = (tz[:m] - tx) / n
        v01[r] = 1.0 - (tz[m:] - ty) / m
    return Components(auc, v10, v01)


@dataclass(frozen=True)
class AucInterval:
    """One AUROC (fraction) with its DeLong standard error and interval; NaNs and a reason when undefined."""

    auc: float
    se: float
    lo: float
    hi: float
    reason: str = ""

    def percent(self) -> dict[str, float]:
        """``{"lo", "hi", "se"}`` in percent (what a record stores beside the AUROC)."""
        return {"lo": 100.0 * self.lo, "hi": 100.0 * self.hi, "se": 100.0 * self.se}


def _special() -> ModuleType:
    """scipy.special, imported on the first call that needs it: its import (0.15-0.3 s, measured in a table job's
    start-up) is paid only by a process that computes an interval or a p-value, never by a table without one."""
    import scipy.special  # lazy: see the docstring

    return scipy.special


def normal_quantile(q: float) -> float:
    """The ``q`` quantile of the standard normal (``scipy.stats.norm.ppf``, which calls this function)."""
    return float(_special().ndtri(q))


def normal_sf(x: float) -> float:
    """``P(Z > x)`` for a standard normal ``Z`` (``scipy.stats.norm.sf``)."""
    return float(_special().ndtr(-x))


def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t with ``df`` degrees of freedom (``scipy.stats.t.ppf``: its
    infinite ends at ``q`` = 0 and 1 too, where ``stdtrit`` says +inf for both)."""
    if q in (0.0, 1.0):
        return math.copysign(math.inf, q - 0.5)
    return float(_special().stdtrit(df, q))


def t_sf(x: float, df: float) -> float:
    """``P(T > x)`` for Student's t with ``df`` degrees of freedom (``scipy.stats.t.sf``)."""
    return float(_special().stdtr(df, -x))


def beta_quantile(q: float, a: float, b: float) -> float:
    """The ``q`` quantile of the Beta(``a``, ``b``) distribution (``scipy.stats.beta.ppf``)."""
    return float(_special().betaincinv(a, b, q))


def _z(level: float) -> float:
    return normal_quantile(0.5 + level / 2.0)


def delong_auc_variance(scores_pos: np.ndarray, scores_neg: np.ndarray) -> tuple[float, float]:
    """``(auc, variance)`` of one scorer by DeLong (fractions; variance NaN with fewer than two of a
    class, both NaN with a class empty).

    Args:
        scores_pos: ``[m]`` anomalies' scores. scores_neg: ``[n]`` normal images' scores.
    """
    pos, neg = np.ravel(scores_pos), np.ravel(scores_neg)
    if len(pos) == 0 or len(neg) == 0:
        return math.nan, math.nan
    comp = delong_components(pos, neg)
    return float(comp.auc[0]), float(comp.covariance()[0, 0])


def delong_interval(scores_pos: np.ndarray, scores_neg: np.ndarray, level: float = LEVEL) -> AucInterval:
    """One run's AUROC with its DeLong interval ``auc ± z se`` clipped to [0, 1] (fractions).

    Args:
        scores_pos: ``[m]`` anomalies' scores. scores_neg: ``[n]`` normal images' scores.
    """
    pos, neg = np.ravel(scores_pos), np.ravel(scores_neg)
    if len(pos) == 0 or len(neg) == 0:
        return AucInterval(math.nan, math.nan, math.nan, math.nan, "no anomalous or no normal test image")
    auc, var = delong_auc_variance(pos, neg)
    if not np.isfinite(var):
        return AucInterval(auc, math.nan, math.nan, math.nan, "fewer than two images of a class: no variance")
    if var <= 0.0 and 0.0 < auc < 1.0:  # every image compares the same way: all scores tied, nothing ranked
        return AucInterval(auc, math.nan, math.nan, math.nan, TIED)
    se = math.sqrt(max(var, 0.0))
    half = _z(level) * se
    return AucInterval(auc, se, max(0.0, auc - half), min(1.0, auc + half))


def split_by_label(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(scores of label 1, scores of label 0)`` along the last axis (``scores`` ``[N]`` or ``[k, N]``)."""
    y = np.asarray(labels).astype(np.int64)
    s = np.asarray(scores, dtype=np.float64)
    return s[..., y == 1], s[..., y == 0]


def auroc_interval(labels: np.ndarray, scores: np.ndarray, level: float = LEVEL) -> AucInterval:
    """:func:`delong_interval` of ``scores`` ``[N]`` against ``labels`` ``[N]`` (1 = anomaly)."""
    return delong_interval(*split_by_label(labels, scores), level=level)


@dataclass(frozen=True)
class Paired:
    """Method A minus method B on the same test images, averaged over seeds (fractions).

    Attributes:
        diff: mean over seeds of ``AUROC_A - AUROC_B``.
        se: its standard error: ``sqrt(var_images + var_seeds)``.
        var_images: DeLong's variance of the seed-mean difference (test images resampled).
        var_seeds: the sample variance of the per-seed differences over ``n_seeds`` (0 with one seed).
        lo, hi: the ``level`` interval ``diff ± z se``.
        p: two-sided p-value of ``diff = 0`` (normal approximation).
        n_seeds: seeds paired.
        reason: why the numbers are NaN, if they are.
    """

    diff: float
    se: float
    var_images: float
    var_seeds: float
    lo: float
    hi: float
    p: float
    n_seeds: int
    reason: str = ""


def delong_paired(
    labels: Sequence[np.ndarray] | np.ndarray,
    scores_a: Sequence[np.ndarray] | np.ndarray,
    scores_b: Sequence[np.ndarray] | np.ndarray,
    level: float = LEVEL,
    seed_spread: bool = True,
) -> Paired:
    """DeLong's paired test of two methods on the same test images, over ``S`` seeds.

    Seed ``s`` of A and of B must score the same images in the same order; every seed must share
    one test set (the variance treats all ``2 S`` AUROCs as scorers of the same images).

    Args:
        labels: ``[N]`` (1 = anomaly), or one ``[N]`` per seed (all equal).
        scores_a, scores_b: ``[N]`` (one seed) or ``[S, N]`` per-image scores of A and B.
        seed_spread: add the variance over seeds of the per-seed differences divided by ``S``
            (training randomness, which the images' resampling does not see).

    Returns:
        :class:`Paired`; NaNs with a reason when a class has fewer than two images.
    """
    a = np.atleast_2d(np.asarray(scores_a, dtype=np.float64))
    b = np.atleast_2d(np.asarray(scores_b, dtype=np.float64))
    lab = np.asarray(labels)
    y = lab[0] if lab.ndim == 2 else lab
    if lab.ndim == 2 and not (lab == y).all():
        raise ValueError("every seed must share the same test labels")
    if a.shape != b.shape or a.shape[1] != len(y):
        raise ValueError(f"scores of shapes {a.shape} and {b.shape} for {len(y)} labels")
    s = a.shape[0]
    nan = math.nan
    pos_a, neg_a = split_by_label(y, a)
    pos_b, neg_b = split_by_label(y, b)
    if pos_a.shape[1] < 2 or neg_a.shape[1] < 2:
        return Paired(nan, nan, nan, nan, nan, nan, nan, s, "fewer than two images of a class")
    comp = delong_components(np.vstack([pos_a, pos_b]), np.vstack([neg_a, neg_b]))
    contrast = np.r_[np.full(s, 1.0 / s), np.full(s, -1.0 / s)]
    var_images = float(contrast @ comp.covariance() @ contrast)
    per_seed = comp.auc[:s] - comp.auc[s:]
    diff = float(per_seed.mean())
    var_seeds = float(per_seed.var(ddof=1) / s) if seed_spread and s > 1 else 0.0
    var = max(var_images, 0.0) + var_seeds
    se = math.sqrt(var)
    half = _z(level) * se
    if se > 0:
        p = 2.0 * normal_sf(abs(diff) / se)
    else:
        p = 1.0 if diff == 0 else 0.0
    return Paired(diff, se, var_images, var_seeds, diff - half, diff + half, p, s)


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values ``[k]`` (same order as given; NaNs stay NaN and do not count).

    Sorted ascending, the i-th smallest (0-based) of ``k`` gets ``max_{j <= i} min(1, (k - j) p_(j))``;
    a hypothesis is rejected at level alpha iff its adjusted p-value is <= alpha.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    k = len(ok)
    if not k:
        return out
    order = ok[np.argsort(p[ok], kind="mergesort")]
    adjusted = np.minimum(1.0, (k - np.arange(k)) * p[order])
    out[order] = np.maximum.accumulate(adjusted)
    return out


@dataclass(frozen=True)
class MeanInterval:
    """The interval of a mean over seeds (same unit as the values); NaNs and a reason when undefined."""

    mean: float
    lo: float
    hi: float
    df: float
    reason: str = ""


def mean_interval(groups: Sequence[Sequence[float]], level: float = LEVEL) -> MeanInterval:
    """The t-interval of the mean over classes of per-class means over seeds.

    ``groups``: per normal class the values of its seeds. One class: ``mean ± t_{S-1} s / sqrt(S)``.
    Several: ``se^2 = sum_c s_c^2 / (S_c C^2)`` with Welch-Satterthwaite degrees of freedom. Undefined
    (NaN) when a class has a single seed: one run says nothing about the spread over seeds.
    """
    vals = [np.asarray(g, dtype=np.float64) for g in groups if len(g)]
    return seed_mean_interval(
        [float(v.mean()) for v in vals],
        [float(v.std(ddof=1)) if len(v) > 1 else math.nan for v in vals],
        [len(v) for v in vals],
        level,
    )


def seed_mean_interval(
    means: Sequence[float], stds: Sequence[float], ns: Sequence[int], level: float = LEVEL
) -> MeanInterval:
    """:func:`mean_interval` from each normal class's seeds ``[C]``: the mean over its seeds, their sample std
    (``ddof = 1``) and their count (the columns ``mean``, ``std``, ``n`` of one metric in summary.csv)."""
    c = len(means)
    if not c:
        return MeanInterval(math.nan, math.nan, math.nan, math.nan, "no run")
    mean = float(np.mean(means))
    ns_arr = np.asarray(ns, dtype=np.float64)
    sd = np.asarray(stds, dtype=np.float64)
    if ns_arr.min() < 2 or not np.all(np.isfinite(sd)):
        return MeanInterval(mean, math.nan, math.nan, math.nan, "a single seed: no spread over seeds")
    parts = sd * sd / (ns_arr * c * c)
    dfs = ns_arr - 1
    se2 = float(parts.sum())
    if se2 == 0:
        return MeanInterval(mean, mean, mean, float(dfs.sum()))
    df = float(se2 * se2 / np.sum(parts * parts / dfs)) if c > 1 else float(dfs[0])
    half = t_quantile(0.5 + level / 2.0, df) * math.sqrt(se2)
    return MeanInterval(mean, mean - half, mean + half, df)


def normal_interval(mean: float, se: float, level: float = LEVEL) -> tuple[float, float]:
    """``mean ± z se``."""
    half = _z(level) * se
    return mean - half, mean + half
