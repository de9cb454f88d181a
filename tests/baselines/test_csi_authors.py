"""CSI as its authors train and score it (``params.flip``, ``augment``, ``evaluation``) against slow references.

The references are per-image (per-pixel) loops written from CSI's code (alinlab/CSI): ``models/transform_layers.py``
(rgb2hsv lines 16-42, hsv2rgb 45-66, RandomResizedCropLayer 69-165, RandomColorGrayLayer 297-319,
ColorJitterLayer 322-413), ``models/classifier.py`` lines 16-31 (the strengths and their order),
``training/unsup/simclr_CSI.py`` line 45 (the flip of each copy), ``evals/ood_pre.py`` lines 44-59, 116-121 and
189 (features averaged over samples before the score; the flip shared by an image's rotations) and README line 91
(``--ood_samples 10 --resize_factor 0.54 --resize_fix``). The values cited from that code are written out here.
"""

from __future__ import annotations

import colorsys
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from baselines.csi import CSI, csi_test_views, rotate_all
from baselines.csi_spec import CSIParams
from con2.config import make_config
from con2.errors import ConfigError
from con2.maths.losses import nt_xent
from con2.methods import build_method
from con2.transforms.augment import normalize, to_float
from con2.transforms.csi_augment import (
    CSI_LUMA,
    CSI_TEST_VIEWS,
    CSI_TRAIN_VIEWS,
    HUE_SCALE,
    N_CSI_UNIFORMS,
    CSIAugment,
    adjust_hsv,
    apply_csi_views,
    color_jitter,
    crop_resize,
    csi_grayscale,
    csi_views_from_uniform,
    hsv_to_rgb,
    identity_csi_views,
    rgb_to_hsv,
    sample_csi_views,
)

CPU = torch.device("cpu")


# --- slow references, written from CSI's code ------------------------------------------------------------------


def csi_hsv(r: float, g: float, b: float) -> tuple[float, float, float]:
    """CSI's rgb2hsv of one pixel: the atan2 hue (not colorsys' lookup table), s = (max - min) / max, v = max."""
    hue = (math.atan2(math.sqrt(3) * (g - b), 2 * r - g - b) % (2 * math.pi)) / (2 * math.pi)
    mx, mn = max(r, g, b), min(r, g, b)
    return hue, (mx - mn) / mx if mx > 0 else 0.0, mx


def slow_jitter(img: np.ndarray, on: bool, factors: np.ndarray, contrast_first: bool) -> np.ndarray:
    """ColorJitterLayer on one image [3, H, W]: the contrast group (per-channel mean, clamp) and the HSV group
    (hue + f * 255 / 360 mod 1, s and v multiplied, clamp) in the batch's order."""
    if not on:
        return img
    c, hue, s, v = (float(f) for f in factors)
    out = img.astype(np.float64)
    for contrast in (True, False) if contrast_first else (False, True):
        if contrast:
            m = out.mean(axis=(1, 2), keepdims=True)
            out = np.clip((out - m) * c + m, 0, 1)
        else:
            new = np.empty_like(out)
            for y in range(out.shape[1]):
                for x in range(out.shape[2]):
                    h_, s_, v_ = csi_hsv(*out[:, y, x])
                    h_ = (h_ + hue * 255 / 360) % 1
                    new[:, y, x] = colorsys.hsv_to_rgb(min(max(h_, 0), 1), min(s_ * s, 1), min(v_ * v, 1))
            out = new
    return out


def slow_gray(img: np.ndarray, on: bool) -> np.ndarray:
    """RandomColorGrayLayer on one image: 0.299 r + 0.587 g + 0.114 b on all three channels."""
    return np.repeat(0.299 * img[:1] + 0.587 * img[1:2] + 0.114 * img[2:], 3, 0) if on else img


def reflect_clip(p: float, n: int) -> float:
    """grid_sample's reflection padding (align_corners False): reflect about -0.5 and n - 0.5, then clip."""
    d = abs(p + 0.5)
    flips, extra = math.floor(d / n), math.fmod(d, n)
    p = extra - 0.5 if flips % 2 == 0 else n - extra - 0.5
    return min(max(p, 0.0), n - 1.0)


