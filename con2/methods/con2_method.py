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

Two readings of the batch the paper leaves open: ``context_order = "after_views"`` draws the two
views of x only and makes each x^C view the context transform of the matching x view (the view
quantised to uint8, then t_C: pixel-exact; the test-time views follow the same order), instead of
two independent views of t_C(x); ``encoder_passes = "per_context"`` runs the encoder once per
context (its 2N views), so BatchNorm normalises each context by its own batch statistics and
updates its running statistics once per context, instead of one pass over all 2KN views.

Scores: S_NND and S_LH averaged over the run's fixed test-time views, split evenly over the
contexts (x and x^C). Every run is scored under every reading: the feature space (``encoder``
output, the paper's f; the ``content`` or ``context`` head) crossed with the training set that
x^C views are compared with (``matched``: mapped through t_C; ``original``: the formula as
printed). ``score_features`` / ``score_reference`` pick the headline reading. Also the silhouette
of the identity-view test representations labelled by context.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor, nn

from con2.errors import ConfigError
from con2.maths.losses import alpha_schedule, batch_labels, content_loss, context_loss
from con2.maths.metrics import context_silhouette
from con2.maths.scores import fit_gaussian, lh_scores, nnd_scores
from con2.methods.base import Method
from con2.methods.con2_spec import BEST, FEATURES, SPEC, Con2Params
from con2.methods.contexts import NoBasisToChoose, choose_context, uint8_to_unit
from con2.methods.features import ContextFn, quantize
from con2.methods.scoring import REFERENCES, MethodScores, Reading, Scorer, ScoringSpec
from con2.methods.spec import MethodSettings
from con2.training.models import encoder_dim, projection_head
from con2.transforms.augment import contexts_for, multi_context_names, normalize, to_float

CHOICE_KEY = "context_choice"  # the checkpoint entry of CON2 (Best)'s choice (JSON)


def _unresolved_best(x: Tensor) -> Tensor:
    raise RuntimeError("contexts: [best] is chosen in Con2.prepare(train); call it before training or scoring")


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
        # contexts: [best]: the choice prepare() makes, for the record
        self.context_choice: dict[str, object] | None = None
        self.context_names = names
        if names == [BEST]:  # CON2 (Best): the context is chosen from the normal training images in prepare()
            self.fixed_keys = (CHOICE_KEY,)  # and kept by every checkpoint
            self.contexts: list[ContextFn] = [lambda x: x, _unresolved_best]
        else:
            self.contexts = contexts_for(names)  # unknown context names fail here, naming the choices
        d = encoder_dim(self.encoder)
        self.context_head = projection_head(d, d, params.head_dim)
        self.content_head = projection_head(d, d, params.head_dim)

    def prepare(self, train: Tensor) -> None:
        """``contexts: [best]``: choose the context by its assumptions on the normal training images
        (:func:`con2.methods.contexts.choose_context`, seeded with ``params.best_seed``; never the test
        split, so no anomaly), once, before training starts. A resume or a re-scoring takes the choice its
        checkpoint kept (:meth:`restore_fixed_state`) and chooses nothing: other data (another
        ``data_dir``) never switch the context of trained weights."""
        if self.context_names != [BEST] and self.context_choice is None:
            return

        if self.context_choice is None:
            try:
                self.context_choice = choose_context(
                    uint8_to_unit(train, self.params.best_seed), seed=self.params.best_seed
                )
            except NoBasisToChoose as exc:
                raise ConfigError(
                    f"params.contexts: [best] on {len(train)} training images: {exc}. Fix: set the context "
                    "explicitly (contexts: [invert], [flip] or [equalize])"
                ) from None
            except ValueError as exc:
                raise ConfigError(
                    f"params.contexts: [best] cannot choose a context from {len(train)} training images ({exc}); "
                    "Fix: name the context (e.g. contexts: [invert]) or use a normal class with at least 4 images"
                ) from None
        chosen = str(self.context_choice["context"])
        self.context_names = [chosen]
        self.contexts = contexts_for([chosen])

    def fixed_state(self) -> dict[str, str]:
        """``{"context_choice": JSON}`` once CON2 (Best) has chosen (:meth:`prepare`); else nothing."""
        return {CHOICE_KEY: json.dumps(self.context_choice)} if self.context_choice is not None else {}

    def restore_fixed_state(self, state: Mapping[str, Any]) -> None:
        """Take the choice a checkpoint kept (``context_choice``); a checkpoint without it leaves the choice
        to :meth:`prepare`. A kept choice that is not a known context raises ``ConfigError`` naming it."""
        text = state.get(CHOICE_KEY) if CHOICE_KEY in self.fixed_keys else None
        if not isinstance(text, str):
            return
        try:
            choice = json.loads(text)
            contexts_for([str(choice["context"])])
        except (ValueError, KeyError, TypeError, ConfigError) as exc:
            raise ConfigError(
                f"the checkpoint's {CHOICE_KEY} is damaged ({exc}); Fix: restore the checkpoint from a backup, "
                "or retrain the run (con2 train --force)"
            ) from None
        self.context_choice = choice

    def score(
        self, train: Tensor, test: Tensor, device: torch.device, validation: Tensor | None = None
    ) -> MethodScores:
        out = super().score(train, test, device, validation)
        if self.context_choice is not None:  # the record says which context `best` chose, and why
            extras: dict[str, Any] = out.extras  # typed dict[str, float] in MethodScores; the record takes any value
            extras["chosen_context"] = self.context_choice["context"]
            extras["context_choice"] = self.context_choice
        return out

    @property
    def n_contexts(self) -> int:
        return len(self.contexts)

    @property
    def temperatures(self) -> tuple[float, float]:
        """``(tau of L_Context, tau of L_Content)``."""
        p = self.params
        return (p.context_temperature or p.temperature, p.content_temperature or p.temperature)

    def context_after_views(self) -> bool:
        return self.params.context_order == "after_views"

    def batch_views(self, images: Tensor) -> Tensor:
        """uint8 ``[N, C, H, W]`` -> the normalised training batch ``[2 K N, 3, S, S]``: view-major, then
        context, then image (row ``(v K + c) N + i`` is view v of image i in context c)."""
        if not self.context_after_views():
            ctx = torch.cat([fn(images) for fn in self.contexts])  # [K*N, C, H, W]
            return torch.cat([self.augment(ctx), self.augment(ctx)])
        views = [quantize(self.views(to_float(images))) for _ in range(2)]  # two uint8 views of x, [N, 3, S, S]
        x = normalize(to_float(torch.cat([fn(v) for v in views for fn in self.contexts])))
        return x.contiguous(memory_format=torch.channels_last) if self.cfg.channels_last else x

    def encode(self, x: Tensor) -> Tensor:
        """Encoder outputs ``[2 K N, d]`` of the batch: one pass, or one pass per context (``encoder_passes``)."""
        if self.params.encoder_passes == "joint":
            return self.encoder(x)
        k = self.n_contexts
        n = len(x) // (2 * k)
        rows = lambda v, c: x[(v * k + c) * n : (v * k + c + 1) * n]  # noqa: E731
        h = [self.encoder(torch.cat([rows(0, c), rows(1, c)])).unflatten(0, (2, n)) for c in range(k)]  # K x [2, N, d]
        return torch.stack(h, 1).flatten(0, 2)  # [2, K, N, d] -> [2 K N, d], the batch's order

    def training_loss(self, images: Tensor, progress: float) -> dict[str, Tensor]:
        n, k = len(images), self.n_contexts
        h = self.encode(self.batch_views(images))  # [2*K*N, d]
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

    def progress_weights(self, progress: float) -> dict[str, float]:
        """The weight alpha of L_Content at ``progress`` in [0, 1], for the progress line: it anneals
        0 -> 1, so ``loss = w L_Context + alpha L_Content`` grows while both terms fall."""
        return {"alpha": alpha_at(progress, self.params, self.cfg.epochs)} if self.params.loss == "full" else {}

    # --- scoring ----------------------------------------------------------------------------------

    def test_contexts(self) -> list[ContextFn]:
        return self.contexts

    def feature_spaces(self) -> Mapping[str, nn.Module | None]:
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

    def diagnostics(self, identity_features: Mapping[tuple[str, int], Mapping[str, Tensor]]) -> dict[str, float]:
        test = [identity_features["test", c]["encoder"] for c in range(self.n_contexts)]
        feats = torch.nn.functional.normalize(torch.cat(test), dim=1).numpy()
        labels = torch.arange(self.n_contexts).repeat_interleave(len(test[0])).numpy()
        return {"silhouette": context_silhouette(feats, labels)}
