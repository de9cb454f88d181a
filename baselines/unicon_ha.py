"""UniCon-HA (Wang et al., ICCV 2023, arXiv 2308.10155) in the CON2 harness, from its paper.

"Unilaterally Aggregated Contrastive Learning with Hierarchical Augmentation": all inliers form
one class and are pulled together; virtual outliers made by rotating the inliers are each their
own class and are pushed apart; augmented inlier views far from the other inliers count less;
and the aggregation runs at several depths of the ResNet with augmentations that get stronger
with depth. Trained from scratch, no pretrained weights.

Which equation each piece implements:

* Eq. 1 (``L_cons``) and Eq. 5 (the two cases of ``L_UniCLR^i``) and Eq. 4 (the mean over the
  ``|B~|`` views): :func:`uniclr_loss`. For a batch of N inliers, S = rotations by 90/180/270
  degrees gives 3N virtual outliers (``D_vout``; 1:3 as in Sec. 4.1) and two views of each of the
  4N images make ``B~`` (8N views). An inlier view's positives are all other inlier views
  (``D~_in - {x}``), its negatives all virtual-outlier views; a virtual-outlier view's only
  positive is its other view, its negatives everything else. Every anchor's softmax runs over all
  other views of the batch, as in Eq. 1. With ``soft`` the inlier anchors use Eq. 6 instead.
* Eq. 7 (the soft weight of an inlier view): :func:`soft_weights`, the normalised sum of
  ``exp(z_i . z_j / tau_w)`` over the other inlier views, normalised over the inlier views of the
  batch (the paper indexes it by the positives of an anchor, ``D_x^+``; we compute it once over
  all inlier views ``D~_in``, which differs from ``D_x^+`` only by the anchor itself).
* Eq. 6 (soft aggregation): how the pair weight ``w_x w_x'`` enters is ``params.soft_form``.
  As printed, Eq. 6 puts ``w_x w_x'`` inside the log and divides by ``sum_x' w_x w_x'``, which
  gives anchors far from the inliers *more* weight (the factor ``1 / w_x``), the opposite of the
  text ("a positive pair receives more attention only if w_x and w_x' are both large");
  ``printed`` implements that literal formula. ``pair`` (the default) weights each pair's
  ``-log p(x'|x)`` by ``w_x w_x'`` and normalises over all inlier pairs of the batch (scaled to
  the number of inlier anchors, so uniform weights give Eq. 1 exactly); ``anchor`` normalises per
  anchor as printed, where ``w_x`` cancels. ``params.detach_weights`` (default) treats ``w`` as
  constants for the gradient; the paper does not say. Soft aggregation is applied at res4 only
  (Sec. 4.1), ``params.soft_aggregation``.
* Eq. 8 (``z_i(x) = g_i(res_i(T_i(x)))``) and Eq. 9 (``L_all = 1/4 sum_i lambda_i L_UniCLR(.; T_i)``):
  :meth:`UniConHA.training_loss`. Each aggregated stage i draws its own two views with T_i,
  runs the encoder up to stage i (timm's ``forward_intermediates``) and projects with its own
  head g_i. The paper's headline (Table 6, row 9) aggregates at res2, res3 and res4:
  ``params.stage_weights`` = lambda = (0, 1, 1, 1) (lambda_i = 1 is our choice; 0 skips a stage).
* The augmentation hierarchy T_1..T_4 (:func:`view_params_at`): the same augmentations (random
  resized crop, colour jitter, horizontal flip, grayscale) with strength ``params.strengths``
  (0.25, 0.5, 0.75, 1): the crop's smallest area fraction, the jitter magnitudes and the
  grayscale probability scale with the strength, and T_4 is the run's own views (SimCLR's). The
  paper's exact strengths are in its supplementary material, which we do not have: our choice.
* The extra heads g_1..g_3 (:class:`StageHead`): "down-sample and project the feature maps with
  the same shape as in the last stage". Ours: stride-2 3x3 conv + BatchNorm + ReLU blocks that
  double the channels until the map has res4's channels and size, then global average pooling
  and SimCLR's MLP head; g_4 is global pooling (the encoder's) and the same MLP head. Our choice.
* Eq. 10 (the score) with the test-time ensemble: ``s(x) = max_m cos(f(x), f(x_m))`` on the
  encoder's pooled res4 output f (heads removed), negated so that higher = more anomalous, and
  averaged over the run's ``tta`` fixed test-time views (40 by default, the same views as the
  other methods; the paper says only that it ensembles test-time augmentations).

Not as in the paper: the harness's optimiser (AdamW, cosine schedule, the run's lr and budget)
instead of SGD with lr 0.01 for 2048 epochs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from baselines.csi import rotate_all
from baselines.unicon_ha_spec import SPEC, UniConHAParams
from con2.errors import ConfigError
from con2.maths.scores import nnd_scores
from con2.methods.base import Method
from con2.methods.scoring import Scorer, ScoringSpec
from con2.methods.spec import MethodSettings
from con2.training.models import encoder_dim, projection_head
from con2.transforms.augment import ViewAugment, ViewParams, normalize, to_float

N_STAGES = 4


class Staged(Protocol):
    """An encoder with timm's ``forward_intermediates`` (feature maps after the stages ``indices``, 1-based),
    which a Module's attributes do not declare; called with ``intermediates_only=True``: the maps alone."""

    def forward_intermediates(
        self, x: Tensor, indices: list[int], *, stop_early: bool = ..., intermediates_only: bool = ...
    ) -> list[Tensor]: ...


