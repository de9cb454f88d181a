"""The training loop: knows nothing of any method.

A model is any ``nn.Module`` with ``training_loss(images, progress) -> dict[str, Tensor]`` (the
``"loss"`` entry is minimised; the others are logged). The loop owns what every method shares:
device and seeding, the epoch shuffle, AdamW with a per-step cosine schedule, bfloat16 autocast
and channels-last memory format, a progress bar, periodic checkpoints and resume.

Reproducibility: the shuffle of epoch ``e`` is seeded by ``(seed, e)`` and the random views of step
``s`` by ``(seed, s)``, so a run resumed from the checkpoint of epoch ``e`` draws exactly what the
uninterrupted run drew, and two CPU runs with one seed give identical numbers.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from con2.errors import ConfigError, NonFiniteLossError
from con2.rundir import load_checkpoint, save_checkpoint


@dataclass(frozen=True)
class TrainSettings:
    """The budget and optimiser settings of one training run."""

    epochs: int
    batch_size: int
    lr: float = 1e-3
    weight_decay: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    max_steps: int | None = None
    seed: int = 0
    amp: bool = True
    channels_last: bool = True
    checkpoint_every: int = 1
    progress: bool = True
    fingerprint: str = ""  # identifies the config; a checkpoint of another config is refused


@dataclass
class TrainResult:
    """What the loop measured."""

    epochs: int
    steps: int
    fit_seconds: float
    images_per_second: float
    resumed_from_epoch: int
    last_terms: dict[str, float] = field(default_factory=dict)


def select_device(name: str = "auto") -> torch.device:
    """``auto`` picks CUDA when available, else the CPU; ``cuda`` without a GPU is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device={name!r} but no CUDA device is available; use device=cpu or device=auto")
    return torch.device(name)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (all devices)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def derived_seed(*parts: int) -> int:
    """A 63-bit seed derived from integers (e.g. run seed and step), stable across platforms."""
    h = 1469598103934665603
    for p in parts:
        h = ((h ^ (p & 0xFFFFFFFFFFFFFFFF)) * 1099511628211) & 0x7FFFFFFFFFFFFFFF
    return h


def steps_per_epoch(n_images: int, batch_size: int) -> int:
    """Full batches per epoch (the last, partial batch is dropped so BatchNorm sees equal batches)."""
    return max(1, n_images // batch_size)


def save_atomic(obj: dict, path: Path) -> None:
    """Write a checkpoint atomically (see :func:`con2.rundir.save_checkpoint`)."""
    save_checkpoint(obj, path)


def fit(
    model: nn.Module,
    images: Tensor,
    settings: TrainSettings,
    device: torch.device,
    checkpoint_path: Path | None = None,
    on_epoch_end: Callable[[int], None] | None = None,
) -> TrainResult:
    """Train ``model`` on uint8 images ``[N, C, H, W]`` (CPU tensor) and return timings.

    Resumes from ``checkpoint_path`` if it exists (and matches ``settings.fingerprint``); writes it
    every ``checkpoint_every`` epochs and at the end.
    """
    if images.dtype != torch.uint8 or images.ndim != 4:
        raise ValueError(f"expected uint8 images [N, C, H, W], got {images.dtype} {tuple(images.shape)}")
    n = len(images)
    batch = min(settings.batch_size, n)
    per_epoch = steps_per_epoch(n, batch)
    total_steps = settings.epochs * per_epoch
    if settings.max_steps is not None:
        total_steps = min(total_steps, settings.max_steps)
    epochs = math.ceil(total_steps / per_epoch)

    seed_everything(settings.seed)
    model.to(device)
    cuda = device.type == "cuda"
    if settings.channels_last:  # faster convolutions on CUDA and on the CPU (oneDNN) alike
        model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.lr, betas=settings.betas, weight_decay=settings.weight_decay
    )
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(1, total_steps))

    start_epoch, step = 0, 0
    if checkpoint_path is not None and checkpoint_path.is_file():
        state = load_checkpoint(checkpoint_path, device)
        if state.get("fingerprint") != settings.fingerprint:
            raise ConfigError(
                f"checkpoint {checkpoint_path} was written by another configuration; rerun with --replace-stale "
                f"(or --force) to retrain, or use a new run directory"
            )
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start_epoch, step = state["epoch"], state["step"]
        if settings.progress or start_epoch:
            print(f"resuming from {checkpoint_path} at epoch {start_epoch} (step {step})", flush=True)

    def checkpoint(epoch: int) -> None:
        if checkpoint_path is not None:
            save_atomic(
                {
                    "epoch": epoch,
                    "step": step,
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(),
                    "fingerprint": settings.fingerprint,
                },
                checkpoint_path,
            )

    terms: dict[str, float] = {}
    trained_images, t0 = 0, time.perf_counter()
    model.train()
    bar = tqdm(
        range(start_epoch, epochs), initial=start_epoch, total=epochs, desc="train", unit="ep",
        disable=not settings.progress, dynamic_ncols=True,
    )
    for epoch in bar:
        order = torch.randperm(n, generator=torch.Generator().manual_seed(derived_seed(settings.seed, epoch)))
        for b in range(per_epoch):
            if step >= total_steps:
                break
            x = images[order[b * batch : (b + 1) * batch]].to(device, non_blocking=True)
            torch.manual_seed(derived_seed(settings.seed, 1_000_003, step))
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=cuda and settings.amp):
                out = model.training_loss(x, step / max(1, total_steps))
            loss = out["loss"]
            if not torch.isfinite(loss):
                detail = ", ".join(f"{k}={float(v.detach()):.4g}" for k, v in out.items())
                raise NonFiniteLossError(
                    f"non-finite loss at epoch {epoch}, step {step} ({detail}); "
                    f"lower lr, raise the temperature, or check the input data for NaNs"
                )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            step += 1
            trained_images += len(x)
        terms = {k: float(v.detach()) for k, v in out.items()}
        bar.set_postfix({k: f"{v:.3f}" for k, v in terms.items()})
        done = epoch + 1
        if done == epochs or (settings.checkpoint_every and done % settings.checkpoint_every == 0):
            checkpoint(done)
        if on_epoch_end is not None:
            on_epoch_end(done)
    seconds = time.perf_counter() - t0
    return TrainResult(
        epochs=epochs,
        steps=step,
        fit_seconds=seconds,
        images_per_second=trained_images / seconds if seconds > 0 else float("nan"),
        resumed_from_epoch=start_epoch,
        last_terms=terms,
    )


def load_weights(model: nn.Module, checkpoint_path: Path, device: torch.device) -> None:
    """Load the model weights of a checkpoint written by :func:`fit`."""
    model.load_state_dict(load_checkpoint(checkpoint_path, device)["model"])