def bilinear(img: np.ndarray, py: float, px: float) -> np.ndarray:
    c, hgt, wid = img.shape
    py, px = reflect_clip(py, hgt), reflect_clip(px, wid)
    y0, x0 = math.floor(py), math.floor(px)
    y1, x1 = min(y0 + 1, hgt - 1), min(x0 + 1, wid - 1)
    fy, fx = py - y0, px - x0
    top = img[:, y0, x0] * (1 - fx) + img[:, y0, x1] * fx
    bottom = img[:, y1, x0] * (1 - fx) + img[:, y1, x1] * fx
    return top * (1 - fy) + bottom * fy


def slow_crop(img: np.ndarray, box: np.ndarray, size: int) -> np.ndarray:
    """RandomResizedCropLayer on one image: the box w x h px, its centre k / 2 px off the image's, sampled at
    G = max(side, size) points per side (pixel p = left + (j + 0.5) w / G - 0.5), then G x G -> size x size by
    averaging (adaptive_avg_pool2d; G a multiple of size here)."""
    _, hgt, wid = img.shape
    w, h, kx, ky = (float(b) for b in box)
    left, top = (wid - w) / 2 + kx / 2, (hgt - h) / 2 + ky / 2
    gh, gw = max(hgt, size), max(wid, size)
    out = np.empty((img.shape[0], gh, gw))
    for j in range(gh):
        for i in range(gw):
            out[:, j, i] = bilinear(img, top + (j + 0.5) * h / gh - 0.5, left + (i + 0.5) * w / gw - 0.5)
    f = gh // size
    return out.reshape(img.shape[0], size, f, size, f).mean(axis=(2, 4))


def slow_box(u: np.ndarray, hgt: int, wid: int, scale, ratio) -> tuple[float, float, float, float]:
    """One image's box from its uniforms: the first of 10 tries that fits (else the whole image), then the offsets
    k uniform over the integers of [w - W, W - w] (numpy's randint(w - W, W - w + 1))."""
    for t in range(10):
        area = (scale[0] + (scale[1] - scale[0]) * u[t]) * hgt * wid
        aspect = math.exp(math.log(ratio[0]) + (math.log(ratio[1]) - math.log(ratio[0])) * u[10 + t])
        w, h = float(np.round(math.sqrt(area * aspect))), float(np.round(math.sqrt(area / aspect)))
        if 0 < w <= wid and 0 < h <= hgt:
            break
    else:
        w, h = float(wid), float(hgt)
    kx = math.floor(u[20] * (2 * (wid - w) + 1)) + w - wid
    ky = math.floor(u[21] * (2 * (hgt - h) + 1)) + h - hgt
    return w, h, kx, ky


def images(n: int, channels: int = 3, side: int = 6, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, channels, side, side, generator=torch.Generator().manual_seed(seed))


# --- the values cited from CSI's code ----------------------------------------------------------------------------


def test_the_augmentation_settings_are_csis():
    # classifier.py lines 16-18 (and common/common.py line 76: resize_factor 0.08), README line 91 for the test crop
    t = CSI_TRAIN_VIEWS
    assert (t.brightness, t.contrast, t.saturation, t.hue, t.jitter_p, t.grayscale_p) == (0.4, 0.4, 0.4, 0.1, 0.8, 0.2)
    assert t.crop_scale == (0.08, 1.0) and t.crop_ratio == (3 / 4, 4 / 3)
    assert CSI_TEST_VIEWS == replace(t, crop_scale=(0.54, 0.54))
    assert CSI_LUMA == (0.299, 0.587, 0.114) and HUE_SCALE == 255 / 360  # transform_layers.py lines 302, 397


def test_params_default_to_the_harness_recipe_and_are_validated(tiny):
    p = CSIParams()
    assert (p.flip, p.augment, p.evaluation, p.samples) == ("shared", "harness", "views", -1)
    for key, bad in (("flip", "both"), ("augment", "torchvision"), ("evaluation", "fixed")):
        with pytest.raises(ConfigError, match=rf"params\.{key} must be one of .*, got '{bad}'"):
            build_method(make_config({**tiny, "method": "csi", "params": {key: bad}}))
    m = CSI(make_config({**tiny, "method": "csi", "tta": 40, "params": {"evaluation": "csi"}}), CSIParams())
    assert m.n_samples == 10 and m.test_view_count == 40  # --ood_samples 10 x 4 rotations at A = 40


