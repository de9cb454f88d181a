"""The training recipe's keys (CSI's authors' recipe): LARS, the warm-up before the cosine, the last partial batch.

Each is checked against a slow, obviously correct reference written out here: CSI's GradualWarmupScheduler
formulas, torchlars' update, a DataLoader without ``drop_last``; and the config hash of every run configured
before these keys existed must not change.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math

import pytest
import torch

from con2.config import OMITTED_AT_DEFAULT, RUNTIME_KEYS, RunConfig, config_diff, make_config
from con2.errors import ConfigError
from con2.grid import plan
from con2.run.execute import train_settings
from con2.run.runner import CHECKPOINT, run
from con2.training.checkpoints import load_checkpoint
from con2.training.engine import (
    TrainSettings,
    build_optimizer,
    fit,
    make_optimizer,
    warmup_cosine,
)
from con2.training.steps import step_counts, steps_per_epoch

NEW_KEYS = {
    "optimizer": "lars",
    "momentum": 0.5,
    "trust_coefficient": 0.02,
    "warmup": 0.1,
    "warmup_factor": 10.0,
    "drop_last": False,
}


# ------------------------------------------------------------------------------------------ the schedule
def csi_lr(epoch: float, lr: float, multiplier: float, warmup_epochs: int, epochs: int) -> float:
    """CSI's learning rate at (fractional) epoch ``epoch``: GradualWarmupScheduler (alinlab/CSI
    training/scheduler.py lines 25-37) in front of CosineAnnealingLR(T_max=epochs) (common/train.py lines
    115-124), stepped with ``epoch - 1 + n / len(loader)`` (training/unsup/simclr_CSI.py line 74)."""
    if epoch <= warmup_epochs:  # get_lr while last_epoch <= total_epoch (multiplier > 1)
        return lr * ((multiplier - 1.0) * epoch / warmup_epochs + 1.0)
    # after: the cosine's closed form at epoch - total_epoch, its base_lrs set to base_lr * multiplier
    peak = lr * multiplier
    return 0 + (peak - 0) * (1 + math.cos(math.pi * (epoch - warmup_epochs) / epochs)) / 2


def lrs_of(scheduler: torch.optim.lr_scheduler.LRScheduler, steps: int) -> list[float]:
    """The learning rate each of the first ``steps`` optimiser steps trains at (the engine steps the
    scheduler once after every optimiser step)."""
    out = []
    for _ in range(steps):
        out.append(scheduler.optimizer.param_groups[0]["lr"])
        scheduler.optimizer.step()  # no gradients: nothing moves (torch warns of a schedule stepped before it)
        scheduler.step()
    return out


def test_the_warm_up_and_cosine_follow_csis_schedule():
    # CSI's defaults: 1000 epochs, 10 of warm-up, lr 0.1 -> 1.0 (multiplier 10); 40 steps an epoch here
    epochs, per_epoch, warmup_epochs = 1000, 40, 10
    total = epochs * per_epoch
    settings = TrainSettings(epochs=epochs, batch_size=8, lr=0.1, warmup=warmup_epochs / epochs, warmup_factor=10)
    _, scheduler = make_optimizer(torch.nn.Linear(2, 1), settings, torch.device("cpu"), total)
    assert isinstance(scheduler, torch.optim.lr_scheduler.LambdaLR)
    in_warmup, at_end, in_cosine = 5 * per_epoch + 7, warmup_epochs * per_epoch, 600 * per_epoch + 13
    lrs = lrs_of(scheduler, in_cosine + 1)
    for step in (in_warmup, at_end, in_cosine):
        want = csi_lr(step / per_epoch, 0.1, 10.0, warmup_epochs, epochs)
        assert lrs[step] == pytest.approx(want, rel=1e-12), step
        assert 0.1 * warmup_cosine(step, total, warmup_epochs / epochs, 10.0) == pytest.approx(want, rel=1e-12)
    assert lrs[0] == pytest.approx(0.1) and lrs[at_end] == pytest.approx(1.0)
    assert lrs[in_warmup] == pytest.approx(0.1 * (1 + 9 * (5 + 7 / 40) / 10))  # 0.566: on the way up
    # the cosine's period is the whole run and starts at the warm-up's end: it ends above 0
    assert 0.1 * warmup_cosine(total, total, 0.01, 10.0) == pytest.approx(1.0 * (1 + math.cos(math.pi * 0.99)) / 2)
    assert 0.1 * warmup_cosine(total, total, 0.01, 10.0) > 2e-4


def test_without_a_warm_up_the_schedule_is_torchs_cosine_bit_for_bit():
    total = 37
    for optimizer in ("adamw", "lars"):
        settings = TrainSettings(epochs=1, batch_size=8, lr=0.01, optimizer=optimizer)
        model = torch.nn.Linear(2, 1)
        opt, scheduler = make_optimizer(model, settings, torch.device("cpu"), total)
        assert type(scheduler) is torch.optim.lr_scheduler.CosineAnnealingLR and scheduler.T_max == total
        reference = torch.optim.lr_scheduler.CosineAnnealingLR(
            torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.01), T_max=total
        )
        assert lrs_of(scheduler, total + 1) == lrs_of(reference, total + 1)  # exactly, not approximately


def test_warmup_cosine_is_continuous_and_starts_at_lr():
    assert warmup_cosine(0, 100, 0.0, 1.0) == 1.0 and warmup_cosine(0, 100, 0.2, 5.0) == 1.0
    assert warmup_cosine(20, 100, 0.2, 5.0) == pytest.approx(5.0)
    assert warmup_cosine(10, 100, 0.2, 5.0) == pytest.approx(3.0)
    assert warmup_cosine(50, 100, 0.0, 1.0) == pytest.approx(0.5)


# ------------------------------------------------------------------------------------------------ LARS
def torchlars_steps(w: torch.Tensor, lr: float, weight_decay: float, momentum: float, trust: float, steps: int):
    """torchlars' LARS(SGD(lr, momentum, weight_decay), eps=1e-8, trust_coef) on one tensor whose
    gradient is ``w + 1`` (the loss ``(w + 0.5 * w^2).sum()``), step by step as its lars.py and
    adaptive_lr.cc compute: the trust ratio, the decay added and scaled, then SGD's momentum."""
    w, buf = w.clone(), None
    for _ in range(steps):
        g = w + 1
        w_norm, g_norm = w.norm(), g.norm()
        if w_norm > 0 and g_norm > 0:
            ratio = w_norm / (g_norm + weight_decay * w_norm + 1e-8) * trust
        else:
            ratio = torch.tensor(1.0, dtype=w.dtype)
        d = (g + weight_decay * w) * ratio
        buf = d.clone() if buf is None else momentum * buf + d  # SGD: the first buffer is the gradient itself
        w = w - lr * buf
    return w


