"""The test-time loop shared by every method: fixed views, contexts, feature spaces, readings.

A method never writes its own scoring loop. It declares (see :class:`con2.methods.Method`):

* a *test plan*: the fixed test-time views, each with the context it acts in (:class:`TestView`);
* its *feature spaces*: named maps of the encoder output (``"encoder"`` itself, a projection
  head, a head that returns projections and logits, ...);
* its *scorers*: named functions ``(test [M, d], train [n, d], context) -> [M]`` (higher = more
  anomalous), averaged over the plan's views (or, for ``tta=False`` scorers, computed on the
  identity view alone);
* its *readings*: which feature space is scored, and which training set a view in a non-identity
  context is compared with: ``matched`` (the training set through the same context transform)
  or ``original`` (the training set in the original context, the paper's formula as printed).

:func:`score_method` runs the plan once: one encoder pass per (split, view), every feature space
from that pass, every (score, reading) accumulated. So one trained model is scored under every
reading without retraining, and scoring never touches the weights. The headline reading of each
score is written under the score's plain name (``nnd``); every other reading under
``<score>@<feature>/<reference>`` (``nnd@content/original``).

A plan (:func:`tta_plan`) holds A views drawn once from a seed, split evenly over the K contexts
(the first A/K on x, the next A/K on t_1(x), ...), the same for training and test images; ``tta =
0`` means one identity view on x alone. :func:`crossed_plan` applies every view in every context
(CSI's samples x rotations).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from con2.augment import DEFAULT_VIEWS, IDENTITY_VIEW, FixedView, ViewParams, draw_fixed_views, normalize, to_float

if TYPE_CHECKING:
    from con2.methods.base import Method, MethodScores

Plan = list[tuple[FixedView, int]]
ContextFn = Callable[[Tensor], Tensor]
REFERENCES = ("matched", "original")


def identity(x: Tensor) -> Tensor:
    """The identity context transform."""
    return x


def tta_plan(n_views: int, n_contexts: int, seed: int, params: ViewParams = DEFAULT_VIEWS) -> Plan:
    """The A fixed test-time views and the context each is applied in (A divisible by K, or 0)."""
    if n_views == 0:
        return [(IDENTITY_VIEW, 0)]
    if n_views % n_contexts:
        raise ValueError(f"{n_views} test-time views cannot be split evenly over {n_contexts} contexts")
    per_context = n_views // n_contexts
    views = draw_fixed_views(n_views, seed, params)
    return [(v, i // per_context) for i, v in enumerate(views)]


@dataclass(frozen=True)
class TestView:
    """One entry of a test plan: a fixed view applied in one context.

    ``pixels`` maps uint8 images into the view's context (test images, and training images under
    the ``matched`` reading); ``original`` maps training images under the ``original`` reading
    (the identity for plain contexts). The fixed ``view`` then acts on both.
    """

    view: FixedView
    context: int
    pixels: ContextFn = identity
    original: ContextFn = identity


def split_plan(
    n_views: int, contexts: Sequence[ContextFn], seed: int, params: ViewParams = DEFAULT_VIEWS
) -> list[TestView]:
    """:func:`tta_plan` as test views: A views split evenly over the contexts (CON2's "half on x, half on x^C")."""
    return [TestView(v, c, contexts[c]) for v, c in tta_plan(n_views, len(contexts), seed, params)]


def crossed_plan(
    n_samples: int, contexts: Sequence[ContextFn], seed: int, params: ViewParams = DEFAULT_VIEWS
) -> list[TestView]:
    """Every one of the first ``n_samples`` fixed views in every context (``0``: the identity view)."""
    views = [v for v, _ in tta_plan(n_samples, 1, seed, params)]
    return [TestView(v, c, fn) for v in views for c, fn in enumerate(contexts)]


@dataclass(frozen=True)
class Scorer:
    """An anomaly score on one feature space: ``fn(test [M, d], train [n, d], context) -> [M]``.

    ``tta=False``: computed once on identity-view features in the original context (SSD), not
    averaged over the plan.
    """

    fn: Callable[[Tensor, Tensor, int], Tensor]
    tta: bool = True


@dataclass(frozen=True)
class Reading:
    """Which feature space is scored and which training set non-identity views are compared with."""

    feature: str = "encoder"
    reference: str = "matched"

    def __post_init__(self) -> None:
        if self.reference not in REFERENCES:
            raise ValueError(f"reference must be one of {REFERENCES}, got {self.reference!r}")

    @property
    def name(self) -> str:
        return f"{self.feature}/{self.reference}"


@dataclass(frozen=True)
class ScoringSpec:
    """What a method scores: its scorers, the readings computed, and the headline reading.

    Every scorer is computed under every reading (``tta=False`` scorers under every feature space
    of the readings, on identity views). The headline reading's column is the score's plain name.
    """

    scorers: Mapping[str, Scorer]
    readings: tuple[Reading, ...] = (Reading(),)
    headline: Reading = field(default_factory=Reading)

    def __post_init__(self) -> None:
        if self.headline not in self.readings:
            raise ValueError(f"headline reading {self.headline.name} is not among the readings computed")

    def column(self, score: str, reading: Reading) -> str:
        """``score`` for the headline reading, ``score@feature/reference`` otherwise."""
        return score if reading == self.headline else f"{score}@{reading.name}"

    def columns(self) -> list[str]:
        """Every score column, headline columns first (the order of ``scores.csv``)."""
        ordered = [self.headline, *(r for r in self.readings if r != self.headline)]
        out: list[str] = []
        for reading in ordered:
            for score, scorer in self.scorers.items():
                if scorer.tta or reading.reference == "matched":
                    out.append(self.column(score, reading))
        return out

    def describe(self) -> dict[str, object]:
        """The record's ``scoring`` entry: headline reading per score and every column's reading."""
        cols = {}
        for reading in self.readings:
            for score, scorer in self.scorers.items():
                if scorer.tta or reading.reference == "matched":
                    cols[self.column(score, reading)] = {
                        "score": score,
                        "feature": reading.feature,
                        "reference": reading.reference,
                        "test_time_views": scorer.tta,
                    }
        return {"headline": {s: self.headline.name for s in self.scorers}, "columns": cols}


@torch.no_grad()
def features(
    encoder: nn.Module,
    images: Tensor,
    view: FixedView,
    context: ContextFn,
    size: int,
    device: torch.device,
    spaces: Mapping[str, nn.Module | None],
    batch_size: int = 256,
    channels_last: bool = True,
) -> dict[str, Tensor]:
    """Features of uint8 images ``[n, C, H, W]`` under one context and one fixed view, in every space.

    The context acts on raw pixels, then the view, then mean = std = 0.5 normalisation, as in
    training; one encoder pass, then each space's head (``None``: the encoder output itself).
    Returns ``{space: [n, d_space]}`` (float32, on ``device``).
    """
    was_training = encoder.training
    encoder.eval()
    heads = [h for h in spaces.values() if h is not None]
    head_modes = [h.training for h in heads]
    for h in heads:
        h.eval()
    out: dict[str, list[Tensor]] = {name: [] for name in spaces}
    try:
        for i in range(0, len(images), batch_size):
            x = context(images[i : i + batch_size].to(device))
            x = normalize(view(to_float(x), size))
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
                h = encoder(x)
                for name, head in spaces.items():
                    out[name].append((h if head is None else head(h)).float())
    finally:
        encoder.train(was_training)
        for head, mode in zip(heads, head_modes):
            head.train(mode)
    return {name: torch.cat(parts) for name, parts in out.items()}


def view_features(
    encoder: nn.Module,
    images: Tensor,
    view: FixedView,
    context: ContextFn,
    size: int,
    device: torch.device,
    batch_size: int = 256,
    head: nn.Module | None = None,
    channels_last: bool = True,
) -> Tensor:
    """Features ``[n, d]`` of uint8 images ``[n, C, H, W]`` under one context and one view (one space)."""
    return features(encoder, images, view, context, size, device, {"f": head}, batch_size, channels_last)["f"]


def iter_plan_features(
    encoder: nn.Module,
    train: Tensor,
    test: Tensor,
    plan: Plan,
    contexts: Sequence[ContextFn],
    size: int,
    device: torch.device,
    batch_size: int = 256,
) -> Iterator[tuple[Tensor, Tensor]]:
    """Yield ``(train_features [n, d], test_features [M, d])`` for each view of the plan, one at a time."""
    for view, c in plan:
        yield (
            view_features(encoder, train, view, contexts[c], size, device, batch_size),
            view_features(encoder, test, view, contexts[c], size, device, batch_size),
        )


@torch.no_grad()
def score_method(method: Method, train: Tensor, test: Tensor, device: torch.device) -> MethodScores:
    """Score uint8 ``test [M, C, H, W]`` against the normal ``train [n, C, H, W]`` under every reading.

    Returns the method's :class:`~con2.methods.MethodScores`: one column per (score, reading),
    the ``scoring`` description for the record, the method's diagnostics, and the identity-view
    encoder features (L2-normalised, float16) per split and context for ``features.npz``.
    """
    from con2.methods.base import MethodScores

    spec = method.scoring()
    spaces_all = method.feature_spaces()
    unknown = sorted({r.feature for r in spec.readings} - set(spaces_all))
    if unknown:
        raise ValueError(
            f"{method.name}: readings name feature spaces {unknown} it does not declare ({sorted(spaces_all)})"
        )
    spaces = {name: spaces_all[name] for name in dict.fromkeys(r.feature for r in spec.readings)}
    spaces.setdefault("encoder", None)
    size, bs, cl = method.cfg.image_size, method.cfg.eval_batch_size, method.cfg.channels_last
    run = lambda imgs, view, ctx: features(method.encoder, imgs, view, ctx, size, device, spaces, bs, cl)  # noqa: E731
    need_original = any(r.reference == "original" for r in spec.readings)

    plan = method.test_plan()
    sums: dict[str, Tensor] = {}
    for tv in plan:
        te, tr = run(test, tv.view, tv.pixels), run(train, tv.view, tv.pixels)
        tr_orig = run(train, tv.view, tv.original) if need_original and tv.context != 0 else tr
        for reading in spec.readings:
            ref = tr if reading.reference == "matched" else tr_orig
            for score, scorer in spec.scorers.items():
                if scorer.tta:
                    col = spec.column(score, reading)
                    s = scorer.fn(te[reading.feature], ref[reading.feature], tv.context).double().cpu()
                    sums[col] = sums[col] + s if col in sums else s

    # Identity views in every context: tta=False scorers, diagnostics and features.npz.
    ident = {
        (split, c): run(imgs, IDENTITY_VIEW, fn)
        for split, imgs in (("train", train), ("test", test))
        for c, fn in enumerate(method.test_contexts())
    }
    scores: dict[str, np.ndarray] = {}
    for reading in spec.readings:
        for score, scorer in spec.scorers.items():
            col = spec.column(score, reading)
            if scorer.tta:
                scores[col] = (sums[col] / len(plan)).float().numpy()
            elif reading.reference == "matched":
                f = reading.feature
                scores[col] = scorer.fn(ident["test", 0][f], ident["train", 0][f], 0).float().cpu().numpy()
    scores = {col: scores[col] for col in spec.columns()}
    arrays = {
        f"{split}_context{c}": F.normalize(feats["encoder"], dim=1).cpu().numpy().astype(np.float16)
        for (split, c), feats in ident.items()
    }
    extras = method.diagnostics({key: {k: v.cpu() for k, v in feats.items()} for key, feats in ident.items()})
    return MethodScores(scores=scores, extras=extras, arrays=arrays, scoring=spec.describe())
