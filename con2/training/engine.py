"""The training loop: knows nothing of any method.

A model is any ``nn.Module`` with ``training_loss(images, progress) -> dict[str, Tensor]`` (the
``"loss"`` entry is minimised; the others are logged). The loop owns what every method shares:
device and seeding, the epoch shuffle, the optimiser (AdamW, or LARS as CSI's authors train) with its
per-step schedule (a cosine, after an optional linear warm-up: :func:`warmup_cosine`), bfloat16 autocast
and channels-last memory format, optional ``torch.compile``, progress (a bar on a terminal, else one
line per epoch: :func:`epoch_line`), periodic checkpoints and resume.

Speed: the uint8 training set is moved to the device once and batches are gathered there; a step
(:func:`train_step`) never waits for the device. The loss terms of each step are kept on the
device and read every ``finite_check_every`` steps and at every epoch end, where a non-finite loss
stops the run naming the epoch and step it first appeared in (before any checkpoint is written).

Reproducibility: the shuffle of epoch ``e`` is seeded by ``(seed, e)`` and the random views of step
``s`` by ``(seed, s)``, so a run resumed from the checkpoint of epoch ``e`` draws exactly what the
uninterrupted run drew, and two CPU runs with one seed give identical numbers.
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import torch
from torch import Tensor, nn
from torch.profiler import record_function
from tqdm.auto import tqdm

from con2.config import OPTIMIZERS
from con2.errors import ConfigError, NonFiniteLossError
from con2.faults import fault_point
from con2.training.checkpoints import load_checkpoint, save_checkpoint
from con2.training.device import autocast_enabled, refuse_broken_cpu_bf16_convolutions
from con2.training.steps import step_counts


@dataclass(frozen=True)
class TrainSettings:
    """The budget and optimiser settings of one training run."""

    epochs: int
    batch_size: int
    lr: float = 1e-3
    weight_decay: float = 1e-3  # AdamW's decoupled decay; LARS's L2 term, inside its trust ratio
    betas: tuple[float, float] = (0.9, 0.999)  # AdamW's
    optimizer: str = "adamw"  # adamw | lars (:func:`make_optimizer`)
    momentum: float = 0.9  # LARS's SGD momentum
    trust_coefficient: float = 0.001  # LARS's trust coefficient
    warmup: float = 0.0  # fraction of the run's steps over which lr rises to lr * warmup_factor (:func:`warmup_cosine`)
    warmup_factor: float = 1.0
    drop_last: bool = True  # full batches only; False: each epoch's last partial batch too
    max_steps: int | None = None
    seed: int = 0
    amp: bool = True
    channels_last: bool = True
    checkpoint_every: int = 1
    checkpoint_seconds: float = 0.0  # at least this long between two checkpoints (the last one always)
    progress: bool = True
    fingerprint: str = ""  # identifies the config; a checkpoint of another config is refused
    config: str = ""  # the run's configuration (JSON), stored in the checkpoint: `con2 evaluate` checks it
    compile: bool = False  # torch.compile the model's submodules that hold parameters
    finite_check_every: int = 50  # steps between reads of the on-device loss terms (and every epoch end)


@dataclass
class TrainResult:
    """What the loop measured: the times and rate of the whole run, every session of a resumed one
    included (as far as its checkpoints kept them: ``sessions``)."""

    epochs: int
    steps: int
    fit_seconds: float
    images_per_second: float  # every image trained on over fit_seconds
    resumed_from_epoch: int
    last_terms: dict[str, float] = field(default_factory=dict)
    precision: str = "float32"  # "bfloat16-autocast" where autocast ran (CUDA; CPUs with native bf16)
    hook_seconds: float = 0.0  # time spent in on_epoch_trained (not in fit_seconds)
    sessions: int = 1  # the training sessions (this one and those before a resume) whose time the seconds add up


@dataclass(frozen=True)
class SpentTime:
    """What training has cost so far, over every session of a run: kept in each checkpoint (``timing``) so a
    resumed run reports the whole run's time, not only the last session's."""

    fit_seconds: float = 0.0  # training steps and checkpoints (not the on_epoch_trained hook)
    curve_seconds: float = 0.0  # the on_epoch_trained hook (a learning curve's scoring)
    images: int = 0  # images trained on
    sessions: int = 0  # sessions whose time is counted

    def as_state(self) -> dict[str, float | int]:
        """The checkpoint's ``timing`` entry (plain numbers: ``weights_only`` loading reads them)."""
        return {
            "fit_seconds": self.fit_seconds,
            "curve_seconds": self.curve_seconds,
            "images": self.images,
            "sessions": self.sessions,
        }

    @classmethod
    def from_state(cls, state: object) -> SpentTime:
        """The ``timing`` entry of a checkpoint; none (a checkpoint of an older con2) or a damaged one: nothing
        counted (then only the sessions from here on are timed, and the record says how many)."""
        if not isinstance(state, dict):
            return cls()
        try:
            spent = cls(
                float(state["fit_seconds"]), float(state["curve_seconds"]), int(state["images"]), int(state["sessions"])
            )
        except (KeyError, TypeError, ValueError):
            return cls()
        values = (spent.fit_seconds, spent.curve_seconds, spent.images, spent.sessions)
        return spent if all(math.isfinite(v) and v >= 0 for v in values) else cls()

    def plus(self, fit_seconds: float, curve_seconds: float, images: int) -> SpentTime:
        """This time and one more session's."""
        return SpentTime(
            self.fit_seconds + fit_seconds, self.curve_seconds + curve_seconds, self.images + images, self.sessions + 1
        )


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


