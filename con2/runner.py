"""One run, end to end: data -> method -> training -> scores -> metrics -> run directory.

The run directory (its files, lock, atomic writes and record) belongs to :mod:`con2.rundir`;
this module only orders the steps, checking everything knowable before training first: the
directory's owner and contents, the data (both classes in the test split), the batch size
against the training set, the method and its encoder.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from con2.config import RunConfig
from con2.engine import TrainSettings, fit, load_weights, planned_steps, select_device
from con2.methods import build_method, get_spec
from con2.rundir import (
    CHECKPOINT,
    CONFIG,
    FEATURES,
    RECORD,
    SCORES,
    RunDir,
    build_record,
    check_batch_size,
    load_run_data,
)

__all__ = ["CHECKPOINT", "CONFIG", "FEATURES", "RECORD", "SCORES", "run", "to_tensor", "train_settings"]


def _peak_memory_mb(device: torch.device) -> float:
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    mb = rss_kb / 1024 if sys.platform != "darwin" else rss_kb / 2**20
    if device.type == "cuda":
        mb = max(mb, torch.cuda.max_memory_allocated(device) / 2**20)
    return float(mb)


def to_tensor(images: np.ndarray) -> torch.Tensor:
    """uint8 ``[N, H, W, C]`` -> uint8 ``[N, C, H, W]`` (CPU, contiguous)."""
    return torch.from_numpy(np.array(images, copy=True).transpose(0, 3, 1, 2).copy())


def train_settings(cfg: RunConfig) -> TrainSettings:
    return TrainSettings(
        epochs=cfg.epochs,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        weight_decay=cfg.weight_decay,
        betas=cfg.betas,
        max_steps=cfg.max_steps,
        seed=cfg.seed,
        amp=cfg.amp,
        channels_last=cfg.channels_last,
        checkpoint_every=cfg.checkpoint_every,
        checkpoint_seconds=cfg.checkpoint_seconds,
        progress=cfg.progress,
        fingerprint=cfg.config_hash(),
        compile=cfg.compile,
    )


def run(
    cfg: RunConfig,
    run_dir: str | Path,
    on_epoch_end: Callable[[int], None] | None = None,
    train: bool = True,
) -> dict[str, Any]:
    """Train (or resume) and evaluate one run; return its record.

    With ``train=False`` the weights come from the run directory's checkpoint (``con2 evaluate``).

    Raises:
        RunDirError: another process writes to ``run_dir``, or its checkpoint is corrupt.
        ConfigError: ``run_dir`` holds a checkpoint or record of another config; a batch larger
            than the training set; an invalid method or encoder setting.
        DataError: missing or damaged data, or a test split without both classes.
        OSError: a write failed (disk full, read-only); nothing partial is left.
    """
    t_wall = time.perf_counter()
    rd = RunDir(run_dir)
    with rd.lock():
        if train:
            rd.plan(cfg)  # a checkpoint or record of another config: refuse before loading anything
        data = load_run_data(cfg)
        if train:
            check_batch_size(cfg, len(data.train))
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        device = select_device(cfg.device)
        torch.manual_seed(cfg.seed)  # model initialisation
        method = build_method(cfg)
        rd.write_config(cfg)

        train_images, test_images = to_tensor(data.train), to_tensor(data.test)
        method.prepare(train_images)
        curve = None
        if train:
            settings = train_settings(cfg)
            if cfg.score_at:  # the learning curve: scored after those epochs, before their checkpoints
                from con2.curve import LearningCurve

                final = planned_steps(len(train_images), settings)[2]
                curve = LearningCurve(
                    cfg, method, train_images, test_images, data.test_labels, device, rd, final, rd.checkpoint.is_file()
                )
            result = fit(method, train_images, settings, device, rd.checkpoint, on_epoch_end, curve)
            fit_seconds, ips, curve_seconds = result.fit_seconds, result.images_per_second, result.hook_seconds
            training = {
                "epochs": result.epochs,
                "steps": result.steps,
                "resumed_from_epoch": result.resumed_from_epoch,
                "precision": result.precision,
            }
        else:
            method.to(device)
            load_weights(method, rd.checkpoint, device)
            fit_seconds, ips, curve_seconds = 0.0, None, 0.0
            training = {"epochs": 0, "steps": 0, "resumed_from_epoch": None}

        t_score = time.perf_counter()
        out = method.score(train_images, test_images, device)
        score_seconds = time.perf_counter() - t_score

        rd.write_scores(data.test_labels, out.scores)
        if out.arrays:
            rd.write_features(out.arrays)
        manifest = data.manifest or {}
        record = build_record(
            dataset=cfg.dataset,
            normal_class=data.normal_class,
            method=cfg.method,
            variant=cfg.variant,
            seed=cfg.seed,
            labels=data.test_labels,
            scores=out.scores,
            n_train=len(data.train),
            config=cfg.to_dict(),
            config_hash=cfg.config_hash(),
            split_seed=cfg.split_seed,
            split_sha256=manifest.get("split_sha256"),
            batch_size=min(cfg.batch_size, len(data.train)),
            timing={
                "fit_seconds": fit_seconds,
                "score_seconds": score_seconds,
                "wall_seconds": time.perf_counter() - t_wall,
                "images_per_second": ips,
                **({"curve_seconds": curve_seconds} if curve is not None else {}),
            },
            extras=out.extras,
            scoring=out.scoring or None,
            method_card=get_spec(cfg.method).card(method.params),
            training=training,
            device=str(device),
            peak_memory_mb=_peak_memory_mb(device),
            curve=curve.record() if curve is not None else None,
        )
        rd.write_record(record)
    return record
