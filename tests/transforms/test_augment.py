"""Context transforms, training views and fixed test-time views."""

import pytest
import torch

from con2.errors import ConfigError
from con2.methods.scoring import tta_draw
from con2.transforms.augment import (
    FixedView,
    ViewAugment,
    context_fn,
    contexts_for,
    draw_fixed_views,
    equalize,
    invert,
    multi_context_names,
    to_float,
    vflip,
)


@pytest.fixture
def images():
    return torch.randint(0, 256, (5, 3, 12, 12), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))


def test_invert_and_flip_are_involutions(images):
    assert torch.equal(invert(invert(images)), images)
    assert torch.equal(vflip(vflip(images)), images)
    assert not torch.equal(invert(images), images)
    assert torch.equal(invert(images)[0, 0, 0, 0], 255 - images[0, 0, 0, 0])
    assert torch.equal(vflip(images)[:, :, 0], images[:, :, -1])  # top row <- bottom row


def test_equalize_gives_near_uniform_histogram():
    g = torch.Generator().manual_seed(1)
    low_contrast = (100 + torch.randint(0, 40, (2, 1, 64, 64), generator=g)).to(torch.uint8)
    out = equalize(low_contrast)
    for img in out:  # per image: 8 equal-width bins over 0..255 each hold about 1/8 of the pixels
        frac = torch.histc(img.float(), bins=8, min=0, max=256) / img.numel()
        assert float((frac - 0.125).abs().max()) < 0.05, frac  # 40 input levels: steps of 1/40
    assert float(low_contrast.float().std()) < 12 and float(out.float().std()) > 65


def test_compositions_and_unknown_contexts(images):
    assert torch.equal(context_fn("invert+flip")(images), vflip(invert(images)))
    assert len(contexts_for(["invert", "flip"])) == 3 and torch.equal(contexts_for(["invert"])[0](images), images)
    assert multi_context_names(4) == ["invert", "flip", "equalize"]
    assert len(set(multi_context_names(8))) == 7
    with pytest.raises(ConfigError, match="unknown context 'rotate'"):
        context_fn("rotate")
    with pytest.raises(ConfigError):
        multi_context_names(9)


def test_training_views_are_independent_per_image_and_seeded():
    x = to_float(torch.full((8, 1, 16, 16), 0, dtype=torch.uint8)).clone()
    x[:, :, :8] = 1.0  # top half bright: a vertical flip would show, crops differ per image
    aug = ViewAugment(16)
    torch.manual_seed(0)
    a = aug(x)
    torch.manual_seed(0)
    b = aug(x)
    assert torch.equal(a, b)
    assert a.shape == (8, 3, 16, 16)
    distinct = {tuple(v.flatten().tolist()) for v in a}
    assert len(distinct) > 4  # identical inputs, different per-image parameters


def test_training_views_never_flip_vertically():
    x = torch.zeros(64, 3, 16, 16)
    x[:, :, :4] = 1.0  # bright top band
    torch.manual_seed(1)
    out = ViewAugment(16)(x)
    top, bottom = out[:, :, :8].mean(dim=(1, 2, 3)), out[:, :, 8:].mean(dim=(1, 2, 3))
    assert bool((top >= bottom).all())


def test_fixed_view_is_identical_for_every_image_and_batch_independent(images):
    view = draw_fixed_views(3, seed=7)[1]
    x = to_float(images)
    whole = view(x, 10)
    one_by_one = torch.cat([view(x[i : i + 1], 10) for i in range(len(x))])
    torch.testing.assert_close(whole, one_by_one)
    # the same image twice in a batch gets the same output
    twin = view(torch.cat([x[:1], x[:1]]), 10)
    torch.testing.assert_close(twin[0], twin[1])


def test_fixed_views_are_seeded():
    assert draw_fixed_views(5, seed=3) == draw_fixed_views(5, seed=3)
    assert draw_fixed_views(5, seed=3) != draw_fixed_views(5, seed=4)
    for v in draw_fixed_views(50, seed=0):
        top, left, h, w = v.crop
        assert 0 <= top and 0 <= left and top + h <= 1 + 1e-9 and left + w <= 1 + 1e-9
        assert 0.2 - 1e-9 <= h * w <= 1 + 1e-9


def test_identity_view_is_identity(images):
    x = to_float(images)
    torch.testing.assert_close(FixedView()(x, 12), x)


def test_tta_plan_splits_views_over_contexts():
    plan = tta_draw(40, 2, seed=0)
    assert [c for _, c in plan] == [0] * 20 + [1] * 20
    assert len({v for v, _ in plan}) == 40
    assert tta_draw(0, 2, 0) == [(FixedView(), 0)]
    with pytest.raises(ValueError):
        tta_draw(5, 2, 0)
