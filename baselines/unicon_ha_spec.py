"""UniCon-HA's card (torch-free): parameters, constraints, labels.

The implementation, and which equation of the paper each piece implements, is
:mod:`baselines.unicon_ha`.
"""

from __future__ import annotations

from dataclasses import dataclass

from con2.errors import ConfigError
from con2.methods.spec import MethodSettings, MethodSpec

SOFT_FORMS = ("pair", "anchor", "printed")
SOFT_STAGES = ("last", "all", "none")


@dataclass
class UniConHAParams:
    """UniCon-HA hyperparameters (Wang et al., ICCV 2023). Defaults: the paper's where it gives them.

    Given by the paper: temperature tau = 0.5 and tau_w = 0.5 (Sec. 4.1); rotations by 90/180/270
    degrees as the shifting transformation S (1 inlier : 3 virtual outliers per batch); aggregation
    at res2, res3 and res4 (Table 6, row 9, the headline 95.4); soft aggregation only at res4.
    Our choices where the paper is silent (its supplementary material with the augmentation
    strengths is not available to us): ``stage_weights`` lambda_i = 1 for the aggregated stages,
    the ``strengths`` of T_1..T_4, the shape of the extra heads g_1..g_3 (see the module
    docstring), ``soft_form``, ``detach_weights``.
    """

    temperature: float = 0.5  # tau of Eq. 1/6
    weight_temperature: float = 0.5  # tau_w of Eq. 7 (sharpness of the soft weights)
    stage_weights: tuple[float, float, float, float] = (
        0.0,
        1.0,
        1.0,
        1.0,
    )  # lambda_1..4 of Eq. 9; 0: stage not aggregated
    strengths: tuple[float, float, float, float] = (0.25, 0.5, 0.75, 1.0)  # strength of T_1..T_4 (1 = the run's views)
    soft_aggregation: str = "last"  # where Eq. 6 replaces Eq. 1 for inlier anchors: last (res4, the paper) | all | none
    soft_form: str = "pair"  # how Eq. 6's weights enter: pair | anchor | printed (see the module docstring)
    detach_weights: bool = True  # the soft weights w are constants for the gradient (the paper does not say)
    head_dim: int = 128  # projection size of every g_i


def check(params: UniConHAParams, cfg: MethodSettings) -> None:
    for key in ("temperature", "weight_temperature"):
        if getattr(params, key) <= 0:
            raise ConfigError(f"params.{key} must be > 0, got {getattr(params, key)}")
    if any(w < 0 for w in params.stage_weights) or not any(w > 0 for w in params.stage_weights):
        raise ConfigError(
            f"params.stage_weights (lambda_1..lambda_4 of Eq. 9) must be >= 0 with at least one > 0, "
            f"got {list(params.stage_weights)}; the paper's HA at res2-res4 is [0, 1, 1, 1]"
        )
    if not all(0 < s <= 1 for s in params.strengths):
        raise ConfigError(
            f"params.strengths must lie in (0, 1] (1 = the run's view augmentations), got {list(params.strengths)}"
        )
    if params.soft_aggregation not in SOFT_STAGES:
        raise ConfigError(f"params.soft_aggregation must be one of {SOFT_STAGES}, got {params.soft_aggregation!r}")
    if params.soft_form not in SOFT_FORMS:
        raise ConfigError(f"params.soft_form must be one of {SOFT_FORMS}, got {params.soft_form!r}")
    if params.head_dim < 1:
        raise ConfigError(f"params.head_dim must be >= 1, got {params.head_dim}")


def tags(params: UniConHAParams) -> dict[str, object]:
    """What the report may group UniCon-HA runs by: the aggregated stages and the soft aggregation."""
    stages = "-".join(str(i + 1) for i, w in enumerate(params.stage_weights) if w > 0)
    return {"stages": stages, "soft_aggregation": params.soft_aggregation}


def views_per_image(params: UniConHAParams) -> int:
    """Encoder passes per training image: 4 rotations x 2 views, once per aggregated stage (a pass that stops
    at an early stage is priced as a whole one: an upper bound)."""
    return 8 * sum(1 for w in params.stage_weights if w > 0)


SPEC = MethodSpec(
    name="unicon_ha",
    Params=UniConHAParams,
    implementation="baselines.unicon_ha:UniConHA",
    score_names=("unicon",),
    description=(
        "UniCon-HA: inliers aggregated (supervised contrast), rotated virtual outliers dispersed, soft re-weighting, "
        "hierarchical augmentation at res2-res4; score -max cos to the training set with TTA"
    ),
    label="UniCon-HA",
    score_labels={"unicon": "max cos"},
    paper_rows={"unicon": ("UniCon-HA", "")},
    compute_name="UniCon-HA",
    test_params={"head_dim": 16},
    check=check,
    tags=tags,
    views_per_image=views_per_image,
)