@pytest.mark.parametrize("foreach", [False, True])  # timm's per-tensor path (the CPU's) and multi-tensor (CUDA's)
@pytest.mark.parametrize("weight_decay", [1e-6, 0.0, 0.3])
def test_lars_is_timms_and_steps_as_torchlars(weight_decay, foreach):
    from timm.optim import Lars

    start = torch.tensor([[0.3, -1.2, 2.0], [0.7, 0.1, -0.4]], dtype=torch.float64)
    zero = torch.zeros(3, dtype=torch.float64)  # a zero-initialised bias: ||w|| = 0, ratio 1 (both libraries)
    params = [torch.nn.Parameter(start.clone()), torch.nn.Parameter(zero.clone())]
    settings = TrainSettings(epochs=1, batch_size=8, lr=0.1, weight_decay=weight_decay, optimizer="lars")
    model = torch.nn.ParameterList(params)
    optimizer = build_optimizer(model, settings, torch.device("cpu"))
    assert type(optimizer) is Lars
    group = optimizer.param_groups[0]
    assert (group["trust_coeff"], group["momentum"], group["weight_decay"]) == (0.001, 0.9, weight_decay)
    assert (group["eps"], group["trust_clip"], group["nesterov"], group["dampening"]) == (1e-8, False, False, 0)
    assert len(group["params"]) == 2  # every parameter, a bias too: nothing excluded
    group["foreach"] = foreach
    for step in (1, 2):  # the second step uses the momentum buffer
        optimizer.zero_grad()
        sum((p + 0.5 * p**2).sum() for p in params).backward()
        optimizer.step()
        for got, initial in zip(params, (start, zero)):
            want = torchlars_steps(initial, 0.1, weight_decay, 0.9, 0.001, step)
            torch.testing.assert_close(got.detach(), want, rtol=1e-12, atol=1e-15)
    assert not torch.equal(params[0].detach(), torchlars_steps(start, 0.1, weight_decay, 0.0, 0.001, 2))