# --- the layers against per-pixel loops --------------------------------------------------------------------------


def test_rgb_to_hsv_is_csis_atan2_hue_and_hsv_to_rgb_inverts_it():
    x = images(3, side=5)
    x[0, :, 0, 0] = 0.0  # black: saturation 0 (CSI zeroes the 0/0)
    x[0, :, 0, 1] = 0.5  # grey: hue 0, saturation 0
    hsv = rgb_to_hsv(x).double()
    ref = np.array(
        [[[csi_hsv(*x[b, :, i, j].double().tolist()) for j in range(5)] for i in range(5)] for b in range(3)]
    )
    np.testing.assert_allclose(hsv.permute(0, 2, 3, 1).numpy(), ref, atol=2e-6)
    # CSI's atan2 hue is not colorsys' (the lookup table): apart by up to ~1.2 degrees, equal only at 30-degree steps
    table = np.array(
        [colorsys.rgb_to_hsv(*x[b, :, i, j].double().tolist())[0] for b in range(3) for i in range(5) for j in range(5)]
    )
    apart = np.abs((ref[..., 0].reshape(-1) - table + 0.5) % 1 - 0.5) * 360
    assert 0.3 < apart.max() < 1.25
    # hsv2rgb is the standard (lookup-table) inverse, so CSI's round trip moves a colour's hue by up to ~1.2 degrees
    assert float((hsv_to_rgb(rgb_to_hsv(x)) - x).abs().max()) > 1e-3
    back = np.array([[colorsys.hsv_to_rgb(*ref[0, i, j]) for j in range(5)] for i in range(5)])  # standard HSV
    np.testing.assert_allclose(hsv_to_rgb(hsv.float())[0].permute(1, 2, 0).numpy(), back, atol=2e-6)


@pytest.mark.parametrize("contrast_first", [True, False])
def test_color_jitter_matches_a_per_pixel_loop(contrast_first):
    x = images(6, side=4, seed=1)
    on = torch.tensor([True, True, False, True, True, True])
    g = torch.Generator().manual_seed(2)
    factors = torch.stack(
        [0.6 + 0.8 * torch.rand(6, generator=g), -0.1 + 0.2 * torch.rand(6, generator=g)]
        + [0.6 + 0.8 * torch.rand(6, generator=g) for _ in range(2)],
        1,
    )
    factors[3, 3] = 1.4  # values pushed above 1: clamped
    out = color_jitter(x, on, factors, contrast_first)
    for b in range(6):
        ref = slow_jitter(x[b].double().numpy(), bool(on[b]), factors[b].double().numpy(), contrast_first)
        np.testing.assert_allclose(out[b].numpy(), ref, atol=3e-6, err_msg=f"image {b}")
    other = color_jitter(x, on, factors, not contrast_first)
    assert (other - out).abs().max() > 1e-3  # the order is real


def test_hue_shift_is_255_over_360_of_a_turn():
    x = torch.tensor([1.0, 0.0, 0.0]).view(1, 3, 1, 1)  # pure red: hue 0
    one = torch.ones(1)
    out = adjust_hsv(x, torch.tensor([0.1]), one, one)[0, :, 0, 0].tolist()
    hue = colorsys.rgb_to_hsv(*out)[0]  # hsv2rgb's own (lookup-table) hue
    assert hue == pytest.approx(0.1 * 255 / 360, abs=1e-6)  # 25.5 degrees, not torchvision's 36


def test_grayscale_matches_the_luma_loop():
    x, on = images(4, side=3, seed=3), torch.tensor([True, False, True, False])
    out = csi_grayscale(x, on)
    for b in range(4):
        np.testing.assert_allclose(out[b].numpy(), slow_gray(x[b].double().numpy(), bool(on[b])), atol=1e-6)


