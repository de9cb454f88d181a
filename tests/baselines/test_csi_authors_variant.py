"""Issue 56: the `authors` variant (CSI as its authors train it) as the profiles declare it, each setting checked
against the value read from CSI's code (alinlab/CSI at 60742b6, file and line beside each), the optimiser and
schedule the engine builds from it, its views and evaluation, and one training step of it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from timm.optim import Lars

from baselines.csi import CSI
from con2.grid.experiments import deep_merge, expand_grid
from con2.run.execute import train_settings
from con2.training.engine import fit, make_optimizer
from con2.training.steps import step_counts
from con2.transforms.csi_augment import CSI_TEST_VIEWS, CSI_TRAIN_VIEWS

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "workflow" / "config"

# alinlab/CSI, commit 60742b60a16501350eca823fcc910ddd10f7a379
CSI_EPOCHS = 1000  # common/common.py lines 39-40: --epochs default 1000
CSI_WARMUP_EPOCHS = 10  # common/common.py lines 47-48: --warmup default 10
CSI_LR = 0.1  # common/common.py lines 49-50: --lr_init default 1e-1
CSI_WEIGHT_DECAY = 1e-6  # common/common.py lines 51-52
CSI_BATCH = 4 * 32  # README.md lines 58-64: 4 GPUs x --batch_size 32 (x 4 rotations = 512)
CSI_MOMENTUM, CSI_TRUST = 0.9, 0.001  # common/train.py lines 109-110: SGD(momentum=0.9), LARS(trust_coef=0.001)
CSI_WARMUP_FACTOR = 10.0  # common/train.py line 124: GradualWarmupScheduler(multiplier=10.0)
CSI_JITTER = (0.4, 0.4, 0.4, 0.1, 0.8)  # models/classifier.py line 16: b, c, s, hue, p
CSI_GREY_P = 0.2  # models/classifier.py line 17
CSI_CROP = (0.08, 1.0)  # common/common.py lines 76-77: --resize_factor 0.08, up to 1
CSI_EVAL_SAMPLES, CSI_EVAL_AREA = 10, 0.54  # README.md line 91: --ood_samples 10 --resize_factor 0.54 --resize_fix


def profile(*names: str) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for name in names:
        merged = deep_merge(merged, yaml.safe_load((PROFILES / name).read_text()))
    return merged


def authors_run(config: dict[str, Any], dataset: str, variant: str = "authors") -> Any:
    config = {**config, "only_datasets": [dataset]}
    runs = [
        r
        for r in expand_grid(config, lambda d: ["airplane", "automobile"] if d == "cifar10" else ["1"])
        if r.method == "csi" and r.variant == variant and r.dataset == dataset
    ]
    assert runs, f"no csi/{variant} run on {dataset}"
    return runs[0].run_config


@pytest.mark.parametrize(
    "names,dataset,variant",
    [
        (("default.yaml",), None, "authors"),
        (("default.yaml", "cifar10.yaml"), "cifar10", "authors"),
        (("default.yaml", "cifar10.yaml"), "cifar10", "authors_length128"),
        (("paper.yaml",), "cifar10", "authors"),
    ],
)
def test_the_authors_variant_holds_csis_values(names: tuple[str, ...], dataset: str | None, variant: str) -> None:
    config = profile(*names)
    spec = config["variants"][variant]
    if dataset is None:  # the default profile declares it; no experiment of it trains it
        config = deep_merge(
            config, {"experiments": {"x": {"datasets": ["breastmnist"], "methods": {"csi": [variant]}}}}
        )
        dataset = "breastmnist"
    cfg = authors_run(config, dataset, variant)
    assert (cfg.optimizer, cfg.momentum, cfg.trust_coefficient) == ("lars", CSI_MOMENTUM, CSI_TRUST)
    assert cfg.lr == CSI_LR and cfg.weight_decay == CSI_WEIGHT_DECAY and cfg.warmup_factor == CSI_WARMUP_FACTOR
    assert cfg.warmup == pytest.approx(CSI_WARMUP_EPOCHS / CSI_EPOCHS)  # 10 of 1000 epochs, scaled to the run
    assert cfg.batch_size == CSI_BATCH and cfg.drop_last is False
    assert cfg.params == {"flip": "independent", "augment": "csi", "evaluation": "csi"}
    assert math.ceil(cfg.tta / 4) == CSI_EVAL_SAMPLES  # samples -1: ceil(tta / 4)
    assert "epochs" not in spec or spec["epochs"] in (128, CSI_EPOCHS)  # the paper profile: CSI's own 1000


def test_the_paper_profile_trains_csis_rows_with_the_authors_recipe() -> None:
    config = profile("paper.yaml")
    assert config["experiments"]["main"]["methods"]["csi"] == ["authors"]
    assert config["report"]["main_variants"]["csi"] == "authors"
    assert authors_run(config, "cifar10").epochs == CSI_EPOCHS


def tiny_authors(epochs: int = 1000) -> CSI:
    config = profile("default.yaml", "cifar10.yaml")
    cfg = authors_run(config, "cifar10")
    settings = {**cfg.to_dict(), "width": 4, "epochs": epochs, "image_size": 16, "tta": 40, "channels_last": False}
    from con2.config import make_config

    return CSI(make_config({k: v for k, v in settings.items() if v is not None}), _params(cfg.params))


def _params(params: dict[str, Any]) -> Any:
    from baselines.csi_spec import CSIParams

    return CSIParams(**params)


def test_the_engine_builds_lars_and_csis_schedule_from_the_variant() -> None:
    config = profile("default.yaml", "cifar10.yaml")
    cfg = authors_run(config, "cifar10")
    settings = train_settings(cfg)
    model = torch.nn.Linear(3, 2)
    n_images = 5000  # one class of CIFAR-10
    total, per_epoch, _ = step_counts(n_images, settings.__class__(**{**settings.__dict__, "epochs": CSI_EPOCHS}))
    assert per_epoch == math.ceil(n_images / CSI_BATCH) == 40  # the partial batch of 8 kept
    optimizer, scheduler = make_optimizer(model, settings, torch.device("cpu"), total)
    assert isinstance(optimizer, Lars)
    group = optimizer.param_groups[0]
    assert (group["momentum"], group["trust_coeff"], group["weight_decay"]) == (
        CSI_MOMENTUM,
        CSI_TRUST,
        CSI_WEIGHT_DECAY,
    )

    def csi_lr(epoch: float) -> float:  # GradualWarmupScheduler + CosineAnnealingLR(T_max=1000), written out
        if epoch <= CSI_WARMUP_EPOCHS:
            return CSI_LR * ((CSI_WARMUP_FACTOR - 1) * epoch / CSI_WARMUP_EPOCHS + 1)
        peak = CSI_LR * CSI_WARMUP_FACTOR
        return peak * (1 + math.cos(math.pi * (epoch - CSI_WARMUP_EPOCHS) / CSI_EPOCHS)) / 2

    lrs = []
    for _ in range(total):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    for step in (0, 5 * per_epoch, 10 * per_epoch, 500 * per_epoch, total - 1):  # start, warm-up, its end, cosine, end
        assert lrs[step] == pytest.approx(csi_lr(step / per_epoch), rel=1e-9, abs=1e-12), step


def test_the_authors_views_and_evaluation_are_csis() -> None:
    method = tiny_authors()
    assert method.params.flip == "independent" and method.params.augment == "csi"
    jitter = CSI_TRAIN_VIEWS
    assert (jitter.brightness, jitter.contrast, jitter.saturation, jitter.hue, jitter.jitter_p) == CSI_JITTER
    assert jitter.grayscale_p == CSI_GREY_P and jitter.crop_scale == CSI_CROP
    assert method.csi_views.params == CSI_TRAIN_VIEWS
    assert method.n_samples == CSI_EVAL_SAMPLES and method.test_view_count == 4 * CSI_EVAL_SAMPLES
    assert CSI_TEST_VIEWS.crop_scale == (CSI_EVAL_AREA, CSI_EVAL_AREA) and method.averaged == "features"
    # the run's up-front "scoring will encode N view(s)" line counts the views drawn per image, not 0
    assert method.test_views() == [] and method.encoded_views() == 4 * CSI_EVAL_SAMPLES
    harness = CSI(method.cfg, _params({}))
    assert harness.encoded_views() == len(harness.test_views()) == 4 * CSI_EVAL_SAMPLES  # tta 40: 10 fixed x 4


def test_the_authors_variant_trains_one_step() -> None:
    torch.manual_seed(0)
    method = tiny_authors(epochs=1)
    images = torch.randint(0, 256, (10, 3, 16, 16), dtype=torch.uint8)
    before = [p.detach().clone() for p in method.parameters()]
    config = profile("default.yaml", "cifar10.yaml")
    settings = train_settings(authors_run(config, "cifar10"))
    settings = settings.__class__(
        **{
            **settings.__dict__,
            "epochs": 1,
            "batch_size": 8,
            "max_steps": 1,
            "progress": False,
            "amp": False,
            "channels_last": False,
            "checkpoint_every": 0,
        }
    )
    result = fit(method, images, settings, torch.device("cpu"))
    assert result.steps == 1 and math.isfinite(result.last_terms["loss"])
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, method.parameters()))
