"""SimCLR + kNN / SSD's card (torch-free): parameters, constraints, labels.

The implementation is :mod:`baselines.simclr`.
"""

from __future__ import annotations

from dataclasses import dataclass

from con2.errors import ConfigError
from con2.methods.spec import MethodSettings, MethodSpec


@dataclass
class SimCLRParams:
    """SimCLR/SSD hyperparameters; defaults are the papers'."""

    temperature: float = 0.5  # NT-Xent tau (SimCLR's 0.5)
    head_dim: int = 128  # projection size: Linear(d, d) - ReLU - Linear(d, head_dim)
    k: int = 1  # kNN score: distance to the k-th nearest training feature (Sun et al.: 1 or 50)
    ssd_clusters: int = 1  # SSD: k-means clusters of the training features (score = min over them)


def check(params: SimCLRParams, cfg: MethodSettings) -> None:
    if params.temperature <= 0:
        raise ConfigError(f"params.temperature must be > 0, got {params.temperature}")
    if params.k < 1:
        raise ConfigError(f"params.k must be >= 1, got {params.k}")
    if params.ssd_clusters < 1:
        raise ConfigError(f"params.ssd_clusters must be >= 1, got {params.ssd_clusters}")


SPEC = MethodSpec(
    name="simclr",
    Params=SimCLRParams,
    implementation="baselines.simclr:SimCLR",
    score_names=("knn", "ssd"),
    description="SimCLR (NT-Xent, 2 views); scores: knn = SimCLR+kNN with TTA, ssd = SSD Mahalanobis",
    label="SimCLR",
    score_labels={"knn": "kNN", "ssd": "SSD"},
    paper_rows={"knn": ("SimCLR", ""), "ssd": ("SSD", "")},
    compute_name="SimCLR/SSD",
    test_params={"k": 2, "ssd_clusters": 2},
    check=check,
    scoring_params=("k", "ssd_clusters"),  # read by the scorers only: `con2 evaluate --set params.k=50` re-scores
    views_per_image=lambda params: 2,  # two augmented views
)
