"""The method interface: a small ``nn.Module`` that supplies a training loss and anomaly scores.

A method declares its hyperparameters as a ``Params`` dataclass (defaults = the paper's), a tiny
``test_params`` override used by the every-method test, and the names of the scores it writes.
The engine calls ``training_loss``; the runner calls ``score`` once training is done.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor, nn

from con2.augment import ViewAugment, ViewParams, normalize, to_float
from con2.config import RunConfig
from con2.models import build_encoder


@dataclass
class MethodScores:
    """Per-sample anomaly scores (``[M]`` each, higher = more anomalous) and scalar extras."""

    scores: dict[str, np.ndarray]
    extras: dict[str, float] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # saved to features.npz


class Method(nn.Module):
    """Base class: builds the encoder and the batched view augmentation from the run config."""

    name: ClassVar[str]
    Params: ClassVar[type]
    test_params: ClassVar[dict[str, Any]] = {}
    score_names: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""

    def __init__(self, cfg: RunConfig, params: Any) -> None:
        super().__init__()
        self.cfg = cfg
        self.params = params
        self.encoder = build_encoder(cfg.encoder, cfg.image_size, cfg.width, cfg.cifar_stem_max_size)
        self.view_params = ViewParams(
            crop_scale=cfg.crop_scale, jitter=cfg.jitter, jitter_p=cfg.jitter_p, grayscale_p=cfg.grayscale_p
        )
        self.views = ViewAugment(cfg.image_size, self.view_params)

    def augment(self, x: Tensor) -> Tensor:
        """uint8 ``[B, C, H, W]`` -> one random normalised view per image ``[B, 3, S, S]``."""
        x = normalize(self.views(to_float(x)))
        if self.cfg.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return x

    def training_loss(self, images: Tensor, progress: float) -> dict[str, Tensor]:
        """uint8 ``[N, C, H, W]`` on the device -> ``{"loss": scalar, ...terms}``."""
        raise NotImplementedError

    def score(self, train: Tensor, test: Tensor, device: torch.device) -> MethodScores:
        """Score uint8 ``test [M, C, H, W]`` against the normal ``train [n, C, H, W]`` (CPU tensors)."""
        raise NotImplementedError
