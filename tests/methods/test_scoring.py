"""The shared test-time loop against slow references: every reading of CON2's scores, by hand.

A reading is a feature space (encoder output, content head, context head) crossed with the
training set that a view in context x^C is compared with: ``matched`` (the training images mapped
through t_C, then the same view) or ``original`` (the training images in the original context,
the formula as printed). Here each is recomputed with plain loops over views, images and
training images, and compared with the columns ``score_method`` writes in one pass.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
import torchvision.transforms.v2 as T
from scipy.stats import multivariate_normal

from con2.config import make_config
from con2.methods import build_method
from con2.methods.con2_method import FEATURES, Con2Params, alpha_at
from con2.methods.scoring import REFERENCES, Reading, Scorer, ScoringSpec, crossed_views, split_views
from con2.transforms.augment import normalize, to_float
from con2.transforms.preprocess import PAPER_CENTER_CROP, center_crop

CPU = torch.device("cpu")


def tiny_con2(tiny, **params):
    torch.manual_seed(0)
    return build_method(make_config({**tiny, "method": "con2", "tta": 4, "params": params}))


def images(n: int, seed: int) -> torch.Tensor:
    return torch.randint(0, 256, (n, 1, 16, 16), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


@torch.no_grad()
def slow_features(method, imgs, view, context, space):
    method.eval()
    x = normalize(view(to_float(context(imgs)), 16))
    h = method.encoder(x)
    return {"encoder": h, "content": method.content_head(h), "context": method.context_head(h)}[space].double().numpy()


def slow_nnd(test: np.ndarray, train: np.ndarray) -> np.ndarray:
    out = np.empty(len(test))
    for i, t in enumerate(test):
        out[i] = -max(float(t @ r) / (np.linalg.norm(t) * np.linalg.norm(r)) for r in train)
    return out


def slow_lh(test: np.ndarray, train: np.ndarray, ridge: float) -> np.ndarray:
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)  # noqa: E731
    tr, te = unit(train), unit(test)
    cov = np.cov(tr, rowvar=False, bias=True)
    cov += ridge * np.trace(cov) / len(cov) * np.eye(len(cov))
    return -multivariate_normal(tr.mean(0), cov).logpdf(te)


@pytest.mark.parametrize("feature", FEATURES)
@pytest.mark.parametrize("reference", REFERENCES)
def test_every_con2_reading_matches_a_loop_over_views(tiny, feature, reference):
    method = tiny_con2(tiny)
    train, test = images(20, 1), images(7, 2)
    out = method.score(train, test, CPU)
    plan = method.test_views()
    assert [tv.context for tv in plan] == [0, 0, 1, 1]  # half of the A = 4 views on x, half on x^C
    nnd, lh = np.zeros(len(test)), np.zeros(len(test))
    for tv in plan:
        ctx = method.contexts[tv.context]
        train_ctx = ctx if reference == "matched" else method.contexts[0]  # `original`: the formula as printed
        te = slow_features(method, test, tv.view, ctx, feature)
        tr = slow_features(method, train, tv.view, train_ctx, feature)
        nnd += slow_nnd(te, tr) / len(plan)
        lh += slow_lh(te, tr, method.cfg.lh_ridge) / len(plan)
    headline = feature == "encoder" and reference == "matched"
    suffix = "" if headline else f"@{feature}/{reference}"
    np.testing.assert_allclose(out.scores[f"nnd{suffix}"], nnd, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.scores[f"lh{suffix}"], lh, rtol=1e-4, atol=1e-3)
    assert out.scoring["columns"][f"nnd{suffix}"] == {
        "score": "nnd",
        "feature": feature,
        "reference": reference,
        "views": "fixed",
        "test_time_views": True,
    }


@pytest.mark.parametrize("reference", REFERENCES)
def test_csi_views_reading_matches_a_loop_over_images_and_their_own_views(tiny, reference):
    """CSI's test-time views: per image its own random views (seeded by the image's index and the
    context), crop scale 0.54, the flip before the context; features averaged over an image's views,
    then the max cosine to the averaged training features; the mean over the contexts."""
    from con2.training.engine import derived_seed
    from con2.transforms.views import apply_views, sample_views

    method = tiny_con2(tiny)
    method.cfg = dataclasses.replace(method.cfg, csi_views=3)
    train, test = images(9, 1), images(5, 2)
    out = method.score(train, test, CPU)
    params = dataclasses.replace(method.view_params, crop_scale=(0.54, 0.54))

    @torch.no_grad()
    def mean_feature(img, i, c, context):  # one image [1, C, H, W], its index, the context of its views
        g = torch.Generator().manual_seed(derived_seed(method.cfg.tta_seed, 0xC51, c, i))
        views = sample_views(3, 16, 16, params, generator=g)
        feats = []
        for v in range(3):
            one = views.rows(v, v + 1)
            x = img.flip(-1) if bool(one.flip[0]) else img  # the flip acts on the raw pixels, before the context
            one = dataclasses.replace(one, flip=torch.zeros(1, dtype=torch.bool))
            x = normalize(apply_views(to_float(context(x)), one, 16))
            method.eval()
            feats.append(method.encoder(x)[0].double().numpy())
        return np.mean(feats, axis=0)

    nnd = np.zeros(len(test))
    for c, context in enumerate(method.contexts):
        train_ctx = context if reference == "matched" else method.contexts[0]
        te = np.stack([mean_feature(test[i : i + 1], i, c, context) for i in range(len(test))])
        tr = np.stack([mean_feature(train[j : j + 1], j, c, train_ctx) for j in range(len(train))])
        nnd += slow_nnd(te, tr) / len(method.contexts)
    col = f"nnd@encoder/{reference}/csi"
    np.testing.assert_allclose(out.scores[col], nnd, rtol=1e-4, atol=1e-5)
    assert out.scoring["columns"][col]["views"] == "csi"
    assert not np.allclose(out.scores[col], out.scores[f"nnd@encoder/{reference}".replace("@encoder/matched", "")])
    method.cfg = dataclasses.replace(method.cfg, csi_views=0)
    assert not any(k.endswith("/csi") for k in method.score(train, test, CPU).scores)  # 0: not computed


def test_original_and_matched_differ_only_in_the_x_c_views(tiny):
    method = tiny_con2(tiny)
    out = method.score(images(20, 1), images(7, 2), CPU)
    assert not np.allclose(out.scores["nnd"], out.scores["nnd@encoder/original"])
    # Only x views: the two readings coincide (the reference set differs only for x^C views).
    method.cfg = dataclasses.replace(method.cfg, tta=0)  # the identity view on x alone
    out0 = method.score(images(20, 1), images(7, 2), CPU)
    np.testing.assert_allclose(out0.scores["nnd"], out0.scores["nnd@encoder/original"])


def test_headline_reading_is_a_param_and_scoring_never_touches_the_weights(tiny):
    train, test = images(20, 1), images(7, 2)
    matched = tiny_con2(tiny)
    original = tiny_con2(tiny, score_reference="original", score_features="content")
    original.load_state_dict(matched.state_dict())
    before = {k: v.clone() for k, v in matched.state_dict().items()}
    a = matched.score(train, test, CPU)
    b = original.score(train, test, CPU)
    for k, v in matched.state_dict().items():
        assert torch.equal(v, before[k]), f"scoring changed {k}"
    assert matched.training and original.training  # modes restored
    np.testing.assert_allclose(b.scores["nnd"], a.scores["nnd@content/original"])
    np.testing.assert_allclose(b.scores["nnd@encoder/matched"], a.scores["nnd"])
    assert b.scoring["headline"] == {"nnd": "content/original", "lh": "content/original"}
    assert a.scoring["headline"] == {"nnd": "encoder/matched", "lh": "encoder/matched"}
    assert list(a.scores)[:2] == ["nnd", "lh"]  # headline columns first in scores.csv


def test_a_scorer_without_test_time_views_uses_the_identity_view_once(tiny):
    method = tiny_con2(tiny)
    calls = []

    def scorer(te, tr, c):
        calls.append(c)
        return te[:, 0]

    spec = ScoringSpec({"once": Scorer(scorer, tta=False), "all": Scorer(scorer)})
    method.scoring = lambda: spec
    out = method.score(images(20, 1), images(7, 2), CPU)
    # 4 plan views (2 per context), CSI's views once per context (averaged first), the identity view once
    assert calls.count(0) == 4 and calls.count(1) == 3
    ident = slow_features(method, images(7, 2), method.test_views()[0].view.__class__(), lambda x: x, "encoder")
    np.testing.assert_allclose(out.scores["once"], ident[:, 0], rtol=1e-5, atol=1e-6)
    assert sorted(out.scores) == ["all", "all@encoder/matched/csi", "once"]  # CSI's views: tta scorers only


@pytest.mark.parametrize("n_val", [3, 12])  # 12: more validation than training images (CSI's views per index)
def test_validation_images_score_as_if_they_were_the_test_set_and_change_no_test_score(tiny, n_val):
    """Issue 35: the normal validation images get every column, each exactly what scoring them as the
    test set gives (same views, same training bank), and adding them changes no test score, no
    diagnostic and no feature array."""
    method = tiny_con2(tiny)
    method.cfg = dataclasses.replace(method.cfg, csi_views=2)
    train, test, val = images(9, 1), images(5, 2), images(n_val, 3)
    alone = method.score(train, test, CPU)
    both = method.score(train, test, CPU, val)
    as_test = method.score(train, val, CPU)
    assert alone.validation == {} and list(both.validation) == list(both.scores)
    for col in alone.scores:
        np.testing.assert_array_equal(both.scores[col], alone.scores[col])
        np.testing.assert_allclose(both.validation[col], as_test.scores[col], rtol=1e-5, atol=1e-6)
        assert both.validation[col].shape == (n_val,)
    assert both.extras == alone.extras
    assert (
        all(np.array_equal(both.arrays[k], alone.arrays[k]) for k in alone.arrays)
        and both.arrays.keys() == alone.arrays.keys()
    )
    assert method.score(train, test, CPU, val[:0]).validation == {}  # no validation images: none scored


def test_plans_split_or_cross_the_views_over_contexts():
    ctx = [lambda x: x, lambda x: 255 - x]
    split = split_views(4, ctx, seed=0)
    assert [t.context for t in split] == [0, 0, 1, 1] and len({t.view for t in split}) == 4
    crossed = crossed_views(2, ctx, seed=0)
    assert [t.context for t in crossed] == [0, 1, 0, 1]
    assert crossed[0].view == crossed[1].view != crossed[2].view
    assert [t.view for t in crossed[::2]] == [t.view for t in split[:2]]  # the same seeded views
    with pytest.raises(ValueError, match="not among the readings"):
        ScoringSpec({"s": Scorer(lambda a, b, c: a[:, 0])}, (Reading("encoder"),), Reading("content"))


@pytest.mark.parametrize(
    "schedule,start,end,expected",
    [
        ("step", 0.0, 1.0, [0.0, 0.25, 0.5, 0.75, 0.99]),
        ("epoch", 0.0, 1.0, [0.0, 0.25, 0.5, 0.75, 0.75]),  # held per epoch (4 epochs) at the epoch's start
        ("constant", 0.0, 1.0, [1.0] * 5),
        ("step", 0.5, 1.0, [0.5, 0.625, 0.75, 0.875, 0.995]),
    ],
)
def test_alpha_schedules(schedule, start, end, expected):
    params = Con2Params(alpha_schedule=schedule, alpha_start=start, alpha_end=end)
    got = [alpha_at(p, params, epochs=4) for p in (0.0, 0.25, 0.5, 0.75, 0.99)]
    assert got == pytest.approx(expected)


def test_each_term_uses_its_own_temperature_and_the_context_weight(tiny):
    from con2.maths.losses import batch_labels, content_loss, context_loss

    method = tiny_con2(
        tiny, context_temperature=0.2, content_temperature=0.7, context_weight=0.3, alpha_schedule="constant"
    )
    imgs = images(8, 3)
    h_seen = {}
    encoder_forward = method.encoder.forward
    method.encoder.forward = lambda x: h_seen.setdefault("h", encoder_forward(x))
    torch.manual_seed(5)
    with torch.no_grad():
        out = method.training_loss(imgs, progress=0.1)
        ctx_labels, sample_labels = batch_labels(8, 2, 2)
        h = h_seen["h"]
        ref_context = float(context_loss(method.context_head(h), ctx_labels, 0.2))
        ref_content = float(content_loss(method.content_head(h), sample_labels, 0.7))
    assert float(out["context"]) == pytest.approx(ref_context)
    assert float(out["content"]) == pytest.approx(ref_content)
    assert float(out["loss"]) == pytest.approx(0.3 * float(out["context"]) + 1.0 * float(out["content"]))
    assert method.temperatures == (0.2, 0.7)
    assert tiny_con2(tiny, temperature=0.1).temperatures == (0.1, 0.1)


def test_center_crop_is_the_papers_resize_then_crop():
    imgs = images(3, 4)
    # The paper at 224 px: Resize(256) then CenterCrop(224); at the stored 16 px: Resize(18) then CenterCrop(16).
    reference = T.Compose([T.Resize(round(16 / PAPER_CENTER_CROP), antialias=True), T.CenterCrop(16)])
    assert torch.equal(center_crop(imgs, PAPER_CENTER_CROP), reference(imgs))
    assert center_crop(imgs, 1.0) is imgs
    assert not math.isclose(float(center_crop(imgs, 0.5).float().mean()), float(imgs.float().mean()), rel_tol=1e-6)


def test_every_method_and_external_baseline_gets_the_centre_crop_from_load_run_data(tiny):
    from con2.data.rundata import load_run_data
    from con2.transforms.preprocess import center_crop_array

    plain = load_run_data(make_config(tiny))
    cropped = load_run_data(make_config({**tiny, "center_crop": PAPER_CENTER_CROP}))
    assert cropped.train.shape == plain.train.shape and not np.array_equal(cropped.train, plain.train)
    np.testing.assert_array_equal(cropped.test, center_crop_array(plain.test, PAPER_CENTER_CROP))
    x = torch.from_numpy(plain.test.transpose(0, 3, 1, 2).copy())
    np.testing.assert_array_equal(cropped.test.transpose(0, 3, 1, 2), center_crop(x, PAPER_CENTER_CROP).numpy())
