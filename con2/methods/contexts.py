"""CON2's two assumptions about a context augmentation t_C, measured on normal images, and the
rule of CON2 (Best) that picks a context by them.

The paper (Ryser et al., TMLR 2025) explains a context's failures by two assumptions: the
normal images x and their contexts t_C(x) must be *distinguishable* (otherwise L_Context has
nothing to learn), and t_C must keep the relations between images (*aligned*: what is near in x
stays near in t_C(x), so content learned on one context transfers to the other). Its CON2 (Best)
row picks, per normal class, the context that "satisfies alignment and distinctiveness better",
without saying how that was judged. Here both are measured, from normal training images only
(no anomaly is ever seen), in one fixed feature space: the global-pooled output of the encoder
CON2 trains (ResNet18, CIFAR stem at small sizes) at its random initialisation, seeded.

* :func:`distinctiveness`: the cross-validated AUROC (%) of a logistic regression telling
  features of x from features of t_C(x); folds keep each pair together, so a context equal to the
  identity scores exactly 50 and a perfectly separable one 100.
* :func:`alignment`: the Spearman correlation between the pairwise Euclidean distances of the
  features of x and those of t_C(x) (1: the same ordering of every pair); undefined (NaN) where
  either set of distances is constant (e.g. constant images: every pair equally far apart).
* :func:`choose_context`: the rule (:data:`DISTINCT_MIN`): the most aligned context among those
  whose distinctiveness reaches the threshold; if none does, the most distinctive one. Where a
  measure is undefined the data give no basis to choose (:class:`NoBasisToChoose`), rather than a
  choice by list order.

Why random encoder features rather than pixels: on pixels, invert (x -> 1 - x) and flip (a
permutation of pixels) preserve every Euclidean distance, so pixel alignment is 1 for both by
construction and cannot tell them apart; a network's features react to what the transform does to
local structure and intensity, as the trained encoder will. Why random rather than trained: the
choice must be made before training, the same for every method and seed, and a fixed seed makes it
reproducible.

Example:
    >>> import numpy as np
    >>> x = np.random.default_rng(0).random((40, 1, 16, 16)).astype(np.float32)
    >>> m = measure_context(x, "flip", seed=0)
    >>> sorted(m)
    ['alignment', 'context', 'distinctiveness']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from con2.config import MAX_SEED
from con2.training.device import cpu_threads
from con2.training.models import build_encoder
from con2.transforms.augment import BASE_CONTEXTS, context_fn, normalize

# A context is eligible when a linear probe on random features tells t_C(x) from x with AUROC of
# at least this (%): the midpoint between chance (50) and perfect separation (100). Chosen a
# priori, not tuned on any dataset's AUROCs: the paper only says the context must be
# distinguishable; above the midpoint the contexts are told apart more often than not confused.
DISTINCT_MIN = 75.0
MAX_IMAGES = 200  # normal images measured (drawn with the seed): 400 probe examples, 19,900 distance pairs
N_ENCODERS = 3  # random encoders averaged: one encoder's invert alignment varies by +-0.1 with its seed
FEATURE_WIDTH = 16  # ResNet18 stage widths (16, 32, 64, 128): 128-d features per encoder
FEATURE_SIZE = 24  # every image is resized to this side before the encoders (one cost per dataset)

ArrayFn = Callable[[np.ndarray], np.ndarray]


class NoBasisToChoose(ValueError):
    """A measure the rule of CON2 (Best) compares is undefined on these images: no context is chosen."""

    def __init__(self, message: str, measures: Sequence[dict[str, float | str]] = ()) -> None:
        super().__init__(message)
        self.measures = list(measures)


def check_seed(seed: int) -> int:
    """``seed`` if it is a NumPy seed (0..:data:`con2.config.MAX_SEED`; NumPy refuses a negative one), else
    ``ValueError``."""
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed {seed} is outside 0..{MAX_SEED}")
    return seed


@dataclass(frozen=True)
class ContextMeasure:
    """Both assumptions of one context on one set of normal images."""

    context: str
    distinctiveness: float  # AUROC (%) of x vs t_C(x); 50 = indistinguishable
    alignment: float  # Spearman rho of pairwise distances of x and of t_C(x); 1 = aligned

    def as_dict(self) -> dict[str, float | str]:
        return asdict(self)


def _check_images(x: np.ndarray, name: str = "images") -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 4 or x.shape[0] < 4:
        raise ValueError(f"{name} must be an array [n >= 4, c, h, w], got shape {x.shape}")
    if not np.issubdtype(x.dtype, np.floating) or x.min() < 0 or x.max() > 1:
        raise ValueError(f"{name} must be float in [0, 1]")
    return x.astype(np.float32, copy=False)


def quantize(x: np.ndarray) -> np.ndarray:
    """Float images in [0, 1] rounded to the 256 levels of uint8 (what CON2 trains on), same shape."""
    return (np.rint(x * 255) / 255).astype(np.float32)


def apply_context(x: np.ndarray, name: str) -> np.ndarray:
    """t_C of float images ``[n, c, h, w]`` in [0, 1] (quantised to uint8 as CON2 applies it) -> same shape."""
    x = _check_images(x)
    u8 = torch.from_numpy(np.rint(x * 255).astype(np.uint8))
    return (context_fn(name)(u8).float() / 255.0).numpy()


def subsample(n: int, k: int, seed: int) -> np.ndarray:
    """Sorted indices of ``min(n, k)`` of ``n`` items, drawn with ``seed`` (all of them if ``n <= k``)."""
    if n <= k:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=k, replace=False))


def random_features(
    x: np.ndarray, xc: np.ndarray, seed: int = 0, encoders: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Features of x and of t_C(x) (float ``[n, c, h, w]`` in [0, 1] each) from ``encoders`` randomly
    initialised ResNet18s (seeds ``seed * 1000 + i``; default :data:`N_ENCODERS`): a list of
    ``(f [n, d], fc [n, d])``, one pair per encoder.

    Both sets pass through each encoder as one batch with BatchNorm normalising by that batch's
    statistics (train mode, no gradient, nothing kept): at initialisation a deep random network
    without normalisation collapses most images onto a few directions, and normalising by x and
    t_C(x) together keeps whatever tells them apart. Grayscale is repeated to 3 channels and every
    image resized to :data:`FEATURE_SIZE` (so every dataset is measured at one cost)."""

    x, xc = _check_images(x), _check_images(xc, "t_C(x)")
    if x.shape != xc.shape:
        raise ValueError(f"x {x.shape} and t_C(x) {xc.shape} differ in shape")
    t = torch.from_numpy(np.concatenate([x, xc]))
    t = t.expand(-1, 3, -1, -1) if t.shape[1] == 1 else t
    if t.shape[-2:] != (FEATURE_SIZE, FEATURE_SIZE):
        t = torch.nn.functional.interpolate(t, size=(FEATURE_SIZE, FEATURE_SIZE), mode="bilinear", antialias=True)
    t = normalize(t)
    out = []
    for i in range(encoders or N_ENCODERS):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed * 1000 + i)
            enc = build_encoder("resnet18", FEATURE_SIZE, width=FEATURE_WIDTH).train()
        with torch.no_grad():
            feats = enc(t).numpy().astype(np.float64)
        out.append((feats[: len(x)], feats[len(x) :]))
    return out


