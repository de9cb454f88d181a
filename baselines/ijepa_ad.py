"""I-JEPA-AD: I-JEPA (Assran et al., CVPR 2023) trained from scratch on the normal data, S_NND score.

The CON2 paper's appendix: I-JEPA with the ViT-Tiny configuration, then S_NND on average-pooled
encoder outputs with the normal training set as the index. Following I-JEPA's code
(github.com/facebookresearch/ijepa):

* **Encoders.** A timm ViT (``params.backbone``, ViT-Tiny: 192-d, 12 blocks, 3 heads) without a
  class token, with I-JEPA's fixed 2-D sin-cos position embedding (:func:`sincos_2d`) and its
  initialisation (truncated normal 0.02, residual projections scaled by 1/sqrt(2 * layer), timm's
  ``fix_init``). The patch size gives I-JEPA's 14 x 14 grid at 224 px (16) and at 28 px (2). The
  *context encoder* sees only the context patches; the *target encoder* is its exponential moving
  average (:func:`ema_update`, momentum linear from 0.996 to 1 over the run's steps) and sees the
  whole image.
* **Masks** (:func:`sample_masks`, I-JEPA's ``MaskCollator``): per batch one target-block size
  (scale 0.15-0.2 of the grid, aspect 0.75-1.5) and one square context-block size (scale
  0.85-1); per image 4 target blocks and one context block with the targets cut out; every mask
  truncated to the batch's shortest so they stack.
* **Predictor** (:class:`Predictor`): the context tokens mapped to 384-d, plus a learnt mask token
  with the sin-cos position of each target patch, through 6 transformer blocks, mapped back to the
  encoder's width.
* **Loss** (:func:`ijepa_loss`): smooth L1 between the predictions and the target encoder's
  layer-normed outputs at the target patches (``params.loss="l2"``: the paper's squared L2).
* **Score.** S_NND (-max cosine to the training set) on the average-pooled outputs of the target
  encoder (``params.score_encoder``), through the shared test-time loop: the run's fixed test-time
  views, as every method.

The training loop knows no method, so the EMA update owed after an optimiser step is applied at
the start of the next :meth:`IJepaAD.training_loss` (with that step's momentum, kept in the
``ema_momentum`` buffer, so a checkpoint carries it), and the last one before scoring: the target
encoder then equals I-JEPA's after every step. Views are I-JEPA's random resized crops (scale
0.3-1), without flips or colour changes.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from baselines.ijepa_ad_spec import SPEC, IJepaADParams, block_size, min_keep_for, patch_size_for
from con2.errors import ConfigError
from con2.maths.scores import nnd_scores
from con2.methods.base import Method, MethodScores
from con2.methods.scoring import Scorer, ScoringSpec
from con2.methods.spec import MethodSettings
from con2.training.models import encoder_dim
from con2.transforms.augment import ViewAugment, ViewParams, normalize, to_float

if TYPE_CHECKING:  # timm is imported where a model is built
    from timm.models.vision_transformer import Block, VisionTransformer

LAYER_NORM = partial(nn.LayerNorm, eps=1e-6)  # I-JEPA's (and timm's ViT) LayerNorm


# ----------------------------------------------------------------------------- masks
def sample_block(
    size: tuple[int, int], grid: int, min_keep: int, regions: Sequence[Tensor] | None = None
) -> tuple[Tensor, Tensor]:
    """I-JEPA's ``_sample_block_mask``: a block of ``size`` at a random corner, cut to ``regions``.

    Retries until more than ``min_keep`` patches remain; every 20 failures one more of the
    ``regions`` (``[grid, grid]`` 0/1 masks) is dropped. Returns the kept patch indices ``[k]``
    (row-major) and the block's complement ``[grid, grid]`` (int32). Draws from torch's global RNG.
    """
    h, w = size
    tries, timeout = 0, 20
    while True:
        top = int(torch.randint(0, grid - h, (1,)))
        left = int(torch.randint(0, grid - w, (1,)))
        mask = torch.zeros((grid, grid), dtype=torch.int32)
        mask[top : top + h, left : left + w] = 1
        for region in (regions or [])[: max(len(regions or []) - tries, 0)]:
            mask *= region
        kept = torch.nonzero(mask.flatten()).flatten()
        if len(kept) > min_keep:
            break
        timeout -= 1
        if timeout == 0:
            tries, timeout = tries + 1, 20
    complement = torch.ones((grid, grid), dtype=torch.int32)
    complement[top : top + h, left : left + w] = 0
    return kept, complement


def image_masks(
    pred_size: tuple[int, int], ctx_size: tuple[int, int], grid: int, p: IJepaADParams
) -> tuple[Tensor, list[Tensor]]:
    """One image's masks: ``n_targets`` target blocks, then the context block cut to their complements
    (unless ``allow_overlap``). Returns the context indices ``[k]`` and the target indices (untruncated)."""
    keep = min_keep_for(p, grid)
    blocks, complements = [], []
    for _ in range(p.n_targets):
        kept, complement = sample_block(pred_size, grid, keep)
        blocks.append(kept)
        complements.append(complement)
    return sample_block(ctx_size, grid, keep, None if p.allow_overlap else complements)[0], blocks


def sample_masks(batch: int, grid: int, p: IJepaADParams) -> tuple[Tensor, list[Tensor]]:
    """I-JEPA's ``MaskCollator`` for one batch on a ``grid x grid`` patch grid (torch's global RNG).

    One target-block size and one context-block size for the batch (:func:`block_size`), the masks
    of each image (:func:`image_masks`), each truncated to the batch's shortest so they stack.
    Returns the context indices ``[B, K_ctx]`` and ``n_targets`` target index tensors
    ``[B, K_tgt]`` (long, row-major patch indices).
    """
    pred_size = block_size(float(torch.rand(1)), grid, p.target_scale, p.target_aspect)
    ctx_size = block_size(float(torch.rand(1)), grid, p.context_scale, (1.0, 1.0))
    masks = [image_masks(pred_size, ctx_size, grid, p) for _ in range(batch)]
    k_ctx = min(len(ctx) for ctx, _ in masks)
    k_tgt = min(len(m) for _, blocks in masks for m in blocks)
    ctx = torch.stack([c[:k_ctx] for c, _ in masks])
    tgt = [torch.stack([blocks[j][:k_tgt] for _, blocks in masks]) for j in range(p.n_targets)]
    return ctx, tgt


def gather_tokens(x: Tensor, idx: Tensor) -> Tensor:
    """Tokens ``x [B, N, D]`` at indices ``idx [B, K]`` -> ``[B, K, D]`` (I-JEPA's ``apply_masks`` for one mask)."""
    return x.gather(1, idx.unsqueeze(-1).expand(-1, -1, x.shape[-1]))


# ----------------------------------------------------------------------------- model parts
def sincos_2d(dim: int, grid: int) -> Tensor:
    """I-JEPA's ``get_2d_sincos_pos_embed``: ``[grid * grid, dim]`` (row-major patches).

    The first half of the channels encodes the column, the second the row, each as
    ``[sin(pos * omega), cos(pos * omega)]`` with ``omega_i = 10000^(-i / (dim / 4))``.
    """
    coords = torch.arange(grid, dtype=torch.float64)
    rows, cols = torch.meshgrid(coords, coords, indexing="ij")

    def one_axis(pos: Tensor, d: int) -> Tensor:
        omega = 1.0 / 10000 ** (torch.arange(d // 2, dtype=torch.float64) / (d / 2))
        out = pos.reshape(-1, 1) * omega
        return torch.cat([out.sin(), out.cos()], dim=1)

    return torch.cat([one_axis(cols, dim // 2), one_axis(rows, dim // 2)], dim=1).float()


def _init_like_ijepa(module: nn.Module, blocks: Sequence[Block]) -> None:
    """Truncated-normal (0.02) linear weights, zero biases, and residual projections / sqrt(2 * layer)."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    with torch.no_grad():
        for i, block in enumerate(blocks, start=1):
            # timm types Block.attn and Block.mlp as Modules; their output projections are Linear layers
            attn_proj, mlp_fc2 = cast(nn.Linear, block.attn.proj), cast(nn.Linear, block.mlp.fc2)
            attn_proj.weight.div_(math.sqrt(2.0 * i))
            mlp_fc2.weight.div_(math.sqrt(2.0 * i))


class Predictor(nn.Module):
    """I-JEPA's ``VisionTransformerPredictor``: context tokens + positioned mask tokens -> target predictions."""

    pos_embed: Tensor  # buffer

    def __init__(self, grid: int, embed_dim: int, width: int, depth: int, heads: int) -> None:
        from timm.models.vision_transformer import Block  # lazy: timm, an extra, only when the encoder is built

        super().__init__()
        self.embed = nn.Linear(embed_dim, width)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, width))
        self.register_buffer("pos_embed", sincos_2d(width, grid).unsqueeze(0), persistent=False)
        # timm types norm_layer as a class; it only calls it, as with its own partial LayerNorms
        norm = cast("type[nn.Module]", LAYER_NORM)
        blocks = [Block(width, heads, mlp_ratio=4.0, qkv_bias=True, norm_layer=norm) for _ in range(depth)]
        self.blocks = nn.Sequential(*blocks)
        self.norm = LAYER_NORM(width)
        self.proj = nn.Linear(width, embed_dim)
        _init_like_ijepa(self, blocks)
        nn.init.trunc_normal_(self.mask_token, std=0.02)

    def forward(self, context: Tensor, context_idx: Tensor, target_idx: Sequence[Tensor]) -> Tensor:
        """``context [B, K_ctx, D]`` at ``context_idx [B, K_ctx]`` -> predictions ``[n * B, K_tgt, D]``
        for the ``n`` target masks ``[B, K_tgt]`` (target-major, as I-JEPA's ``apply_masks``)."""
        b = len(context)
        pos = self.pos_embed.expand(b, -1, -1)
        x = self.embed(context) + gather_tokens(pos, context_idx)
        n_ctx = x.shape[1]
        queries = self.mask_token + torch.cat([gather_tokens(pos, m) for m in target_idx])
        x = torch.cat([x.repeat(len(target_idx), 1, 1), queries], dim=1)
        return self.proj(self.norm(self.blocks(x))[:, n_ctx:])


def build_vit(params: IJepaADParams, cfg: MethodSettings) -> VisionTransformer:
    """The timm ViT of ``params.backbone`` for the run's input size, I-JEPA-style (see the module docstring).

    Maps ``[B, 3, S, S]`` to the average of its final (layer-normed) tokens ``[B, D]``; ``out_dim`` = D.
    """
    import timm  # lazy: an extra, only when the encoder is built
    from timm.models.vision_transformer import VisionTransformer  # lazy: timm, as above

    if not timm.is_model(params.backbone):
        raise ConfigError(f"params.backbone: unknown timm model {params.backbone!r}; e.g. 'vit_tiny_patch16_224'")
    patch = patch_size_for(params, cfg)
    vit = timm.create_model(
        params.backbone,
        pretrained=False,
        img_size=cfg.image_size,
        patch_size=patch,
        num_classes=0,
        global_pool="avg",
        class_token=False,
        fc_norm=False,
        fix_init=True,
    )
    if not isinstance(vit, VisionTransformer):
        raise ConfigError(f"params.backbone must be a timm VisionTransformer, got {type(vit).__name__}")
    nn.init.trunc_normal_(vit.patch_embed.proj.weight, std=0.02)  # I-JEPA initialises the patch convolution too
    nn.init.zeros_(vit.patch_embed.proj.bias)
    if params.pos_embed == "sincos":
        grid = cfg.image_size // patch
        assert vit.pos_embed is not None  # timm's default pos_embed="learn" (None only for "none")
        vit.pos_embed.requires_grad_(False)
        with torch.no_grad():
            vit.pos_embed.copy_(sincos_2d(vit.embed_dim, grid).unsqueeze(0))
    vit.out_dim = int(vit.embed_dim)  # type: ignore[assignment]
    return vit


def vit_tokens(vit: VisionTransformer, x: Tensor, keep: Tensor | None = None) -> Tensor:
    """Final tokens of a timm ViT for normalised images ``x [B, 3, S, S]``: ``[B, N, D]``, or only the
    patches ``keep [B, K]`` (dropped right after the position embedding, as I-JEPA's encoder)."""
    t = vit._pos_embed(vit.patch_embed(x))
    if keep is not None:
        t = gather_tokens(t, keep)
    return vit.norm(vit.blocks(vit.norm_pre(t)))


def ijepa_loss(pred: Tensor, target: Tensor, kind: str = "smooth_l1") -> Tensor:
    """Mean smooth-L1 (beta 1, I-JEPA's code) or squared error of ``pred`` vs ``target`` (same shape), in fp32."""
    pred, target = pred.float(), target.float()
    return F.smooth_l1_loss(pred, target) if kind == "smooth_l1" else F.mse_loss(pred, target)


def momentum_at(progress: float, ema: tuple[float, float]) -> float:
    """I-JEPA's momentum after step ``i`` of ``T``: ``ema0 + (i / T) * (ema1 - ema0)`` (``progress = i / T``)."""
    return ema[0] + progress * (ema[1] - ema[0])


@torch.no_grad()
def ema_update(target: Sequence[Tensor], online: Sequence[Tensor], momentum: Tensor | float) -> None:
    """``target <- m * target + (1 - m) * online`` in place, for each pair of tensors (a tensor ``m``
    needs no host synchronisation)."""
    for t, o in zip(target, online):
        t.lerp_(o.detach().to(t.dtype), 1.0 - momentum)


class IJepaAD(Method):
    """I-JEPA on a ViT trained on the normal data; S_NND on the average-pooled (target) encoder."""

    name = SPEC.name
    Params = IJepaADParams
    score_names = SPEC.score_names
    ema_momentum: Tensor  # buffer

    def __init__(self, cfg: MethodSettings, params: IJepaADParams) -> None:
        super().__init__(cfg, params)
        context = build_vit(params, self.cfg)
        self.grid = self.cfg.image_size // patch_size_for(params, self.cfg)
        self.context_encoder = context
        self.target_encoder = copy.deepcopy(context).requires_grad_(False)
        self.encoder = self.target_encoder if params.score_encoder == "target" else self.context_encoder
        attn = cast("Block", context.blocks[0]).attn  # timm types it as a Module, num_heads as Tensor | Module
        heads = params.predictor_heads or int(cast(int, attn.num_heads))
        if params.predictor_width % heads:
            raise ConfigError(
                f"params.predictor_width={params.predictor_width} must be divisible by the predictor's {heads} heads "
                f"(params.predictor_heads, 0 = the encoder's)"
            )
        self.predictor = Predictor(
            self.grid, encoder_dim(context), params.predictor_width, params.predictor_depth, heads
        )
        views = ViewParams(crop_scale=params.crop_scale, hflip_p=0.0, jitter_p=0.0, grayscale_p=0.0)
        self.train_views = ViewAugment(self.cfg.image_size, views)
        # momentum of the EMA update owed for the last optimiser step (-1: none owed)
        self.register_buffer("ema_momentum", torch.tensor(-1.0))

    def ijepa_views(self, images: Tensor) -> Tensor:
        """uint8 ``[N, C, H, W]`` -> I-JEPA's random resized crops, normalised ``[N, 3, S, S]``."""
        x = normalize(self.train_views(to_float(images)))
        return x.contiguous(memory_format=torch.channels_last) if self.cfg.channels_last else x

    @torch.no_grad()
    def settle_ema(self) -> None:
        """Apply the EMA update owed for the last optimiser step (none owed: unchanged, no host sync)."""
        m = self.ema_momentum
        weight_m = torch.where(m >= 0, m, torch.ones_like(m))  # momentum 1 = no change
        ema_update(list(self.target_encoder.parameters()), list(self.context_encoder.parameters()), weight_m)
        self.ema_momentum.fill_(-1.0)

    def loss_for_masks(self, x: Tensor, context_idx: Tensor, target_idx: Sequence[Tensor]) -> Tensor:
        """I-JEPA's loss for normalised views ``x [B, 3, S, S]`` and given masks (see :func:`sample_masks`)."""
        with torch.no_grad():
            h = vit_tokens(self.target_encoder, x).float()
            h = F.layer_norm(h, (h.shape[-1],))
            targets = torch.cat([gather_tokens(h, m) for m in target_idx])
        z = vit_tokens(self.context_encoder, x, context_idx)
        return ijepa_loss(self.predictor(z, context_idx, target_idx), targets, self.params.loss)

    def training_loss(self, images: Tensor, progress: float) -> dict[str, Tensor]:
        """uint8 ``[N, C, H, W]`` -> ``{"loss": I-JEPA's loss}``; first settles the previous step's EMA update."""
        self.settle_ema()
        context_idx, target_idx = sample_masks(len(images), self.grid, self.params)
        dev = images.device
        loss = self.loss_for_masks(self.ijepa_views(images), context_idx.to(dev), [m.to(dev) for m in target_idx])
        self.ema_momentum.fill_(momentum_at(progress, self.params.ema))
        return {"loss": loss}

    def score(
        self, train: Tensor, test: Tensor, device: torch.device, validation: Tensor | None = None
    ) -> MethodScores:
        """The shared test-time loop, after the last step's EMA update."""
        self.settle_ema()
        return super().score(train, test, device, validation)

    def scoring(self) -> ScoringSpec:
        """S_NND: ``-max_m cos(f(x), f(x_m))`` on the pooled encoder output, averaged over the test-time views."""
        chunk = self.cfg.nn_chunk
        return ScoringSpec({"nnd": Scorer(lambda te, tr, c: nnd_scores(te, tr, chunk))})
