"""Batched training views against torchvision's per-image ops and kornia, with fixed and random parameters.

Statistical checks use fixed seeds and a significance level of 1e-3: a correct sampler passes with
these seeds, and each check is shown to reject a slightly wrong distribution of the same size.
"""

import itertools
import math

import numpy as np
import pytest
import torch
import torchvision.transforms.v2 as T
import torchvision.transforms.v2.functional as TF
from scipy import stats

from con2.transforms.augment import to_float
from con2.transforms.views import (
    BRIGHTNESS,
    CONTRAST,
    HUE,
    SATURATION,
    ViewAugment,
    ViewBatch,
    ViewParams,
    apply_views,
    is_gray,
    resample,
    sample_views,
)

ALPHA = 1e-3


def torchvision_view(img, v: ViewBatch, i: int, size: int):
    """The reference: torchvision's functional ops on one image ``[C, H, W]`` with image i's parameters."""
    top, left, h, w = (int(t) for t in v.crop[i].tolist())
    out = TF.resized_crop(img, top, left, h, w, [size, size], antialias=True)
    if v.flip[i]:
        out = TF.horizontal_flip(out)
    if v.jitter_on[i]:
        b, c, s, hue = v.factors[i].tolist()
        ops = {
            BRIGHTNESS: lambda x: TF.adjust_brightness(x, b),
            CONTRAST: lambda x: TF.adjust_contrast(x, c),
            SATURATION: lambda x: TF.adjust_saturation(x, s),
            HUE: lambda x: TF.adjust_hue(x, hue),
        }
        for op in v.order[i].tolist():
            out = ops[op](out)
    if v.gray[i] and out.shape[0] == 3:
        out = TF.rgb_to_grayscale(out, num_output_channels=3)
    return out


@pytest.mark.parametrize("size", [12, 16, 23])
@pytest.mark.parametrize("jitter_p", [0.8, 1.0])
def test_fixed_parameters_match_torchvision_on_colour_images(size, jitter_p):
    g = torch.Generator().manual_seed(size)
    x = torch.rand(48, 3, 12, 10, generator=g)  # non-square, so height and width cannot be swapped
    torch.manual_seed(size)
    v = sample_views(len(x), 12, 10, ViewParams(jitter_p=jitter_p), "cpu")
    assert v.jitter_on.any() and v.flip.any() and v.gray.any() and (~v.flip).any()
    out = apply_views(x, v, size)
    ref = torch.stack([torchvision_view(x[i], v, i, size) for i in range(len(x))])
    torch.testing.assert_close(out, ref, atol=2e-5, rtol=0)


def test_fixed_parameters_match_torchvision_on_gray_images():
    u8 = torch.randint(0, 256, (64, 1, 14, 14), dtype=torch.uint8, generator=torch.Generator().manual_seed(3))
    x = to_float(u8)
    assert is_gray(x) and not is_gray(x.contiguous())
    torch.manual_seed(3)
    v = sample_views(len(x), 14, 14, ViewParams(jitter_p=1.0), "cpu")
    out = apply_views(x, v, 20)
    assert out.shape == (64, 3, 20, 20) and torch.equal(out[:, 0], out[:, 2])
    # torchvision on the one-channel image: saturation, hue and grayscale are the identity there
    one = torch.stack([torchvision_view(x[i, :1], v, i, 20) for i in range(len(x))])
    torch.testing.assert_close(out, one.expand(-1, 3, -1, -1), atol=1e-6, rtol=0)
    # ... and on the image repeated to three channels it differs only by its luma weights' 0.9999 sum
    three = torch.stack([torchvision_view(x[i].contiguous(), v, i, 20) for i in range(len(x))])
    assert float((out - three).abs().max()) < 2e-4
    # the gray shortcut equals the full colour path on the same pixels (up to the same luma effect)
    assert float((out - apply_views(x.contiguous(), v, 20)).abs().max()) < 2e-4


