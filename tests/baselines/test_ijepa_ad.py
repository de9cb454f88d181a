"""I-JEPA-AD: masks, position embedding, loss and EMA against slow references written from I-JEPA's code."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from baselines.ijepa_ad import (
    IJepaAD,
    block_size,
    ema_update,
    image_masks,
    momentum_at,
    sample_masks,
    sincos_2d,
)
from baselines.ijepa_ad_spec import SPEC, IJepaADParams
from con2.config import make_config
from con2.errors import ConfigError
from con2.training.engine import TrainSettings, fit


def build(**params) -> IJepaAD:
    """A small I-JEPA-AD at 28 px: ViT-Tiny on a 7 x 7 grid, a 2-block 48-wide predictor."""
    cfg = make_config(
        {
            "dataset": "digits",
            "image_size": 28,
            "method": "ijepa_ad",
            "channels_last": False,
            "params": {"predictor_depth": 2, "predictor_width": 48, **params},
        }
    )
    torch.manual_seed(0)
    return IJepaAD(cfg, SPEC.params_for(cfg))


# ----------------------------------------------------------------------------- masks
def test_block_sizes_follow_ijepas_formula():
    # keep = int(196 * scale), h = round(sqrt(keep * ar)), w = round(sqrt(keep / ar)), both < 14
    assert block_size(0.0, 14, (0.15, 0.2), (0.75, 1.5)) == (5, 6)  # keep 29, ar 0.75: sqrt(21.75), sqrt(38.7)
    assert block_size(1.0, 14, (0.15, 0.2), (0.75, 1.5)) == (8, 5)  # keep 39, ar 1.5: sqrt(58.5), sqrt(26)
    assert block_size(0.0, 14, (0.85, 1.0), (1.0, 1.0)) == (13, 13)  # keep 166
    assert block_size(1.0, 14, (0.85, 1.0), (1.0, 1.0)) == (13, 13)  # 14 x 14 clipped below the grid


def rectangle(top: int, left: int, h: int, w: int, grid: int) -> set[int]:
    return {r * grid + c for r in range(top, top + h) for c in range(left, left + w)}


@pytest.mark.parametrize("seed", range(5))
def test_one_images_masks_are_target_rectangles_and_the_context_block_without_them(seed):
    p = IJepaADParams()
    grid, pred, ctx_size = 14, (5, 6), (13, 13)
    torch.manual_seed(seed)
    ctx, targets = image_masks(pred, ctx_size, grid, p)
    assert len(targets) == p.n_targets
    covered: set[int] = set()
    for t in targets:  # a target is a whole 5 x 6 block (never cut), row-major
        idx = t.tolist()
        top, left = divmod(idx[0], grid)
        assert idx == sorted(rectangle(top, left, *pred, grid)) and top + 5 <= grid and left + 6 <= grid
        covered |= set(idx)
    # the 13 x 13 context block can only sit at the corner (I-JEPA draws its corner in [0, 14 - 13)),
    # minus every target; enough patches are left here that no constraint was relaxed
    expected = sorted(rectangle(0, 0, 13, 13, grid) - covered)
    assert len(expected) > 10 and ctx.tolist() == expected


def test_a_batch_shares_block_sizes_and_truncates_to_its_shortest_mask():
    p = IJepaADParams()
    torch.manual_seed(3)
    ctx, targets = sample_masks(6, 14, p)
    torch.manual_seed(3)
    pred = block_size(float(torch.rand(1)), 14, p.target_scale, p.target_aspect)
    size = block_size(float(torch.rand(1)), 14, p.context_scale, (1.0, 1.0))
    full = [image_masks(pred, size, 14, p) for _ in range(6)]
    k_ctx = min(len(c) for c, _ in full)
    k_tgt = min(len(t) for _, ts in full for t in ts)
    assert ctx.shape == (6, k_ctx) and all(t.shape == (6, k_tgt) for t in targets)
    for b, (c, ts) in enumerate(full):  # each row is the prefix of the image's own mask
        assert ctx[b].tolist() == c[:k_ctx].tolist()
        assert all(targets[j][b].tolist() == ts[j][:k_tgt].tolist() for j in range(p.n_targets))


def test_a_min_keep_no_target_block_can_exceed_is_refused():
    cfg = make_config({"dataset": "digits", "image_size": 28, "method": "ijepa_ad", "params": {"min_keep": 10}})
    with pytest.raises(ConfigError, match="below the smallest target block, 6 patches on this 7 x 7 grid"):
        SPEC.params_for(cfg)  # 7 x 7 grid: I-JEPA's 10 would redraw target blocks for ever
    cfg = make_config({"dataset": "digits", "image_size": 28, "method": "ijepa_ad", "params": {"small_patch_size": 3}})
    with pytest.raises(ConfigError, match="small_patch_size=3 must divide image_size 28"):
        SPEC.params_for(cfg)


# ----------------------------------------------------------------------------- position embedding
def ijepa_sincos_reference(dim: int, grid: int) -> np.ndarray:
    """I-JEPA's get_2d_sincos_pos_embed, as its code writes it (numpy, w first in the meshgrid)."""

    def one_d(d: int, pos: np.ndarray) -> np.ndarray:
        omega = 1.0 / 10000 ** (np.arange(d // 2, dtype=float) / (d / 2.0))
        out = np.einsum("m,d->md", pos.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)

    g = np.stack(np.meshgrid(np.arange(grid, dtype=float), np.arange(grid, dtype=float)), axis=0)
    g = g.reshape([2, 1, grid, grid])
    return np.concatenate([one_d(dim // 2, g[0]), one_d(dim // 2, g[1])], axis=1)


@pytest.mark.parametrize(("dim", "grid"), [(192, 14), (384, 7), (48, 4)])
def test_the_position_embedding_is_ijepas_2d_sincos(dim, grid):
    np.testing.assert_allclose(sincos_2d(dim, grid).numpy(), ijepa_sincos_reference(dim, grid), atol=1e-6)


def test_both_encoders_carry_the_fixed_embedding_and_the_target_encoder_is_frozen():
    m = build()
    assert torch.equal(m.context_encoder.pos_embed[0], sincos_2d(192, 7))
    assert not m.context_encoder.pos_embed.requires_grad
    assert not any(p.requires_grad for p in m.target_encoder.parameters())
    assert m.encoder is m.target_encoder  # the scored encoder (params.score_encoder = target)
    assert build(score_encoder="context").encoder is not None


# ----------------------------------------------------------------------------- loss
def smooth_l1(d: torch.Tensor) -> torch.Tensor:
    a = d.abs()
    return torch.where(a < 1, 0.5 * d * d, a - 0.5)


def reference_loss(m: IJepaAD, x: torch.Tensor, ctx: torch.Tensor, targets: list[torch.Tensor]) -> torch.Tensor:
    """I-JEPA's loss one image and one target block at a time, from the modules' parts."""
    ctx_vit, tgt_vit, pred = m.context_encoder, m.target_encoder, m.predictor
    errors = []
    for b in range(len(x)):
        with torch.no_grad():  # target: the EMA encoder on the whole image, layer-normed over features
            h = tgt_vit.forward_features(x[b : b + 1])[0]
            h = F.layer_norm(h, (h.shape[-1],))
        tokens = ctx_vit.patch_embed(x[b : b + 1])[0] + ctx_vit.pos_embed[0]
        z = tokens[ctx[b]][None]  # the context patches only, dropped before the blocks
        for blk in ctx_vit.blocks:
            z = blk(z)
        z = ctx_vit.norm(z)[0]
        for t in targets:
            seq = torch.cat([pred.embed(z) + pred.pos_embed[0][ctx[b]], pred.mask_token[0] + pred.pos_embed[0][t[b]]])
            out = seq[None]
            for blk in pred.blocks:
                out = blk(out)
            p = pred.proj(pred.norm(out)[0, len(ctx[b]) :])
            errors.append(smooth_l1(p - h[t[b]]))
    return torch.stack(errors).mean()


def test_the_loss_matches_a_per_image_reference_with_the_target_from_the_ema_encoder():
    m = build()
    with torch.no_grad():  # let the context encoder drift from its EMA so the two differ
        for p in m.context_encoder.parameters():
            if p.requires_grad:
                p.add_(0.05 * torch.randn_like(p))
    torch.manual_seed(1)
    x = torch.randn(3, 3, 28, 28)
    ctx, targets = sample_masks(3, 7, m.params)
    got = m.loss_for_masks(x, ctx, targets)
    expected = reference_loss(m, x, ctx, targets)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    # the target is the EMA encoder's: swapping in the context encoder's output changes the loss
    m.target_encoder.load_state_dict(m.context_encoder.state_dict())
    assert not torch.isclose(m.loss_for_masks(x, ctx, targets), got)
    l2 = build(loss="l2")
    with torch.no_grad():
        l2.load_state_dict(m.state_dict())
    mse = l2.loss_for_masks(x, ctx, targets)
    assert mse > 0 and not torch.isclose(mse, m.loss_for_masks(x, ctx, targets))


# ----------------------------------------------------------------------------- EMA
def test_the_ema_update_is_the_momentum_average():
    torch.manual_seed(0)
    target, online = [torch.randn(5, 3), torch.randn(7)], [torch.randn(5, 3), torch.randn(7)]
    expected = [0.99 * t + 0.01 * o for t, o in zip(target, online)]
    ema_update(target, online, torch.tensor(0.99))
    for got, want in zip(target, expected):
        torch.testing.assert_close(got, want)
    assert momentum_at(0.0, (0.996, 1.0)) == 0.996 and math.isclose(momentum_at(0.5, (0.996, 1.0)), 0.998)


def test_training_moves_the_target_encoder_by_ijepas_momentum_after_every_step():
    """Replay: the target after training (and the update owed for the last step, applied before
    scoring) equals m_i * target + (1 - m_i) * context after step i, for m_i = 0.996 + (i / T) 0.004."""
    m = build(ema=(0.9, 1.0))  # a faster EMA than I-JEPA's so the test sees it move
    start = [p.detach().clone() for p in m.target_encoder.parameters()]
    snapshots, progress = [], []
    original = m.training_loss

    def recording(images, p):
        snapshots.append([q.detach().clone() for q in m.context_encoder.parameters()])  # after the previous step
        progress.append(p)
        return original(images, p)

    m.training_loss = recording  # type: ignore[method-assign]
    images = torch.randint(0, 256, (16, 3, 28, 28), dtype=torch.uint8)
    settings = TrainSettings(epochs=3, batch_size=8, progress=False, amp=False, channels_last=False)
    result = fit(m, images, settings, torch.device("cpu"))
    assert result.steps == 6 and progress == [i / 6 for i in range(6)]
    m.settle_ema()  # what score() does first
    final_context = [q.detach() for q in m.context_encoder.parameters()]
    expected = start
    for i, context in enumerate([*snapshots[1:], final_context]):  # after step i
        mom = 0.9 + (i / 6) * 0.1
        expected = [mom * t + (1 - mom) * c for t, c in zip(expected, context)]
    for got, want in zip(m.target_encoder.parameters(), expected):
        torch.testing.assert_close(got.detach(), want, rtol=1e-5, atol=1e-6)
    moved = [not torch.equal(p, s) for p, s in zip(m.target_encoder.parameters(), start)]
    assert not moved[0] and all(moved[1:])  # every weight but the fixed position embedding
    assert float(m.ema_momentum) == -1.0  # nothing owed any more: scoring again leaves the target as it is


def test_a_run_is_reproducible_and_its_checkpoint_scores_the_same(tiny, tmp_path):
    """The same config and seed train the same model (masks drawn from the engine's seeded RNG), and
    the EMA update owed for the last step travels in the checkpoint: `con2 evaluate` scores the
    same target encoder as the run that trained it."""
    import pandas as pd

    from con2.run.runner import SCORES, rescore, run
    from con2.training.checkpoints import copy_checkpoint

    cfg = make_config({**tiny, "method": "ijepa_ad", "params": dict(SPEC.test_params)})
    trained = run(cfg, tmp_path / "trained")
    assert run(cfg, tmp_path / "twice")["metrics"] == trained["metrics"]
    copy_checkpoint(tmp_path / "trained" / "checkpoint.pt", tmp_path / "again" / "checkpoint.pt")
    again = rescore(cfg, tmp_path / "again")
    assert trained["steps"] > 0 and again["metrics"]["auroc"] == trained["metrics"]["auroc"]
    first, second, third = (pd.read_csv(tmp_path / d / SCORES) for d in ("trained", "twice", "again"))
    pd.testing.assert_frame_equal(first, second)
    pd.testing.assert_frame_equal(first, third)
