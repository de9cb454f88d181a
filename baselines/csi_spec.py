"""CSI's card (torch-free): parameters, constraints, labels.

The implementation is :mod:`baselines.csi`.
"""

from __future__ import annotations

from dataclasses import dataclass

from con2.errors import ConfigError
from con2.methods.spec import MethodSettings, MethodSpec


@dataclass
class CSIParams:
    """CSI hyperparameters; defaults are CSI's (Tack et al. 2020)."""

    temperature: float = 0.5  # NT-Xent tau
    head_dim: int = 128  # projection size (CSI scores on these 128-d projections)
    rotation_weight: float = 1.0  # weight of the rotation cross-entropy
    samples: int = -1  # test-time samples per rotation; -1: ceil(tta / 4); 0: the identity view only
    test_norm: bool = True  # score term max cos * ||z(x)|| as CSI (False: plain max cosine)
    # The defaults below are the harness's recipe; CSI's code (docs/methods.md, "CSI as its authors train it"):
    flip: str = "shared"  # independent: each of an image's two copies flipped on its own (simclr_CSI.py line 45)
    augment: str = "harness"  # csi: CSI's jitter, grey and crop layers after the rotation (classifier.py 16-31)
    evaluation: str = "views"  # csi: CSI's ood_pre.py: per image `samples` random views, features averaged


FLIPS = ("shared", "independent")
AUGMENTS = ("harness", "csi")
EVALUATIONS = ("views", "csi")


def check(params: CSIParams, cfg: MethodSettings) -> None:
    if params.temperature <= 0:
        raise ConfigError(f"params.temperature must be > 0, got {params.temperature}")
    if params.samples < -1:
        raise ConfigError(f"params.samples must be >= 0, or -1 for ceil(tta / 4), got {params.samples}")
    if params.flip not in FLIPS:
        raise ConfigError(f"params.flip must be one of {', '.join(FLIPS)}, got {params.flip!r}")
    if params.augment not in AUGMENTS:
        raise ConfigError(f"params.augment must be one of {', '.join(AUGMENTS)}, got {params.augment!r}")
    if params.evaluation not in EVALUATIONS:
        raise ConfigError(f"params.evaluation must be one of {', '.join(EVALUATIONS)}, got {params.evaluation!r}")


SPEC = MethodSpec(
    name="csi",
    Params=CSIParams,
    implementation="baselines.csi:CSI",
    score_names=("csi",),
    description="CSI: rotated copies as negatives in NT-Xent + rotation head; CSI score over rotations and samples",
    label="CSI",
    score_labels={"csi": "CSI"},
    paper_rows={"csi": ("CSI", "")},
    compute_name="CSI",
    test_params={"samples": 1},
    check=check,
    scoring_params=("samples", "test_norm", "evaluation"),  # test-time only: `con2 evaluate --set params.samples=0`
    views_per_image=lambda params: 8,  # 4 rotations x 2 augmented views
)