def prepare_model(model: nn.Module, settings: TrainSettings, device: torch.device) -> None:
    """Move ``model`` to ``device``, channels-last if set; on CUDA let cuDNN pick its fastest kernels."""
    model.to(device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # fixed shapes: the kernel search runs once per shape
    if settings.channels_last:  # faster convolutions on CUDA and on the CPU (oneDNN) alike
        model.to(memory_format=torch.channels_last)


def make_optimizer(
    model: nn.Module, settings: TrainSettings, device: torch.device, total_steps: int
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    """The optimiser of ``settings.optimizer`` (:func:`build_optimizer`) and its per-step schedule over
    ``total_steps`` (:func:`make_scheduler`)."""
    optimizer = build_optimizer(model, settings, device)
    return optimizer, make_scheduler(optimizer, settings, total_steps)


def build_optimizer(model: nn.Module, settings: TrainSettings, device: torch.device) -> torch.optim.Optimizer:
    """``adamw``: AdamW (fused on CUDA) with ``lr``, ``betas``, ``weight_decay``. ``lars``: timm's Lars with
    ``lr``, ``momentum``, ``weight_decay`` and ``trust_coefficient``, on every parameter (BatchNorm's and the
    biases included), as CSI's authors train (alinlab/CSI common/train.py lines 107-110: torchlars'
    ``LARS(SGD(model.parameters(), lr, momentum=0.9, weight_decay), eps=1e-8, trust_coef=0.001)``).

    Raises:
        ConfigError: an optimiser name not in :data:`con2.config.OPTIMIZERS`.
    """
    if settings.optimizer == "adamw":
        return torch.optim.AdamW(
            model.parameters(),
            lr=settings.lr,
            betas=settings.betas,
            weight_decay=settings.weight_decay,
            fused=device.type == "cuda" or None,  # one kernel per step on CUDA; the CPU keeps the default
        )
    if settings.optimizer == "lars":
        from timm.optim import Lars  # lazy: timm loads only where a run trains with LARS

        # timm's Lars computes torchlars' update (timm 1.0 timm/optim/lars.py; torchlars lars.py, adaptive_lr.cc):
        # per tensor, trust ratio = trust_coefficient * ||w|| / (||g|| + weight_decay * ||w|| + eps), 1 where
        # ||w|| or ||g|| is 0; grad <- (g + weight_decay * w) * ratio; then SGD momentum (the first buffer is that
        # grad, no dampening, no Nesterov) and w <- w - lr * buffer. Where they differ: torchlars scales whatever
        # the weight decay, timm only where weight_decay != 0 unless always_adapt (set: so weight_decay=0 trains as
        # torchlars too); torchlars writes the scaled grad into p.grad, timm leaves p.grad as it is (the update is
        # the same); torchlars computes ||w|| / d * tc, timm tc * ||w|| / d (the last bit may differ).
        return cast(
            torch.optim.Optimizer,
            Lars(
                model.parameters(),
                lr=settings.lr,
                momentum=settings.momentum,
                weight_decay=settings.weight_decay,
                trust_coeff=settings.trust_coefficient,
                eps=1e-8,
                trust_clip=False,
                always_adapt=True,
            ),
        )
    raise ConfigError(
        f"config key 'optimizer' must be one of {', '.join(OPTIMIZERS)}, got {settings.optimizer!r}. "
        f"Fix: --set optimizer=adamw (the paper's) or optimizer=lars (CSI's)"
    )


def warmup_cosine(step: int, total_steps: int, warmup: float, warmup_factor: float) -> float:
    """The learning rate of optimiser step ``step`` (0-based) of ``total_steps`` as a multiple of ``lr``.

    At progress ``p = step / total_steps``: during the warm-up (``p < warmup``) it rises linearly from 1 to
    ``warmup_factor``, ``1 + (warmup_factor - 1) * p / warmup``; after it, it falls on a cosine from
    ``warmup_factor`` whose period is the whole run, ``warmup_factor * (1 + cos(pi * (p - warmup))) / 2``, so
    it ends above 0 where ``warmup > 0``. This is CSI's GradualWarmupScheduler(multiplier=warmup_factor,
    total_epoch=warm-up epochs) after CosineAnnealingLR(T_max=epochs) stepped every iteration
    (alinlab/CSI training/scheduler.py lines 25-37, common/train.py lines 115-124,
    training/unsup/simclr_CSI.py line 74), with two small differences: CSI steps its scheduler after each
    optimiser step with that step's own progress, so its step ``k`` trains at the rate of ``k - 1`` (here step
    ``k`` at its own, as the plain cosine does), and its multiplier of 1 ramps from 0 to ``lr``, where
    ``warmup_factor`` 1 here holds ``lr`` during the warm-up (CSI uses 10).
    """
    p = step / max(1, total_steps)
    if p < warmup:
        return 1.0 + (warmup_factor - 1.0) * p / warmup
    return warmup_factor * (1.0 + math.cos(math.pi * (p - warmup))) / 2.0


def make_scheduler(
    optimizer: torch.optim.Optimizer, settings: TrainSettings, total_steps: int
) -> torch.optim.lr_scheduler.LRScheduler:
    """The per-step learning-rate schedule over ``total_steps``: without a warm-up (``warmup`` 0 and
    ``warmup_factor`` 1) torch's CosineAnnealingLR from ``lr`` to 0, the object every run used before the
    warm-up existed (so those train bit for bit as before); else :func:`warmup_cosine` through LambdaLR."""
    steps = max(1, total_steps)
    if settings.warmup == 0 and settings.warmup_factor == 1:
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    warmup, factor = settings.warmup, settings.warmup_factor

    def rate(step: int) -> float:  # a plain function: LambdaLR's state_dict stores None for it (weights_only loads)
        return warmup_cosine(step, steps, warmup, factor)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, rate)


def compile_submodules(model: nn.Module) -> None:
    """``torch.compile`` every direct submodule that holds parameters, in place (state-dict keys unchanged)."""
    for child in model.children():
        if next(child.parameters(), None) is not None:
            child.compile()


def train_step(
    model: nn.Module,
    x: Tensor,
    progress: float,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    autocast: bool,
) -> dict[str, Tensor]:
    """One optimiser step on uint8 images ``x [N, C, H, W]`` (on the device); returns the loss terms.

    Never synchronises with the device: the terms stay device tensors. The profiler labels the
    parts ``forward`` (views, encoder, heads, loss), ``backward`` and ``optimizer``.
    """
    loss_of = cast(Callable[[Tensor, float], dict[str, Tensor]], model.training_loss)  # every method defines it
    with record_function("forward"), torch.autocast(device_type=x.device.type, dtype=torch.bfloat16, enabled=autocast):
        out = loss_of(x, progress)
    with record_function("backward"):
        optimizer.zero_grad(set_to_none=True)
        out["loss"].backward()
    with record_function("optimizer"):
        optimizer.step()
        scheduler.step()
    return out


def read_terms(pending: list[tuple[int, int, dict[str, Tensor]]]) -> dict[str, float]:
    """Read the loss terms of unchecked steps ``(epoch, step, terms)`` in one transfer; return the last.

    Raises ``NonFiniteLossError`` naming the epoch, step and terms of the first non-finite loss.
    """
    names = list(pending[0][2])
    values = torch.stack([torch.stack([t[k].float() for k in names]) for _, _, t in pending]).cpu()
    bad = (~torch.isfinite(values[:, names.index("loss")])).nonzero()
    if len(bad):
        i = int(bad[0, 0])
        epoch, step, _ = pending[i]
        detail = ", ".join(f"{k}={float(v):.4g}" for k, v in zip(names, values[i]))
        raise NonFiniteLossError(
            f"non-finite loss at epoch {epoch}, step {step} ({detail}); "
            f"lower lr, raise the temperature, or check the input data for NaNs"
        )
    return dict(zip(names, values[-1].tolist()))


def format_duration(seconds: float) -> str:
    """``75.2`` -> ``"1m15s"``, ``3725`` -> ``"1h02m05s"``, ``4.4`` -> ``"4s"`` (whole seconds, rounded)."""
    s = max(0, round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def epoch_line(epoch: int, epochs: int, terms: dict[str, float], images_per_second: float, eta_seconds: float) -> str:
    """The progress line of one finished epoch (1-based), written where no terminal shows a bar:
    ``epoch 3/10  loss=1.234 context=0.567  412 img/s  ETA 1m05s`` (the ETA of the remaining epochs
    at this process's pace so far, learning-curve scoring included; the final scoring not)."""
    loss = " ".join(f"{k}={v:.4g}" for k, v in sorted(terms.items(), key=lambda kv: kv[0] != "loss"))
    return f"epoch {epoch}/{epochs}  {loss}  {images_per_second:.0f} img/s  ETA {format_duration(eta_seconds)}"


def on_terminal() -> bool:
    """True when progress goes to a terminal (tqdm's stream, stderr), where a bar redraws in place."""
    return sys.stderr.isatty()


def save_atomic(obj: dict, path: Path) -> None:
    """Write a checkpoint atomically (see :func:`con2.training.checkpoints.save_checkpoint`)."""
    save_checkpoint(obj, path)


def _resume(
    checkpoint_path: Path | None,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    settings: TrainSettings,
    device: torch.device,
) -> tuple[int, int, SpentTime]:
    """Load the checkpoint at ``checkpoint_path`` into the model, optimiser and schedule, if there is one;
    return ``(epoch, step, time spent)`` it was written at (``(0, 0, nothing)`` without one).

    Raises:
        ConfigError: the checkpoint was written by another configuration (``settings.fingerprint``).
    """
    if checkpoint_path is None or not checkpoint_path.is_file():
        return 0, 0, SpentTime()
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
    return start_epoch, step, SpentTime.from_state(state.get("timing"))


@dataclass
class _Session:
    """One training session of :func:`fit`: what it trains with, how far it is, and what it has cost.

    ``step`` counts optimiser steps over the whole run (a resumed run's included); the times are this
    process's (``t0``: its start; ``hook_seconds``: in ``on_epoch_trained``), ``before`` the earlier sessions'.
    """

    model: nn.Module
    settings: TrainSettings
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    resident: Tensor  # the whole uint8 training set, on the device
    batch: int
    total_steps: int
    per_epoch: int
    autocast: bool
    guard_first_step: bool  # the first step checks the shapes that bf16 on the CPU gets wrong
    step: int
    before: SpentTime
    last_checkpoint: float
    t0: float
    trained_images: int = 0
    hook_seconds: float = 0.0
    terms: dict[str, float] = field(default_factory=dict)  # the last loss terms read from the device
    pending: list[tuple[int, int, dict[str, Tensor]]] = field(default_factory=list)  # not yet read

    def progress(self) -> float:
        """How far training is at the current step, 0 to 1 (the progress a method's loss is given)."""
        return self.step / max(1, self.total_steps)

    def train_epoch(self, epoch: int) -> None:
        """The steps of ``epoch`` (0-based) on a shuffle seeded by ``(seed, epoch)``, its loss terms read."""
        n, device = len(self.resident), self.resident.device
        seed = derived_seed(self.settings.seed, epoch)
        order = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).to(device)
        for b in range(self.per_epoch):
            if self.step >= self.total_steps:
                break
            x = self.resident[order[b * self.batch : (b + 1) * self.batch]]
            torch.manual_seed(derived_seed(self.settings.seed, 1_000_003, self.step))
            out = self.guarded_step(x)
            self.pending.append((epoch, self.step, {k: v.detach() for k, v in out.items()}))
            self.step += 1
            self.trained_images += len(x)
            if len(self.pending) >= self.settings.finite_check_every:
                self.terms, self.pending = read_terms(self.pending), []
        if self.pending:
            self.terms, self.pending = read_terms(self.pending), []

    def guarded_step(self, x: Tensor) -> dict[str, Tensor]:
        """:func:`train_step` on ``x``, the first one of the process under the CPU bf16 guard.

        Raises:
            ConfigError: ``torch.compile`` failed on this machine (``compile=true``).
        """
        guard = refuse_broken_cpu_bf16_convolutions(self.model) if self.guard_first_step else nullcontext()
        self.guard_first_step = False
        try:
            with guard:
                return train_step(self.model, x, self.progress(), self.optimizer, self.scheduler, self.autocast)
        except Exception as exc:
            if self.settings.compile and isinstance(exc, torch._dynamo.exc.TorchDynamoException):
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                raise ConfigError(
                    f"compile=true failed on this machine ({type(exc).__name__}: {first}); set compile=false"
                ) from exc
            raise

    def shown_terms(self) -> dict[str, float]:
        """The loss terms and a method's loss weights at this point of training (CON2's alpha; host floats:
        shown, not summed)."""
        weights = getattr(self.model, "progress_weights", None)
        return {**self.terms, **(weights(self.progress()) if callable(weights) else {})}

    def spent(self) -> SpentTime:
        """The time of the sessions before this one plus this one's so far."""
        return self.before.plus(
            time.perf_counter() - self.t0 - self.hook_seconds, self.hook_seconds, self.trained_images
        )

    def checkpoint(self, epoch: int, path: Path | None, fixed: Mapping[str, str] | None) -> None:
        """Write the checkpoint of ``epoch`` (1-based) to ``path`` (none: only restart the time floor)."""
        self.last_checkpoint = time.perf_counter()
        if path is None:
            return
        save_atomic(
            {
                "epoch": epoch,
                "step": self.step,
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "fingerprint": self.settings.fingerprint,
                **({"config": self.settings.config} if self.settings.config else {}),
                **dict(fixed or {}),
                "timing": self.spent().as_state(),
            },
            path,
        )
        fault_point("after_checkpoint", epoch=epoch)  # tests: a Ctrl-C or kill right here

    def checkpoint_due(self, done: int, epochs: int) -> bool:
        """Whether epoch ``done`` (1-based) writes a checkpoint: the last one always; else every
        ``checkpoint_every`` epochs, but no sooner than ``checkpoint_seconds`` after the last one."""
        every = self.settings.checkpoint_every
        due = every and done % every == 0
        return done == epochs or bool(
            due and time.perf_counter() - self.last_checkpoint >= self.settings.checkpoint_seconds
        )

    def result(self, epochs: int, start_epoch: int) -> TrainResult:
        """What the whole run measured, every session's time included."""
        total = self.spent()
        return TrainResult(
            epochs=epochs,
            steps=self.step,
            fit_seconds=total.fit_seconds,
            images_per_second=total.images / total.fit_seconds if total.fit_seconds > 0 else float("nan"),
            resumed_from_epoch=start_epoch,
            last_terms=self.terms,
            precision="bfloat16-autocast" if self.autocast else "float32",
            hook_seconds=total.curve_seconds,
            sessions=total.sessions,
        )


def _start_session(
    model: nn.Module, images: Tensor, settings: TrainSettings, device: torch.device, checkpoint_path: Path | None
) -> tuple[_Session, int, int]:
    """Seed, put the model and the training set on the device, build the optimiser and its schedule, resume
    from the checkpoint if there is one; return the session, the epoch it starts at and the run's epochs.

    Raises:
        ValueError: ``images`` are not uint8 ``[N, C, H, W]``.
    """
    if images.dtype != torch.uint8 or images.ndim != 4:
        raise ValueError(f"expected uint8 images [N, C, H, W], got {images.dtype} {tuple(images.shape)}")
    n = len(images)
    total_steps, per_epoch, epochs = step_counts(n, settings)
    seed_everything(settings.seed)
    prepare_model(model, settings, device)
    resident = images.to(device)  # the whole uint8 training set, moved once
    optimizer, scheduler = make_optimizer(model, settings, device, total_steps)
    start_epoch, step, before = _resume(checkpoint_path, model, optimizer, scheduler, settings, device)
    last_checkpoint = time.perf_counter()
    if settings.compile:
        compile_submodules(model)
    autocast = autocast_enabled(device, settings.amp)
    session = _Session(
        model,
        settings,
        optimizer,
        scheduler,
        resident,
        batch=min(settings.batch_size, n),
        total_steps=total_steps,
        per_epoch=per_epoch,
        autocast=autocast,
        # compiled graphs skip the hooks the guard sets
        guard_first_step=autocast and device.type == "cpu" and not settings.compile,
        step=step,
        before=before,
        last_checkpoint=last_checkpoint,
        t0=time.perf_counter(),
    )
    return session, start_epoch, epochs


def fit(
    model: nn.Module,
    images: Tensor,
    settings: TrainSettings,
    device: torch.device,
    checkpoint_path: Path | None = None,
    on_epoch_end: Callable[[int], None] | None = None,
    on_epoch_trained: Callable[[int], None] | None = None,
    fixed: Mapping[str, str] | None = None,
) -> TrainResult:
    """Train ``model`` on uint8 images ``[N, C, H, W]`` (CPU tensor) and return timings.

    Resumes from ``checkpoint_path`` if it exists (and matches ``settings.fingerprint``); writes it
    every ``checkpoint_every`` epochs, but no sooner than ``checkpoint_seconds`` after the last one
    (or the start), and always at the end. After the steps of epoch ``e`` (1-based),
    ``on_epoch_trained(e)`` runs before that epoch's checkpoint (so a checkpoint never gets ahead of
    it: e.g. a learning curve's scoring), ``on_epoch_end(e)`` after it. The loop knows nothing of
    what they do; they must leave the weights and the training mode as they found them.

    ``fixed``: entries every checkpoint keeps as they are (what the method decided before training:
    :meth:`con2.methods.base.Method.fixed_state`). Each checkpoint also keeps the time spent so far
    (:class:`SpentTime`), so the result of a resumed run counts every session's seconds and images.
    """
    session, start_epoch, epochs = _start_session(model, images, settings, device, checkpoint_path)
    lines = settings.progress and not on_terminal()  # a log file: one line per epoch, not a redrawn bar
    model.train()
    bar = tqdm(
        range(start_epoch, epochs),
        initial=start_epoch,
        total=epochs,
        desc="train",
        unit="ep",
        disable=not settings.progress or lines,
        dynamic_ncols=True,
    )
    for epoch in bar:
        t_epoch, epoch_images = time.perf_counter(), session.trained_images
        session.train_epoch(epoch)
        shown = session.shown_terms()
        bar.set_postfix({k: f"{v:.3f}" for k, v in shown.items()})
        done = epoch + 1
        t_hook = time.perf_counter()
        if on_epoch_trained is not None:
            on_epoch_trained(done)
            session.hook_seconds += time.perf_counter() - t_hook
        if lines:
            now = time.perf_counter()
            train_seconds = t_hook - t_epoch
            ips = (session.trained_images - epoch_images) / train_seconds if train_seconds > 0 else float("nan")
            eta = (now - session.t0) / (done - start_epoch) * (epochs - done)
            print(epoch_line(done, epochs, shown, ips, eta), flush=True)
        if session.checkpoint_due(done, epochs):
            session.checkpoint(done, checkpoint_path, fixed)
        if on_epoch_end is not None:
            on_epoch_end(done)
    return session.result(epochs, start_epoch)


def load_weights(model: nn.Module, checkpoint_path: Path, device: torch.device) -> None:
    """Load the model weights of a checkpoint written by :func:`fit`."""
    model.load_state_dict(load_checkpoint(checkpoint_path, device)["model"])
