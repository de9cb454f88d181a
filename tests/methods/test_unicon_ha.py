"""UniCon-HA: its loss (Eq. 1, 4-7) against a slow reference written from the paper, its views, heads and score."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from baselines.unicon_ha import StageHead, soft_weights, stage_shapes, uniclr_loss, view_params_at
from con2.config import make_config
from con2.errors import ConfigError
from con2.methods import build_method, get_spec
from con2.transforms.augment import ViewParams

# --- a slow reference, one anchor and one set at a time, as the paper writes it --------------


def ref_l_cons(z, a, positives, negatives, tau):
    """Eq. 1: -1/|D+| sum_{x' in D+} log(e^{z'.z/tau} / sum_{x'' in D+ u D-} e^{z''.z/tau})."""
    denom = sum(math.exp(float(z[b] @ z[a]) / tau) for b in positives + negatives)
    return -sum(math.log(math.exp(float(z[b] @ z[a]) / tau) / denom) for b in positives) / len(positives)


def ref_weights(z, inliers, tau_w):
    """Eq. 7 over the inlier views: w_i = sum_{j != i} e^{z_i.z_j/tau_w} / sum_k sum_{j != k} e^{z_k.z_j/tau_w}."""
    row = {i: sum(math.exp(float(z[i] @ z[j]) / tau_w) for j in inliers if j != i) for i in inliers}
    total = sum(row.values())
    return {i: row[i] / total for i in inliers}


def ref_l_soft(z, a, positives, negatives, tau, w, form):
    """Eq. 6 for one inlier anchor (per-anchor forms): 'printed' literally, 'anchor' with the weight outside the log."""
    denom = sum(math.exp(float(z[b] @ z[a]) / tau) for b in positives + negatives)
    norm = sum(w[a] * w[b] for b in positives)
    if form == "printed":
        return -sum(math.log(w[a] * w[b] * math.exp(float(z[b] @ z[a]) / tau) / denom) for b in positives) / norm
    return -sum(w[a] * w[b] * math.log(math.exp(float(z[b] @ z[a]) / tau) / denom) for b in positives) / norm


def ref_uniclr(z1, z2, inlier, tau, soft=False, tau_w=0.5, form="pair"):
    """Eq. 4/5 (and 6/7 for inlier anchors): views 0..M-1 are view 1 of each image, M..2M-1 view 2."""
    m = len(z1)
    z = F.normalize(torch.cat([z1, z2]).double(), dim=1)
    views = list(range(2 * m))
    image = {v: v % m for v in views}
    d_in = [v for v in views if inlier[image[v]]]
    d_out = [v for v in views if not inlier[image[v]]]
    total = 0.0
    w = ref_weights(z, d_in, tau_w) if soft else None
    pair_terms, pair_weights = [], []
    for a in views:
        if a in d_in:
            positives = [b for b in d_in if b != a]
            if soft and form == "pair":
                denom = sum(math.exp(float(z[b] @ z[a]) / tau) for b in positives + d_out)
                for b in positives:
                    pair_terms.append(-w[a] * w[b] * math.log(math.exp(float(z[b] @ z[a]) / tau) / denom))
                    pair_weights.append(w[a] * w[b])
            elif soft:
                total += ref_l_soft(z, a, positives, d_out, tau, w, form)
            else:
                total += ref_l_cons(z, a, positives, d_out, tau)
        else:
            partner = (a + m) % (2 * m)
            total += ref_l_cons(z, a, [partner], [b for b in views if b not in (a, partner)], tau)
    if pair_terms:  # the weighted mean over every inlier (anchor, positive) pair, scaled to |D~_in| anchors
        total += len(d_in) * sum(pair_terms) / sum(pair_weights)
    return total / (2 * m)


@pytest.fixture
def batch():
    g = torch.Generator().manual_seed(3)
    z1, z2 = torch.randn(8, 5, generator=g), torch.randn(8, 5, generator=g)
    inlier = torch.tensor([True, True, False, False, False, False, False, False])  # 2 inliers, 6 virtual outliers
    return z1, z2, inlier


def test_uniclr_without_soft_aggregation_is_eq_4_and_5(batch):
    z1, z2, inlier = batch
    for tau in (0.5, 0.2):
        got = uniclr_loss(z1, z2, inlier, tau, soft=False)
        assert float(got) == pytest.approx(ref_uniclr(z1, z2, inlier, tau), rel=1e-5)


@pytest.mark.parametrize("form", ["pair", "anchor", "printed"])
def test_uniclr_with_soft_aggregation_is_eq_6_and_7(batch, form):
    z1, z2, inlier = batch
    got = uniclr_loss(z1, z2, inlier, 0.5, soft=True, weight_temperature=0.3, soft_form=form)
    assert float(got) == pytest.approx(ref_uniclr(z1, z2, inlier, 0.5, True, 0.3, form), rel=1e-5)


def test_soft_weights_are_eq_7_and_uniform_weights_give_back_eq_1(batch):
    z1, z2, inlier = batch
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    w = soft_weights(z, 0.3)
    ref = ref_weights(z.double(), list(range(len(z))), 0.3)
    np.testing.assert_allclose(w.numpy(), [ref[i] for i in range(len(z))], rtol=1e-5)
    assert float(w.sum()) == pytest.approx(1.0)
    # tau_w -> infinity makes every weight equal: the pair and anchor forms fall back to the hard loss
    hard = uniclr_loss(z1, z2, inlier, 0.5)
    for form in ("pair", "anchor"):
        assert float(uniclr_loss(z1, z2, inlier, 0.5, True, 1e6, form)) == pytest.approx(float(hard), rel=1e-4)


def test_soft_aggregation_down_weights_an_inlier_view_far_from_the_others():
    z = torch.tensor([[1.0, 0.0], [0.99, 0.1], [0.98, -0.1], [-1.0, 0.0]])  # the last view is far away
    w = soft_weights(F.normalize(z, dim=1), 0.5)
    assert int(w.argmin()) == 3 and float(w[3]) < float(w[:3].min())


def test_detached_weights_carry_no_gradient(batch):
    z1, z2, inlier = batch
    grads = []
    for detach in (True, False):
        a = z1.clone().requires_grad_(True)
        uniclr_loss(a, z2, inlier, 0.5, True, 0.3, "pair", detach).backward()
        grads.append(a.grad)
    assert not torch.allclose(grads[0], grads[1]), (
        "the soft weights' own gradient must differ from treating them as constants"
    )


def test_the_augmentation_hierarchy_grows_to_the_run_views():
    base = ViewParams()
    assert view_params_at(base, 1.0) == base
    weak, strong = view_params_at(base, 0.25), view_params_at(base, 0.75)
    assert 1.0 > weak.crop_scale[0] > strong.crop_scale[0] > base.crop_scale[0]
    assert all(w < s < b for w, s, b in zip(weak.jitter[:3], strong.jitter[:3], base.jitter[:3]))
    assert weak.grayscale_p < strong.grayscale_p < base.grayscale_p and weak.hflip_p == base.hflip_p


def test_stage_heads_reach_the_last_stage_shape(tiny):
    method = build_method(make_config({**tiny, "method": "unicon_ha"}))
    shapes = stage_shapes(method.encoder, 16)
    assert sorted(method.heads) == ["res2", "res3", "res4"]  # the paper's HA at res2-res4
    for i in (2, 3):
        down = method.heads[f"res{i}"].down(torch.zeros(2, *shapes[i - 1][:1], shapes[i - 1][1], shapes[i - 1][1]))
        assert (down.shape[1], down.shape[-1]) == shapes[-1]
    head = StageHead((32, 14), (128, 4), 8)
    assert head(torch.zeros(3, 32, 14, 14)).shape == (3, 8)


def test_training_loss_is_eq_9_over_the_aggregated_stages(tiny):
    cfg = make_config({**tiny, "method": "unicon_ha", "params": {"stage_weights": [0, 0.5, 1, 2]}})
    method = build_method(cfg)
    images = torch.randint(0, 256, (4, 3, 16, 16), dtype=torch.uint8)
    out = method.training_loss(images, 0.0)
    assert sorted(out) == ["loss", "res2", "res3", "res4"]
    expected = (0.5 * out["res2"] + 1 * out["res3"] + 2 * out["res4"]) / 4
    assert float(out["loss"].detach()) == pytest.approx(float(expected.detach()))


def test_params_are_checked(tiny):
    spec = get_spec("unicon_ha")
    for bad in (
        {"stage_weights": [0, 0, 0, 0]},
        {"soft_form": "x"},
        {"strengths": [0, 0.5, 0.75, 1]},
        {"temperature": 0},
    ):
        with pytest.raises(ConfigError):
            spec.params_for(make_config({**tiny, "method": "unicon_ha", "params": bad}))
