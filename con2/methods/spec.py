"""What a method is, without importing it: its parameters, their constraints, labels and tags.

A :class:`MethodSpec` is the torch-free half of a method: listing methods (``con2 methods``),
validating a run's ``params`` before any job starts (the workflow does it when it builds its
grid), and naming a method in tables never import torch or the method's module. The other half,
the ``nn.Module`` that trains and scores, is loaded by :meth:`MethodSpec.load` only when a run
needs it.

Built-in methods keep their spec in a ``<name>_spec.py`` module beside the implementation and
declare it as a ``con2.methods`` entry point in ``pyproject.toml``; a third-party method may
declare either a spec or just its class (then the spec is read off the class attributes).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from con2.config import RunConfig, dataclass_from_params
from con2.weights import Resolved, WeightSet, resolve_all


@dataclass(frozen=True)
class MethodSettings:
    """What a method knows of its run: input size, encoder, views, budget and test-time settings.

    Not the whole :class:`~con2.config.RunConfig`: where the data live, the device, threads, the
    optimiser, checkpointing and the dataset are the harness's business, never a method's. Built
    from a run config by :meth:`from_config`; a method reads it as ``self.cfg``.
    """

    image_size: int
    encoder: str = "resnet18"
    width: int = 64
    cifar_stem_max_size: int = 64
    channels_last: bool = True
    crop_scale: tuple[float, float] = (0.2, 1.0)
    jitter: tuple[float, float, float, float] = (0.4, 0.4, 0.4, 0.1)
    jitter_p: float = 0.8
    grayscale_p: float = 0.2
    blur_p: float = 0.0
    blur_sigma: tuple[float, float] = (0.1, 2.0)
    epochs: int = 2048
    seed: int = 0
    tta: int = 40
    tta_seed: int = 0
    csi_views: int = 10
    lh_ridge: float = 1e-2
    eval_batch_size: int = 256
    nn_chunk: int = 4096

    @classmethod
    def from_config(cls, cfg: RunConfig) -> MethodSettings:
        """The method's slice of a run config."""
        return cls(**{f.name: getattr(cfg, f.name) for f in fields(cls)})


@dataclass(frozen=True)
class MethodSpec:
    """A method's card.

    Attributes:
        name: the registry name (``con2 train --set method=NAME``).
        Params: the hyperparameter dataclass (defaults = the paper's).
        implementation: ``"package.module:Class"`` of the :class:`~con2.methods.Method` subclass.
        score_names: the headline score columns it writes (``scores.csv``, ``metrics.auroc``).
        description: one line for ``con2 methods``.
        label: display name in tables (``"CON2"``).
        score_labels: display name per score (``{"nnd": "NND"}``).
        paper_rows: per score, the paper's ``(method, score)`` row it is compared with
            (``{"knn": ("SimCLR", "")}``); scores without a paper row are absent.
        compute_name: the method's name in the paper's compute-hours table.
        test_params: the tiny override the every-method test trains with.
        check: ``check(params, settings)`` raises ``ConfigError`` for constraints a type check cannot
            catch (ranges, choices, ``tta`` against the number of contexts).
        tags: ``tags(params) -> {key: value}``: what the report groups this method's runs by
            (contexts, loss, ...), written into every record.
        weights: ``weights(params) -> {params key: weight-set name}``: the pretrained files a run
            needs (names of :data:`con2.weights.KNOWN`, or a ``WeightSet`` for unpublished files).
            Validation finds and checks each one
            (:func:`con2.weights.resolve`: present, checksum when known) before anything runs,
            and the record's card names the file used. ``None``: no pretrained weights.
        scoring_params: names of ``Params`` fields read only when scoring (SimCLR's ``k``), so
            ``con2 evaluate --set params.NAME=...`` may re-score a trained model with another value;
            every other ``params`` key changes the model and is refused there.
        views_per_image: ``views_per_image(params) -> int``: encoder passes per training image in one
            optimiser step (CON2 as printed: 2 views x 2 contexts = 4), the unit in which the cost plan
            (``con2 plan``), the workflow's ETA and its job order price a run (:meth:`training_views`).
            ``None``: not priced (an encoder the ResNet18 throughput table does not describe, e.g. PANDA's
            ResNet152); the workflow then starts such a run first, so that its pace is known early.
    """

    name: str
    Params: type
    implementation: str
    score_names: tuple[str, ...]
    description: str = ""
    label: str = ""
    score_labels: Mapping[str, str] = field(default_factory=dict)
    paper_rows: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    compute_name: str | None = None
    test_params: Mapping[str, Any] = field(default_factory=dict)
    check: Callable[[Any, MethodSettings], None] | None = None
    tags: Callable[[Any], dict[str, Any]] | None = None
    weights: Callable[[Any], Mapping[str, str | WeightSet]] | None = None
    scoring_params: tuple[str, ...] = ()
    views_per_image: Callable[[Any], int] | None = None

    def __post_init__(self) -> None:
        if not self.scoring_params:
            return  # nothing to check (Params need not be a dataclass then)
        names = {f.name for f in fields(self.Params)}
        unknown = [p for p in self.scoring_params if p not in names]
        if unknown:
            raise TypeError(f"method {self.name!r}: scoring_params {unknown} are not fields of {self.Params.__name__}")

    def training_views(self, params: Mapping[str, Any]) -> int | None:
        """Encoder passes per training image per step of a run with these ``params`` (a run config's
        mapping; defaults filled in, unknown keys refused); ``None`` where the spec does not price them."""
        if self.views_per_image is None:
            return None
        return int(self.views_per_image(dataclass_from_params(self.Params, dict(params), self.name)))

    def params_for(self, cfg: RunConfig) -> Any:
        """``cfg.params`` as this method's validated ``Params`` (unknown keys and bad values named)."""
        params = dataclass_from_params(self.Params, cfg.params, self.name)
        if self.check is not None:
            self.check(params, MethodSettings.from_config(cfg))
        self.resolve_weights(params)
        return params

    def weight_sets(self, params: Any) -> dict[str, str | WeightSet]:
        """``{params key: weight-set name}`` this run needs (empty for methods trained from scratch)."""
        return dict(self.weights(params)) if self.weights is not None else {}

    def resolve_weights(self, params: Any) -> dict[str, Resolved]:
        """Find and check every pretrained file the run needs (``ConfigError`` naming the file and the fix)."""
        return resolve_all(self.weight_sets(params), params, self.name)

    def load(self) -> type:
        """Import and return the implementation class, a :class:`~con2.methods.Method` subclass (this
        imports torch; the registry, which knows the class, types it)."""
        module, _, attr = self.implementation.partition(":")
        return getattr(importlib.import_module(module), attr)

    def card(self, params: Any) -> dict[str, Any]:
        """The record's ``method_card``: labels, paper rows and tags of one run."""
        return {
            "label": self.label or self.name,
            "score_labels": {s: self.score_labels.get(s, s) for s in self.score_names},
            "paper_rows": {s: list(r) for s, r in self.paper_rows.items()},
            "compute_name": self.compute_name,
            "tags": dict(self.tags(params)) if self.tags is not None else {},
            **({"weights": {k: r.card() for k, r in self.resolve_weights(params).items()}} if self.weights else {}),
        }
