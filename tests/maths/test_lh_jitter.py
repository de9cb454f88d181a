"""S_LH on a singular covariance (``lh_ridge=0`` with fewer training images than feature
dimensions): the smallest jitter of a fixed sequence that factorises it, against a numpy/scipy
reference that tries the same sequence."""

import numpy as np
import pytest
import torch
from scipy.stats import multivariate_normal

from con2.errors import NonFiniteFeaturesError
from con2.maths.scores import JITTERS, cholesky_with_jitter, fit_gaussian, lh_scores


def reference_jitter(cov: np.ndarray) -> float:
    """The first of 0, 1e-10, ..., 1 (times the mean eigenvalue) for which numpy's Cholesky succeeds."""
    scale = np.trace(cov) / len(cov)
    for jitter in (0.0, *(10.0**k for k in range(-10, 1))):
        try:
            np.linalg.cholesky(cov + jitter * scale * np.eye(len(cov)))
        except np.linalg.LinAlgError:
            continue
        return jitter
    raise AssertionError("no jitter factorises it")


def neg_log_density(u: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """-log N(u; mean, cov) row by row, from the formula (scipy calls a jitter of 1e-10 singular)."""
    sign, logdet = np.linalg.slogdet(cov)
    assert sign > 0
    out = []
    for row in u:
        diff = row - mean
        out.append(0.5 * (diff @ np.linalg.solve(cov, diff) + logdet + len(mean) * np.log(2 * np.pi)))
    return np.array(out)


def test_formula_reference_agrees_with_scipy_on_a_regular_covariance():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(40, 6))
    cov, mean, u = np.cov(a, rowvar=False), a.mean(0), rng.normal(size=(5, 6))
    np.testing.assert_allclose(neg_log_density(u, mean, cov), -multivariate_normal(mean, cov).logpdf(u), rtol=1e-10)


def test_jitter_sequence_is_the_documented_one():
    assert JITTERS == tuple(10.0**k for k in range(-10, 1))


def test_escalates_to_the_first_jitter_that_factorises():
    cov = np.diag([1.0, 1.0, 1.0, -1e-7])  # needs jitter * 0.75 > 1e-7: the first such is 1e-6
    chol, jitter = cholesky_with_jitter(torch.tensor(cov))
    assert jitter == reference_jitter(cov) == 1e-6
    scale = np.trace(cov) / 4
    np.testing.assert_allclose((chol @ chol.T).numpy(), cov + 1e-6 * scale * np.eye(4), atol=1e-15)


def test_a_positive_definite_covariance_needs_no_jitter():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(30, 5))
    cov = a.T @ a / 30
    chol, jitter = cholesky_with_jitter(torch.tensor(cov))
    assert jitter == 0.0
    np.testing.assert_allclose(chol.numpy(), np.linalg.cholesky(cov), rtol=1e-12)
    assert fit_gaussian(torch.tensor(a), ridge=0.0).jitter == 0.0


@pytest.mark.parametrize("n,d", [(6, 16), (16, 16), (3, 64)])
def test_ridge_zero_with_n_at_most_d_matches_the_jittered_reference(n, d):
    rng = np.random.default_rng(n + d)
    train, test = rng.normal(size=(n, d)) + 0.5, rng.normal(size=(7, d))
    x = train / np.linalg.norm(train, axis=1, keepdims=True)
    cov = np.cov(x, rowvar=False, bias=True)  # rank <= n - 1 < d: singular
    jitter = reference_jitter(cov)
    assert jitter > 0
    model = fit_gaussian(torch.tensor(train), ridge=0.0)
    assert model.jitter == jitter
    u = test / np.linalg.norm(test, axis=1, keepdims=True)
    ref = neg_log_density(u, x.mean(0), cov + jitter * np.trace(cov) / d * np.eye(d))
    out = lh_scores(torch.tensor(test), model).numpy()
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, ref, rtol=1e-4)


def test_non_finite_features_are_named():
    train = torch.randn(10, 4, dtype=torch.float64)
    train[3, 2] = float("nan")
    with pytest.raises(NonFiniteFeaturesError, match="NaN or infinite values.*Fix: retrain with a lower lr"):
        fit_gaussian(train, ridge=0.0)
