"""How many optimiser steps a training run takes: the one count the engine trains and the cost plan prices.

A *step* is one optimiser step on one batch. :func:`steps_per_epoch` counts the batches of an epoch
(with or without its last, partial batch); :func:`step_counts` gives a run's total steps, steps per epoch
and epochs, as :func:`con2.training.engine.fit` runs them. Pure arithmetic without torch, so the cost plan
(``con2 plan``, :mod:`con2.grid.plan`) counts a run exactly as the engine trains it.
"""

from __future__ import annotations

import math
from typing import Protocol


class StepBudget(Protocol):
    """The settings a run's step count rests on (:class:`con2.training.engine.TrainSettings` has them)."""

    @property
    def epochs(self) -> int: ...

    @property
    def batch_size(self) -> int: ...

    @property
    def drop_last(self) -> bool: ...

    @property
    def max_steps(self) -> int | None: ...


def steps_per_epoch(n_images: int, batch_size: int, drop_last: bool = True) -> int:
    """Batches per epoch: ``drop_last``, full batches only (the last, partial batch is dropped so BatchNorm
    sees equal batches); else every batch, the last one partial (``ceil(n / batch)``, as a DataLoader without
    ``drop_last``)."""
    return max(1, n_images // batch_size if drop_last else -(-n_images // batch_size))


def step_counts(n_images: int, settings: StepBudget) -> tuple[int, int, int]:
    """``(total steps, steps per epoch, epochs)`` that :func:`con2.training.engine.fit` runs on ``n_images``
    images (a batch larger than the training set is the training set)."""
    per_epoch = steps_per_epoch(n_images, min(settings.batch_size, n_images), settings.drop_last)
    total = settings.epochs * per_epoch
    if settings.max_steps is not None:
        total = min(total, settings.max_steps)
    return total, per_epoch, math.ceil(total / per_epoch)
