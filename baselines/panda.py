"""PANDA (Reiss et al., CVPR 2021): ImageNet-pretrained features adapted to the normal data.

"PANDA: Adapting Pretrained Features for Anomaly Detection and Segmentation", following its code
(github.com/talreiss/PANDA, ``panda.py``, ``losses.py``, ``utils.py``):

* Backbone: a torchvision ResNet (``params.backbone``, PANDA's default ResNet152) with its
  ImageNet weights from a local file (``params.weights``, checked by :mod:`con2.weights`; never
  downloaded), the classifier removed: features are the 2048-d (512-d for ResNet18) pooled
  outputs. Inputs are normalised with ImageNet's mean and std (the harness's views arrive
  normalised to mean = std = 0.5 and are mapped back). The stem, layer1 and layer2 are frozen,
  as PANDA's ``freeze_parameters``; BatchNorm keeps the ImageNet running statistics while
  fine-tuning (``params.batchnorm="frozen"``: PANDA's code trains in ``eval()`` mode).
* Centre: the mean of the *pretrained* features of all training images (identity view), computed
  once before the first optimiser step and kept in the checkpoint.
* Loss (:func:`compactness_loss`): ``mean_b ||f(x_b) - c||^2 / d``, on un-augmented training
  images (``params.augment=False``, as PANDA). Variant ``early``: this loss alone, for the run's
  (few) epochs; PANDA's code trains 15 epochs (50 with EWC). Variant ``ewc``: plus
  :func:`ewc_penalty`, ``lambda/2 sum_i F_i (theta_i - theta*_i)^2`` over the backbone's
  parameters, with ``theta*`` the ImageNet weights and ``F`` the Fisher-information diagonal
  from a file (``params.fisher``; PANDA publishes the one of its ResNet152), ``lambda = 1e4``.
* Score (:func:`knn_sq_scores`): the sum of squared Euclidean distances of the un-normalised
  feature to its ``k = 2`` nearest training features (PANDA's faiss ``IndexFlatL2``), on one
  identity view (``params.tta=False``; True averages over the run's test-time views).

Not as PANDA: the harness's optimiser (AdamW with the run's lr, weight decay and cosine
schedule) instead of SGD (lr 1e-2, momentum 0.9, weight decay 5e-5) with gradient-norm clipping
at 1e-3, and its batch size 32 and 224 px inputs (resize 256, centre crop 224) only where the
run config sets them (``batch_size``, ``image_size``, ``center_crop``).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torchvision
from torch import Tensor, nn

from baselines.panda_spec import SPEC, PandaParams
from con2 import weights
from con2.methods.base import Method
from con2.methods.features import features
from con2.methods.scoring import Scorer, ScoringSpec, TestView, identity
from con2.methods.spec import MethodSettings
from con2.transforms.augment import IDENTITY_VIEW, normalize, to_float

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
FROZEN = ("conv1", "bn1", "layer1", "layer2")  # PANDA's freeze_parameters


def compactness_loss(features: Tensor, centre: Tensor) -> Tensor:
    """PANDA's CompactnessLoss: ``mean_b ||f_b - c||^2 / d`` for ``features [B, d]`` and ``centre [d]``."""
    return ((features.float() - centre).pow(2).sum(1) / features.shape[1]).mean()


def ewc_penalty(
    params: Mapping[str, Tensor], anchors: Mapping[str, Tensor], fisher: Mapping[str, Tensor], lam: float
) -> Tensor:
    """PANDA's EWCLoss: ``lam * sum_name sum(F * (theta* - theta)^2) / 2`` over the names of ``anchors``."""
    total = sum((fisher[k] * (anchors[k] - params[k]).pow(2)).sum() / 2 for k in anchors)
    return lam * total  # type: ignore[return-value]


def knn_sq_scores(test: Tensor, train: Tensor, k: int = 2, chunk: int = 4096) -> Tensor:
    """Sum of squared Euclidean distances to the ``k`` nearest training rows.

    ``test [M, d]``, ``train [n, d]`` -> ``[M]``.
    """
    tr, te = train.double(), test.double()
    k = min(k, len(tr))
    tr_sq = tr.pow(2).sum(1)
    out = []
    for i in range(0, len(te), chunk):
        q = te[i : i + chunk]
        best = torch.full((len(q), k), float("inf"), dtype=torch.float64, device=q.device)
        for j in range(0, len(tr), chunk):
            d = (q.pow(2).sum(1, keepdim=True) + tr_sq[None, j : j + chunk] - 2 * q @ tr[j : j + chunk].T).clamp_min(0)
            best = torch.cat([best, d], dim=1).topk(k, dim=1, largest=False).values
        out.append(best.sum(1))
    return torch.cat(out).float()


