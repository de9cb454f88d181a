"""Anomaly scores on encoder features, as pure tensor functions (higher = more anomalous).

* ``nnd_scores``: s_NND(x) = -max_{x' in train} cos(f(x), f(x')), searched in blocks so memory
  stays bounded (``[chunk, chunk]`` similarities at a time, no normalised copy of the training set).
* ``GaussianModel`` / ``lh_scores``: s_LH(x) = -log N(f(x)/||f(x)||; mu, Sigma), with mu, Sigma the
  mean and (ridge-regularised) covariance of the L2-normalised training features.
* ``view_scores``: S_NND and S_LH of one test-time view together (one pass over the features).
* ``knn_scores``: distance to the k-th nearest normalised training feature (SimCLR + kNN).
* ``mahalanobis_scores``: SSD's score.

Every function computes on the device of its inputs (a GPU when the features are there) and
returns a tensor on that device. Memory is bounded by ``chunk`` rows at a time beyond the inputs:
similarities ``[chunk, chunk]`` float32, the Gaussian's statistics ``[chunk, d]`` float64. The
per-augmentation scores are averaged over the test-time augmentations by the caller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor

from con2.errors import NonFiniteFeaturesError


def _inverse_norms(x: Tensor, chunk: int) -> Tensor:
    """``1 / ||x_i||`` (0 for zero rows, as ``F.normalize``) of ``x [n, d]`` -> ``[n]`` float32, in blocks."""
    return torch.cat([1.0 / x[i : i + chunk].float().norm(dim=1).clamp_min(1e-12) for i in range(0, len(x), chunk)])


def _chunked_topk_cos(test: Tensor, train: Tensor, k: int, chunk: int) -> Tensor:
    """Top-``k`` cosine similarities of each test row to the training rows: ``[M, k]`` (descending)."""
    k = min(k, len(train))
    inv = _inverse_norms(train, chunk)
    best = []
    for i in range(0, len(test), chunk):
        q = F.normalize(test[i : i + chunk].float(), dim=1)
        top = torch.full((len(q), k), float("-inf"), device=q.device)
        for j in range(0, len(train), chunk):
            sims = (q @ train[j : j + chunk].float().T) * inv[j : j + chunk]
            if k == 1:
                top = torch.maximum(top, sims.amax(dim=1, keepdim=True))
            else:
                top = torch.cat([top, sims], dim=1).topk(k, dim=1).values
        best.append(top)
    return torch.cat(best)


def nnd_scores(test: Tensor, train: Tensor, chunk: int = 4096) -> Tensor:
    """s_NND: negative max cosine similarity to the training set. ``test [M, d]``, ``train [n, d]`` -> ``[M]``."""
    return -_chunked_topk_cos(test, train, 1, chunk)[:, 0]


def knn_scores(test: Tensor, train: Tensor, k: int = 1, chunk: int = 4096) -> Tensor:
    """Euclidean distance of normalised features to the k-th nearest normalised training feature -> ``[M]``.

    For unit vectors ``||a - b|| = sqrt(2 - 2 cos(a, b))``, so this ranks like the k-th largest cosine.
    """
    kth = _chunked_topk_cos(test, train, k, chunk)[:, -1]
    return torch.sqrt((2.0 - 2.0 * kth).clamp_min(0.0))


@dataclass(frozen=True)
class GaussianModel:
    """A Gaussian fitted to L2-normalised features: mean ``[d]``, precision ``[d, d]``, log-determinant,
    and the jitter (relative to the mean eigenvalue) that a singular covariance needed (0: none)."""

    mean: Tensor
    precision: Tensor
    logdet: float
    jitter: float = 0.0

    @property
    def dim(self) -> int:
        return int(self.mean.shape[0])


def _mean_and_scatter(x: Tensor, chunk: int, scale_rows: bool) -> tuple[Tensor, Tensor]:
    """Mean ``[d]`` and scatter ``sum (x - mean)(x - mean)^T`` ``[d, d]`` in float64, ``chunk`` rows at a time.

    ``scale_rows``: L2-normalise each row first. Two passes (mean, then centred products), so the
    result is as accurate as centring the whole matrix at once.
    """
    rows = lambda i: F.normalize(x[i : i + chunk].double(), dim=1) if scale_rows else x[i : i + chunk].double()  # noqa: E731
    starts = range(0, len(x), chunk)
    mean = cast(Tensor, sum(rows(i).sum(0) for i in starts)) / len(x)  # a Tensor: no rows divides 0 by 0
    d = x.shape[1]
    scatter = torch.zeros(d, d, dtype=torch.float64, device=x.device)
    for i in starts:
        c = rows(i) - mean
        scatter.addmm_(c.T, c)
    return mean, scatter


def regularised_covariance(train: Tensor, ridge: float, chunk: int = 16384) -> tuple[Tensor, Tensor]:
    """Mean ``[d]`` and covariance ``[d, d]`` of L2-normalised ``train [n, d]`` plus ``ridge * tr(S)/d * I``.

    The ridge is relative to the mean eigenvalue so one value fits any feature scale; the covariance
    is the maximum-likelihood one (divided by n), which the spec leaves open.
    """
    mean, scatter = _mean_and_scatter(train, chunk, scale_rows=True)
    cov = scatter / len(train)
    d = cov.shape[0]
    scale = torch.trace(cov) / d
    cov = cov + ridge * float(scale if scale > 0 else 1.0) * torch.eye(d, dtype=cov.dtype, device=cov.device)
    return mean, cov


#: Jitters tried, in order, when a covariance does not factorise (relative to its mean eigenvalue).
JITTERS = tuple(10.0**k for k in range(-10, 1))


def cholesky_with_jitter(cov: Tensor) -> tuple[Tensor, float]:
    """Lower Cholesky factor ``[d, d]`` of ``cov [d, d]`` and the jitter it needed.

    A covariance that is singular (``lh_ridge=0`` with no more training images than feature
    dimensions, or feature dimensions that never vary) gets ``jitter * tr(cov)/d * I`` added, with
    ``jitter`` the first of :data:`JITTERS` (1e-10, 1e-9, ..., 1) that factorises: a well-defined,
    deterministic regularisation, as small as it can be. Without it, Cholesky would stop the run
    after training.

    Raises:
        NonFiniteFeaturesError: ``cov`` holds NaN or infinite values (features of a diverged model).
    """
    if not bool(torch.isfinite(cov).all()):
        raise NonFiniteFeaturesError(
            "S_LH: the training features hold NaN or infinite values (a diverged model). Fix: retrain with a "
            "lower lr, or with amp=false"
        )
    chol, info = torch.linalg.cholesky_ex(cov)
    if int(info) == 0:
        return chol, 0.0
    scale = float(torch.trace(cov)) / len(cov)
    eye = torch.eye(len(cov), dtype=cov.dtype, device=cov.device) * (scale if scale > 0 else 1.0)
    for jitter in JITTERS:
        chol, info = torch.linalg.cholesky_ex(cov + jitter * eye)
        if int(info) == 0:
            return chol, jitter
    raise NonFiniteFeaturesError(
        f"S_LH: the covariance of the training features does not factorise even with jitter {JITTERS[-1]} x its "
        f"mean eigenvalue. Fix: --set lh_ridge=0.01 (the default)"
    )


def fit_gaussian(train: Tensor, ridge: float = 1e-2, chunk: int = 16384) -> GaussianModel:
    """Fit s_LH's Gaussian to training features ``[n, d]`` (normalised here); a singular covariance
    gets the smallest jitter that factorises it (:func:`cholesky_with_jitter`)."""
    mean, cov = regularised_covariance(train, ridge, chunk)
    chol, jitter = cholesky_with_jitter(cov)
    # L^-1 by a triangular solve, then L^-T L^-1: cholesky_inverse took 20 ms to 1.2 s for d = 512
    # on the shared 2-core CPU, the solve a steady 12-64 ms.
    inv_chol = torch.linalg.solve_triangular(chol, torch.eye(len(cov), dtype=cov.dtype, device=cov.device), upper=False)
    precision = inv_chol.T @ inv_chol
    logdet = 2.0 * torch.log(torch.diagonal(chol)).sum()
    return GaussianModel(mean=mean, precision=precision, logdet=float(logdet), jitter=jitter)


def lh_scores(test: Tensor, model: GaussianModel, chunk: int = 16384) -> Tensor:
    """s_LH: negative Gaussian log-density of the normalised test features ``[M, d]`` -> ``[M]``."""
    out = []
    for i in range(0, len(test), chunk):
        x = F.normalize(test[i : i + chunk].double(), dim=1) - model.mean
        maha = ((x @ model.precision) * x).sum(1)
        out.append(0.5 * (maha + model.logdet + model.dim * math.log(2 * math.pi)))
    return torch.cat(out).float()


def view_scores(test: Tensor, train: Tensor, ridge: float = 1e-2, chunk: int = 4096) -> tuple[Tensor, Tensor]:
    """S_NND and S_LH of one test-time view: ``test [M, d]``, ``train [n, d]`` -> two ``[M]`` tensors.

    On the features' device; memory beyond the inputs is bounded by ``chunk`` (see the module).
    """
    return nnd_scores(test, train, chunk), lh_scores(test, fit_gaussian(train, ridge, 4 * chunk), 4 * chunk)


def mahalanobis_scores(test: Tensor, train: Tensor, n_clusters: int = 1, seed: int = 0, chunk: int = 16384) -> Tensor:
    """SSD's score: Mahalanobis distance after L2-normalising and standardising per dimension.

    Features ``[n, d]`` are normalised, standardised with the training mean/std, and scored by
    ``(x - mu_c)^T pinv(Sigma_c) (x - mu_c)`` minimised over ``n_clusters`` k-means clusters
    (scikit-learn's KMeans, on the CPU). Statistics and scores run ``chunk`` rows at a time.
    """
    mu, scatter = _mean_and_scatter(train, chunk, scale_rows=True)
    sd = (torch.diagonal(scatter) / max(1, len(train) - 1)).sqrt().clamp_min(1e-12)

    def standardised(x: Tensor, i: int) -> Tensor:
        return (F.normalize(x[i : i + chunk].double(), dim=1) - mu) / sd

    if n_clusters == 1:
        groups = [train]
    else:
        from sklearn.cluster import KMeans  # lazy: scikit-learn only where features are clustered

        tr = torch.cat([standardised(train, i) for i in range(0, len(train), chunk)])
        labels = torch.as_tensor(
            KMeans(n_clusters=n_clusters, n_init=10, random_state=seed).fit(tr.cpu().numpy()).labels_
        )
        groups = [train[(labels == c).to(train.device)] for c in range(n_clusters)]
    best = torch.full((len(test),), float("inf"), dtype=torch.float64, device=test.device)
    for members in groups:
        # standardising is affine per dimension, so the cluster's statistics follow from the normalised rows'
        mean_u, scatter_u = _mean_and_scatter(members, chunk, scale_rows=True)
        centre = (mean_u - mu) / sd
        cov = scatter_u / torch.outer(sd, sd) / (len(members) - 1) if len(members) > 1 else torch.zeros_like(scatter_u)
        prec = torch.linalg.pinv(cov, hermitian=True)
        for i in range(0, len(test), chunk):
            diff = standardised(test, i) - centre
            best[i : i + chunk] = torch.minimum(best[i : i + chunk], ((diff @ prec) * diff).sum(1))
    return best.float()
