"""The baselines' maths against slow references, and their wiring into the harness.

NT-Xent (SimCLR's and CSI's batch with rotated copies as negatives), SSD's Mahalanobis score
(with clusters), the kNN score averaged over the fixed test-time views, and the CSI score's
combination of rotations, samples and weights, each against a plain loop.
"""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from baselines.csi import CSI, csi_scores, random_hflip, rotate_all, rotation_context, rotation_labels
from baselines.simclr import SimCLR
from con2.config import make_config
from con2.errors import ConfigError
from con2.maths.losses import nt_xent
from con2.maths.scores import knn_scores, mahalanobis_scores
from con2.methods import build_method, get_method
from con2.methods.features import view_features
from con2.methods.scoring import tta_draw
from con2.transforms.augment import IDENTITY_VIEW, normalize, to_float

REPO = Path(__file__).resolve().parents[2]


def slow_nt_xent(z1: np.ndarray, z2: np.ndarray, tau: float) -> float:
    """SimCLR's NT-Xent by the formula: 2M anchors, each one's other view is its positive."""
    z = np.concatenate([z1, z2])
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    m = len(z1)
    total = 0.0
    for a in range(2 * m):
        p = (a + m) % (2 * m)
        denom = sum(math.exp(float(z[a] @ z[k]) / tau) for k in range(2 * m) if k != a)
        total += -math.log(math.exp(float(z[a] @ z[p]) / tau) / denom)
    return total / (2 * m)


@pytest.mark.parametrize("m,tau", [(3, 0.5), (8, 0.1)])
def test_nt_xent_matches_formula(m, tau):
    g = torch.Generator().manual_seed(m)
    z1, z2 = torch.randn(m, 6, generator=g, dtype=torch.float64), torch.randn(m, 6, generator=g, dtype=torch.float64)
    assert float(nt_xent(z1, z2, tau)) == pytest.approx(slow_nt_xent(z1.numpy(), z2.numpy(), tau), rel=1e-5)


def tiny_method(tiny, name, **overrides):
    torch.manual_seed(0)
    return build_method(make_config({**tiny, "method": name, **overrides}))


def identity_views(method):
    """Replace the random views by plain normalisation (the raw images are already image_size)."""
    method.augment = lambda x: normalize(to_float(x))


