"""The floors: S_NND on raw pixels (:class:`PixelNN`) and on a random encoder (:class:`RandomNN`).

Nothing is trained (see :mod:`baselines.zero_shot`): the training loss is the constant 0 and every
weight is frozen, so whatever the budget the scores are those of the untrained map. The score is the
shared S_NND (``-max_m cos(f(x), f(x_m))`` against the normal training set) through the shared
test-time loop, so a floor sees exactly the split, sizes, centre crop and views of the trained methods.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from baselines.floors_spec import PIXEL_SPEC, RANDOM_SPEC, FloorParams
from baselines.zero_shot import ZeroShotMethod
from con2.maths.scores import nnd_scores
from con2.methods.scoring import Scorer, ScoringSpec
from con2.methods.spec import MethodSettings


class RawPixels(nn.Module):
    """Normalised views ``[B, 3, S, S]`` (mean = std = 0.5) -> pixel values in [0, 1], flattened ``[B, 3 S^2]``.

    Undoing the normalisation matters: a cosine is not shift-invariant, and the floor is the cosine of
    the images as stored (a grey image's three equal channels give the cosine of its one channel).
    """

    def forward(self, x: Tensor) -> Tensor:
        return (x.float() * 0.5 + 0.5).flatten(1)


class _Floor(ZeroShotMethod):
    """A frozen map scored by S_NND."""

    score_names = ("nnd",)
    Params = FloorParams

    def scoring(self) -> ScoringSpec:
        chunk = self.cfg.nn_chunk
        return ScoringSpec({"nnd": Scorer(lambda te, tr, c: nnd_scores(te, tr, chunk))})


class PixelNN(_Floor):
    """S_NND on the raw pixels of the view."""

    name = PIXEL_SPEC.name

    def __init__(self, cfg: MethodSettings, params: FloorParams) -> None:
        super().__init__(cfg, params)
        self.encoder = RawPixels()
        # the engine builds its optimiser before it knows that no step will run, and AdamW refuses a
        # model without parameters: one empty, frozen parameter stands in (it changes nothing)
        self.no_weights = nn.Parameter(torch.zeros(0), requires_grad=False)
        self.freeze()


class RandomNN(_Floor):
    """S_NND on the run's encoder at its random initialisation (seeded by the run's seed)."""

    name = RANDOM_SPEC.name

    def __init__(self, cfg: MethodSettings, params: FloorParams) -> None:
        super().__init__(cfg, params)
        self.freeze()