class PretrainedEncoder(nn.Module):
    """Harness inputs (normalised to mean = std = 0.5) -> ImageNet normalisation -> backbone -> ``[B, d]``.

    With ``frozen_bn`` the backbone's BatchNorm layers stay in eval mode even when training.
    """

    mean: Tensor  # buffers [1, 3, 1, 1]
    std: Tensor

    def __init__(self, backbone: nn.Module, out_dim: int, frozen_bn: bool) -> None:
        super().__init__()
        self.backbone = backbone
        self.out_dim = out_dim
        self.frozen_bn = frozen_bn
        mean, std = torch.tensor(IMAGENET_MEAN), torch.tensor(IMAGENET_STD)
        self.register_buffer("mean", mean.view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", std.view(1, 3, 1, 1), persistent=False)

    def train(self, mode: bool = True) -> PretrainedEncoder:
        super().train(mode)
        if self.frozen_bn:
            for m in self.backbone.modules():
                if isinstance(m, nn.modules.batchnorm._BatchNorm):
                    m.eval()
        return self

    def forward(self, x: Tensor) -> Tensor:
        return self.backbone(((x * 0.5 + 0.5) - self.mean) / self.std)


class Panda(Method):
    """PANDA: compactness fine-tuning of ImageNet features (early stopping or EWC), kNN score."""

    name = SPEC.name
    Params = PandaParams
    score_names = SPEC.score_names
    encoder: PretrainedEncoder  # replaces the base class's encoder in __init__
    centre: Tensor  # buffers: the centre [d] and whether it is computed yet
    centre_ready: Tensor

    def __init__(self, cfg: MethodSettings, params: PandaParams) -> None:
        super().__init__(cfg, params)
        files = SPEC.resolve_weights(params)
        backbone = getattr(torchvision.models, params.backbone)(weights=None)
        backbone.load_state_dict(weights.load_checked(files["weights"], weights.expected_shapes(backbone)))
        d = backbone.fc.in_features
        backbone.fc = nn.Identity()
        for name in FROZEN:
            for p in getattr(backbone, name).parameters():
                p.requires_grad_(False)
        self.encoder = PretrainedEncoder(backbone, d, params.batchnorm == "frozen")
        self.register_buffer("centre", torch.zeros(d))
        self.register_buffer("centre_ready", torch.zeros((), dtype=torch.bool))
        self.train_images: Tensor | None = None  # the whole normal training set, from prepare()
        self.anchors: dict[str, Tensor] = {}
        self.fisher: dict[str, Tensor] = {}
        if params.variant == "ewc":
            fresh = getattr(torchvision.models, params.backbone)(weights=None)
            fisher = weights.load_checked(files["fisher"], weights.expected_shapes(fresh, "parameters"))
            self.anchors = {
                k: v.detach().clone() for k, v in backbone.named_parameters()
            }  # theta*: the ImageNet weights
            self.fisher = {k: fisher[k].float() for k in self.anchors}  # PANDA skips the classifier ('fc')

    def prepare(self, train: Tensor) -> None:
        """Keep the normal training set: the centre is their mean pretrained feature."""
        self.train_images = train

    def input_views(self, images: Tensor) -> Tensor:
        """uint8 ``[N, C, H, W]`` -> normalised training inputs: un-augmented (PANDA) or the run's random views."""
        if self.params.augment:
            return self.augment(images)
        x = normalize(IDENTITY_VIEW(to_float(images), self.cfg.image_size))
        return x.contiguous(memory_format=torch.channels_last) if self.cfg.channels_last else x

    @torch.no_grad()
    def pretrained_centre(self, device: torch.device) -> Tensor:
        """The mean pretrained feature of every training image (identity view): PANDA's centre ``[d]``."""
        if self.train_images is None:
            raise RuntimeError("PANDA's centre needs the training set: call prepare(train_images) before training")
        feats = features(
            self.encoder,
            self.train_images,
            IDENTITY_VIEW,
            identity,
            self.cfg.image_size,
            device,
            {"f": None},
            self.cfg.eval_batch_size,
            self.cfg.channels_last,
        )["f"]
        return feats.float().mean(0)

    def training_loss(self, images: Tensor, progress: float) -> dict[str, Tensor]:
        """uint8 ``[N, C, H, W]`` -> compactness loss (+ the EWC penalty for ``variant=ewc``)."""
        if not bool(self.centre_ready):  # before the first step; a resumed run reads it from its checkpoint
            self.centre.copy_(self.pretrained_centre(images.device))
            self.centre_ready.fill_(True)
        out = {"compactness": compactness_loss(self.encoder(self.input_views(images)), self.centre)}
        loss = out["compactness"]
        if self.anchors:
            if next(iter(self.anchors.values())).device != images.device:
                self.anchors = {k: v.to(images.device) for k, v in self.anchors.items()}
                self.fisher = {k: v.to(images.device) for k, v in self.fisher.items()}
            current = dict(self.encoder.backbone.named_parameters())
            out["ewc"] = ewc_penalty(current, self.anchors, self.fisher, self.params.ewc_lambda)
            loss = loss + out["ewc"]
        out["loss"] = loss
        return out

    def test_views(self) -> list[TestView]:
        """One identity view (PANDA), or the run's test-time views with ``params.tta``."""
        return super().test_views() if self.params.tta else [TestView(IDENTITY_VIEW, 0)]

    def scoring(self) -> ScoringSpec:
        p, chunk = self.params, self.cfg.nn_chunk
        return ScoringSpec({"knn": Scorer(lambda te, tr, c: knn_sq_scores(te, tr, p.k, chunk))})