def test_csi_training_batch_has_rotations_as_negatives(tiny):
    method = tiny_method(tiny, "csi")
    identity_views(method)
    method.view_params = replace(method.view_params, hflip_p=0.0)
    images = torch.randint(0, 256, (3, 1, 16, 16), dtype=torch.uint8)
    with torch.no_grad():
        out = method.training_loss(images, 0.0)
    # Reference: 4 rotations x 3 images = 12 instances, each with 2 views; the layout is the
    # documented one (view, rotation, image), so row k*3 + i is image i rotated by k.
    rotated = torch.cat([torch.rot90(images, k, dims=(-2, -1)) for k in range(4)])
    h = method.encoder(normalize(to_float(torch.cat([rotated, rotated]))))
    z = method.head(h).detach().double().numpy()
    assert float(out["contrastive"]) == pytest.approx(slow_nt_xent(z[:12], z[12:], 0.5), rel=1e-4)
    logits = method.rotation_head(h).detach().double()
    ce = np.mean([-float(logits[r].log_softmax(0)[(r % 12) // 3]) for r in range(24)])
    assert float(out["rotation"]) == pytest.approx(ce, rel=1e-4)
    assert float(out["loss"]) == pytest.approx(float(out["contrastive"]) + float(out["rotation"]), rel=1e-6)


def test_rotation_layout_and_flip_before_rotation():
    x = torch.arange(2 * 9, dtype=torch.uint8).reshape(2, 1, 3, 3)
    r = rotate_all(x)
    assert r.shape == (8, 1, 3, 3)
    assert torch.equal(r[1 * 2 + 1], torch.rot90(x[1], 1, dims=(-2, -1)))
    assert rotation_labels(2, 2).tolist() == [0, 0, 1, 1, 2, 2, 3, 3] * 2
    assert torch.equal(rotation_context(1, True)(x), torch.rot90(x.flip(-1), 1, dims=(-2, -1)))
    torch.manual_seed(0)
    flipped = random_hflip(x.repeat(50, 1, 1, 1), 0.5)
    is_flip = [torch.equal(f, x[i % 2].flip(-1)) for i, f in enumerate(flipped)]
    assert 20 < sum(is_flip) < 80 and all(torch.equal(f, x[i % 2]) for i, f in enumerate(flipped) if not is_flip[i])


def test_csi_training_views_never_flip(tiny):
    method = tiny_method(tiny, "csi")
    assert method.views.params.hflip_p == 0.0
    x = torch.zeros(64, 3, 16, 16)
    x[..., :4] = 1.0  # a bright left band: a mirrored view would be brighter on the right
    torch.manual_seed(0)
    out = method.views(x)
    left, right = out[..., :8].mean(dim=(1, 2, 3)), out[..., 8:].mean(dim=(1, 2, 3))
    assert bool((left >= right).all()) and bool((left > right).any())


def slow_csi(test_p, test_l, train_p, train_l, test_norm=True):
    """CSI's score by loops.

    Per sample t and rotation k: max cosine (x ||z||) / mean train norm + logit_k / mean train logit_k.
    """
    t_, r_, m, _ = test_p.shape
    out = np.zeros(m)
    for i in range(m):
        s = 0.0
        for t in range(t_):
            for k in range(r_):
                norms = [np.linalg.norm(v) for v in train_p[t, k]]
                z = test_p[t, k, i]
                best = max(
                    float(z @ v) / (np.linalg.norm(v) * (1.0 if test_norm else np.linalg.norm(z)))
                    for v in train_p[t, k]
                )
                s += best / np.mean(norms) + test_l[t, k, i, k] / np.mean(train_l[t, k, :, k])
        out[i] = -s / (t_ * r_)
    return out


@pytest.mark.parametrize("test_norm,chunk", [(True, 2), (False, 4096)])
def test_csi_score_matches_loop_reference(test_norm, chunk):
    rng = np.random.default_rng(0)
    t_, r_, m, n, p = 3, 4, 5, 7, 6
    test_p, train_p = rng.normal(size=(t_, r_, m, p)), rng.normal(size=(t_, r_, n, p)) * 2
    test_l = rng.normal(size=(t_, r_, m, r_))
    train_l = rng.normal(size=(t_, r_, n, r_)) + 3.0  # mean logits away from zero, as after training
    ref = slow_csi(test_p, test_l, train_p, train_l, test_norm)
    out = csi_scores(*(torch.tensor(a) for a in (test_p, test_l, train_p, train_l)), test_norm=test_norm, chunk=chunk)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
    # Averaging over samples is linear: summing per-sample scores (as CSI.score does) gives the same.
    per_sample = sum(
        csi_scores(*(torch.tensor(a[t : t + 1]) for a in (test_p, test_l, train_p, train_l)), test_norm)
        for t in range(t_)
    )
    np.testing.assert_allclose(per_sample.numpy() / t_, ref, rtol=1e-5, atol=1e-6)


def test_csi_score_is_higher_for_images_unlike_the_training_set():
    rng = np.random.default_rng(1)
    train_p = rng.normal(size=(1, 4, 20, 8))
    train_l = np.tile(np.eye(4) * 5.0, (1, 1, 20, 1)).reshape(1, 4, 20, 4)
    test_p = np.concatenate([train_p[:, :, :1], -train_p[:, :, :1]], axis=2)  # a training image, its opposite
    test_l = np.concatenate([train_l[:, :, :1], -train_l[:, :, :1]], axis=2)
    s = csi_scores(*(torch.tensor(a) for a in (test_p, test_l, train_p, train_l))).numpy()
    assert s[1] > s[0]


def test_csi_score_uses_the_shared_views_with_flip_before_rotation(tiny):
    method = tiny_method(tiny, "csi", tta=8, tta_seed=3, params={"samples": -1})
    assert method.n_samples == 2  # ceil(8 / 4): 10 samples x 4 rotations at the paper's A = 40
    train = torch.randint(0, 256, (12, 1, 16, 16), dtype=torch.uint8)
    test = torch.randint(0, 256, (5, 1, 16, 16), dtype=torch.uint8)
    cpu = torch.device("cpu")
    plan = tta_draw(2, 1, method.cfg.tta_seed, method.view_params)
    assert [v for v, _ in plan] == [v for v, _ in tta_draw(8, 1, method.cfg.tta_seed, method.view_params)][:2]
    assert [v.hflip for v, _ in plan] == [True, False]  # seed 3: one flipped sample, one not
    ref = np.zeros(len(test))
    for view, _ in plan:
        feats = {}
        for split, imgs in (("train", train), ("test", test)):
            rows = []
            for k in range(4):
                x = torch.rot90(imgs.flip(-1) if view.hflip else imgs, k, dims=(-2, -1))
                with torch.no_grad():
                    h = view_features(method.encoder, x, replace(view, hflip=False), lambda y: y, 16, cpu)
                    rows.append((method.head(h).numpy(), method.rotation_head(h).numpy()))
            feats[split] = (np.stack([r[0] for r in rows])[None], np.stack([r[1] for r in rows])[None])
        ref += slow_csi(feats["test"][0], feats["test"][1], feats["train"][0], feats["train"][1])
    with torch.no_grad():
        out = method.score(train, test, cpu)
    np.testing.assert_allclose(out.scores["csi"], ref / len(plan), rtol=1e-4, atol=1e-5)
    assert 0.0 <= out.extras["train_rotation_accuracy"] <= 1.0


def slow_knn(test: np.ndarray, train: np.ndarray, k: int) -> np.ndarray:
    nt = train / np.linalg.norm(train, axis=1, keepdims=True)
    return np.array([sorted(np.linalg.norm(nt - t / np.linalg.norm(t), axis=1))[k - 1] for t in test])


def slow_mahalanobis(test: np.ndarray, train: np.ndarray, assignments: np.ndarray) -> np.ndarray:
    """SSD by loops: normalise, standardise with the training mean/std, min over clusters of (x-mu)^T pinv(S)(x-mu)."""
    tr = train / np.linalg.norm(train, axis=1, keepdims=True)
    te = test / np.linalg.norm(test, axis=1, keepdims=True)
    mu, sd = tr.mean(0), tr.std(0, ddof=1)
    tr, te = (tr - mu) / sd, (te - mu) / sd
    out = []
    for x in te:
        dists = []
        for c in np.unique(assignments):
            members = tr[assignments == c]
            centre = members.mean(0)
            cov = sum(np.outer(v - centre, v - centre) for v in members) / (len(members) - 1)
            dists.append(float((x - centre) @ np.linalg.pinv(cov, hermitian=True) @ (x - centre)))
        out.append(min(dists))
    return np.array(out)


@pytest.mark.parametrize("k", [1, 3])
def test_knn_matches_loop_reference(k):
    rng = np.random.default_rng(k)
    train, test = rng.normal(size=(15, 4)), rng.normal(size=(6, 4))
    np.testing.assert_allclose(
        knn_scores(torch.tensor(test), torch.tensor(train), k, chunk=4).numpy(),
        slow_knn(test, train, k),
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize("clusters", [1, 3])
def test_ssd_mahalanobis_matches_loop_reference(clusters):
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(clusters)
    centres = rng.normal(size=(3, 5)) * 3
    train = np.concatenate([c + rng.normal(size=(25, 5)) for c in centres])
    test = np.concatenate([centres[0] + rng.normal(size=(3, 5)), rng.normal(size=(3, 5)) * 4])
    if clusters == 1:
        assignments = np.zeros(len(train), dtype=int)
    else:
        tr = train / np.linalg.norm(train, axis=1, keepdims=True)
        tr = (tr - tr.mean(0)) / tr.std(0, ddof=1)
        assignments = KMeans(n_clusters=clusters, n_init=10, random_state=0).fit(tr).labels_
    out = mahalanobis_scores(torch.tensor(test), torch.tensor(train), n_clusters=clusters, seed=0).numpy()
    np.testing.assert_allclose(out, slow_mahalanobis(test, train, assignments), rtol=1e-4)


def test_simclr_scores_one_representation_knn_over_views_and_ssd(tiny):
    method = tiny_method(tiny, "simclr", tta=4, params={"k": 2, "ssd_clusters": 1})
    train = torch.randint(0, 256, (20, 1, 16, 16), dtype=torch.uint8)
    test = torch.randint(0, 256, (6, 1, 16, 16), dtype=torch.uint8)
    cpu = torch.device("cpu")
    plan = tta_draw(4, 1, method.cfg.tta_seed, method.view_params)
    assert len(plan) == 4 and all(c == 0 for _, c in plan)  # every view acts on x: SimCLR has no context
    ref = np.mean(
        [
            slow_knn(
                *(view_features(method.encoder, i, v, lambda y: y, 16, cpu).double().numpy() for i in (test, train)), 2
            )
            for v, _ in plan
        ],
        axis=0,
    )
    ident = [view_features(method.encoder, i, IDENTITY_VIEW, lambda y: y, 16, cpu) for i in (test, train)]
    with torch.no_grad():
        out = method.score(train, test, cpu)
    assert list(out.scores) == [*SimCLR.score_names, "knn@encoder/matched/csi"]  # headlines, then CSI's views
    assert list(SimCLR.score_names) == ["knn", "ssd"]
    np.testing.assert_allclose(out.scores["knn"], ref, rtol=1e-4, atol=1e-5)
    # SSD on the identity-view encoder features (its maths is checked against loops above).
    np.testing.assert_allclose(out.scores["ssd"], mahalanobis_scores(*ident, n_clusters=1).numpy(), rtol=1e-5)


def test_simclr_training_loss_is_nt_xent_of_two_views(tiny):
    method = tiny_method(tiny, "simclr")
    identity_views(method)
    images = torch.randint(0, 256, (4, 1, 16, 16), dtype=torch.uint8)
    with torch.no_grad():
        out = method.training_loss(images, 0.5)
    z = method.head(method.encoder(normalize(to_float(torch.cat([images, images]))))).detach().double().numpy()
    assert float(out["loss"]) == pytest.approx(slow_nt_xent(z[:4], z[4:], 0.5), rel=1e-4)


def test_params_are_validated_with_their_names(tiny):
    with pytest.raises(ConfigError, match=r"unknown params \['kk'\] for method 'simclr'"):
        build_method(make_config({**tiny, "method": "simclr", "params": {"kk": 5}}))
    with pytest.raises(ConfigError, match="params.k must be >= 1"):
        build_method(make_config({**tiny, "method": "simclr", "params": {"k": 0}}))
    with pytest.raises(ConfigError, match="params.samples"):
        build_method(make_config({**tiny, "method": "csi", "params": {"samples": -3}}))
    assert get_method("csi") is CSI and get_method("simclr") is SimCLR


def test_paper_defaults():
    s, c = SimCLR.Params(), CSI.Params()
    assert (s.temperature, s.k, s.ssd_clusters, s.head_dim) == (0.5, 1, 1, 128)
    assert (c.temperature, c.rotation_weight, c.head_dim) == (0.5, 1.0, 128)
    assert (
        CSI(make_config({"width": 4, "image_size": 16, "method": "csi", "channels_last": False}), c).n_samples == 10
    )  # A = 40


def test_cli_lists_every_method_with_params():
    res = subprocess.run(
        [sys.executable, "-m", "con2", "methods"], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert res.returncode == 0, res.stderr
    names = [line.split(":")[0] for line in res.stdout.splitlines() if line and not line.startswith(" ")]
    assert {"con2", "simclr", "csi"} <= set(names)
    for text in (
        "scores: knn, ssd",
        "scores: csi",
        "params.k = 1",
        "params.ssd_clusters = 1",
        "params.rotation_weight = 1.0",
    ):
        assert text in res.stdout
