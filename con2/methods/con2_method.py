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

import torch
from torch import Tensor

from con2.augment import contexts_for, multi_context_names
from con2.evaluation import REFERENCES, ContextFn, Reading, Scorer, ScoringSpec
from con2.losses import alpha_schedule, batch_labels, content_loss, context_loss
from con2.methods.base import Method
from con2.methods.con2_spec import FEATURES, SPEC, Con2Params
from con2.methods.spec import MethodSettings
from con2.metrics import context_silhouette
from con2.models import projection_head
from con2.scores import fit_gaussian, lh_scores, nnd_scores


def alpha_at(progress: float, params: Con2Params, epochs: int) -> float:
    """The content weight alpha at training progress in [0, 1] under ``params.alpha_schedule``.

    ``epoch`` holds alpha for each of ``epochs`` epochs at the value of the epoch's start.
    """
    if params.alpha_schedule == "constant":
        return params.alpha_end
    if params.alpha_schedule == "epoch":
        progress = math.floor(progress * epochs + 1e-9) / max(1, epochs)
    return alpha_schedule(progress, params.alpha_start, params.alpha_end)


class Con2(Method):
    name = SPEC.name
    Params = Con2Params
    score_names = SPEC.score_names

    def __init__(self, cfg: MethodSettings, params: Con2Params) -> None:
        super().__init__(cfg, params)
        names = multi_context_names(params.n_contexts) if params.n_contexts else list(params.contexts)
        self.context_names = names
        self.contexts = contexts_for(names)  # unknown context names fail here, naming the choices
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