def distinctiveness(f: np.ndarray, fc: np.ndarray, seed: int = 0, folds: int = 5) -> float:
    """AUROC (%) of telling ``fc`` (t_C(x)) from ``f`` (x), both ``[n, d]`` in the same row order.

    A standardised linear probe (a ridge regression of the labels, penalty = the feature dimension:
    closed form, fast), out-of-fold decision values over ``folds`` folds that keep the two members
    of each pair together, pooled into one AUROC: a context identical to x gives each pair one
    score, so exactly 50."""
    from sklearn.linear_model import RidgeClassifier  # lazy: scikit-learn only when the assumptions are measured
    from sklearn.metrics import roc_auc_score  # lazy: scikit-learn only when the assumptions are measured
    from sklearn.model_selection import (  # lazy: scikit-learn only when the assumptions are measured
        GroupKFold,
        cross_val_predict,
    )
    from sklearn.pipeline import make_pipeline  # lazy: scikit-learn only when the assumptions are measured
    from sklearn.preprocessing import StandardScaler  # lazy: scikit-learn only when the assumptions are measured

    n = len(f)
    if fc.shape != f.shape:
        raise ValueError(f"features of x {f.shape} and of t_C(x) {fc.shape} differ in shape")
    order = np.random.default_rng(seed).permutation(n)  # which pairs share a fold
    groups = np.concatenate([order, order])
    data, labels = np.concatenate([f, fc]), np.r_[np.zeros(n), np.ones(n)]
    probe = make_pipeline(StandardScaler(), RidgeClassifier(alpha=float(f.shape[1])))
    scores = cross_val_predict(
        probe, data, labels, groups=groups, cv=GroupKFold(n_splits=min(folds, n)), method="decision_function"
    )
    return float(100.0 * roc_auc_score(labels, scores))


def pairwise_distances(f: np.ndarray) -> np.ndarray:
    """The ``n (n - 1) / 2`` Euclidean distances between the rows of ``f [n, d]`` (upper triangle)."""
    sq = (f * f).sum(1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * f @ f.T, 0.0)
    return np.sqrt(d2[np.triu_indices(len(f), k=1)])


def alignment(f: np.ndarray, fc: np.ndarray) -> float:
    """Spearman correlation of the pairwise distances of ``f`` (x) and ``fc`` (t_C(x)), ``[n, d]`` each;
    NaN (undefined) where either set of distances is constant (e.g. constant images)."""
    from scipy.stats import spearmanr  # lazy: scipy only when the assumptions are measured

    if fc.shape != f.shape:
        raise ValueError(f"features of x {f.shape} and of t_C(x) {fc.shape} differ in shape")
    d, dc = pairwise_distances(f), pairwise_distances(fc)
    if np.ptp(d) == 0 or np.ptp(dc) == 0:
        return math.nan
    return float(spearmanr(d, dc).statistic)


