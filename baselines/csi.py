"""CSI: contrasting shifted instances (Tack et al., NeurIPS 2020), in the CON2 harness.

Training batch: N normal images, two copies of each, flipped horizontally at random (p = the views'
``hflip_p``) and then rotated by 0/90/180/270 degrees on their uint8 pixels -> 2 x 4N images, view
major, then rotation (row ``k N + i`` of a view is image i rotated by k * 90 degrees), each given a
random view, one encoder pass. ``params.flip`` says how the copies are flipped: ``shared`` (the
default), one flip per image shared by both copies; ``independent``, each copy on its own, as
CSI's code does (``training/unsup/simclr_CSI.py`` line 45 flips ``images.repeat(2, 1, 1, 1)``,
then chunks it in two). Either way the flip comes *before* the rotation and the views after it
never flip: a flip after a rotation would turn a 90 degree rotation into a 270 degree one and
confuse the rotation labels. ``params.augment`` says which views: ``harness``, the run's views
(:class:`~con2.transforms.views.ViewAugment`, each copy its own call); ``csi``, CSI's own layers
(:mod:`con2.transforms.csi_augment`: jitter, grey, crop scale (0.08, 1)) over the whole 8N batch.

* NT-Xent (tau ``params.temperature`` = 0.5) over the 8N projections: the two views of one rotated
  image are positives; every other image, including the other rotations of the same image, is a
  negative ("shifted instances").
* A 4-way linear rotation head on the encoder outputs, cross-entropy weighted by
  ``params.rotation_weight`` (1).

Score (CSI's s_con-SI with its ensemble over test-time samples): for each rotation k,

    s_k(x) = max_j <z_k(x), z_k(x_j) / ||z_k(x_j)||> / mean_j ||z_k(x_j)||
             + l_k(x)[k] / mean_j l_k(x_j)[k],

with z the 128-d projections, l the rotation logits and x_j the training images; the score is
``-mean_k s_k(x)`` (CSI's score is higher for normal images). ``<z, z_j/||z_j||>`` is CSI's
``max cos * ||z(x)||``; ``params.test_norm = False`` drops the test norm (plain max cosine). The
number of samples is ``params.samples``; the default -1 takes ceil(A / 4) for the run's A = ``tta``
test-time views, so 10 samples x 4 rotations = 40 at the paper's A = 40, and 0 scores the
identity view only. ``params.evaluation`` says what a sample is:

* ``views`` (the default): z and l of one of the run's fixed views (the first ``samples`` of
  them, same seed, i.e. views shared with the other methods; its flip again before the
  rotation), the same for training and test images; ``s_k`` is computed per sample and the scores
  averaged over the samples and rotations.
* ``csi``: CSI's ``evals/ood_pre.py``: per image and sample a horizontal flip (p ``hflip_p``,
  shared by the image's 4 rotations: line 189), the rotation, then CSI's augmentation with the
  crop area fixed at 0.54 of the image (README line 91: ``--resize_factor 0.54 --resize_fix``;
  jitter and grey drawn per image and rotation); z and l are averaged over an image's samples per
  rotation *before* scoring (lines 116-121 for test images; lines 44-59 for the training axis
  ``normalize(mean z)`` and the weights ``1 / mean ||mean z||``, ``1 / mean (mean l)[k]``). The
  draws of image i come from generators seeded by the run's ``tta_seed`` and i (the flip's by
  them alone, the rest also by the rotation; the jitter's group order by the sample, as CSI's
  per-batch reseeding gives), so training image i and test image i get the same views, whatever
  the batch. One ``csi`` reading of the shared loop (:mod:`con2.methods.scoring`) with CSI's views
  (``ScoringSpec.image_views``).

The record's ``metrics.test_views`` is the number of test views behind the ``csi`` column
(samples x 4 rotations, 4 for the identity view) and ``metrics.test_views_averaged`` what was
averaged over them: ``scores`` (``views``) or ``features`` (``csi``).
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
from con2.methods.scoring import MethodScores, Reading, Scorer, ScoringSpec, TestView, tta_draw
from con2.methods.spec import MethodSettings
from con2.training.engine import derived_seed
from con2.training.models import encoder_dim, projection_head
from con2.transforms.augment import ViewAugment, normalize, to_float
from con2.transforms.csi_augment import (
    CSI_TEST_VIEWS,
    CSI_TRAIN_VIEWS,
    N_CSI_UNIFORMS,
    CSIAugment,
    CSIAugmentParams,
    CSIImageViews,
    csi_views_from_uniform,
    identity_csi_views,
)

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


_FLIP_TAG, _VIEW_TAG, _ORDER_TAG = 0xC5F, 0xC5A, 0xC50  # the seeds of CSI's test-time draws (derived_seed)


def csi_test_views(
    n_images: int,
    samples: int,
    height: int,
    width: int,
    seed: int,
    rotation: int,
    hflip_p: float = 0.5,
    params: CSIAugmentParams = CSI_TEST_VIEWS,
) -> list[CSIImageViews]:
    """CSI's test-time views of images ``0..n_images-1`` under one rotation: one per sample (``ood_pre.py``).

    Image i's flip of each sample from a generator seeded by ``(seed, i)`` (shared by its rotations), the rest
    of its views from one seeded by ``(seed, rotation, i)``, the jitter's group order of sample s from one seeded
    by ``(seed, s)`` (one for every image, as CSI reseeds every batch with the sample's number).
    ``samples = 0``: one identity view (no flip, no jitter, no grey, the whole image).
    """
    if samples == 0:
        return [CSIImageViews(torch.zeros(n_images, dtype=torch.bool), identity_csi_views(n_images, height, width))]
    flip_u = torch.empty(n_images, samples)
    u = torch.empty(n_images, samples, N_CSI_UNIFORMS)
    for i in range(n_images):
        flip_u[i] = torch.rand(samples, generator=torch.Generator().manual_seed(derived_seed(seed, _FLIP_TAG, i)))
        g = torch.Generator().manual_seed(derived_seed(seed, _VIEW_TAG, rotation, i))
        u[i] = torch.rand(samples, N_CSI_UNIFORMS, generator=g)
    orders = [
        bool(torch.rand((), generator=torch.Generator().manual_seed(derived_seed(seed, _ORDER_TAG, s))) < 0.5)
        for s in range(samples)
    ]
    return [
        CSIImageViews(flip_u[:, s] < hflip_p, csi_views_from_uniform(u[:, s], height, width, params, orders[s]))
        for s in range(samples)
    ]


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
        self.csi_views = CSIAugment(cfg.image_size, CSI_TRAIN_VIEWS)

    @property
    def n_samples(self) -> int:
        """Test-time samples per rotation (0: the identity view only)."""
        s = self.params.samples
        return math.ceil(self.cfg.tta / N_ROTATIONS) if s == -1 else s

    @property
    def test_view_count(self) -> int:
        """Test views behind the ``csi`` column: samples x rotations (the identity view in each rotation for 0)."""
        return max(self.n_samples, 1) * N_ROTATIONS

    @property
    def averaged(self) -> str:
        """What the ``csi`` column averages over its test views: ``scores`` (``views``) or ``features`` (``csi``)."""
        return "features" if self.params.evaluation == "csi" else "scores"

    def two_copies(self, images: Tensor) -> tuple[Tensor, Tensor]:
        """uint8 ``[N, C, H, W]`` -> two flipped and rotated copies ``[4N, C, H, W]`` each (``params.flip``)."""
        p = self.view_params.hflip_p
        if self.params.flip == "independent":  # CSI: hflip(images.repeat(2, 1, 1, 1)).chunk(2)
            return rotate_all(random_hflip(images, p)), rotate_all(random_hflip(images, p))
        rotated = rotate_all(random_hflip(images, p))
        return rotated, rotated

    def augment_pair(self, first: Tensor, second: Tensor) -> Tensor:
        """Two uint8 batches ``[B, C, H, W]`` -> their random views ``[2B, 3, S, S]``, normalised (``params.augment``:
        the run's views per batch, or CSI's layers over both at once, one jitter order, as CSI's ``simclr_aug``)."""
        if self.params.augment == "harness":
            return torch.cat([self.augment(first), self.augment(second)])
        x = normalize(self.csi_views(to_float(torch.cat([first, second]))))
        return x.contiguous(memory_format=torch.channels_last) if self.cfg.channels_last else x

    def training_loss(self, images: Tensor, progress: float) -> dict[str, Tensor]:
        """uint8 ``[N, C, H, W]`` -> NT-Xent over 8N projections + weighted rotation cross-entropy."""
        if images.shape[-1] != images.shape[-2]:
            raise ConfigError(f"CSI rotates images and needs square inputs, got {tuple(images.shape[-2:])}")
        n = len(images)
        h = self.encoder(self.augment_pair(*self.two_copies(images)))  # [8N, d]
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
        """The fixed views x rotations of ``evaluation: views``; none for ``csi`` (its views are per image)."""
        if self.params.evaluation == "csi":
            return []
        views = [v for v, _ in tta_draw(self.n_samples, 1, self.cfg.tta_seed, self.view_params)]
        return [
            TestView(replace(v, hflip=False), k, rotation_context(k, v.hflip))
            for v in views
            for k in range(N_ROTATIONS)
        ]

    def encoded_views(self) -> int:
        """``evaluation: csi``: samples x 4 rotations drawn per image (:meth:`test_views` has none); else the fixed
        views x rotations."""
        return self.test_view_count if self.params.evaluation == "csi" else len(self.test_views())

    def feature_spaces(self) -> Mapping[str, nn.Module | None]:
        return {"encoder": None, "csi": _ProjectionAndRotation(self.head, self.rotation_head)}

    def scoring(self) -> ScoringSpec:
        test_norm, chunk = self.params.test_norm, self.cfg.nn_chunk

        def score(te: Tensor, tr: Tensor, k: int) -> Tensor:
            r = N_ROTATIONS
            return csi_view_scores(te[:, :-r], te[:, -r:], tr[:, :-r], tr[:, -r:], k, test_norm, chunk)

        if self.params.evaluation == "views":
            reading = Reading("csi", "matched")
            return ScoringSpec({"csi": Scorer(score)}, (reading,), reading)
        samples, seed, hflip_p = self.n_samples, self.cfg.tta_seed, self.view_params.hflip_p

        def draw(n_images: int, height: int, width: int, k: int) -> list[CSIImageViews]:
            return csi_test_views(n_images, samples, height, width, seed, k, hflip_p)

        reading = Reading("csi", "matched", "csi")  # features averaged over an image's samples, then scored
        return ScoringSpec({"csi": Scorer(score)}, (reading,), reading, image_views=draw)

    def diagnostics(self, identity_features: Mapping[tuple[str, int], Mapping[str, Tensor]]) -> dict[str, float]:
        """Rotation accuracy of the rotation head on the identity views of the training images, and the number of
        test views behind the ``csi`` column (:attr:`test_view_count`)."""
        correct = total = 0
        for k in range(N_ROTATIONS):
            logits = identity_features["train", k]["csi"][:, -N_ROTATIONS:]
            correct += int((logits.argmax(1) == k).sum())
            total += len(logits)
        return {"train_rotation_accuracy": correct / total, "test_views": self.test_view_count}

    def score(
        self, train: Tensor, test: Tensor, device: torch.device, validation: Tensor | None = None
    ) -> MethodScores:
        """The shared loop's scores; the record also says what the ``csi`` column averaged (``test_views_averaged``)."""
        out = super().score(train, test, device, validation)
        out.extras["test_views_averaged"] = self.averaged
        return out