def soft_weights(z: Tensor, weight_temperature: float) -> Tensor:
    """Eq. 7: the weight of each of n L2-normalised inlier views ``z [n, p]`` -> ``[n]`` (sums to 1).

    ``w_i = sum_{j != i} exp(z_i.z_j / tau_w) / sum_k sum_{j != k} exp(z_k.z_j / tau_w)``, computed
    in log space (no overflow for small ``tau_w``).
    """
    n = len(z)
    if n < 2:
        return torch.ones(n, dtype=z.dtype, device=z.device)
    eye = torch.eye(n, dtype=torch.bool, device=z.device)
    sim = (z @ z.T / weight_temperature).masked_fill(eye, float("-inf"))
    return torch.softmax(torch.logsumexp(sim, dim=1), dim=0)


def uniclr_loss(
    z1: Tensor,
    z2: Tensor,
    inlier: Tensor,
    temperature: float = 0.5,
    soft: bool = False,
    weight_temperature: float = 0.5,
    soft_form: str = "pair",
    detach_weights: bool = True,
) -> Tensor:
    """The UniCLR loss of one batch (Eq. 4 with Eq. 5, and Eq. 6/7 for inlier anchors when ``soft``).

    Args:
        z1, z2: ``[M, p]`` projections of the two views of M images (normalised here, in fp32).
        inlier: ``[M]`` bool, True for inliers (``D_in``), False for virtual outliers (``D_vout``).
        temperature: tau of Eq. 1/6.
        soft: inlier anchors use soft aggregation (Eq. 6) with the weights of Eq. 7.
        weight_temperature: tau_w of Eq. 7.
        soft_form: ``pair`` | ``anchor`` | ``printed``: how the weights enter (module docstring).
        detach_weights: no gradient through the weights.

    Returns:
        Scalar: the sum of every anchor's loss over the ``2M`` views, divided by ``2M``.
    """
    if z1.shape != z2.shape or z1.ndim != 2 or inlier.shape != (len(z1),):
        raise ValueError(
            f"expected z1, z2 [M, p] and inlier [M], got {tuple(z1.shape)}, {tuple(z2.shape)}, {tuple(inlier.shape)}"
        )
    m = len(z1)
    n = 2 * m
    with torch.autocast(device_type=z1.device.type, enabled=False):
        z = F.normalize(torch.cat([z1, z2]).float(), dim=1)
        inl = torch.cat([inlier, inlier]).bool()
        eye = torch.eye(n, dtype=torch.bool, device=z.device)
        logits = (z @ z.T / temperature).masked_fill(eye, float("-inf"))
        nll = -(logits - torch.logsumexp(logits, dim=1, keepdim=True))  # -log p(b | a), +inf on the diagonal
        partner = torch.arange(n, device=z.device).roll(m)  # the other view of the same image
        pos_in = inl[:, None] & inl[None, :] & ~eye
        pos_out = torch.zeros_like(eye)
        pos_out[torch.arange(n, device=z.device), partner] = True
        pos = torch.where(inl[:, None], pos_in, pos_out)
        pair_nll = torch.where(pos, nll, torch.zeros_like(nll))
        per_anchor = pair_nll.sum(1) / pos.sum(1).clamp_min(1)
        if not soft or not bool(inl.any()):
            return per_anchor.sum() / n
        w_in = soft_weights(z[inl], weight_temperature)
        if detach_weights:
            w_in = w_in.detach()
        w = torch.zeros(n, dtype=z.dtype, device=z.device).masked_scatter(inl, w_in)
        pair_w = torch.where(pos_in, w[:, None] * w[None, :], torch.zeros_like(nll))
        rows = inl
        if soft_form == "pair":
            inlier_total = rows.sum() * (pair_w * pair_nll).sum() / pair_w.sum()
        elif soft_form == "anchor":
            inlier_total = ((pair_w * pair_nll).sum(1)[rows] / pair_w.sum(1)[rows]).sum()
        elif soft_form == "printed":
            log_w = torch.where(pos_in, torch.log(w[:, None] * w[None, :]), torch.zeros_like(nll))
            inlier_total = ((pair_nll - log_w).sum(1)[rows] / pair_w.sum(1)[rows]).sum()
        else:
            raise ValueError(f"soft_form must be pair, anchor or printed, got {soft_form!r}")
        return (inlier_total + per_anchor[~inl].sum()) / n