def test_downscaling_averages_a_box_of_samples():
    x = torch.rand(4, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    whole = torch.tensor([[0.0, 0.0, 32.0, 32.0]]).repeat(4, 1)
    out = resample(x, whole, torch.tensor([False, True, False, True]), 16)
    ref = torch.nn.functional.avg_pool2d(x, 2)
    ref[1::2] = ref[1::2].flip(-1)
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=0)


def crop_stats(top, left, h, w, height, width):
    """Area fraction, log aspect ratio (w / h) and the relative top-left position of crop boxes."""
    area = h * w / (height * width)
    rel_top = np.where(height > h, top / np.maximum(height - h, 1), 0.5)
    rel_left = np.where(width > w, left / np.maximum(width - w, 1), 0.5)
    return {"area": area, "log_ratio": np.log(w / h), "top": rel_top, "left": rel_left}


def ours_crops(n, height, width, scale, seed):
    torch.manual_seed(seed)
    top, left, h, w = sample_views(n, height, width, ViewParams(crop_scale=scale)).crop.double().numpy().T
    return crop_stats(top, left, h, w, height, width)


def torchvision_crops(n, height, width, scale, seed):
    torch.manual_seed(seed)
    img = torch.zeros(1, height, width)
    boxes = np.array([T.RandomResizedCrop.get_params(img, list(scale), [3 / 4, 4 / 3]) for _ in range(n)], dtype=float)
    return crop_stats(*boxes.T, height, width)


def kornia_crops(n, height, width, scale, seed):
    import kornia.augmentation as K

    torch.manual_seed(seed)
    src = K.RandomResizedCrop((16, 16), scale=scale).forward_parameters(torch.Size([n, 3, height, width]))["src"]
    left, top = src[:, 0, 0].double().numpy(), src[:, 0, 1].double().numpy()
    w = src[:, 1, 0].double().numpy() - left + 1
    h = src[:, 2, 1].double().numpy() - top + 1
    return crop_stats(top, left, h, w, height, width)


@pytest.mark.parametrize("reference", [torchvision_crops, kornia_crops])
@pytest.mark.parametrize("height,width,scale", [(28, 28, (0.2, 1.0)), (12, 30, (0.08, 1.0))])
def test_crop_boxes_follow_the_reference_distribution(reference, height, width, scale):
    n = 4000
    ours = ours_crops(n, height, width, scale, seed=1)
    ref = reference(n, height, width, scale, seed=2)
    for key in ("area", "log_ratio", "top", "left"):
        p = stats.ks_2samp(ours[key], ref[key]).pvalue
        assert p > ALPHA, (key, p)
    # the same test rejects a sampler with a slightly different scale range
    shifted = ours_crops(n, height, width, (scale[0] + 0.1, scale[1]), seed=3)
    assert stats.ks_2samp(shifted["area"], ref["area"]).pvalue < ALPHA


def test_fallback_crop_is_torchvision_centre_box():
    # a 4 x 40 strip: no box of area >= 0.9 with ratio <= 4/3 fits, so every crop is the fallback
    torch.manual_seed(0)
    v = sample_views(50, 4, 40, ViewParams(crop_scale=(0.9, 1.0)))
    tv = T.RandomResizedCrop.get_params(torch.zeros(1, 4, 40), [0.9, 1.0], [3 / 4, 4 / 3])
    assert tv == (0, 17, 4, 5)
    assert torch.equal(v.crop, torch.tensor([[0.0, 17.0, 4.0, 5.0]]).repeat(50, 1))


def binomial_ok(hits: torch.Tensor, p: float) -> bool:
    n = hits.numel()
    return stats.binomtest(int(hits.sum()), n, p).pvalue > ALPHA