def measure_context(x: np.ndarray, context: str | ArrayFn, seed: int = 0) -> dict[str, float | str]:
    """Distinctiveness and alignment of one context on normal images ``x [n, c, h, w]`` in [0, 1].

    ``context`` is a registered name (``invert``, ``flip``, ``equalize`` or a '+'-composition) or
    a function of float images ``[n, c, h, w]`` -> same shape. At most :data:`MAX_IMAGES` images
    (drawn with ``seed``). Distinctiveness: the probe on the features of every encoder side by side;
    alignment: the mean over the encoders of each one's rank correlation."""
    x = quantize(_check_images(x)[subsample(len(x), MAX_IMAGES, seed)])  # x as t_C sees it: uint8 levels
    name = context if isinstance(context, str) else getattr(context, "__name__", "custom")
    xc = apply_context(x, context) if isinstance(context, str) else _check_images(context(x), "t_C(x)")
    pairs = random_features(x, xc, seed)
    f, fc = np.concatenate([p[0] for p in pairs], 1), np.concatenate([p[1] for p in pairs], 1)
    rho = float(np.mean([alignment(a, b) for a, b in pairs]))
    return ContextMeasure(name, distinctiveness(f, fc, seed), rho).as_dict()


def measure_contexts(
    x: np.ndarray, contexts: Sequence[str] = tuple(BASE_CONTEXTS), seed: int = 0
) -> list[dict[str, float | str]]:
    """:func:`measure_context` of every context (default: every registered base context), on one CPU
    thread (torch's and the BLAS's, restored after): the work is small, and on a shared CPU more
    threads than cores spin instead of computing (4x slower on this project's 2 cores under load)."""
    with cpu_threads(1):
        return [measure_context(x, name, seed) for name in contexts]


def undefined_measures(measures: Sequence[dict[str, float | str]]) -> list[str]:
    """``"context measure"`` of every undefined (NaN) distinctiveness or alignment in ``measures``."""
    keys = ("distinctiveness", "alignment")
    return [f"{m['context']} {k}" for m in measures for k in keys if math.isnan(float(m[k]))]


def choose(measures: Sequence[dict[str, float | str]], threshold: float = DISTINCT_MIN) -> str:
    """The rule of CON2 (Best): the most aligned context among those with distinctiveness >=
    ``threshold``; if none reaches it, the most distinctive one. Ties: the earlier in ``measures``.

    Raises:
        NoBasisToChoose: a measure is undefined (NaN: e.g. the alignment of constant images), so
            any choice would be by list order.
    """
    if not measures:
        raise ValueError("no context to choose from")
    undefined = undefined_measures(measures)
    if undefined:
        raise NoBasisToChoose(
            f"the data give no basis to choose a context: undefined {', '.join(undefined)} "
            "(every pair of images is equally far apart, e.g. constant images)",
            measures,
        )
    eligible = [m for m in measures if float(m["distinctiveness"]) >= threshold]
    if eligible:
        return str(max(eligible, key=lambda m: float(m["alignment"]))["context"])
    return str(max(measures, key=lambda m: float(m["distinctiveness"]))["context"])


def choose_context(
    x: np.ndarray, contexts: Sequence[str] = tuple(BASE_CONTEXTS), seed: int = 0, threshold: float = DISTINCT_MIN
) -> dict[str, object]:
    """The choice of CON2 (Best) on normal training images ``x [n, c, h, w]`` in [0, 1]:
    ``{"context": name, "rule": text, "threshold": t, "seed": s, "measures": [...]}``.

    Raises:
        ValueError: a seed outside 0..:data:`con2.config.MAX_SEED`, or images that are not
            ``[n >= 4, c, h, w]`` in [0, 1]; :class:`NoBasisToChoose` where a measure is undefined (:func:`choose`)."""
    measures = measure_contexts(x, contexts, check_seed(seed))
    return {
        "context": choose(measures, threshold),
        "rule": RULE,
        "threshold": threshold,
        "seed": seed,
        "n_images": int(min(len(x), MAX_IMAGES)),
        "n_encoders": N_ENCODERS,
        "measures": measures,
    }


RULE = (
    f"the most aligned context among those with distinctiveness >= {DISTINCT_MIN:g}; "
    "if none reaches it, the most distinctive one"
)


def uint8_to_unit(images: np.ndarray | torch.Tensor, seed: int | None = None) -> np.ndarray:
    """uint8 ``[n, c, h, w]`` (a tensor or array) -> float32 in [0, 1]; with ``seed``, only the
    :data:`MAX_IMAGES` images the measurement would draw with that seed (the same ones, so the same
    numbers, without a float copy of a large training set)."""
    a = images.numpy() if isinstance(images, torch.Tensor) else np.asarray(images)
    if seed is not None:
        a = a[subsample(len(a), MAX_IMAGES, check_seed(seed))]
    return a.astype(np.float32) / 255.0