@pytest.mark.parametrize("size", [8, 4, 16])  # the input side (pool is the identity), half of it (pooled), twice it
def test_crop_matches_a_per_pixel_bilinear_loop(size):
    x = images(5, side=8, seed=4)
    u = torch.rand(5, N_CSI_UNIFORMS, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    crop = csi_views_from_uniform(u, 8, 8).crop
    crop[0] = torch.tensor([8.0, 8.0, 0.0, 0.0])  # the whole image
    crop[1] = torch.tensor([3.0, 5.0, -5.0, 3.0])  # at the left edge, off-centre vertically by 1.5 px
    out = crop_resize(x, crop, size)
    assert out.shape == (5, 3, size, size)
    for b in range(5):
        ref = slow_crop(x[b].double().numpy(), crop[b].numpy(), size)
        np.testing.assert_allclose(out[b].numpy(), ref, atol=2e-6, err_msg=f"image {b}: box {crop[b].tolist()}")
    if size == 8:
        np.testing.assert_allclose(out[0].numpy(), x[0].numpy(), atol=1e-6)


@pytest.mark.parametrize("params", [CSI_TRAIN_VIEWS, CSI_TEST_VIEWS], ids=["train", "test"])
def test_boxes_and_factors_match_a_per_image_loop(params):
    u = torch.rand(300, N_CSI_UNIFORMS, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    u[0, :10] = 0.999  # area 0.9986 of the image, with ...
    u[0, 10:20] = 0.999  # ... a wide ratio: no try fits (train), CSI's fallback is the whole image
    v = csi_views_from_uniform(u, 12, 12, params, contrast_first=False)
    for i in range(300):
        ref = slow_box(u[i].numpy(), 12, 12, params.crop_scale, params.crop_ratio)
        assert tuple(v.crop[i].tolist()) == ref, i
    if params.crop_scale == (0.08, 1.0):
        assert tuple(v.crop[0].tolist()) == (12.0, 12.0, 0.0, 0.0)
    area = (v.crop[:, 0] * v.crop[:, 1] / 144).numpy()
    if params == CSI_TEST_VIEWS:  # every box has area 0.54 of the image, up to the rounding of its sides
        assert np.all(np.abs(area - 0.54) < 0.1) and v.jitter_on.any() and v.gray.any()
    else:
        assert area.min() < 0.15 and area.max() > 0.9
    lo = torch.tensor([0.6, -0.1, 0.6, 0.6], dtype=torch.float64)
    ref = (lo + torch.tensor([0.8, 0.2, 0.8, 0.8], dtype=torch.float64) * u[:, 23:27]).numpy()
    np.testing.assert_allclose(v.factors.numpy(), ref, rtol=0, atol=1e-12)
    assert torch.equal(v.jitter_on, u[:, 22] < 0.8) and torch.equal(v.gray, u[:, 27] < 0.2)
    assert v.contrast_first is False


def test_draws_have_csis_probabilities_and_one_jitter_order_per_batch():
    torch.manual_seed(0)
    v = sample_csi_views(20000, 32, 32)
    assert abs(float(v.jitter_on.float().mean()) - 0.8) < 0.015 and abs(float(v.gray.float().mean()) - 0.2) < 0.015
    k = v.crop[:, 2]  # offsets: every integer of [w - W, W - w] (in half pixels)
    assert bool((k >= v.crop[:, 0] - 32).all() and (k <= 32 - v.crop[:, 0]).all())
    assert bool(((k == v.crop[:, 0] - 32) & (v.crop[:, 0] < 32)).any())
    orders = []
    for seed in range(200):
        torch.manual_seed(seed)
        orders.append(sample_csi_views(4, 8, 8).contrast_first)
    assert 70 < sum(orders) < 130  # p 0.5 per batch, a bool for the whole batch
    torch.manual_seed(7)
    a = sample_csi_views(5, 8, 8)
    torch.manual_seed(7)
    b = sample_csi_views(5, 8, 8)
    assert torch.equal(a.crop, b.crop) and torch.equal(a.factors, b.factors) and a.contrast_first == b.contrast_first


def test_the_module_is_jitter_then_grey_then_crop_per_image():
    x = images(16, side=8, seed=8)
    torch.manual_seed(3)
    v = sample_csi_views(16, 8, 8)
    assert bool((v.jitter_on & v.gray).any()) and bool((v.jitter_on & ~v.gray).any())  # grey after the jitter shows
    torch.manual_seed(3)
    out = CSIAugment(8)(x)
    for b in range(16):
        ref = slow_jitter(x[b].double().numpy(), bool(v.jitter_on[b]), v.factors[b].double().numpy(), v.contrast_first)
        ref = slow_crop(slow_gray(ref, bool(v.gray[b])), v.crop[b].numpy(), 8)
        np.testing.assert_allclose(out[b].numpy(), ref, atol=5e-6, err_msg=f"image {b}")


def test_grey_images_stay_grey_and_match_their_three_channel_copy():
    x = images(8, channels=1, side=8, seed=9)
    torch.manual_seed(1)
    v = sample_csi_views(8, 8, 8)
    one = apply_csi_views(x, v, 8)
    assert one.shape == (8, 3, 8, 8)
    np.testing.assert_allclose(one.numpy(), apply_csi_views(x.repeat(1, 3, 1, 1), v, 8).numpy(), atol=1e-6)
    assert float((one - one[:, :1]).abs().max()) < 1e-6  # hue and saturation do nothing to grey pixels
    u8 = (x * 255).to(torch.uint8)  # to_float repeats one channel to three with stride 0, as the harness feeds it
    np.testing.assert_allclose(
        apply_csi_views(to_float(u8), v, 8).numpy(), apply_csi_views(u8.float() / 255, v, 8).numpy(), atol=1e-6
    )
    np.testing.assert_allclose(apply_csi_views(x, identity_csi_views(8, 8, 8), 8)[:, :1].numpy(), x.numpy(), atol=1e-6)


# --- training: the flip of each copy, rotation before the augmentation ------------------------------------------


def tiny_csi(tiny, **params):
    torch.manual_seed(0)
    return build_method(make_config({**tiny, "method": "csi", "params": params}))


def flips_of(copy: torch.Tensor, originals: torch.Tensor) -> list[bool]:
    """Which images of the rotation-0 block of ``copy`` are mirrored (the rest must be the originals)."""
    flipped = []
    for i, img in enumerate(originals):
        if torch.equal(copy[i], img):
            flipped.append(False)
        else:
            assert torch.equal(copy[i], img.flip(-1)), i
            flipped.append(True)
    return flipped


@pytest.mark.parametrize("flip", ["shared", "independent"])
def test_each_copy_is_flipped_before_its_rotations(tiny, flip):
    method = tiny_csi(tiny, flip=flip)
    n = 400
    x = torch.randint(0, 256, (n, 1, 16, 16), dtype=torch.uint8)  # random: no image is its own mirror
    torch.manual_seed(1)
    first, second = method.two_copies(x)
    f1, f2 = flips_of(first[:n], x), flips_of(second[:n], x)
    for copy in (first, second):  # row k n + i: image i as flipped, rotated by k * 90 degrees
        assert torch.equal(copy, rotate_all(copy[:n]))
    disagree = sum(a != b for a, b in zip(f1, f2)) / n
    assert 0.4 < sum(f1) / n < 0.6
    if flip == "independent":  # CSI: hflip(images.repeat(2, 1, 1, 1)).chunk(2): about half disagree
        assert 0.4 < disagree < 0.6
    else:
        assert disagree == 0


class Recorder(torch.nn.Module):
    """Stands in for the CSI augmentation: keeps its input and returns it."""

    def __init__(self) -> None:
        super().__init__()
        self.inputs: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.inputs.append(x.clone())
        return x


def test_csi_augmentation_comes_after_the_rotation_over_the_whole_batch(tiny):
    method = tiny_csi(tiny, flip="independent", augment="csi")
    method.csi_views = Recorder()
    x = torch.randint(0, 256, (5, 1, 16, 16), dtype=torch.uint8)
    torch.manual_seed(2)
    with torch.no_grad():
        out = method.training_loss(x, 0.0)
    torch.manual_seed(2)
    first, second = method.two_copies(x)
    assert len(method.csi_views.inputs) == 1  # one call over all 8N images: one jitter order, as CSI's simclr_aug
    assert torch.equal(method.csi_views.inputs[0], to_float(torch.cat([first, second])))
    with torch.no_grad():
        z = method.head(method.encoder(normalize(to_float(torch.cat([first, second])))))
    assert float(out["contrastive"]) == pytest.approx(float(nt_xent(z[:20], z[20:], 0.5)), rel=1e-5)


def test_csi_augmentation_trains_with_csis_layers(tiny):
    method = tiny_csi(tiny, augment="csi")
    assert isinstance(method.csi_views, CSIAugment) and method.csi_views.params == CSI_TRAIN_VIEWS
    x = torch.randint(0, 256, (4, 1, 16, 16), dtype=torch.uint8)
    torch.manual_seed(4)
    a = method.training_loss(x, 0.0)["loss"]
    torch.manual_seed(4)
    b = method.training_loss(x, 0.0)["loss"]
    torch.manual_seed(5)
    c = method.training_loss(x, 0.0)["loss"]
    assert (
        float(a.detach()) == float(b.detach()) != float(c.detach())
    )  # torch's RNG: the engine's per-step seed reproduces a step


# --- evaluation: CSI's ood_pre.py ------------------------------------------------------------------------------


def test_test_views_flip_per_image_shared_by_rotations_and_do_not_depend_on_the_batch():
    views = [csi_test_views(300, 3, 16, 16, 5, k) for k in range(4)]
    for s in range(3):
        assert all(torch.equal(views[0][s].flip, views[k][s].flip) for k in range(4))  # ood_pre.py line 189
        assert all(views[0][s].views.contrast_first == views[k][s].views.contrast_first for k in range(4))
        assert not torch.equal(views[0][s].views.crop, views[1][s].views.crop)  # drawn per image and rotation
        assert 0.4 < float(views[0][s].flip.float().mean()) < 0.6
    fewer = csi_test_views(7, 3, 16, 16, 5, 2)
    again = csi_test_views(300, 3, 16, 16, 5, 2)
    other_seed = csi_test_views(7, 3, 16, 16, 6, 2)
    for s in range(3):
        assert torch.equal(fewer[s].flip, views[2][s].flip[:7])
        assert torch.equal(fewer[s].views.crop, views[2][s].views.crop[:7])
        assert torch.equal(fewer[s].views.factors, views[2][s].views.factors[:7])
        assert torch.equal(again[s].views.crop, views[2][s].views.crop)
    assert not all(torch.equal(a.views.crop, b.views.crop) for a, b in zip(fewer, other_seed))
    crops = torch.cat([v.views.crop for v in views[1]])
    assert float((crops[:, 0] * crops[:, 1] / 256 - 0.54).abs().max()) < 0.1  # --resize_factor 0.54 --resize_fix
    on = torch.cat([v.views.jitter_on for vs in views for v in vs]).float().mean()
    gray = torch.cat([v.views.gray for vs in views for v in vs]).float().mean()
    assert abs(float(on) - 0.8) < 0.03 and abs(float(gray) - 0.2) < 0.03


def ood_pre_scores(test_z, test_l, train_z, train_l):
    """CSI's ood_pre.py on features [M, K, S, d] (image, rotation, sample): the training axis normalize(mean_s z),
    weights 1 / mean ||mean_s z|| and 1 / mean (mean_s l)[k]; a test image's mean_s z against the axis (max),
    plus (mean_s l)[k] x weight, summed over k, / K; negated (higher = more anomalous)."""
    m, k_, _, _ = test_z.shape
    out = np.zeros(m)
    for k in range(k_):
        tr = train_z[:, k].mean(1)
        axis = tr / np.linalg.norm(tr, axis=1, keepdims=True)
        w_sim = 1 / np.linalg.norm(tr, axis=1).mean()
        w_shi = 1 / train_l[:, k].mean(1)[:, k].mean()
        for i in range(m):
            out[i] += max(float(test_z[i, k].mean(0) @ a) for a in axis) * w_sim + test_l[i, k].mean(0)[k] * w_shi
    return -out / k_


@torch.no_grad()
def per_image_features(method, imgs, samples, seed):
    """[M, 4, S, d] projections and [M, 4, S, 4] logits, one image, rotation and sample at a time: mirror, rotate,
    CSI's views with the crop area 0.54, normalise, encode; each image's views drawn for it alone."""
    method.eval()
    zs, ls = [], []
    for i, img in enumerate(imgs):
        z_rot, l_rot = [], []
        for k in range(4):
            z_s, l_s = [], []
            for v in csi_test_views(i + 1, samples, 16, 16, seed, k):
                x = img[None].flip(-1) if bool(v.flip[i]) else img[None]
                x = apply_csi_views(to_float(torch.rot90(x, k, dims=(-2, -1))), v.views.rows(i, i + 1), 16)
                h = method.encoder(normalize(x))
                z_s.append(method.head(h)[0].double().numpy())
                l_s.append(method.rotation_head(h)[0].double().numpy())
            z_rot.append(z_s)
            l_rot.append(l_s)
        zs.append(z_rot)
        ls.append(l_rot)
    method.train()
    return np.array(zs), np.array(ls)


def test_csi_evaluation_averages_features_over_samples_before_scoring(tiny):
    samples, seed = 3, 11
    method = tiny_csi(tiny, evaluation="csi", samples=samples)
    method.cfg = replace(method.cfg, tta_seed=seed)
    gen = torch.Generator().manual_seed(12)
    train = torch.randint(0, 256, (10, 1, 16, 16), dtype=torch.uint8, generator=gen)
    test = torch.randint(0, 256, (4, 1, 16, 16), dtype=torch.uint8, generator=gen)
    out = method.score(train, test, CPU)
    tr_z, tr_l = per_image_features(method, train, samples, seed)
    te_z, te_l = per_image_features(method, test, samples, seed)
    ref = ood_pre_scores(te_z, te_l, tr_z, tr_l)
    np.testing.assert_allclose(out.scores["csi"], ref, rtol=1e-4, atol=1e-5)
    per_sample = np.mean(  # the scores of each sample, averaged: what `evaluation: views` does, not CSI's
        [
            ood_pre_scores(te_z[:, :, s : s + 1], te_l[:, :, s : s + 1], tr_z[:, :, s : s + 1], tr_l[:, :, s : s + 1])
            for s in range(samples)
        ],
        axis=0,
    )
    assert np.abs(per_sample - ref).max() > 1e-3
    assert list(out.scores) == ["csi"] and out.scoring["columns"]["csi"]["views"] == "csi"
    assert (out.extras["test_views"], out.extras["test_views_averaged"]) == (samples * 4, "features")
    assert method.test_views() == []  # no fixed views: only CSI's
    method.cfg = replace(method.cfg, eval_batch_size=3)  # an image's views do not depend on its batch
    np.testing.assert_allclose(method.score(train, test, CPU).scores["csi"], out.scores["csi"], rtol=1e-5, atol=1e-6)


def test_fixed_views_evaluation_says_it_averaged_scores(tiny):
    method = tiny_csi(tiny, samples=2)
    train = torch.randint(0, 256, (6, 1, 16, 16), dtype=torch.uint8)
    out = method.score(train, train[:3], CPU)
    assert (out.extras["test_views"], out.extras["test_views_averaged"]) == (8, "scores")
    ident = tiny_csi(tiny, samples=0, evaluation="csi")
    assert ident.test_view_count == 4 and len(ident.scoring().image_views(5, 16, 16, 0)) == 1  # the identity view


def test_a_run_with_the_authors_params_records_its_test_views(tiny, tmp_path):
    from con2.run.records import read_record
    from con2.run.runner import RECORD, run

    params = {"flip": "independent", "augment": "csi", "evaluation": "csi", "samples": 2}
    run(make_config({**tiny, "method": "csi", "params": params}), tmp_path)
    record = read_record(tmp_path / RECORD)  # validates against the schema
    assert record["metrics"]["test_views"] == 8 and record["metrics"]["test_views_averaged"] == "features"
    assert list(record["metrics"]["auroc"]) == ["csi"] and record["scoring"]["columns"]["csi"]["views"] == "csi"
