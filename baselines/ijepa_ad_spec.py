"""I-JEPA-AD's card (torch-free): parameters, constraints, labels.

The implementation is :mod:`baselines.ijepa_ad`. The CON2 paper's appendix trains I-JEPA
(Assran et al., CVPR 2023) "with the ViT-Tiny configuration, to keep parameter counts comparable
to our ResNet18 backbone", then scores S_NND on average-pooled encoder outputs with the normal
training set as the index. Everything else it leaves open; each such choice is a field below,
with I-JEPA's value (its paper and its code, github.com/facebookresearch/ijepa: ``configs/``,
``src/masks/multiblock.py``, ``src/train.py``) as the default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from con2.errors import ConfigError
from con2.methods.spec import MethodSettings, MethodSpec

LOSSES = ("smooth_l1", "l2")
POS_EMBEDS = ("sincos", "learn")
SCORE_ENCODERS = ("target", "context")


@dataclass
class IJepaADParams:
    """I-JEPA's hyperparameters on a timm ViT; defaults = I-JEPA's where the CON2 appendix is silent."""

    backbone: str = "vit_tiny_patch16_224"  # the timm ViT configuration (the appendix: ViT-Tiny)
    patch_size: int = 16  # above cifar_stem_max_size (e.g. 224 px): ViT-Tiny/16, a 14 x 14 grid as I-JEPA's
    small_patch_size: int = (
        4  # at <= cifar_stem_max_size (e.g. 28 px): a 7 x 7 grid (2 gives I-JEPA's 14 x 14 at ~5x the cost)
    )
    pos_embed: str = "sincos"  # I-JEPA's fixed 2-D sin-cos position embedding | learn (timm's)
    predictor_depth: int = 6  # I-JEPA code's vit_predictor default (its ViT-H/14 configs use 12)
    predictor_width: int = 384  # pred_emb_dim of every I-JEPA config
    predictor_heads: int = 0  # 0: the encoder's number of heads (I-JEPA: num_heads=encoder.num_heads)
    n_targets: int = 4  # num_pred_masks: target blocks per image
    target_scale: tuple[float, float] = (0.15, 0.2)  # pred_mask_scale: a target block's share of the grid
    target_aspect: tuple[float, float] = (0.75, 1.5)  # aspect_ratio (height / width) of target blocks
    context_scale: tuple[float, float] = (
        0.85,
        1.0,
    )  # enc_mask_scale: the context block (square), before targets are cut out
    min_keep: int = -1  # a block keeps more than this many patches; -1: I-JEPA's 10 on its 14 x 14 grid, scaled by area
    allow_overlap: bool = False  # False: the context excludes every target block (I-JEPA)
    ema: tuple[float, float] = (0.996, 1.0)  # target-encoder momentum, linear from the first to the second per step
    loss: str = "smooth_l1"  # smooth_l1: I-JEPA's code | l2: the paper's average L2 distance
    crop_scale: tuple[float, float] = (0.3, 1.0)  # I-JEPA's RandomResizedCrop scale; no flips, no colour changes
    score_encoder: str = "target"  # the encoder scored: target (EMA; I-JEPA evaluates it) | context


def patch_size_for(params: IJepaADParams, cfg: MethodSettings) -> int:
    """The patch size at the run's input size: ``small_patch_size`` up to ``cifar_stem_max_size``."""
    return params.small_patch_size if cfg.image_size <= cfg.cifar_stem_max_size else params.patch_size


def min_keep_for(params: IJepaADParams, grid: int) -> int:
    """``params.min_keep``, or for -1 I-JEPA's 10 patches of its 14 x 14 grid scaled to ``grid`` (2 on a 7 x 7 grid)."""
    return params.min_keep if params.min_keep >= 0 else (10 * grid * grid) // 196


def block_size(u: float, grid: int, scale: tuple[float, float], aspect: tuple[float, float]) -> tuple[int, int]:
    """I-JEPA's ``_sample_block_size``: one uniform draw ``u`` sets both the scale and the aspect ratio.

    Returns ``(h, w)`` in patches: ``h * w`` about ``scale * grid**2`` with ``h / w`` the aspect
    ratio, each below ``grid``.
    """
    keep = int(grid * grid * (scale[0] + u * (scale[1] - scale[0])))
    ratio = aspect[0] + u * (aspect[1] - aspect[0])
    h, w = int(round(math.sqrt(keep * ratio))), int(round(math.sqrt(keep / ratio)))
    return min(h, grid - 1), min(w, grid - 1)


