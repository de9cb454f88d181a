"""SimCLR + kNN (Sun et al. 2022) and SSD (Sehwag et al. 2021): one representation, two scores.

Training: SimCLR's NT-Xent (temperature ``params.temperature``, 0.5 as in SimCLR) over two random
views of each of the N normal images, one encoder pass of the 2N views, one projection head.

Scores, both on encoder outputs g(x) (never on the projections), higher = more anomalous:

* ``knn`` (SimCLR + kNN): distance of the L2-normalised feature to the ``params.k``-th nearest
  L2-normalised training feature, averaged over the run's fixed test-time views (``cfg.tta`` views
  drawn from ``cfg.tta_seed``, the same views CON2 draws; all of them act on x, since SimCLR has no
  context; ``tta = 0``: the identity view only).
* ``ssd`` (SSD): Mahalanobis distance of the identity-view feature after L2 normalisation and
  per-dimension standardisation with the training mean/std, with the pseudo-inverse of the
  training covariance; with ``params.ssd_clusters > 1`` the minimum over k-means clusters.

SSD reuses SimCLR's trained encoder, as in the paper: the tables show SimCLR = ``simclr/knn`` and
SSD = ``simclr/ssd``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from con2.config import RunConfig
from con2.errors import ConfigError
from con2.evaluation import Scorer, ScoringSpec
from con2.losses import nt_xent
from con2.methods.base import Method
from con2.methods.registry import register
from con2.models import projection_head
from con2.scores import knn_scores, mahalanobis_scores


@dataclass
class SimCLRParams:
    """SimCLR/SSD hyperparameters; defaults are the papers'."""

    temperature: float = 0.5  # NT-Xent tau (SimCLR's 0.5)
    head_dim: int = 128  # projection size: Linear(d, d) - ReLU - Linear(d, head_dim)
    k: int = 1  # kNN score: distance to the k-th nearest training feature (Sun et al.: 1 or 50)
    ssd_clusters: int = 1  # SSD: k-means clusters of the training features (score = min over them)


@register
class SimCLR(Method):
    """SimCLR trained on normal data, scored by deep kNN (``knn``) and by SSD (``ssd``)."""

    name = "simclr"
    Params = SimCLRParams
    test_params = {"k": 2, "ssd_clusters": 2}
    score_names = ("knn", "ssd")
    description = "SimCLR (NT-Xent, 2 views); scores: knn = SimCLR+kNN with TTA, ssd = SSD Mahalanobis"

    def __init__(self, cfg: RunConfig, params: SimCLRParams) -> None:
        super().__init__(cfg, params)
        if params.temperature <= 0:
            raise ConfigError(f"params.temperature must be > 0, got {params.temperature}")
        if params.k < 1:
            raise ConfigError(f"params.k must be >= 1, got {params.k}")
        if params.ssd_clusters < 1:
            raise ConfigError(f"params.ssd_clusters must be >= 1, got {params.ssd_clusters}")
        d = self.encoder.out_dim
        self.head = projection_head(d, d, params.head_dim)

    def training_loss(self, images: Tensor, progress: float) -> dict[str, Tensor]:
        """uint8 ``[N, C, H, W]`` -> NT-Xent over the ``2N`` projections of two random views."""
        n = len(images)
        z = self.head(self.encoder(torch.cat([self.augment(images), self.augment(images)])))  # [2N, p]
        loss = nt_xent(z[:n], z[n:], self.params.temperature)
        return {"loss": loss}

    def scoring(self) -> ScoringSpec:
        p, chunk, seed = self.params, self.cfg.nn_chunk, self.cfg.seed
        return ScoringSpec({
            "knn": Scorer(lambda te, tr, c: knn_scores(te, tr, p.k, chunk)),
            "ssd": Scorer(lambda te, tr, c: mahalanobis_scores(te, tr, p.ssd_clusters, seed=seed), tta=False),
        })  # fmt: skip