def test_lars_settings_come_from_the_config():
    cfg = make_config(
        {"optimizer": "lars", "lr": 0.1, "weight_decay": 1e-6, "momentum": 0.8, "trust_coefficient": 0.01}
    )
    optimizer = build_optimizer(torch.nn.Linear(2, 1), train_settings(cfg), torch.device("cpu"))
    group = optimizer.param_groups[0]
    assert (group["lr"], group["weight_decay"], group["momentum"], group["trust_coeff"]) == (0.1, 1e-6, 0.8, 0.01)
    settings = train_settings(make_config(NEW_KEYS))
    assert {k: getattr(settings, k) for k in NEW_KEYS} == NEW_KEYS
    assert train_settings(RunConfig()).optimizer == "adamw"
    with pytest.raises(ConfigError, match="'optimizer' must be one of adamw, lars, got 'sgd'"):
        build_optimizer(
            torch.nn.Linear(2, 1), TrainSettings(epochs=1, batch_size=1, optimizer="sgd"), torch.device("cpu")
        )


# ------------------------------------------------------------------------------------------ drop_last
@pytest.mark.parametrize(("n", "batch"), [(10, 4), (12, 4), (119, 16), (5, 5), (7, 1), (3, 8)])
def test_steps_per_epoch_with_and_without_the_partial_batch(n, batch):
    assert steps_per_epoch(n, batch, drop_last=False) == max(1, math.ceil(n / batch))
    assert steps_per_epoch(n, batch) == max(1, n // batch)  # the default: full batches only
    assert plan.steps_per_epoch is steps_per_epoch  # one count: the cost plan prices what the engine trains


class Recorder(torch.nn.Module):
    """A linear model with the method interface that records which images (their index, in their pixels)
    each step trained on."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)
        self.seen: list[list[int]] = []

    def training_loss(self, images, progress):
        self.seen.append(images[:, 0, 0, 0].tolist())
        return {"loss": self.lin(images.float().flatten(1) / 255).pow(2).mean()}


def numbered_images(n: int) -> torch.Tensor:
    """``n`` uint8 images ``[n, 1, 2, 2]``, image ``i`` holding ``i`` in its first pixel."""
    images = torch.randint(0, 256, (n, 1, 2, 2), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    images[:, 0, 0, 0] = torch.arange(n, dtype=torch.uint8)
    return images


@pytest.mark.parametrize(("n", "batch", "epochs", "max_steps"), [(10, 4, 3, None), (10, 4, 3, 7), (9, 3, 2, None)])
def test_keeping_the_partial_batch_trains_on_every_image_once_an_epoch(n, batch, epochs, max_steps):
    model = Recorder()
    settings = TrainSettings(
        epochs=epochs, batch_size=batch, max_steps=max_steps, drop_last=False, progress=False, channels_last=False
    )
    result = fit(model, numbered_images(n), settings, torch.device("cpu"))
    per_epoch = math.ceil(n / batch)
    total = epochs * per_epoch if max_steps is None else max_steps
    assert result.steps == len(model.seen) == total == step_counts(n, settings)[0]
    for e in range(total // per_epoch):  # every full epoch: each image exactly once, the last batch partial
        batches = model.seen[e * per_epoch : (e + 1) * per_epoch]
        assert sorted(i for b in batches for i in b) == list(range(n))
        assert [len(b) for b in batches] == [batch] * (n // batch) + ([n % batch] if n % batch else [])
    trained = sum(len(b) for b in model.seen)
    assert plan.images_per_run(n, batch, epochs, max_steps, drop_last=False) == trained
    # the default drops it: full batches only, and plan.py counts the same
    model = Recorder()
    fit(model, numbered_images(n), dataclasses.replace(settings, drop_last=True), torch.device("cpu"))
    assert {len(b) for b in model.seen} == {batch}
    assert plan.images_per_run(n, batch, epochs, max_steps) == sum(len(b) for b in model.seen)


class Stop(Exception):
    pass


def test_a_toy_run_killed_mid_run_resumes_to_the_same_weights(tmp_path):
    """LARS's momentum buffers, the warm-up's LambdaLR and the partial batches survive a resume."""
    settings = TrainSettings(
        epochs=4,
        batch_size=4,
        lr=0.5,
        weight_decay=1e-4,
        optimizer="lars",
        warmup=0.3,
        warmup_factor=4.0,
        drop_last=False,
        progress=False,
        channels_last=False,
    )
    images = numbered_images(10)
    torch.manual_seed(1)
    full = Recorder()
    fit(full, images, settings, torch.device("cpu"), tmp_path / "full.pt")

    def stop(done: int) -> None:
        if done == 2:
            raise Stop

    torch.manual_seed(1)
    with pytest.raises(Stop):
        fit(Recorder(), images, settings, torch.device("cpu"), tmp_path / "resumed.pt", on_epoch_end=stop)
    state = load_checkpoint(tmp_path / "resumed.pt")  # weights_only: LARS's and LambdaLR's states are plain
    assert state["epoch"] == 2 and state["step"] == 6 and state["scheduler"]["lr_lambdas"] == [None]
    assert all("momentum_buffer" in s for s in state["optimizer"]["state"].values())
    torch.manual_seed(2)  # another initialisation: the checkpoint's weights replace it
    resumed = Recorder()
    result = fit(resumed, images, settings, torch.device("cpu"), tmp_path / "resumed.pt")
    assert result.resumed_from_epoch == 2 and result.steps == 12
    assert resumed.seen == full.seen[6:]  # the same shuffles and partial batches as the uninterrupted run
    for key, value in full.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[key]), key
    a, b = load_checkpoint(tmp_path / "full.pt"), load_checkpoint(tmp_path / "resumed.pt")
    assert a["scheduler"] == b["scheduler"]
    for key, value in a["optimizer"]["state"].items():
        assert torch.equal(value["momentum_buffer"], b["optimizer"]["state"][key]["momentum_buffer"])


def test_csis_recipe_resumed_mid_run_equals_the_uninterrupted_run(tiny, tmp_path):
    recipe = {"optimizer": "lars", "lr": 0.1, "weight_decay": 1e-6, "warmup": 0.25, "warmup_factor": 10}
    cfg = make_config({**tiny, **recipe, "drop_last": False, "epochs": 4, "batch_size": 16})
    full = run(cfg, tmp_path / "full")
    assert full["n_train"] % 16 != 0  # a partial batch every epoch
    assert full["steps"] == 4 * math.ceil(full["n_train"] / 16)

    def stop(done: int) -> None:
        if done == 2:
            raise Stop

    with pytest.raises(Stop):
        run(cfg, tmp_path / "resumed", on_epoch_end=stop)
    assert load_checkpoint(tmp_path / "resumed" / CHECKPOINT)["epoch"] == 2
    resumed = run(cfg, tmp_path / "resumed")
    assert resumed["resumed_from_epoch"] == 2 and resumed["steps"] == full["steps"]
    assert resumed["metrics"] == full["metrics"]
    a, b = load_checkpoint(tmp_path / "full" / CHECKPOINT), load_checkpoint(tmp_path / "resumed" / CHECKPOINT)
    for key, value in a["model"].items():
        assert torch.equal(value, b["model"][key]), key


# ------------------------------------------------------------------------------------------- the config
def hash_without_new_keys(cfg: RunConfig) -> str:
    """The config hash as con2 computed it before the recipe's keys existed: every field but the runtime keys."""
    d = json.loads(json.dumps(dataclasses.asdict(cfg)))
    for k in (*RUNTIME_KEYS, *OMITTED_AT_DEFAULT):
        d.pop(k)
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def test_the_new_keys_at_their_defaults_leave_every_hash_as_it_was(tiny):
    assert set(OMITTED_AT_DEFAULT) == set(NEW_KEYS)
    assert RunConfig().config_hash() == hash_without_new_keys(RunConfig()) == "fc1008148f3c1529"  # before them
    cfg = make_config(tiny)
    assert cfg.config_hash() == hash_without_new_keys(cfg)
    assert not set(NEW_KEYS) & set(cfg.to_dict())  # nor in a run's config file or a checkpoint's config
    # written out at their defaults, they are the same config
    defaults = {k: getattr(RunConfig(), k) for k in NEW_KEYS}
    assert make_config({**tiny, **defaults}).config_hash() == cfg.config_hash()


@pytest.mark.parametrize("key", list(NEW_KEYS))
def test_setting_a_new_key_changes_the_hash(tiny, key):
    changed = make_config({**tiny, key: NEW_KEYS[key]})
    assert changed.config_hash() != make_config(tiny).config_hash()
    assert changed.to_dict()[key] == NEW_KEYS[key]
    assert make_config(changed.to_dict()) == changed  # a config file read back is the same config


def test_a_config_stored_before_the_new_keys_differs_from_now_in_none(tiny):
    old = {k: v for k, v in make_config(tiny).to_dict().items() if k not in NEW_KEYS}  # a checkpoint's or record's
    assert config_diff(old, make_config(tiny).to_dict()) == []
    assert config_diff(old, make_config({**tiny, "optimizer": "lars"}).to_dict()) == ["optimizer: adamw -> lars"]
    assert config_diff(old, make_config({**tiny, "drop_last": False}).to_dict()) == ["drop_last: True -> False"]


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"optimizer": "sgd"}, r"'optimizer' must be one of adamw, lars, got 'sgd'\. Fix: --set optimizer="),
        ({"optimizer": "LARS"}, r"'optimizer' must be one of adamw, lars"),
        ({"warmup": 1.0}, r"'warmup' must lie in \[0, 1\) .*got 1\.0\. Fix: --set warmup=0\.01"),
        ({"warmup": -0.1}, r"'warmup' must lie in \[0, 1\)"),
        ({"warmup_factor": 0.5}, r"'warmup_factor' must be >= 1 .*got 0\.5\. Fix: --set warmup_factor=10"),
        ({"momentum": 1.0}, r"'momentum' must lie in \[0, 1\) .*Fix: --set momentum=0\.9"),
        ({"momentum": -0.1}, r"'momentum' must lie in \[0, 1\)"),
        ({"trust_coefficient": 0.0}, r"'trust_coefficient' must be > 0 .*Fix: --set trust_coefficient=0\.001"),
        ({"lr": 0.0}, r"'lr' must be > 0 \(the optimiser's base learning rate\).*0\.1 \(CSI's, LARS\)"),
        ({"drop_last": "no"}, r"'drop_last'"),
    ],
)
def test_the_new_keys_are_checked(tiny, values, match):
    with pytest.raises(ConfigError, match=match):
        make_config({**tiny, **values})
    for ok in ({"warmup": 0.0}, {"warmup": 0.99}, {"warmup_factor": 1.0}, {"momentum": 0.0}):
        make_config({**tiny, **ok})
