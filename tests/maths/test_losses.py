"""Losses against slow references written from the paper's formulas."""

import math

import pytest
import torch
import torch.nn.functional as F

from con2.maths.losses import alpha_schedule, batch_labels, content_loss, context_loss, label_contrastive_loss, nt_xent


def ell(z: torch.Tensor, i: int, j: int, tau: float) -> float:
    """l(z_i, z_j, Z) = -log(exp(sim_ij/tau) / sum_{k != i} exp(sim_ik/tau)), cosine similarity."""
    sim = lambda a, b: float(F.cosine_similarity(z[a], z[b], dim=0))
    denom = sum(math.exp(sim(i, k) / tau) for k in range(len(z)) if k != i)
    return -math.log(math.exp(sim(i, j) / tau) / denom)


def reference_context_loss(z: torch.Tensor, n: int, tau: float) -> float:
    """L_Context for 4N projections laid out [view1(x), view1(x^C), view2(x), view2(x^C)], N each.

    Positives: every ordered pair of distinct indices in the same context; normalised by 4N(2N-1).
    """
    ctx = lambda i: (i // n) % 2
    total, pairs = 0.0, 0
    for i in range(4 * n):
        for j in range(4 * n):
            if i != j and ctx(i) == ctx(j):
                total += ell(z, i, j, tau)
                pairs += 1
    assert pairs == 4 * n * (2 * n - 1)
    return total / (4 * n * (2 * n - 1))


def reference_content_loss(z: torch.Tensor, n: int, tau: float) -> float:
    """L_Content: the 4 projections of one sample are mutual positives; 12 pairs each, normalised by 12N."""
    total, pairs = 0.0, 0
    for s in range(n):
        rows = [s, n + s, 2 * n + s, 3 * n + s]
        for i in rows:
            for j in rows:
                if i != j:
                    total += ell(z, i, j, tau)
                    pairs += 1
    assert pairs == 12 * n
    return total / (12 * n)


@pytest.mark.parametrize("n,tau", [(3, 0.5), (5, 0.1), (2, 1.0)])
def test_context_loss_matches_formula(n, tau):
    torch.manual_seed(n)
    z = torch.randn(4 * n, 7, dtype=torch.float64)
    ctx, _ = batch_labels(n, 2, 2)
    assert float(context_loss(z, ctx, tau)) == pytest.approx(reference_context_loss(z, n, tau), rel=1e-5)


@pytest.mark.parametrize("n,tau", [(3, 0.5), (4, 0.07)])
def test_content_loss_matches_formula(n, tau):
    torch.manual_seed(10 + n)
    z = torch.randn(4 * n, 6, dtype=torch.float64)
    _, sample = batch_labels(n, 2, 2)
    assert float(content_loss(z, sample, tau)) == pytest.approx(reference_content_loss(z, n, tau), rel=1e-5)


def test_k_context_loss_generalises_and_equals_l_context_at_k2():
    n, tau = 3, 0.3
    torch.manual_seed(0)
    z = torch.randn(4 * n, 5, dtype=torch.float64)
    ctx2, _ = batch_labels(n, 2, 2)
    assert float(label_contrastive_loss(z, ctx2, tau)) == pytest.approx(reference_context_loss(z, n, tau), rel=1e-6)
    # k = 3: 2kN rows, every same-context ordered pair positive, normaliser 2kN(2N-1).
    k = 3
    z3 = torch.randn(2 * k * n, 5, dtype=torch.float64)
    ctx3, sample3 = batch_labels(n, k, 2)
    ref, pairs = 0.0, 0
    for i in range(2 * k * n):
        for j in range(2 * k * n):
            if i != j and ctx3[i] == ctx3[j]:
                ref += ell(z3, i, j, tau)
                pairs += 1
    assert pairs == 2 * k * n * (2 * n - 1)
    assert float(context_loss(z3, ctx3, tau)) == pytest.approx(ref / pairs, rel=1e-6)
    # sample labels: each image has 2k views, all in one group.
    assert torch.bincount(sample3).tolist() == [2 * k] * n


def test_batch_labels_layout():
    ctx, sample = batch_labels(2, 2, 2)
    assert ctx.tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    assert sample.tolist() == [0, 1, 0, 1, 0, 1, 0, 1]


def test_nt_xent_matches_simclr_formula():
    n, tau = 4, 0.5
    torch.manual_seed(3)
    z1, z2 = torch.randn(n, 8, dtype=torch.float64), torch.randn(n, 8, dtype=torch.float64)
    z = torch.cat([z1, z2])
    ref = sum(ell(z, i, (i + n) % (2 * n), tau) for i in range(2 * n)) / (2 * n)
    assert float(nt_xent(z1, z2, tau)) == pytest.approx(ref, rel=1e-6)


def test_loss_is_fp32_under_half_inputs_and_finite_for_identical_rows():
    z = torch.ones(8, 4, dtype=torch.bfloat16)
    ctx, _ = batch_labels(2, 2, 2)
    out = context_loss(z, ctx, 0.07)
    assert out.dtype == torch.float32 and torch.isfinite(out)
    # identical rows: every logit equal, loss = log(M - 1)
    assert float(out) == pytest.approx(math.log(7), rel=1e-5)


def test_alpha_schedule_is_linear_and_clamped():
    assert alpha_schedule(0.0) == 0.0 and alpha_schedule(0.25) == 0.25 and alpha_schedule(1.0) == 1.0
    assert alpha_schedule(2.0) == 1.0 and alpha_schedule(-1.0) == 0.0
    assert alpha_schedule(0.5, 0.2, 0.6) == pytest.approx(0.4)


def test_no_positive_pairs_is_an_error():
    with pytest.raises(ValueError, match="no positive pairs"):
        label_contrastive_loss(torch.randn(3, 2), torch.arange(3), 0.5)


def test_loss_is_float32_under_bf16_autocast():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(16, 8, generator=g)
    labels = torch.arange(16) % 4
    ref = label_contrastive_loss(z, labels, 0.5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = label_contrastive_loss(z.bfloat16(), labels, 0.5)
    assert out.dtype == torch.float32
    # only the bf16 rounding of z itself remains (bf16 similarities would be off by about 1e-2)
    assert float((out - label_contrastive_loss(z.bfloat16().float(), labels, 0.5)).abs()) < 1e-5
    assert float((out - ref).abs()) < 0.05