def test_probabilities_and_jitter_factors_follow_their_distributions():
    params = ViewParams(hflip_p=0.5, jitter=(0.4, 0.3, 0.2, 0.1), jitter_p=0.8, grayscale_p=0.2)
    torch.manual_seed(5)
    v = sample_views(20000, 28, 28, params)
    assert binomial_ok(v.flip, 0.5) and binomial_ok(v.jitter_on, 0.8) and binomial_ok(v.gray, 0.2)
    assert not binomial_ok(v.gray, 0.22)  # the bound is tight enough to fail
    ranges = [(0.6, 1.4), (0.7, 1.3), (0.8, 1.2), (-0.1, 0.1)]
    for col, (lo, hi) in enumerate(ranges):
        f = v.factors[:, col].numpy()
        assert stats.kstest(f, stats.uniform(lo, hi - lo).cdf).pvalue > ALPHA, col
        assert stats.kstest(f, stats.uniform(lo, 1.02 * (hi - lo)).cdf).pvalue < ALPHA, col
    # the jitter order: a uniformly random permutation of the four operations per image
    perms = {p: i for i, p in enumerate(itertools.permutations(range(4)))}
    counts = np.bincount([perms[tuple(o)] for o in v.order.tolist()], minlength=24)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_zero_jitter_strength_and_probabilities_are_identities():
    x = torch.rand(16, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    params = ViewParams(crop_scale=(1.0, 1.0), crop_ratio=(1.0, 1.0), hflip_p=0.0, jitter=(0, 0, 0, 0), grayscale_p=0.0)
    torch.manual_seed(0)
    torch.testing.assert_close(ViewAugment(8, params)(x), x, atol=1e-6, rtol=0)


def test_parameters_differ_per_image_within_a_batch():
    torch.manual_seed(0)
    v = sample_views(64, 28, 28)
    assert len({tuple(c) for c in v.crop.tolist()}) > 40
    assert len(set(v.factors[:, 0].tolist())) == 64
    assert 10 < int(v.flip.sum()) < 54 and len({tuple(o) for o in v.order.tolist()}) > 10
    x = to_float(torch.full((64, 1, 16, 16), 128, dtype=torch.uint8)).clone()
    x[:, :, :, :5] = 1.0  # a bright left band: crops and flips show in the output
    out = ViewAugment(16)(x)
    assert len({tuple(o.flatten().tolist()) for o in out}) == 64


def output_stats(views):
    """Per view: mean, std, left-right and colour contrast; a summary that the whole pipeline moves."""
    return {
        "mean": views.mean(dim=(1, 2, 3)).numpy(),
        "std": views.std(dim=(1, 2, 3)).numpy(),
        "left_minus_right": (
            views[..., : views.shape[-1] // 2].mean(dim=(1, 2, 3))
            - views[..., views.shape[-1] // 2 :].mean(dim=(1, 2, 3))
        ).numpy(),
        "red_minus_blue": (views[:, 0] - views[:, 2]).mean(dim=(1, 2)).numpy(),
    }


@pytest.mark.parametrize("gray", [False, True])
def test_views_match_the_per_image_torchvision_pipeline_in_distribution(gray):
    n, size = 1500, 16
    g = torch.Generator().manual_seed(7)
    img = torch.rand(1 if gray else 3, 12, 12, generator=g)
    img[:, :, :4] = img[:, :, :4] * 0.3  # an asymmetric image: flips and crops change the statistics
    if not gray:
        img[0] = img[0] * 0.5 + 0.5  # reddish: hue and saturation change it
    tv = T.Compose(
        [
            T.RandomResizedCrop(size, scale=(0.2, 1.0), antialias=True),
            T.RandomHorizontalFlip(),
            T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
            T.RandomGrayscale(p=0.2),
        ]
    )
    batch = to_float((img * 255).round().to(torch.uint8)[None].expand(n, -1, -1, -1))
    torch.manual_seed(8)
    ours = output_stats(ViewAugment(size)(batch))
    torch.manual_seed(9)
    three = batch[0].expand(3, -1, -1).contiguous()
    ref = output_stats(torch.stack([tv(three) for _ in range(n)]))
    for key in ours:
        if gray and key == "red_minus_blue":
            continue
        assert stats.ks_2samp(ours[key], ref[key]).pvalue > ALPHA, key
    # power: views without the flip are told apart by the same test
    torch.manual_seed(8)
    no_flip = output_stats(ViewAugment(size, ViewParams(hflip_p=0.0))(batch))
    assert stats.ks_2samp(no_flip["left_minus_right"], ref["left_minus_right"]).pvalue < ALPHA


def test_views_run_on_the_device_of_their_input_and_reject_bad_shapes():
    x = torch.rand(4, 3, 8, 8)
    v = sample_views(4, 8, 8, device=x.device)
    assert all(t.device == x.device for t in (v.crop, v.flip, v.factors, v.order))
    with pytest.raises(ValueError, match=r"\[B, 1 or 3, H, W\]"):
        apply_views(torch.rand(4, 2, 8, 8), v, 8)
    assert math.isclose(ViewParams().crop_ratio[1], 4 / 3)


# ------------------------------------------------------------------------------------ Gaussian blur
@pytest.mark.parametrize("kernel", [3, 5, 23])
def test_batched_blur_matches_torchvision_per_image(kernel):
    from con2.transforms.views import gaussian_blur

    x = torch.rand(6, 3, 24, 20, generator=torch.Generator().manual_seed(kernel))
    sigma = torch.tensor([0.0, 0.1, 0.7, 1.3, 2.0, 0.0])
    out = gaussian_blur(x, sigma, kernel)
    for i in range(len(x)):
        s = float(sigma[i])
        ref = x[i] if s == 0 else TF.gaussian_blur(x[i], [kernel, kernel], [s, s])
        torch.testing.assert_close(out[i], ref, atol=1e-6, rtol=0)
    assert not torch.allclose(out[2], x[2])  # it blurs
    assert torch.equal(out[0], x[0])  # sigma 0: untouched


def test_views_with_blur_are_the_views_then_torchvision_blur_and_blur_draws_change_nothing_else():
    from con2.transforms.views import blur_kernel_size

    x = torch.rand(40, 3, 28, 28, generator=torch.Generator().manual_seed(1))
    plain, blurred = ViewParams(), ViewParams(blur_p=0.5)
    torch.manual_seed(4)
    v0 = sample_views(len(x), 28, 28, plain)
    torch.manual_seed(4)
    v1 = sample_views(len(x), 28, 28, blurred)
    assert v0.blur is None and torch.equal(v0.crop, v1.crop) and torch.equal(v0.factors, v1.factors)
    assert (v1.blur == 0).any() and (v1.blur > 0).any() and float(v1.blur.max()) <= 2.0
    on = v1.blur > 0
    assert float(v1.blur[on].min()) >= 0.1
    out = apply_views(x, v1, 28)
    k = blur_kernel_size(28)
    assert k == 3 and blur_kernel_size(224) == 23  # SimCLR's 10% of the side, odd
    for i in range(len(x)):
        ref = torchvision_view(x[i], v1, i, 28)
        if on[i]:
            ref = TF.gaussian_blur(ref, [k, k], [float(v1.blur[i])] * 2)
        torch.testing.assert_close(out[i], ref, atol=2e-5, rtol=0)


def test_fixed_test_time_views_draw_the_blur_last_and_apply_torchvision_blur():
    from con2.transforms.augment import FixedView, draw_fixed_views

    plain = draw_fixed_views(6, seed=3)
    blurred = draw_fixed_views(6, seed=3, params=ViewParams(blur_p=1.0))
    assert all(v.blur_sigma == 0 for v in plain)
    assert plain[0] == FixedView(**{**plain[0].__dict__, "blur_sigma": 0.0})
    assert blurred[0].crop == plain[0].crop and all(0.1 <= v.blur_sigma <= 2.0 for v in blurred)
    x = torch.rand(2, 3, 28, 28, generator=torch.Generator().manual_seed(0))
    v = blurred[0]
    no_blur = FixedView(**{**v.__dict__, "blur_sigma": 0.0})
    ref = TF.gaussian_blur(no_blur(x, 56), [5, 5], [v.blur_sigma] * 2).clamp(0, 1)
    torch.testing.assert_close(v(x, 56), ref, atol=1e-6, rtol=0)
