"""Anomaly scores on encoder features, as pure tensor functions (higher = more anomalous).

* ``nnd_scores``: s_NND(x) = -max_{x' in train} cos(f(x), f(x')), searched in chunks so memory
  stays bounded (``[chunk_test, chunk_train]`` similarities at a time).
* ``GaussianModel`` / ``lh_scores``: s_LH(x) = -log N(f(x)/||f(x)||; mu, Sigma), with mu, Sigma the
  mean and (ridge-regularised) covariance of the L2-normalised training features.
* ``knn_scores``: distance to the k-th nearest normalised training feature (SimCLR + kNN).

The per-augmentation scores are averaged over the test-time augmentations by the caller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor


def _chunked_topk_cos(test: Tensor, train: Tensor, k: int, chunk: int) -> Tensor:
    """Top-``k`` cosine similarities of each test row to the training rows: ``[M, k]`` (descending)."""
    test = F.normalize(test.float(), dim=1)
    train = F.normalize(train.float(), dim=1)
    k = min(k, len(train))
    best = []
    for i in range(0, len(test), chunk):
        q = test[i : i + chunk]
        top = torch.full((len(q), k), float("-inf"), device=q.device)
        for j in range(0, len(train), chunk):
            sims = q @ train[j : j + chunk].T
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
    """A Gaussian fitted to L2-normalised features: mean ``[d]``, precision ``[d, d]``, log-determinant."""

    mean: Tensor
    precision: Tensor
    logdet: float

    @property
    def dim(self) -> int:
        return int(self.mean.shape[0])


def regularised_covariance(train: Tensor, ridge: float) -> tuple[Tensor, Tensor]:
    """Mean ``[d]`` and covariance ``[d, d]`` of L2-normalised ``train [n, d]`` plus ``ridge * tr(S)/d * I``.

    The ridge is relative to the mean eigenvalue so one value fits any feature scale; the covariance
    is the maximum-likelihood one (divided by n), which the spec leaves open.
    """
    x = F.normalize(train.double(), dim=1)
    mean = x.mean(0)
    centred = x - mean
    cov = centred.T @ centred / len(x)
    d = cov.shape[0]
    scale = torch.trace(cov) / d
    cov = cov + ridge * float(scale if scale > 0 else 1.0) * torch.eye(d, dtype=cov.dtype, device=cov.device)
    return mean, cov


def fit_gaussian(train: Tensor, ridge: float = 1e-2) -> GaussianModel:
    """Fit s_LH's Gaussian to training features ``[n, d]`` (normalised here)."""
    mean, cov = regularised_covariance(train, ridge)
    chol = torch.linalg.cholesky(cov)
    precision = torch.cholesky_inverse(chol)
    logdet = 2.0 * torch.log(torch.diagonal(chol)).sum()
    return GaussianModel(mean=mean, precision=precision, logdet=float(logdet))


def lh_scores(test: Tensor, model: GaussianModel) -> Tensor:
    """s_LH: negative Gaussian log-density of the normalised test features ``[M, d]`` -> ``[M]``."""
    x = F.normalize(test.double(), dim=1) - model.mean
    maha = ((x @ model.precision) * x).sum(1)
    log_density = -0.5 * (maha + model.logdet + model.dim * math.log(2 * math.pi))
    return (-log_density).float()


def mahalanobis_scores(test: Tensor, train: Tensor, n_clusters: int = 1, seed: int = 0) -> Tensor:
    """SSD's score: Mahalanobis distance after L2-normalising and standardising per dimension.

    Features ``[n, d]`` are normalised, standardised with the training mean/std, and scored by
    ``(x - mu_c)^T pinv(Sigma_c) (x - mu_c)`` minimised over ``n_clusters`` k-means clusters.
    """
    tr = F.normalize(train.double(), dim=1)
    te = F.normalize(test.double(), dim=1)
    mu, sd = tr.mean(0), tr.std(0).clamp_min(1e-12)
    tr, te = (tr - mu) / sd, (te - mu) / sd
    if n_clusters == 1:
        assignments = torch.zeros(len(tr), dtype=torch.long)
    else:
        from sklearn.cluster import KMeans

        km = KMeans(n_clusters=n_clusters, n_init=10, random_state=seed).fit(tr.cpu().numpy())
        assignments = torch.as_tensor(km.labels_, dtype=torch.long)
    dists = []
    for c in range(n_clusters):
        members = tr[assignments.to(tr.device) == c]
        centre = members.mean(0)
        cov = torch.cov(members.T) if len(members) > 1 else torch.zeros(tr.shape[1], tr.shape[1], dtype=tr.dtype)
        prec = torch.linalg.pinv(cov, hermitian=True)
        diff = te - centre
        dists.append(((diff @ prec) * diff).sum(1))
    return torch.stack(dists).min(0).values.float()