def _check_range(key: str, value: tuple[float, float], low: float, high: float) -> None:
    if not (low < value[0] <= value[1] <= high):
        raise ConfigError(f"params.{key} must be (min, max) with {low} < min <= max <= {high}, got {list(value)}")


def check(params: IJepaADParams, cfg: MethodSettings) -> None:
    choices = (("loss", LOSSES), ("pos_embed", POS_EMBEDS), ("score_encoder", SCORE_ENCODERS))
    for key, allowed in choices:
        if getattr(params, key) not in allowed:
            raise ConfigError(f"params.{key} must be one of {allowed}, got {getattr(params, key)!r}")
    patch = patch_size_for(params, cfg)
    which = "small_patch_size" if patch == params.small_patch_size else "patch_size"
    if patch < 1 or cfg.image_size % patch:
        raise ConfigError(
            f"params.{which}={patch} must divide image_size {cfg.image_size} (ViT patches tile the image); "
            f"e.g. {which}={max(1, cfg.image_size // 14)}"
        )
    grid = cfg.image_size // patch
    if grid < 2:
        raise ConfigError(
            f"params.{which}={patch} leaves a {grid} x {grid} grid at {cfg.image_size} px; use a smaller patch"
        )
    for key in ("predictor_depth", "predictor_width", "n_targets"):
        if getattr(params, key) < 1:
            raise ConfigError(f"params.{key} must be >= 1, got {getattr(params, key)}")
    if params.predictor_heads < 0 or (params.predictor_heads and params.predictor_width % params.predictor_heads):
        raise ConfigError(
            f"params.predictor_heads must be 0 (the encoder's) or divide predictor_width {params.predictor_width}, "
            f"got {params.predictor_heads}"
        )
    if params.predictor_width % 4:
        raise ConfigError(
            f"params.predictor_width must be divisible by 4 (2-D sin-cos embedding), got {params.predictor_width}"
        )
    _check_range("target_scale", params.target_scale, 0.0, 1.0)
    _check_range("context_scale", params.context_scale, 0.0, 1.0)
    _check_range("crop_scale", params.crop_scale, 0.0, 1.0)
    if not (0 < params.target_aspect[0] <= params.target_aspect[1]):
        raise ConfigError(
            f"params.target_aspect must be (min, max) with 0 < min <= max, got {list(params.target_aspect)}"
        )
    # a target block is never cut, so one no larger than min_keep would be redrawn for ever (as in I-JEPA's code)
    smallest = min(
        h * w for h, w in (block_size(i / 100, grid, params.target_scale, params.target_aspect) for i in range(101))
    )
    if params.min_keep < -1 or min_keep_for(params, grid) >= smallest:
        raise ConfigError(
            f"params.min_keep={params.min_keep} must be -1 (scaled: {min_keep_for(IJepaADParams(), grid)} here) "
            f"or >= 0 and below the smallest target block, {smallest} patches on this {grid} x {grid} grid"
        )
    if not (0.0 <= params.ema[0] <= params.ema[1] <= 1.0):
        raise ConfigError(f"params.ema must be (start, end) with 0 <= start <= end <= 1, got {list(params.ema)}")


def tags(params: IJepaADParams) -> dict[str, object]:
    """What the report may group I-JEPA-AD runs by: the backbone (the paper compares ViT-T and ViT-B)."""
    return {"backbone": params.backbone}


SPEC = MethodSpec(
    name="ijepa_ad",
    Params=IJepaADParams,
    implementation="baselines.ijepa_ad:IJepaAD",
    score_names=("nnd",),
    description=(
        "I-JEPA-AD: I-JEPA (context encoder, EMA target encoder, narrow predictor, multi-block masking) trained "
        "from scratch on a timm ViT-Tiny; score S_NND on the average-pooled target-encoder outputs, with TTA"
    ),
    label="I-JEPA-AD",
    score_labels={"nnd": "NND"},
    paper_rows={"nnd": ("I-JEPA-AD", "")},
    compute_name=None,
    # timm's 64-d, 6-block test ViT: the tests that train the method end to end take a second each, not 9-17 s
    # (ViT-Tiny itself: tests/baselines/test_ijepa_ad.py)
    test_params={"backbone": "test_vit", "predictor_depth": 1, "predictor_width": 48},
    check=check,
    tags=tags,
)
