"""The test-time loop shared by every method: fixed views, contexts, feature spaces, readings.

A method never writes its own scoring loop. It declares (see :class:`con2.methods.Method`):

* its *test views* (``test_views()``): the fixed test-time views, each with the context it acts in (:class:`TestView`);
* its *feature spaces*: named maps of the encoder output (``"encoder"`` itself, a projection
  head, a head that returns projections and logits, ...);
* its *scorers*: named functions ``(test [M, d], train [n, d], context) -> [M]`` (higher = more
  anomalous), averaged over the test views (or, for ``tta=False`` scorers, computed on the
  identity view alone);
* its *readings*: which feature space is scored, and which training set a view in a non-identity
  context is compared with: ``matched`` (the training set through the same context transform)
  or ``original`` (the training set in the original context, the paper's formula as printed).

Besides the fixed test views, every reading is also scored as CSI's evaluation code draws its
test-time views (``cfg.csi_views`` > 0; columns ``<score>@<feature>/<reference>/csi``): for every
context, ``csi_views`` random views *per image*, drawn from a generator seeded by the run's
``tta_seed``, the context and the image's index (training image i and test image i get the same
views, as CSI's per-batch reseeding gives images at one batch position), from the run's view
distribution with the crop scale fixed at 0.54 (CSI's ``resize_factor`` with ``resize_fix``) and
the horizontal flip applied before the context (as CSI flips before it rotates); the features of
an image are averaged over its views, then scored (for S_NND: the max cosine of the mean test
feature to the mean training features), and the scores averaged over the contexts. A method may draw
those per-image views its own way (``ScoringSpec.image_views``: CSI's evaluation, its own augmentation
and ``samples`` views per image).

:func:`score_method` runs the test views once: one encoder pass per (split, view), every feature space
from that pass, every (score, reading) accumulated. So one trained model is scored under every
reading without retraining, and scoring never touches the weights. The headline reading of each
score is written under the score's plain name (``nnd``); every other reading under
``<score>@<feature>/<reference>`` (``nnd@content/original``).

A draw (:func:`tta_draw`) holds A views drawn once from a seed, split evenly over the K contexts
(the first A/K on x, the next A/K on t_1(x), ...), the same for training and test images; ``tta =
0`` means one identity view on x alone. :func:`crossed_views` applies every view in every context
(CSI's samples x rotations). A method whose contexts act after the views
(:meth:`~con2.methods.Method.context_after_views`) is scored the same way: view, uint8
quantisation, then the context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from con2.methods.features import ContextFn, PerImageViews, ViewDraw, csi_image_views, features
from con2.methods.spec import MethodSettings
from con2.transforms.augment import (
    DEFAULT_VIEWS,
    IDENTITY_VIEW,
    FixedView,
    ViewParams,
    draw_fixed_views,
)

REFERENCES = ("matched", "original")
VIEWS = ("fixed", "csi")  # the fixed test views, or CSI's random views per image averaged before scoring


def identity(x: Tensor) -> Tensor:
    """The identity context transform."""
    return x


def tta_draw(n_views: int, n_contexts: int, seed: int, params: ViewParams = DEFAULT_VIEWS) -> ViewDraw:
    """The A fixed test-time views and the context each is applied in (A divisible by K, or 0)."""
    if n_views == 0:
        return [(IDENTITY_VIEW, 0)]
    if n_views % n_contexts:
        raise ValueError(f"{n_views} test-time views cannot be split evenly over {n_contexts} contexts")
    per_context = n_views // n_contexts
    views = draw_fixed_views(n_views, seed, params)
    return [(v, i // per_context) for i, v in enumerate(views)]


@dataclass
class MethodScores:
    """Per-sample anomaly scores (``[M]`` each, higher = more anomalous) and what goes with them.

    ``scores`` has one column per (score, reading): the headline reading under the score's name.
    ``scoring`` describes the columns for the record (see ``ScoringSpec.describe``). ``validation``:
    the same columns for the normal validation images (``[V]`` each; empty where none were scored).
    """

    scores: dict[str, np.ndarray]
    extras: dict[str, Any] = field(default_factory=dict)  # numbers; CON2 (Best) adds its chosen context
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # saved to features.npz
    scoring: dict[str, Any] = field(default_factory=dict)
    validation: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class TestView:
    """One test view: a fixed view applied in one context.

    ``pixels`` maps uint8 images into the view's context (test images, and training images under
    the ``matched`` reading); ``original`` maps training images under the ``original`` reading
    (the identity for plain contexts). The fixed ``view`` then acts on both.
    """

    view: FixedView
    context: int
    pixels: ContextFn = identity
    original: ContextFn = identity


def split_views(
    n_views: int, contexts: Sequence[ContextFn], seed: int, params: ViewParams = DEFAULT_VIEWS
) -> list[TestView]:
    """:func:`tta_draw` as test views: A views split evenly over the contexts (CON2's "half on x, half on x^C")."""
    return [TestView(v, c, contexts[c]) for v, c in tta_draw(n_views, len(contexts), seed, params)]


def crossed_views(
    n_samples: int, contexts: Sequence[ContextFn], seed: int, params: ViewParams = DEFAULT_VIEWS
) -> list[TestView]:
    """Every one of the first ``n_samples`` fixed views in every context (``0``: the identity view)."""
    views = [v for v, _ in tta_draw(n_samples, 1, seed, params)]
    return [TestView(v, c, fn) for v in views for c, fn in enumerate(contexts)]


@dataclass(frozen=True)
class Scorer:
    """An anomaly score on one feature space: ``fn(test [M, d], train [n, d], context) -> [M]``.

    ``tta=False``: computed once on identity-view features in the original context (SSD), not
    averaged over the test views.
    """

    fn: Callable[[Tensor, Tensor, int], Tensor]
    tta: bool = True


@dataclass(frozen=True)
class Reading:
    """Which feature space is scored, which training set non-identity views are compared with, and
    which test-time views: the fixed test views (``fixed``) or CSI's random ones per image (``csi``)."""

    feature: str = "encoder"
    reference: str = "matched"
    views: str = "fixed"

    def __post_init__(self) -> None:
        if self.reference not in REFERENCES:
            raise ValueError(f"reference must be one of {REFERENCES}, got {self.reference!r}")
        if self.views not in VIEWS:
            raise ValueError(f"views must be one of {VIEWS}, got {self.views!r}")

    @property
    def name(self) -> str:
        return f"{self.feature}/{self.reference}" + ("" if self.views == "fixed" else f"/{self.views}")


ImageViewsFn = Callable[[int, int, int, int], Sequence[PerImageViews]]
"""``(n_images, height, width, context) -> views``: the per-image views of the images ``0..n_images-1`` of that
size in one context, one :class:`~con2.methods.features.PerImageViews` per view (features averaged over them)."""


@dataclass(frozen=True)
class ScoringSpec:
    """What a method scores: its scorers, the readings computed, and the headline reading.

    Every scorer is computed under every reading (``tta=False`` scorers under every feature space
    of the readings, on identity views). The headline reading's column is the score's plain name.
    With ``csi``, every fixed-view reading is also computed on CSI's test-time views (``tta``
    scorers only; :func:`score_method` sets it from ``cfg.csi_views``). ``image_views`` draws the
    views of every ``csi`` reading; ``None``: :func:`~con2.methods.features.csi_image_views` with
    ``cfg.csi_views`` views per image (the harness's view distribution, crop scale 0.54).
    """

    scorers: Mapping[str, Scorer]
    readings: tuple[Reading, ...] = (Reading(),)
    headline: Reading = field(default_factory=Reading)
    csi: bool = False
    image_views: ImageViewsFn | None = None

    def __post_init__(self) -> None:
        if self.headline not in self.all_readings():
            raise ValueError(f"headline reading {self.headline.name} is not among the readings computed")

    def all_readings(self) -> tuple[Reading, ...]:
        """The readings, then (with ``csi``) each fixed-view one on CSI's views."""
        fixed = tuple(r for r in self.readings if r.views == "fixed")
        extra = tuple(replace(r, views="csi") for r in fixed) if self.csi else ()
        return (*self.readings, *(r for r in extra if r not in self.readings))

    def computes(self, score: str, reading: Reading) -> bool:
        """Whether ``score`` has a column under ``reading`` (``tta=False`` scorers: matched, fixed views only)."""
        scorer = self.scorers[score]
        return scorer.tta or (reading.reference == "matched" and reading.views == "fixed")

    def column(self, score: str, reading: Reading) -> str:
        """``score`` for the headline reading, ``score@feature/reference`` otherwise."""
        return score if reading == self.headline else f"{score}@{reading.name}"

    def columns(self) -> list[str]:
        """Every score column, headline columns first (the order of ``scores.csv``)."""
        ordered = [self.headline, *(r for r in self.all_readings() if r != self.headline)]
        return [self.column(s, r) for r in ordered for s in self.scorers if self.computes(s, r)]

    def describe(self) -> dict[str, object]:
        """The record's ``scoring`` entry: headline reading per score and every column's reading."""
        cols = {}
        for reading in self.all_readings():
            for score, scorer in self.scorers.items():
                if self.computes(score, reading):
                    cols[self.column(score, reading)] = {
                        "score": score,
                        "feature": reading.feature,
                        "reference": reading.reference,
                        "views": reading.views,
                        "test_time_views": scorer.tta,
                    }
        return {"headline": {s: self.headline.name for s in self.scorers}, "columns": cols}


def _accumulate(sums: dict[str, Tensor], col: str, value: Tensor) -> None:
    """Add ``value`` to ``sums[col]`` (the first value: itself)."""
    sums[col] = sums[col] + value if col in sums else value


ScoringProgress = Callable[[int, int], None]
"""Told ``(passes done, passes in all)`` as :func:`score_method` goes: one pass per fixed view, per CSI view
and context, and the identity pass (each encodes the training and the test images)."""
_PROGRESS: ContextVar[ScoringProgress | None] = ContextVar("scoring_progress", default=None)


@contextmanager
def scoring_progress(report: ScoringProgress | None) -> Iterator[None]:
    """Within the block, every :func:`score_method` tells ``report`` how far it is (None: nobody)."""
    token = _PROGRESS.set(report)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


class Scorable(Protocol):
    """What the test-time loop reads of a method: every :class:`con2.methods.Method` has it (so this
    module needs no import of the class it serves)."""

    name: ClassVar[str]
    cfg: MethodSettings
    encoder: nn.Module
    view_params: ViewParams

    def scoring(self) -> ScoringSpec: ...
    def feature_spaces(self) -> Mapping[str, nn.Module | None]: ...
    def context_after_views(self) -> bool: ...
    def test_views(self) -> list[TestView]: ...
    def test_contexts(self) -> list[ContextFn]: ...
    def diagnostics(self, identity_features: Mapping[tuple[str, int], Mapping[str, Tensor]]) -> dict[str, float]: ...


_Features = dict[str, Tensor]
"""One split's features under one view and context: feature space -> ``[N, d]``."""


def _feature_spaces(method: Scorable, spec: ScoringSpec) -> dict[str, nn.Module | None]:
    """The feature spaces the readings score (and ``encoder``, always), in the readings' order.

    Raises:
        ValueError: a reading names a feature space the method does not declare.
    """
    spaces_all = method.feature_spaces()
    unknown = sorted({r.feature for r in spec.readings} - set(spaces_all))
    if unknown:
        raise ValueError(
            f"{method.name}: readings name feature spaces {unknown} it does not declare ({sorted(spaces_all)})"
        )
    spaces = {name: spaces_all[name] for name in dict.fromkeys(r.feature for r in spec.readings)}
    spaces.setdefault("encoder", None)
    return spaces


@dataclass(frozen=True)
class _Encoder:
    """One encoder pass: the features of a split's images under one view and context, every feature space
    of the readings from that pass (:func:`~con2.methods.features.features`)."""

    method: Scorable
    device: torch.device
    spaces: dict[str, nn.Module | None]
    size: int
    batch_size: int
    channels_last: bool
    context_after_views: bool

    def __call__(self, imgs: Tensor, view: FixedView | PerImageViews, ctx: ContextFn) -> _Features:
        return features(
            self.method.encoder,
            imgs,
            view,
            ctx,
            self.size,
            self.device,
            self.spaces,
            self.batch_size,
            self.channels_last,
            self.context_after_views,
        )


def _csi_draws(
    method: Scorable, spec: ScoringSpec, n_contexts: int, train: Tensor, test: Tensor, val: Tensor | None
) -> list[Sequence[PerImageViews]]:
    """CSI's views per context: per-image random views, image i's seeded by i (whatever the split or the batch),
    drawn by ``spec.image_views`` or else :func:`~con2.methods.features.csi_image_views`."""
    cfg = method.cfg
    height, width = train.shape[-2:]
    n_images = max(len(train), len(test), 0 if val is None else len(val))

    def default_draw(n: int, h: int, w: int, c: int) -> Sequence[PerImageViews]:
        return csi_image_views(n, cfg.csi_views, h, w, method.view_params, cfg.tta_seed, c)

    draw = spec.image_views or default_draw
    return [draw(n_images, height, width, c) for c in range(n_contexts)]


class _Passes:
    """Counts the encoder passes of one :func:`score_method` and tells its :func:`scoring_progress` listener."""

    def __init__(self, total: int) -> None:
        self.done, self.total, self.report = 0, total, _PROGRESS.get()

    def passed(self) -> None:
        """One more pass done."""
        self.done += 1
        if self.report is not None:
            self.report(self.done, self.total)


@dataclass
class _Scoring:
    """One :func:`score_method` call: the score columns summed over the test views (``sums``; the
    validation images' in ``val_sums``), and what each sum is divided by (``divisor``)."""

    spec: ScoringSpec
    encode: _Encoder
    train: Tensor
    test: Tensor
    val: Tensor | None
    need_original: bool  # a reading compares non-identity views with the training set in the original context
    passes: _Passes
    sums: dict[str, Tensor] = field(default_factory=dict)
    val_sums: dict[str, Tensor] = field(default_factory=dict)
    divisor: dict[str, int] = field(default_factory=dict)

    def add(
        self,
        sums: dict[str, Tensor],
        readings: Sequence[Reading],
        te: Mapping[str, Tensor],
        tr: Mapping[str, Tensor],
        tr_orig: Mapping[str, Tensor],
        context: int,
    ) -> None:
        """Add every ``tta`` scorer's scores of test features ``te`` against the training features (``tr``
        under ``matched``, ``tr_orig`` under ``original``) in ``context`` to ``sums``, per reading."""
        for reading in readings:
            ref = tr if reading.reference == "matched" else tr_orig
            for score, scorer in self.spec.scorers.items():
                if scorer.tta:
                    s = scorer.fn(te[reading.feature], ref[reading.feature], context).double().cpu()
                    _accumulate(sums, self.spec.column(score, reading), s)

    def fixed_views(self, test_views: Sequence[TestView], readings: Sequence[Reading]) -> None:
        """Score ``readings`` (the fixed-view ones) on every test view: one encoder pass per split and view."""
        for tv in test_views:
            te, tr = self.encode(self.test, tv.view, tv.pixels), self.encode(self.train, tv.view, tv.pixels)
            tr_orig = self.encode(self.train, tv.view, tv.original) if self.need_original and tv.context != 0 else tr
            self.add(self.sums, readings, te, tr, tr_orig, tv.context)
            if self.val is not None:
                self.add(self.val_sums, readings, self.encode(self.val, tv.view, tv.pixels), tr, tr_orig, tv.context)
            self.passes.passed()
        self.divisor.update({self.spec.column(s, r): len(test_views) for r in readings for s in self.spec.scorers})

    def csi_views(
        self, contexts: Sequence[ContextFn], draws: Sequence[Sequence[PerImageViews]], readings: Sequence[Reading]
    ) -> None:
        """Score ``readings`` (the CSI-view ones) per context on the features averaged over its per-image views."""
        for c, (fn, views) in enumerate(zip(contexts, draws)):
            mean = self.mean_features(c, fn, views)
            self.add(self.sums, readings, mean["te"], mean["tr"], mean.get("tr_orig", mean["tr"]), c)
            if self.val is not None:
                self.add(self.val_sums, readings, mean["va"], mean["tr"], mean.get("tr_orig", mean["tr"]), c)
        self.divisor.update({self.spec.column(s, r): len(contexts) for r in readings for s in self.spec.scorers})

    def mean_features(
        self, context: int, fn: ContextFn, views: Sequence[PerImageViews]
    ) -> dict[str, dict[str, Tensor]]:
        """Each split's features in ``context`` (``fn``), averaged over ``views``: ``te``, ``tr``, ``va`` (with
        validation images) and ``tr_orig`` (the training set in the original context, where a reading needs it)."""
        summed: dict[str, dict[str, Tensor]] = {}
        for v in views:
            parts = {"te": self.encode(self.test, v, fn), "tr": self.encode(self.train, v, fn)}
            if self.val is not None:
                parts["va"] = self.encode(self.val, v, fn)
            if self.need_original and context != 0:
                parts["tr_orig"] = self.encode(self.train, v, identity)
            for key, feats in parts.items():
                acc = summed.setdefault(key, {})
                for name, f in feats.items():
                    _accumulate(acc, name, f)
            self.passes.passed()
        return {key: {k: f / len(views) for k, f in feats.items()} for key, feats in summed.items()}

    def identity_features(
        self, contexts: Sequence[ContextFn]
    ) -> tuple[dict[tuple[str, int], _Features], _Features | None]:
        """Identity views in every context, for ``tta=False`` scorers, diagnostics and ``features.npz``:
        ``(split, context) -> features`` of the training and test images, and the validation images' in the
        original context (None without them)."""
        ident = {
            (split, c): self.encode(imgs, IDENTITY_VIEW, fn)
            for split, imgs in (("train", self.train), ("test", self.test))
            for c, fn in enumerate(contexts)
        }
        val_ident = self.encode(self.val, IDENTITY_VIEW, contexts[0]) if self.val is not None else None
        self.passes.passed()
        return ident, val_ident

    def columns(
        self, summed: dict[str, Tensor], ident_test: _Features, ident_train: _Features
    ) -> dict[str, np.ndarray]:
        """Every score column in the order of ``scores.csv``: a ``tta`` scorer's summed scores over their
        divisor, the others computed on the identity features (``ident_test`` against ``ident_train``)."""
        out: dict[str, np.ndarray] = {}
        for reading in self.spec.all_readings():
            for score, scorer in self.spec.scorers.items():
                col = self.spec.column(score, reading)
                if scorer.tta:
                    out[col] = (summed[col] / self.divisor[col]).float().numpy()
                elif self.spec.computes(score, reading):
                    feat = reading.feature
                    out[col] = scorer.fn(ident_test[feat], ident_train[feat], 0).float().cpu().numpy()
        return {col: out[col] for col in self.spec.columns()}


@torch.no_grad()
def score_method(
    method: Scorable, train: Tensor, test: Tensor, device: torch.device, validation: Tensor | None = None
) -> MethodScores:
    """Score uint8 ``test [M, C, H, W]`` against the normal ``train [n, C, H, W]`` under every reading.

    ``validation``: uint8 ``[V, C, H, W]`` normal validation images, scored the same way (same views,
    same training bank; each image's score depends on the training images only), for a threshold
    set without the test labels; they enter neither the diagnostics nor ``features.npz``.

    Returns the method's :class:`~con2.methods.MethodScores`: one column per (score, reading),
    the ``scoring`` description for the record, the method's diagnostics, the identity-view
    encoder features (L2-normalised, float16) per split and context for ``features.npz``, and the
    validation images' columns.
    """
    cfg = method.cfg
    spec = replace(method.scoring(), csi=getattr(cfg, "csi_views", 0) > 0)
    spaces = _feature_spaces(method, spec)
    after = method.context_after_views()
    encode = _Encoder(method, device, spaces, cfg.image_size, cfg.eval_batch_size, cfg.channels_last, after)
    readings = spec.all_readings()
    val = validation if validation is not None and len(validation) else None
    test_views = method.test_views()
    csi = [r for r in readings if r.views == "csi"]
    contexts = method.test_contexts()
    csi_draws = _csi_draws(method, spec, len(contexts), train, test, val) if csi else []
    passes = _Passes(len(test_views) + sum(len(views) for views in csi_draws) + 1)
    need_original = any(r.reference == "original" for r in readings)
    scoring = _Scoring(spec, encode, train, test, val, need_original, passes)
    scoring.fixed_views(test_views, [r for r in readings if r.views == "fixed"])
    if csi:  # CSI's views: per-image random views, features averaged over them, per context
        scoring.csi_views(contexts, csi_draws, csi)
    ident, val_ident = scoring.identity_features(contexts)
    scores = scoring.columns(scoring.sums, ident["test", 0], ident["train", 0])
    val_scores = scoring.columns(scoring.val_sums, val_ident, ident["train", 0]) if val_ident is not None else {}
    arrays = {
        f"{split}_context{c}": F.normalize(feats["encoder"], dim=1).cpu().numpy().astype(np.float16)
        for (split, c), feats in ident.items()
    }
    extras = method.diagnostics({key: {k: v.cpu() for k, v in feats.items()} for key, feats in ident.items()})
    return MethodScores(scores=scores, extras=extras, arrays=arrays, scoring=spec.describe(), validation=val_scores)


@contextmanager
def scoring_settings(method: Scorable, **changes: Any) -> Iterator[None]:
    """Score ``method`` under other test-time settings for a while (``tta=4, csi_views=1``: cheap test views),
    then restore its own; the settings are a :class:`~con2.methods.spec.MethodSettings` (frozen), so
    nothing else changes."""
    own = method.cfg
    method.cfg = replace(own, **changes)
    try:
        yield
    finally:
        method.cfg = own
