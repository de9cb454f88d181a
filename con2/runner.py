"""One run, end to end: data -> method -> training -> scores -> metrics -> run directory.

Run directory layout::

    config.yaml      the resolved configuration
    checkpoint.pt    weights + optimiser state (resume point), written atomically
    scores.csv       per-sample test scores (index, label, one column per score)
    features.npz     identity-view representations per split and context (float16)
    record.json      the one-run record (written last, atomically: present = run complete)
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata as md
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import yaml

from con2.config import RunConfig
from con2.data import load_one_class
from con2.engine import TrainSettings, fit, load_weights, select_device
from con2.methods import build_method, get_spec
from con2.metrics import auroc
from con2.preprocess import center_crop
from con2.records import SCHEMA_VERSION, write_record

RECORD, CHECKPOINT, SCORES, FEATURES, CONFIG = "record.json", "checkpoint.pt", "scores.csv", "features.npz", "config.yaml"


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("torch", "torchvision", "kornia", "timm", "numpy", "scikit-learn", "con2-bench"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def _git_commit() -> str | None:
    try:
        res = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5
        )
        return res.stdout.strip() or None if res.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


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
        epochs=cfg.epochs, batch_size=cfg.batch_size, lr=cfg.lr, weight_decay=cfg.weight_decay,
        betas=cfg.betas, max_steps=cfg.max_steps, seed=cfg.seed, amp=cfg.amp,
        channels_last=cfg.channels_last, checkpoint_every=cfg.checkpoint_every,
        progress=cfg.progress, fingerprint=cfg.config_hash(),
    )


def _write_atomic_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def run(
    cfg: RunConfig,
    run_dir: str | Path,
    on_epoch_end: Callable[[int], None] | None = None,
    train: bool = True,
) -> dict[str, Any]:
    """Train (or resume) and evaluate one run; return its record.

    With ``train=False`` the weights come from the run directory's checkpoint (``con2 evaluate``).
    """
    t_wall = time.perf_counter()
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = select_device(cfg.device)
    data = load_one_class(cfg.dataset, cfg.data_dir, cfg.normal_class, seed=cfg.split_seed, size=cfg.data_size or cfg.image_size)
    torch.manual_seed(cfg.seed)  # model initialisation
    method = build_method(cfg)
    _write_atomic_text(run_dir / CONFIG, yaml.safe_dump(cfg.to_dict(), sort_keys=False))

    train_images, test_images = (center_crop(to_tensor(a), cfg.center_crop) for a in (data.train, data.test))
    if train:
        result = fit(method, train_images, train_settings(cfg), device, run_dir / CHECKPOINT, on_epoch_end)
        fit_seconds, epochs, steps, ips = result.fit_seconds, result.epochs, result.steps, result.images_per_second
        resumed_from = result.resumed_from_epoch
    else:
        method.to(device)
        load_weights(method, run_dir / CHECKPOINT, device)
        fit_seconds, epochs, steps, ips, resumed_from = 0.0, 0, 0, None, None

    t_score = time.perf_counter()
    out = method.score(train_images, test_images, device)
    score_seconds = time.perf_counter() - t_score

    labels = data.test_labels
    metrics: dict[str, Any] = {"auroc": {name: auroc(labels, s) for name, s in out.scores.items()}}
    metrics.update(out.extras)
    table = pd.DataFrame({"index": np.arange(len(labels)), "label": labels, **out.scores})
    _write_atomic_text(run_dir / SCORES, table.to_csv(index=False))
    if out.arrays:
        tmp = run_dir / (FEATURES + ".tmp.npz")
        np.savez_compressed(tmp, **out.arrays)
        os.replace(tmp, run_dir / FEATURES)

    record = {
        "schema_version": SCHEMA_VERSION,
        "dataset": cfg.dataset,
        "normal_class": data.normal_class,
        "method": cfg.method,
        "variant": cfg.variant,
        "seed": cfg.seed,
        "metrics": metrics,
        "timing": {
            "fit_seconds": fit_seconds, "score_seconds": score_seconds,
            "wall_seconds": time.perf_counter() - t_wall, "images_per_second": ips,
        },
        "peak_memory_mb": _peak_memory_mb(device),
        "n_train": len(data.train), "n_test": len(data.test), "n_anomalous": data.n_anomalous,
        "epochs": epochs, "steps": steps, "resumed_from_epoch": resumed_from,
        "scoring": out.scoring or None,
        "method_card": get_spec(cfg.method).card(method.params),
        "config": cfg.to_dict(), "config_hash": cfg.config_hash(),
        "versions": _versions(), "git_commit": _git_commit(), "device": str(device),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    write_record(record, run_dir / RECORD)
    return record
