"""The learning curve of a run: the model scored after chosen epochs, under every reading.

``score_at`` (a list of epochs) makes the runner hand :class:`LearningCurve` to the training loop
(:func:`con2.training.engine.fit`'s ``on_epoch_trained``): after each of those epochs, and after the last
one, the model is scored by the shared test-time loop (:func:`con2.methods.scoring.score_method`) on the
run's training and test images, and the AUROC of every score column (every reading) and the
method's diagnostics (e.g. the silhouette) become one point. Points go to ``curve.csv`` in the run
directory as they are computed (atomically) and to the record's ``curve``.

What a point costs is ``curve_views``: that many of the method's fixed test-time views (rounded
up to a multiple of its contexts; 0: the identity view alone) and one CSI view per image and
context, cheap test views; ``curve_views = None`` scores with the run's own test views, the ones its final
scores use, so the last point then equals the record's final AUROC column for column.

Scoring never changes the run: it runs under ``no_grad`` with every module in eval mode (BatchNorm
running statistics untouched) and restores the training mode, and it runs inside a saved and
restored RNG state (torch on the CPU and the run's GPU, NumPy, Python), so a run with a curve
trains exactly as one without and ends with the same numbers. After a kill, the run resumes from
its checkpoint and keeps the points already in ``curve.csv``; points after the checkpoint's epoch
are computed again when training reaches them.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from con2.atomic import remove
from con2.maths.metrics import auroc
from con2.methods.scoring import scoring_settings

if TYPE_CHECKING:
    from con2.config import RunConfig
    from con2.methods.base import Method
    from con2.run.rundir import RunDir


@contextmanager
def preserved_rng(device: torch.device) -> Iterator[None]:
    """Run a block without moving any random stream: torch (CPU and ``device``), NumPy and Python."""
    np_state, py_state = np.random.get_state(), random.getstate()
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices, device_type="cuda"):
        try:
            yield
        finally:
            np.random.set_state(np_state)
            random.setstate(py_state)


def curve_settings(cfg: RunConfig, n_contexts: int) -> dict[str, int]:
    """The test-time settings of a curve point: ``{}`` for the run's own test views, else ``tta`` and ``csi_views``."""
    if cfg.curve_views is None:
        return {}
    tta = math.ceil(cfg.curve_views / n_contexts) * n_contexts
    return {"tta": tta, "csi_views": min(cfg.csi_views, 1)}


def curve_epochs(score_at: tuple[int, ...], final_epoch: int) -> list[int]:
    """The epochs scored: those of ``score_at`` that training reaches, and the last one (none without ``score_at``)."""
    if not score_at:
        return []
    return sorted({e for e in score_at if e <= final_epoch} | {final_epoch})


class LearningCurve:
    """The ``on_epoch_trained`` hook that scores ``method`` after the curve's epochs.

    Args:
        cfg: the run's config (``score_at``, ``curve_views``, ``csi_views``).
        method: the model being trained.
        train, test: uint8 ``[n, C, H, W]`` / ``[M, C, H, W]`` images (CPU), as the final scoring gets them.
        labels: ``[M]`` test labels (1 = anomaly).
        device: where scoring runs.
        run_dir: where ``curve.csv`` lives.
        final_epoch: the epoch training ends at.
        resume: keep the points of an existing ``curve.csv`` (the run resumes from a checkpoint);
            else start a new curve (a stale file is removed).
    """

    def __init__(
        self,
        cfg: RunConfig,
        method: Method,
        train: torch.Tensor,
        test: torch.Tensor,
        labels: np.ndarray,
        device: torch.device,
        run_dir: RunDir,
        final_epoch: int,
        resume: bool,
    ) -> None:

        self.cfg, self.method, self.train, self.test = cfg, method, train, test
        self.labels, self.device, self.run_dir = np.asarray(labels), device, run_dir
        self.epochs = set(curve_epochs(cfg.score_at, final_epoch))
        self.settings = curve_settings(cfg, len(method.test_contexts()))
        if resume:
            self.points = {p["epoch"]: p for p in run_dir.read_curve() if p["epoch"] in self.epochs}
        else:
            remove(run_dir.curve)
            self.points = {}

    def __call__(self, epoch: int) -> None:
        if epoch in self.epochs:
            self.points[epoch] = self.score(epoch)
            self.run_dir.write_curve(list(self.points.values()))

    def score(self, epoch: int) -> dict[str, Any]:
        """One point: the AUROC of every score column and the method's diagnostics at ``epoch``."""
        t0 = time.perf_counter()
        with preserved_rng(self.device), scoring_settings(self.method, **self.settings):
            out = self.method.score(self.train, self.test, self.device)
        return {
            "epoch": int(epoch),
            "seconds": time.perf_counter() - t0,
            "auroc": {col: auroc(self.labels, s) for col, s in out.scores.items()},
            "extras": {k: float(v) for k, v in out.extras.items() if isinstance(v, (int, float))},
        }

    def record(self) -> dict[str, Any]:
        """The record's ``curve``: the views it used and its points in epoch order."""

        def finite(x: dict[str, float]) -> dict[str, float | None]:
            return {k: (v if math.isfinite(v) else None) for k, v in x.items()}

        points = [
            {**p, "auroc": p["auroc"], "extras": finite(p.get("extras", {}))} for _, p in sorted(self.points.items())
        ]
        return {"views": self.cfg.curve_views, "points": points}
