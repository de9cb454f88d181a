"""What the zero-shot baselines on pretrained models share (I-JEPA-ZSAD, CLIP-AD).

* :class:`PretrainedInput`: the harness's inputs (views normalised to mean = std = 0.5, at the
  run's ``image_size``) mapped to what a pretrained model was trained on: pixel values in [0, 1],
  resized (bicubic) to the model's input size, normalised with the model's mean and std.
* :class:`ZeroShotMethod`: nothing to train. Every weight is frozen and the training loss is the
  constant 0 with no parameter behind it, so whatever the budget the optimiser changes nothing and
  the scores are those of the pretrained model; the workflow runs these methods with
  ``max_steps=0`` (the harness's "score the untrained model"), which skips the loop and its
  checkpoint. One identity test view unless ``params.tta``.
* :func:`require`: the optional library a method needs, or one ``ConfigError`` with the pip command.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from con2.errors import ConfigError
from con2.methods.base import Method
from con2.methods.scoring import TestView
from con2.transforms.augment import IDENTITY_VIEW

PIP_EXTRA = "pip install 'con2-bench[pretrained]'"


def require(module: str, package: str, method: str) -> ModuleType:
    """Import ``module`` (an optional dependency); ``ConfigError`` naming ``package`` and the pip command if absent."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"method {method!r} needs the {package} package ({exc}); install it with `{PIP_EXTRA}` "
            f"(or `pip install {package}`)"
        ) from None


class PretrainedInput(nn.Module):
    """``[B, 3, S, S]`` normalised to mean = std = 0.5 -> ``[B, 3, size, size]`` as the model expects."""

    mean: Tensor  # buffers [1, 3, 1, 1]
    std: Tensor

    def __init__(self, size: int, mean: Sequence[float], std: Sequence[float]) -> None:
        super().__init__()
        self.size = int(size)
        self.register_buffer("mean", torch.tensor(list(mean)).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(list(std)).view(1, 3, 1, 1), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        x = x.float() * 0.5 + 0.5
        if x.shape[-1] != self.size or x.shape[-2] != self.size:
            x = F.interpolate(x, size=(self.size, self.size), mode="bicubic", align_corners=False, antialias=True)
        return (x - self.mean) / self.std


class ZeroShotMethod(Method):
    """A pretrained model scored as it is: frozen, never trained, one identity test view unless ``params.tta``."""

    def freeze(self) -> None:
        """No parameter is trained (the engine's optimiser then updates nothing)."""
        self.requires_grad_(False)

    def training_loss(self, images: Tensor, progress: float) -> dict[str, Tensor]:
        """The constant 0, a leaf with no parameter behind it: a step leaves every weight as it is."""
        return {"loss": torch.zeros((), device=images.device, requires_grad=True)}

    def test_views(self) -> list[TestView]:
        """The run's test-time views with ``params.tta``, else the identity view alone."""
        return super().test_views() if self.params.tta else [TestView(IDENTITY_VIEW, 0)]
