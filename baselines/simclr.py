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

import torch
from torch import Tensor

from baselines.simclr_spec import SPEC, SimCLRParams
from con2.maths.losses import nt_xent
from con2.maths.scores import knn_scores, mahalanobis_scores
from con2.methods.base import Method
from con2.methods.scoring import Scorer, ScoringSpec
from con2.methods.spec import MethodSettings
from con2.training.models import encoder_dim, projection_head


class SimCLR(Method):
    """SimCLR trained on normal data, scored by deep kNN (``knn``) and by SSD (``ssd``)."""

    name = SPEC.name
    Params = SimCLRParams
    score_names = SPEC.score_names

    def __init__(self, cfg: MethodSettings, params: SimCLRParams) -> None:
        super().__init__(cfg, params)
        d = encoder_dim(self.encoder)
        self.head = projection_head(d, d, params.head_dim)

    def training_loss(self, images: Tensor, progress: float) -> dict[str, Tensor]:
        """uint8 ``[N, C, H, W]`` -> NT-Xent over the ``2N`` projections of two random views."""
        n = len(images)
        z = self.head(self.encoder(torch.cat([self.augment(images), self.augment(images)])))  # [2N, p]
        loss = nt_xent(z[:n], z[n:], self.params.temperature)
        return {"loss": loss}

    def scoring(self) -> ScoringSpec:
        p, chunk, seed = self.params, self.cfg.nn_chunk, self.cfg.seed
        return ScoringSpec(
            {
                "knn": Scorer(lambda te, tr, c: knn_scores(te, tr, p.k, chunk)),
                "ssd": Scorer(lambda te, tr, c: mahalanobis_scores(te, tr, p.ssd_clusters, seed=seed), tta=False),
            }
        )
