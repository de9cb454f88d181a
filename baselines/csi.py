"""CSI: contrasting shifted instances (Tack et al., NeurIPS 2020), in the CON2 harness.

Training batch: each of the N normal images is flipped horizontally at random (p = the views'
``hflip_p``) and then rotated by 0/90/180/270 degrees on its uint8 pixels -> 4N images, rotation
major (row ``k N + i`` is image i rotated by k * 90 degrees). Two random views of each -> 8N images,
one encoder pass. The flip comes *before* the rotation and the views after it never flip, as in
CSI's code: a flip after a rotation would turn a 90 degree rotation into a 270 degree one and
confuse the rotation labels. (Our views never rotate, see the spec.)

* NT-Xent (tau ``params.temperature`` = 0.5) over the 8N projections: the two views of one rotated
  image are positives; every other image, including the other rotations of the same image, is a
  negative ("shifted instances").
* A 4-way linear rotation head on the encoder outputs, cross-entropy weighted by
  ``params.rotation_weight`` (1).

Score (CSI's s_con-SI with its ensemble over test-time samples): for each test-time sample t (a
view with parameters fixed once, applied identically to training and test images; its horizontal
flip again before the rotation) and each rotation k,

    s_tk(x) = max_j <z_tk(x), z_tk(x_j) / ||z_tk(x_j)||> / mean_j ||z_tk(x_j)||
              + l_tk(x)[k] / mean_j l_tk(x_j)[k],

with z the 128-d projections, l the rotation logits and x_j the training images; the score is
``-mean_{t,k} s_tk(x)`` (CSI's score is higher for normal images). ``<z, z_j/||z_j||>`` is CSI's
``max cos * ||z(x)||``; ``params.test_norm = False`` drops the test norm (plain max cosine). The
number of samples is ``params.samples``; the default -1 takes ceil(A / 4) for the run's A = ``tta``
test-time views, so 10 samples x 4 rotations = 40 at the paper's A = 40, and ``tta = 0`` (no
test-time augmentation) scores the identity view only. The samples are the first of the run's
fixed views (same seed), i.e. views shared with the other methods.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from baselines.csi_spec import SPEC, CSIParams
from con2.errors import ConfigError
from con2.maths.losses import nt_xent
from con2.methods.base import Method
from con2.methods.features import ContextFn
from con2.methods.scoring import Reading, Scorer, ScoringSpec, TestView, tta_draw
from con2.methods.spec import MethodSettings
from con2.training.models import encoder_dim, projection_head
from con2.transforms.augment import ViewAugment

N_ROTATIONS = 4


def rotate_all(images: Tensor, n_rotations: int = N_ROTATIONS) -> Tensor:
    """``[N, C, H, W]`` (square) -> ``[R N, C, H, W]``, row ``k N + i`` = image i rotated by k * 90 degrees."""
    return torch.cat([torch.rot90(images, k, dims=(-2, -1)) for k in range(n_rotations)])


def rotation_labels(
    n_images: int, n_views: int = 2, n_rotations: int = N_ROTATIONS, device: torch.device | None = None
) -> Tensor:
    """Rotation labels ``[V R N]`` of a batch laid out view-major, then rotation, then image."""
    return (torch.arange(n_views * n_rotations * n_images, device=device) // n_images) % n_rotations


def random_hflip(images: Tensor, p: float) -> Tensor:
    """Mirror each image of ``[N, C, H, W]`` left-right with probability ``p`` (torch's RNG)."""
    if p <= 0:
        return images
    flip = torch.rand(len(images), device=images.device) < p
    return torch.where(flip[:, None, None, None], images.flip(-1), images)


def _signed_floor(x: Tensor, eps: float = 1e-8) -> Tensor:
    """``x`` with magnitude at least ``eps`` and its sign kept (0 -> +eps): a safe divisor."""
    return torch.where(x < 0, x.clamp(max=-eps), x.clamp(min=eps))


def csi_view_scores(
    test_proj: Tensor,
    test_logits: Tensor,
    train_proj: Tensor,
    train_logits: Tensor,
    k: int,
    test_norm: bool = True,
    chunk: int = 4096,
) -> Tensor:
    """CSI's score of one test-time sample under rotation ``k`` (higher = more anomalous).

    Args:
        test_proj: ``[M, p]`` projections of the M test images; ``test_logits``: ``[M, R]``.
        train_proj: ``[n, p]`` projections of the n training images; ``train_logits``: ``[n, R]``.

    Returns:
        ``[M]``: ``-(max_j sim(x, x_j) / mean_j ||z(x_j)|| + l(x)[k] / mean_j l(x_j)[k])`` with
        ``sim = <z(x), z(x_j)/||z(x_j)||>`` (``cos`` if not ``test_norm``).
    """
    tr, te = train_proj.double(), test_proj.double()
    axis = F.normalize(tr, dim=1)
    q = te if test_norm else F.normalize(te, dim=1)
    sim = torch.cat([(q[i : i + chunk] @ axis.T).max(1).values for i in range(0, len(q), chunk)])
    weight_sim = 1.0 / _signed_floor(tr.norm(dim=1).mean())
    weight_rot = 1.0 / _signed_floor(train_logits[:, k].double().mean())
    return -(sim * weight_sim + test_logits[:, k].double() * weight_rot)


def csi_scores(
    test_proj: Tensor,
    test_logits: Tensor,
    train_proj: Tensor,
    train_logits: Tensor,
    test_norm: bool = True,
    chunk: int = 4096,
) -> Tensor:
    """CSI anomaly score from projections and rotation logits under T samples and R rotations.

    Args:
        test_proj: ``[T, R, M, p]`` projections of the M test images, sample t, rotation k.
        test_logits: ``[T, R, M, R]`` rotation logits of the same.
        train_proj: ``[T, R, n, p]`` projections of the n training images.
        train_logits: ``[T, R, n, R]`` rotation logits of the training images.
        test_norm: multiply the max cosine by ``||z(x)||`` (CSI's s_con); False: plain cosine.
        chunk: test rows per block of the similarity search (bounds memory).

    Returns:
        ``[M]``: the mean over (t, k) of :func:`csi_view_scores`: higher = more anomalous.
    """
    t_, r_, m, _ = test_proj.shape
    if train_proj.shape[:2] != (t_, r_) or test_logits.shape != (t_, r_, m, r_) or train_logits.shape[:2] != (t_, r_):
        raise ValueError(
            f"shapes do not match [T, R, ., .]: test {tuple(test_proj.shape)} / {tuple(test_logits.shape)}, "
            f"train {tuple(train_proj.shape)} / {tuple(train_logits.shape)}"
        )
    total = torch.zeros(m, dtype=torch.float64, device=test_proj.device)
    for t in range(t_):
        for k in range(r_):
            total += csi_view_scores(
                test_proj[t, k], test_logits[t, k], train_proj[t, k], train_logits[t, k], k, test_norm, chunk
            )
    return (total / (t_ * r_)).float()


class _ProjectionAndRotation(nn.Module):
    """Encoder outputs ``[B, d]`` -> ``[B, p + R]``: projections, then rotation logits."""

    def __init__(self, head: nn.Module, rotation_head: nn.Module) -> None:
        super().__init__()
        self.head, self.rotation_head = head, rotation_head

    def forward(self, h: Tensor) -> Tensor:
        return torch.cat([self.head(h), self.rotation_head(h)], dim=1)


def rotation_context(k: int, hflip: bool) -> Callable[[Tensor], Tensor]:
    """The pixel transform of sample views: optional left-right mirror, then a rotation by k * 90 degrees."""

    def transform(x: Tensor) -> Tensor:
        return torch.rot90(x.flip(-1) if hflip else x, k, dims=(-2, -1))

    return transform


class CSI(Method):
    """CSI: rotations as shifted instances in NT-Xent, a rotation head, and the CSI score."""

    name = SPEC.name
    Params = CSIParams
    score_names = SPEC.score_names

    def __init__(self, cfg: MethodSettings, params: CSIParams) -> None:
        super().__init__(cfg, params)
        d = encoder_dim(self.encoder)
        self.head = projection_head(d, d, params.head_dim)
        self.rotation_head = nn.Linear(d, N_ROTATIONS)
        # The random flip happens before the rotation (see the module docstring); the views never flip.
        self.views = ViewAugment(cfg.image_size, replace(self.view_params, hflip_p=0.0))

    @property
    def n_samples(self) -> int:
        """Test-time samples per rotation (0: the identity view only)."""
        s = self.params.samples
        return math.ceil(self.cfg.tta / N_ROTATIONS) if s == -1 else s

    def training_loss(self, images: Tensor, progress: float) -> dict[str, Tensor]:
        """uint8 ``[N, C, H, W]`` -> NT-Xent over 8N projections + weighted rotation cross-entropy."""
        if images.shape[-1] != images.shape[-2]:
            raise ConfigError(f"CSI rotates images and needs square inputs, got {tuple(images.shape[-2:])}")
        n = len(images)
        rotated = rotate_all(random_hflip(images, self.view_params.hflip_p))  # [4N, C, H, W]
        h = self.encoder(torch.cat([self.augment(rotated), self.augment(rotated)]))  # [8N, d]
        z = self.head(h)
        out = {"contrastive": nt_xent(z[: N_ROTATIONS * n], z[N_ROTATIONS * n :], self.params.temperature)}
        logits = self.rotation_head(h).float()
        out["rotation"] = F.cross_entropy(logits, rotation_labels(n, 2, N_ROTATIONS, h.device))
        out["loss"] = out["contrastive"] + self.params.rotation_weight * out["rotation"]
        return out

    # --- scoring: every sample view in every rotation, its flip before the rotation ---------------

    def test_contexts(self) -> list[ContextFn]:
        return [rotation_context(k, False) for k in range(N_ROTATIONS)]

    def test_views(self) -> list[TestView]:
        views = [v for v, _ in tta_draw(self.n_samples, 1, self.cfg.tta_seed, self.view_params)]
        return [
            TestView(replace(v, hflip=False), k, rotation_context(k, v.hflip))
            for v in views
            for k in range(N_ROTATIONS)
        ]

    def feature_spaces(self) -> Mapping[str, nn.Module | None]:
        return {"encoder": None, "csi": _ProjectionAndRotation(self.head, self.rotation_head)}

    def scoring(self) -> ScoringSpec:
        test_norm, chunk = self.params.test_norm, self.cfg.nn_chunk

        def score(te: Tensor, tr: Tensor, k: int) -> Tensor:
            r = N_ROTATIONS
            return csi_view_scores(te[:, :-r], te[:, -r:], tr[:, :-r], tr[:, -r:], k, test_norm, chunk)

        reading = Reading("csi", "matched")
        return ScoringSpec({"csi": Scorer(score)}, (reading,), reading)

    def diagnostics(self, identity_features: Mapping[tuple[str, int], Mapping[str, Tensor]]) -> dict[str, float]:
        """Rotation accuracy of the rotation head on the identity views of the training images."""
        correct = total = 0
        for k in range(N_ROTATIONS):
            logits = identity_features["train", k]["csi"][:, -N_ROTATIONS:]
            correct += int((logits.argmax(1) == k).sum())
            total += len(logits)
        return {"train_rotation_accuracy": correct / total}
