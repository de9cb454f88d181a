"""CON2: context contrasting plus content alignment (Ryser et al., TMLR 2025).

Batch: N images x and their contexts t_c(x) (c = 1..K-1), two random views of each -> 2KN images,
one encoder pass (BatchNorm sees every context), two heads. The objective is

    L = w * L_Context + alpha * L_Content

with ``w = context_weight`` (1 as printed) and alpha annealed linearly from ``alpha_start`` to
``alpha_end`` (0 -> 1 as printed) per optimiser step (``alpha_schedule = "step"``), held for each
epoch at the value of its first step (``"epoch"``), or held at ``alpha_end`` (``"constant"``).
``loss = "context_only"`` sets alpha = 0, ``"content_only"`` drops L_Context. The two terms have
their own temperatures (``context_temperature``, ``content_temperature``; ``temperature`` for
both when those are unset): the paper gives neither.

Scores: S_NND and S_LH averaged over the run's fixed test-time views, split evenly over the
contexts (x and x^C). Every run is scored under every reading: the feature space (``encoder``
output, the paper's f; the ``content`` or ``context`` head) crossed with the training set that
x^C views are compared with (``matched``: mapped through t_C; ``original``: the formula as
printed). ``score_features`` / ``score_reference`` pick the headline reading. Also the silhouette
of the identity-view test representations labelled by context.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from con2.augment import contexts_for, multi_context_names
from con2.errors import ConfigError
from con2.evaluation import REFERENCES, ContextFn, Reading, Scorer, ScoringSpec
from con2.losses import alpha_schedule, batch_labels, content_loss, context_loss
from con2.methods.base import Method
from con2.methods.registry import register
from con2.metrics import context_silhouette
from con2.models import projection_head
from con2.scores import fit_gaussian, lh_scores, nnd_scores

LOSSES = ("full", "context_only", "content_only")
ALPHA_SCHEDULES = ("step", "epoch", "constant")
FEATURES = ("encoder", "content", "context")


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
    score_features: str = "encoder"  # headline reading: encoder (the paper's f) | content | context
    score_reference: str = "matched"  # headline reading: matched | original (x^C vs the training set as printed)


def alpha_at(progress: float, params: Con2Params, epochs: int) -> float:
    """The content weight alpha at training progress in [0, 1] under ``params.alpha_schedule``.

    ``epoch`` holds alpha for each of ``epochs`` epochs at the value of the epoch's start.
    """
    if params.alpha_schedule == "constant":
        return params.alpha_end
    if params.alpha_schedule == "epoch":
        progress = math.floor(progress * epochs + 1e-9) / max(1, epochs)
    return alpha_schedule(progress, params.alpha_start, params.alpha_end)


@register
class Con2(Method):
    name = "con2"
    Params = Con2Params
    test_params = {"temperature": 0.5}
    score_names = ("nnd", "lh")
    description = "CON2: context contrasting + content alignment; scores S_NND and S_LH with TTA"

    def __init__(self, cfg, params: Con2Params) -> None:
        super().__init__(cfg, params)
        checks = [
            (params.loss in LOSSES, f"params.loss must be one of {LOSSES}, got {params.loss!r}"),
            (params.alpha_schedule in ALPHA_SCHEDULES,
             f"params.alpha_schedule must be one of {ALPHA_SCHEDULES}, got {params.alpha_schedule!r}"),
            (params.score_features in FEATURES, f"params.score_features must be one of {FEATURES}, got {params.score_features!r}"),
            (params.score_reference in REFERENCES,
             f"params.score_reference must be one of {REFERENCES}, got {params.score_reference!r}"),
            (params.context_weight >= 0, f"params.context_weight must be >= 0, got {params.context_weight}"),
        ]  # fmt: skip
        for name in ("temperature", "context_temperature", "content_temperature"):
            value = getattr(params, name)
            checks.append((value is None or value > 0, f"params.{name} must be > 0, got {value}"))
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        names = multi_context_names(params.n_contexts) if params.n_contexts else list(params.contexts)
        if not names:
            raise ConfigError("params.contexts must name at least one context transform, e.g. [invert]")
        self.context_names = names
        self.contexts = contexts_for(names)
        if cfg.tta % len(self.contexts):
            raise ConfigError(
                f"config key 'tta': {cfg.tta} test-time views cannot be split evenly over {len(self.contexts)} "
                f"contexts; use a multiple of {len(self.contexts)}"
            )
        d = self.encoder.out_dim
        self.context_head = projection_head(d, d, params.head_dim)
        self.content_head = projection_head(d, d, params.head_dim)

    @property
    def n_contexts(self) -> int:
        return len(self.contexts)

    @property
    def temperatures(self) -> tuple[float, float]:
        """``(tau of L_Context, tau of L_Content)``."""
        p = self.params
        return (p.context_temperature or p.temperature, p.content_temperature or p.temperature)

    def training_loss(self, images: Tensor, progress: float) -> dict[str, Tensor]:
        n, k = len(images), self.n_contexts
        ctx = torch.cat([fn(images) for fn in self.contexts])  # [K*N, C, H, W]
        x = torch.cat([self.augment(ctx), self.augment(ctx)])  # [2*K*N, 3, S, S], view-major
        h = self.encoder(x)
        context_labels, sample_labels = batch_labels(n, k, 2, device=h.device)
        tau_context, tau_content = self.temperatures
        p = self.params
        out: dict[str, Tensor] = {}
        if p.loss != "content_only":
            out["context"] = context_loss(self.context_head(h), context_labels, tau_context)
        if p.loss != "context_only":
            out["content"] = content_loss(self.content_head(h), sample_labels, tau_content)
        if p.loss == "full":
            alpha = alpha_at(progress, p, self.cfg.epochs)
            out["loss"] = p.context_weight * out["context"] + alpha * out["content"]
        else:
            out["loss"] = out["context"] if "context" in out else out["content"]
        return out

    # --- scoring ----------------------------------------------------------------------------------

    def test_contexts(self) -> list[ContextFn]:
        return self.contexts

    def feature_spaces(self):
        return {"encoder": None, "content": self.content_head, "context": self.context_head}

    def scoring(self) -> ScoringSpec:
        cfg = self.cfg
        ridge, chunk = cfg.lh_ridge, cfg.nn_chunk
        scorers = {
            "nnd": Scorer(lambda te, tr, c: nnd_scores(te, tr, chunk)),
            "lh": Scorer(lambda te, tr, c: lh_scores(te, fit_gaussian(tr, ridge))),
        }
        readings = tuple(Reading(f, r) for f in FEATURES for r in REFERENCES)
        return ScoringSpec(scorers, readings, Reading(self.params.score_features, self.params.score_reference))

    def diagnostics(self, identity_features) -> dict[str, float]:
        test = [identity_features["test", c]["encoder"] for c in range(self.n_contexts)]
        feats = torch.nn.functional.normalize(torch.cat(test), dim=1).numpy()
        labels = torch.arange(self.n_contexts).repeat_interleave(len(test[0])).numpy()
        return {"silhouette": context_silhouette(feats, labels)}
