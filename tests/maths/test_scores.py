"""Scores and metrics against brute force, scipy and a pair-counting AUROC."""

import numpy as np
import pytest
import torch
from scipy.stats import multivariate_normal

from con2.maths.metrics import auroc, context_silhouette
from con2.maths.scores import fit_gaussian, knn_scores, lh_scores, mahalanobis_scores, nnd_scores, view_scores


def cos(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("chunk", [1, 3, 4096])
def test_nnd_matches_brute_force(chunk):
    rng = np.random.default_rng(0)
    train, test = rng.normal(size=(11, 5)), rng.normal(size=(7, 5))
    ref = [-max(cos(t, x) for x in train) for t in test]
    out = nnd_scores(torch.tensor(test), torch.tensor(train), chunk=chunk).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("k,chunk", [(1, 2), (3, 2), (3, 100)])
def test_knn_matches_brute_force(k, chunk):
    rng = np.random.default_rng(1)
    train, test = rng.normal(size=(9, 4)), rng.normal(size=(5, 4))
    nt = train / np.linalg.norm(train, axis=1, keepdims=True)
    ref = []
    for t in test:
        u = t / np.linalg.norm(t)
        ref.append(sorted(np.linalg.norm(nt - u, axis=1))[k - 1])
    out = knn_scores(torch.tensor(test), torch.tensor(train), k=k, chunk=chunk).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n,d,ridge", [(50, 4, 0.0), (10, 16, 0.01), (30, 8, 0.5)])
def test_lh_matches_scipy(n, d, ridge):
    rng = np.random.default_rng(n)
    train, test = rng.normal(size=(n, d)) + 1.0, rng.normal(size=(6, d))
    x = train / np.linalg.norm(train, axis=1, keepdims=True)
    cov = np.cov(x, rowvar=False, bias=True)
    cov = cov + ridge * np.trace(cov) / d * np.eye(d)
    u = test / np.linalg.norm(test, axis=1, keepdims=True)
    ref = -multivariate_normal(mean=x.mean(0), cov=cov).logpdf(u)
    out = lh_scores(torch.tensor(test), fit_gaussian(torch.tensor(train), ridge)).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-4)


def test_mahalanobis_matches_brute_force():
    rng = np.random.default_rng(2)
    train, test = rng.normal(size=(40, 3)), rng.normal(size=(5, 3))
    tr = train / np.linalg.norm(train, axis=1, keepdims=True)
    te = test / np.linalg.norm(test, axis=1, keepdims=True)
    mu, sd = tr.mean(0), tr.std(0, ddof=1)
    tr, te = (tr - mu) / sd, (te - mu) / sd
    prec = np.linalg.pinv(np.cov(tr, rowvar=False))
    ref = [float((t - tr.mean(0)) @ prec @ (t - tr.mean(0))) for t in te]
    out = mahalanobis_scores(torch.tensor(test), torch.tensor(train)).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-4)


def test_mahalanobis_clusters_take_the_minimum():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(30, 2)) * 0.05 + [1, 0]
    b = rng.normal(size=(30, 2)) * 0.05 + [0, 1]
    test = np.array([[1.0, 0.02], [0.7, 0.7]])
    one = mahalanobis_scores(torch.tensor(test), torch.tensor(np.vstack([a, b])), n_clusters=1).numpy()
    two = mahalanobis_scores(torch.tensor(test), torch.tensor(np.vstack([a, b])), n_clusters=2).numpy()
    assert two[0] < one[0]  # near a cluster centre, the per-cluster model is tighter


def pair_count_auroc(labels, scores):
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return 100.0 * wins / (len(pos) * len(neg))


def test_auroc_matches_pair_counting_and_is_oriented():
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, 60)
    scores = rng.normal(size=60) + labels * 0.7
    scores[:5] = scores[5:10]  # ties
    assert auroc(labels, scores) == pytest.approx(pair_count_auroc(labels, scores))
    assert auroc(np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.8, 0.9])) == 100.0


def test_auroc_rejects_nan_and_single_class():
    with pytest.raises(ValueError, match="non-finite"):
        auroc(np.array([0, 1]), np.array([0.1, np.nan]))
    with pytest.raises(ValueError, match="both"):
        auroc(np.array([0, 0]), np.array([0.1, 0.2]))


def test_silhouette_positive_for_separated_contexts():
    rng = np.random.default_rng(5)
    f = np.vstack([rng.normal(size=(20, 3)) + [5, 0, 0], rng.normal(size=(20, 3)) - [5, 0, 0]])
    labels = np.repeat([0, 1], 20)
    assert context_silhouette(f, labels) > 0.5
    assert context_silhouette(f, rng.permutation(labels)) < 0.2


class LargestOutput(torch.utils._python_dispatch.TorchDispatchMode):
    """Records the largest tensor any op produces (in elements)."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def test_scores_in_small_chunks_match_brute_force_with_bounded_intermediates():
    rng = np.random.default_rng(6)
    train, test = rng.normal(size=(50, 4)) + 0.5, rng.normal(size=(30, 4))
    ref_nnd = [-max(cos(t, x) for x in train) for t in test]
    x = train / np.linalg.norm(train, axis=1, keepdims=True)
    cov = np.cov(x, rowvar=False, bias=True) + 0.01 * np.trace(np.cov(x, rowvar=False, bias=True)) / 4 * np.eye(4)
    ref_lh = -multivariate_normal(mean=x.mean(0), cov=cov).logpdf(test / np.linalg.norm(test, axis=1, keepdims=True))
    test_t, train_t = torch.tensor(test), torch.tensor(train)
    with LargestOutput() as mode:
        nnd, lh = view_scores(test_t, train_t, ridge=0.01, chunk=2)  # [2, 2] and [8, 4] blocks
        maha = mahalanobis_scores(test_t, train_t, chunk=8)
    assert mode.largest <= 50  # never a [30, 50] similarity matrix, never a second [50, 4] copy (200)
    np.testing.assert_allclose(nnd.numpy(), ref_nnd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lh.numpy(), ref_lh, rtol=1e-4)
    np.testing.assert_allclose(
        maha.numpy(), mahalanobis_scores(torch.tensor(test), torch.tensor(train)).numpy(), rtol=1e-6
    )
    np.testing.assert_allclose(
        mahalanobis_scores(torch.tensor(test), torch.tensor(train), n_clusters=3, chunk=7).numpy(),
        mahalanobis_scores(torch.tensor(test), torch.tensor(train), n_clusters=3).numpy(),
        rtol=1e-6,
    )