def view_params_at(base: ViewParams, strength: float) -> ViewParams:
    """T_i: the run's view augmentations scaled to ``strength`` in (0, 1] (1 = ``base`` itself).

    The smallest crop-area fraction moves from 1 towards ``base``'s, the jitter magnitudes and
    the grayscale probability scale linearly; flips and the jitter probability are kept.
    """
    low, high = base.crop_scale
    return replace(
        base,
        crop_scale=(low + (1.0 - strength) * (1.0 - low), high),
        jitter=tuple(strength * j for j in base.jitter),  # type: ignore[arg-type]
        grayscale_p=strength * base.grayscale_p,
    )


class StageHead(nn.Module):
    """g_i for an inner stage.

    ``[B, C_i, S_i, S_i]`` -> stride-2 conv blocks to res4's shape -> pool -> MLP -> ``[B, p]``.
    """

    def __init__(self, in_shape: tuple[int, int], out_shape: tuple[int, int], head_dim: int) -> None:
        super().__init__()
        (c, s), (c_out, s_out) = in_shape, out_shape
        blocks: list[nn.Module] = []
        while s > s_out:
            s = (s + 1) // 2
            nxt = c_out if s <= s_out else min(2 * c, c_out)
            blocks += [
                nn.Conv2d(c, nxt, 3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(nxt),
                nn.ReLU(inplace=True),
            ]
            c = nxt
        if c != c_out:  # same size already: a 1x1 conv to res4's channels
            blocks += [nn.Conv2d(c, c_out, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True)]
        self.down = nn.Sequential(*blocks)
        self.mlp = projection_head(c_out, c_out, head_dim)

    def forward(self, fmap: Tensor) -> Tensor:
        return self.mlp(self.down(fmap).mean(dim=(-2, -1)))


def stage_shapes(encoder: nn.Module, image_size: int) -> list[tuple[int, int]]:
    """``(channels, side)`` of the feature map after each of the 4 stages, from one dummy pass."""
    was_training = encoder.training
    encoder.eval()
    try:
        with torch.no_grad():
            maps = cast(Staged, encoder).forward_intermediates(
                torch.zeros(1, 3, image_size, image_size), indices=list(range(1, N_STAGES + 1)), intermediates_only=True
            )
    finally:
        encoder.train(was_training)
    return [(int(f.shape[1]), int(f.shape[-1])) for f in maps]


class UniConHA(Method):
    """UniCon-HA: UniCLR with soft aggregation at res4 and hierarchical augmentation at res2-res4."""

    name = SPEC.name
    Params = UniConHAParams
    score_names = SPEC.score_names

    def __init__(self, cfg: MethodSettings, params: UniConHAParams) -> None:
        super().__init__(cfg, params)
        d = encoder_dim(self.encoder)
        self.active = [i for i, lam in enumerate(params.stage_weights, 1) if lam > 0]
        inner = [i for i in self.active if i < N_STAGES]
        if inner and not hasattr(self.encoder, "forward_intermediates"):
            raise ConfigError(
                f"encoder {cfg.encoder!r} exposes no intermediate stages (timm's forward_intermediates), which "
                f"UniCon-HA's aggregation at res{inner} needs; use a ResNet, or params.stage_weights=[0, 0, 0, 1]"
            )
        shapes = stage_shapes(self.encoder, cfg.image_size) if inner else []
        heads: dict[str, nn.Module] = {f"res{i}": StageHead(shapes[i - 1], shapes[-1], params.head_dim) for i in inner}
        if N_STAGES in self.active:
            heads[f"res{N_STAGES}"] = projection_head(d, d, params.head_dim)
        self.heads = nn.ModuleDict(heads)
        self.stage_views = nn.ModuleDict(
            {
                f"res{i}": ViewAugment(cfg.image_size, view_params_at(self.view_params, params.strengths[i - 1]))
                for i in self.active
            }
        )

    def soft_at(self, stage: int) -> bool:
        """Whether stage ``stage`` uses soft aggregation (Eq. 6) for inlier anchors."""
        where = self.params.soft_aggregation
        return where == "all" or (where == "last" and stage == N_STAGES)

    def project(self, stage: int, views: Tensor) -> Tensor:
        """Eq. 8: ``g_i(res_i(views))`` -> ``[B, p]`` (the encoder runs only up to stage i)."""
        if stage == N_STAGES:
            return self.heads[f"res{stage}"](self.encoder(views))
        fmap = cast(Staged, self.encoder).forward_intermediates(
            views, indices=[stage], stop_early=True, intermediates_only=True
        )[0]
        return self.heads[f"res{stage}"](fmap)

    def training_loss(self, images: Tensor, progress: float) -> dict[str, Tensor]:
        """uint8 ``[N, C, H, W]`` -> Eq. 9 over the aggregated stages, each term logged as ``res<i>``."""
        if images.shape[-1] != images.shape[-2]:
            raise ConfigError(
                "UniCon-HA rotates images into virtual outliers and needs square inputs, got "
                f"{tuple(images.shape[-2:])}"
            )
        p = self.params
        n = len(images)
        batch = to_float(rotate_all(images))  # [4N]: the N inliers, then their 3 rotations (D_vout)
        inlier = torch.arange(len(batch), device=images.device) < n
        out: dict[str, Tensor] = {}
        total = torch.zeros((), device=images.device)
        for stage in self.active:
            views = normalize(self.stage_views[f"res{stage}"](torch.cat([batch, batch])))  # two views of each: [8N]
            if self.cfg.channels_last:
                views = views.contiguous(memory_format=torch.channels_last)
            z = self.project(stage, views)
            term = uniclr_loss(
                z[: len(batch)],
                z[len(batch) :],
                inlier,
                p.temperature,
                self.soft_at(stage),
                p.weight_temperature,
                p.soft_form,
                p.detach_weights,
            )
            out[f"res{stage}"] = term
            total = total + p.stage_weights[stage - 1] * term
        out["loss"] = total / N_STAGES
        return out

    def scoring(self) -> ScoringSpec:
        """Eq. 10: ``-max_m cos(f(x), f(x_m))`` on the encoder output, averaged over the test-time views."""
        chunk = self.cfg.nn_chunk
        return ScoringSpec({"unicon": Scorer(lambda te, tr, c: nnd_scores(te, tr, chunk))})
