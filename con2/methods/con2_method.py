"""CON2: context contrasting plus content alignment (Ryser et al., TMLR 2025).

Batch: N images x and their contexts t_c(x) (c = 1..K-1), two random views of each -> 2KN images,
one encoder pass (BatchNorm sees every context), two heads. L = L_Context + alpha * L_Content with
alpha annealed linearly per step from ``alpha_start`` to ``alpha_end``; ``loss = "context_only"``
sets alpha = 0, ``"content_only"`` drops L_Context.

Scores (on encoder outputs): S_NND and S_LH averaged over the run's fixed test-time views, split
evenly over the contexts (x and x^C); the silhouette of the identity-view test representations
labelled by context.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from con2.augment import IDENTITY_VIEW, contexts_for, multi_context_names
from con2.errors import ConfigError
from con2.evaluation import iter_plan_features, tta_plan, view_features
from con2.losses import alpha_schedule, batch_labels, content_loss, context_loss
from con2.methods.base import Method, MethodScores
from con2.methods.registry import register
from con2.metrics import context_silhouette
from con2.models import projection_head
from con2.scores import fit_gaussian, lh_scores, nnd_scores

LOSSES = ("full", "context_only", "content_only")


@dataclass
class Con2Params:
    """CON2's hyperparameters (the temperature is not given in the paper: a documented choice)."""

    contexts: tuple[str, ...] = ("invert",)  # context transforms after the identity; k = len + 1
    n_contexts: int = 0  # > 0: use the k-context ablation's first k contexts instead of `contexts`
    temperature: float = 0.5
    loss: str = "full"  # full | context_only | content_only
    alpha_start: float = 0.0
    alpha_end: float = 1.0
    head_dim: int = 128


@register
class Con2(Method):
    name = "con2"
    Params = Con2Params
    test_params = {"temperature": 0.5}
    score_names = ("nnd", "lh")
    description = "CON2: context contrasting + content alignment; scores S_NND and S_LH with TTA"

    def __init__(self, cfg, params: Con2Params) -> None:
        super().__init__(cfg, params)
        if params.loss not in LOSSES:
            raise ConfigError(f"params.loss must be one of {LOSSES}, got {params.loss!r}")
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

    def training_loss(self, images: Tensor, progress: float) -> dict[str, Tensor]:
        n, k = len(images), self.n_contexts
        ctx = torch.cat([fn(images) for fn in self.contexts])  # [K*N, C, H, W]
        x = torch.cat([self.augment(ctx), self.augment(ctx)])  # [2*K*N, 3, S, S], view-major
        h = self.encoder(x)
        context_labels, sample_labels = batch_labels(n, k, 2, device=h.device)
        tau = self.params.temperature
        out: dict[str, Tensor] = {}
        if self.params.loss != "content_only":
            out["context"] = context_loss(self.context_head(h), context_labels, tau)
        if self.params.loss != "context_only":
            out["content"] = content_loss(self.content_head(h), sample_labels, tau)
        if self.params.loss == "full":
            alpha = alpha_schedule(progress, self.params.alpha_start, self.params.alpha_end)
            out["loss"] = out["context"] + alpha * out["content"]
        else:
            out["loss"] = out["context"] if "context" in out else out["content"]
        return out

    @torch.no_grad()
    def score(self, train: Tensor, test: Tensor, device: torch.device) -> MethodScores:
        cfg = self.cfg
        plan = tta_plan(cfg.tta, self.n_contexts, cfg.tta_seed, self.view_params)
        nnd = torch.zeros(len(test))
        lh = torch.zeros(len(test))
        for train_f, test_f in iter_plan_features(
            self.encoder, train, test, plan, self.contexts, cfg.image_size, device, cfg.eval_batch_size
        ):
            nnd += nnd_scores(test_f, train_f, cfg.nn_chunk).cpu()
            lh += lh_scores(test_f, fit_gaussian(train_f, cfg.lh_ridge)).cpu()
        # Representations without augmentation, in every context: silhouette and the PCA figure.
        identity = {
            f"{split}_context{c}": F.normalize(
                view_features(self.encoder, imgs, IDENTITY_VIEW, fn, cfg.image_size, device, cfg.eval_batch_size), dim=1
            ).cpu().numpy()
            for split, imgs in (("train", train), ("test", test))
            for c, fn in enumerate(self.contexts)
        }
        test_feats = np.concatenate([identity[f"test_context{c}"] for c in range(self.n_contexts)])
        test_ctx = np.repeat(np.arange(self.n_contexts), len(test))
        return MethodScores(
            scores={"nnd": (nnd / len(plan)).numpy(), "lh": (lh / len(plan)).numpy()},
            extras={"silhouette": context_silhouette(test_feats, test_ctx)},
            arrays={k: v.astype(np.float16) for k, v in identity.items()},
        )
