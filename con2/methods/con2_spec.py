"""CON2's card (torch-free): its parameters, their constraints, labels and tags.

The implementation is :mod:`con2.methods.con2_method`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from con2.errors import ConfigError
from con2.methods.spec import MethodSettings, MethodSpec

LOSSES = ("full", "context_only", "content_only")
ALPHA_SCHEDULES = ("step", "epoch", "constant")
FEATURES = ("encoder", "content", "context")  # feature spaces a reading may score
REFERENCES = ("matched", "original")  # the training set x^C views are compared with
CONTEXT_ORDERS = ("before_views", "after_views")  # t_C on the raw pixels, or on each (uint8-quantised) view
ENCODER_PASSES = ("joint", "per_context")  # one encoder pass over every context, or one per context
CONTEXT_NAMES = ("invert", "flip", "equalize")  # con2.transforms.augment.BASE_CONTEXTS (a test keeps them equal)
BEST = "best"  # contexts: [best]: CON2 (Best), the context chosen per normal class (con2.methods.contexts)
MAX_CONTEXTS = 8  # the identity, invert, flip, equalize and their 4 compositions


@dataclass
class Con2Params:
    """CON2's hyperparameters. The paper gives neither temperature nor the alpha granularity."""

    contexts: tuple[str, ...] = ("invert",)  # context transforms after the identity; k = len + 1
    n_contexts: int = 0  # > 0: use the k-context ablation's first k contexts instead of `contexts`
    temperature: float = 0.5  # both terms, unless context_/content_temperature is set
    context_temperature: float | None = None  # tau of L_Context (None: `temperature`)
    content_temperature: float | None = None  # tau of L_Content (None: `temperature`)
    loss: str = "full"  # full | context_only | content_only
    context_weight: float = 1.0  # w in L = w L_Context + alpha L_Content (1 as printed)
    alpha_start: float = 0.0
    alpha_end: float = 1.0
    alpha_schedule: str = "step"  # step | epoch | constant (held at alpha_end)
    head_dim: int = 128
    context_order: str = (
        "before_views"  # before_views: x^C = t_C(x), then views | after_views: x^C views = t_C(x views)
    )
    encoder_passes: str = (
        "joint"  # joint: BatchNorm sees both contexts at once | per_context: its statistics per context
    )
    score_features: str = "encoder"  # headline reading: encoder (the paper's f) | content | context
    score_reference: str = "matched"  # headline reading: matched | original (x^C vs the training set as printed)
    best_seed: int = 0  # contexts: [best]: seed of the measurement that chooses the context (con2.methods.contexts)


def n_contexts(params: Con2Params) -> int:
    """k: the number of contexts including the identity."""
    return params.n_contexts or len(params.contexts) + 1


def check(params: Con2Params, cfg: MethodSettings) -> None:
    """Constraints of CON2's params and of the run's ``tta`` against the number of contexts."""
    choices = (
        ("loss", LOSSES),
        ("alpha_schedule", ALPHA_SCHEDULES),
        ("context_order", CONTEXT_ORDERS),
        ("encoder_passes", ENCODER_PASSES),
        ("score_features", FEATURES),
        ("score_reference", REFERENCES),
    )
    for key, allowed in choices:
        if getattr(params, key) not in allowed:
            raise ConfigError(f"params.{key} must be one of {allowed}, got {getattr(params, key)!r}")
    for key in ("temperature", "context_temperature", "content_temperature"):
        value = getattr(params, key)
        if value is not None and value <= 0:
            raise ConfigError(f"params.{key} must be > 0, got {value}")
    if params.context_weight < 0:
        raise ConfigError(f"params.context_weight must be >= 0, got {params.context_weight}")
    if params.n_contexts and not 2 <= params.n_contexts <= MAX_CONTEXTS:
        raise ConfigError(f"params.n_contexts: number of contexts k={params.n_contexts} must lie in 2..{MAX_CONTEXTS}")
    if not params.n_contexts and not params.contexts:
        raise ConfigError("params.contexts must name at least one context transform, e.g. [invert]")
    if BEST in params.contexts and (len(params.contexts) != 1 or params.n_contexts):
        raise ConfigError(
            f"params.contexts: {BEST!r} (CON2 (Best): one context chosen per normal class) stands alone; "
            f"got contexts={list(params.contexts)}, n_contexts={params.n_contexts}: "
            "use contexts: [best] and no n_contexts"
        )
    for name in params.contexts:
        if name == BEST:
            continue
        if not name or any(part not in CONTEXT_NAMES for part in name.split("+")):
            raise ConfigError(
                f"unknown context {name!r}: use one of {sorted(CONTEXT_NAMES)} or a '+'-joined composition "
                "like 'invert+flip'"
            )
    k = n_contexts(params)
    if cfg.tta % k:
        raise ConfigError(
            f"config key 'tta': {cfg.tta} test-time views cannot be split evenly over {k} contexts; "
            f"use a multiple of {k}"
        )


def tags(params: Con2Params) -> dict[str, Any]:
    """What the report groups CON2 runs by: the contexts label, k and the loss."""
    if params.n_contexts:
        label = f"k{params.n_contexts}"
    else:
        label = ",".join(params.contexts)
    return {"contexts": label, "n_contexts": n_contexts(params), "loss": params.loss}


SPEC = MethodSpec(
    name="con2",
    Params=Con2Params,
    implementation="con2.methods.con2_method:Con2",
    score_names=("nnd", "lh"),
    description="CON2: context contrasting + content alignment; scores S_NND and S_LH with TTA",
    label="CON2",
    score_labels={"nnd": "NND", "lh": "LH"},
    paper_rows={"nnd": ("CON2", "NND"), "lh": ("CON2", "LH")},
    compute_name="CON2",
    test_params={"temperature": 0.5},
    check=check,
    tags=tags,
    views_per_image=lambda params: 2 * n_contexts(params),  # two augmented views in each of the k contexts
)
