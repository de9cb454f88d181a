"""The method interface: a small ``nn.Module`` that supplies a training loss and declares its scores.

A method declares its hyperparameters as a ``Params`` dataclass (defaults = the paper's), a tiny
``test_params`` override used by the every-method test, and the names of the scores it writes.
The engine calls ``training_loss``. Scoring is declarative: a method says which test-time views
and contexts it uses (``test_contexts``, ``test_views``), which feature spaces exist
(``feature_spaces``), and which scores and readings it wants (``scoring``); the shared loop in
:mod:`con2.methods.scoring` runs them, so no method writes its own test-time loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from con2.config import RunConfig
from con2.methods.features import ContextFn
from con2.methods.scoring import (  # MethodScores: what the shared test-time loop returns
    MethodScores,
    ScoringSpec,
    TestView,
    identity,
    score_method,
    split_views,
)
from con2.methods.spec import MethodSettings
from con2.training.models import build_encoder
from con2.transforms.augment import ViewAugment, ViewParams, normalize, to_float


class Method(nn.Module):
    """Base class: builds the encoder and the batched view augmentation from the method's settings.

    ``self.cfg`` is a :class:`~con2.methods.spec.MethodSettings` (input size, encoder, views,
    budget, test-time settings), never the whole run config; ``self.params`` the method's Params.
    """

    name: ClassVar[str]
    Params: ClassVar[type]
    test_params: ClassVar[dict[str, Any]] = {}
    score_names: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    #: ``views_per_image(params) -> int`` (a staticmethod): encoder passes per training image per step, the
    #: cost unit of the plan, the ETA and the job order; ``None``: not priced (:attr:`MethodSpec.views_per_image`)
    views_per_image: ClassVar[Callable[[Any], int] | None] = None

    #: checkpoint keys of what :meth:`prepare` decides (:meth:`fixed_state`); () = it decides nothing
    fixed_keys: tuple[str, ...] = ()

    def __init__(self, cfg: MethodSettings | RunConfig, params: Any) -> None:
        super().__init__()
        self.cfg = cfg if isinstance(cfg, MethodSettings) else MethodSettings.from_config(cfg)
        cfg = self.cfg
        self.params = params
        self.encoder = build_encoder(cfg.encoder, cfg.image_size, cfg.width, cfg.cifar_stem_max_size)
        self.view_params = ViewParams(
            crop_scale=cfg.crop_scale,
            jitter=cfg.jitter,
            jitter_p=cfg.jitter_p,
            grayscale_p=cfg.grayscale_p,
            blur_p=cfg.blur_p,
            blur_sigma=cfg.blur_sigma,
        )
        self.views = ViewAugment(cfg.image_size, self.view_params)

    def augment(self, x: Tensor) -> Tensor:
        """uint8 ``[B, C, H, W]`` -> one random normalised view per image ``[B, 3, S, S]``."""
        x = normalize(self.views(to_float(x)))
        if self.cfg.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return x

    def prepare(self, train: Tensor) -> None:
        """Called once with the whole normal training set (uint8 ``[n, C, H, W]``, CPU) before
        training starts or resumes; e.g. PANDA's centre of the pretrained features. Default: nothing."""

    def fixed_state(self) -> dict[str, str]:
        """What :meth:`prepare` decided that every checkpoint must keep (JSON texts under :attr:`fixed_keys`;
        e.g. the context CON2 (Best) chose), so a resume or a re-scoring never decides again. Default: none."""
        return {}

    def restore_fixed_state(self, state: Mapping[str, Any]) -> None:
        """Take what a checkpoint ``state`` kept under :attr:`fixed_keys`, before :meth:`prepare` (which then
        decides nothing again). A key the checkpoint lacks (an older con2 wrote it) is left to :meth:`prepare`."""

    def trains(self) -> bool:
        """Whether training changes anything: some parameter is trainable. A method whose every weight is frozen
        (the floors, the zero-shot baselines) is scored untrained whatever the budget: the run skips the loop
        (as ``max_steps: 0`` does) and records no epochs, steps or images per second."""
        return any(p.requires_grad for p in self.parameters())

    def training_loss(self, images: Tensor, progress: float) -> dict[str, Tensor]:
        """uint8 ``[N, C, H, W]`` on the device -> ``{"loss": scalar, ...terms}``."""
        raise NotImplementedError

    # --- scoring: declarations read by con2.methods.scoring.score_method ------------------------------

    def test_contexts(self) -> list[ContextFn]:
        """Pixel transforms of the test-time contexts, by context label (default: x alone)."""
        return [identity]

    def context_after_views(self) -> bool:
        """Whether a context acts on the views (uint8-quantised view, then ``t_C``) instead of on the raw
        pixels before them; the test-time views follow the same order. Default: before the views."""
        return False

    def test_views(self) -> list[TestView]:
        """The fixed test-time views: ``cfg.tta`` views split evenly over :meth:`test_contexts`."""
        return split_views(self.cfg.tta, self.test_contexts(), self.cfg.tta_seed, self.view_params)

    def encoded_views(self) -> int:
        """How many views of each image the scoring pass encodes: the fixed test views (:meth:`test_views`);
        a method that draws its own views per image (:attr:`~con2.methods.scoring.ScoringSpec.image_views`)
        adds them. The run's up-front line and its check of the scoring pass's size read it."""
        return len(self.test_views())

    def feature_spaces(self) -> Mapping[str, nn.Module | None]:
        """Named maps of the encoder output that readings may score (``None``: the output itself)."""
        return {"encoder": None}

    def scoring(self) -> ScoringSpec:
        """The scores, the readings computed and the headline reading."""
        raise NotImplementedError

    def diagnostics(self, identity_features: Mapping[tuple[str, int], Mapping[str, Tensor]]) -> dict[str, float]:
        """Scalar extras for the record from identity-view features ``{(split, context): {space: [n, d]}}``."""
        return {}

    def score(
        self, train: Tensor, test: Tensor, device: torch.device, validation: Tensor | None = None
    ) -> MethodScores:
        """Score uint8 ``test [M, C, H, W]`` against the normal ``train [n, C, H, W]`` (CPU tensors); the
        normal ``validation [V, C, H, W]`` images too where given (``MethodScores.validation``)."""
        return score_method(self, train, test, device, validation)
