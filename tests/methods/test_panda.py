"""PANDA: its loss, EWC penalty and kNN score against slow references; centre, freezing and BatchNorm as its code."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from method_fixtures import TRAIN_SIZE

from baselines.panda import compactness_loss, ewc_penalty, knn_sq_scores
from con2 import weights
from con2.config import make_config
from con2.errors import ConfigError
from con2.methods import build_method, get_spec
from con2.training.engine import TrainSettings, fit
from con2.transforms.augment import normalize, to_float


def test_compactness_loss_is_the_mean_squared_distance_to_the_centre_over_d():
    g = torch.Generator().manual_seed(0)
    f, c = torch.randn(5, 7, generator=g), torch.randn(7, generator=g)
    ref = sum(sum((float(f[b, i]) - float(c[i])) ** 2 for i in range(7)) / 7 for b in range(5)) / 5
    assert float(compactness_loss(f, c)) == pytest.approx(ref, rel=1e-5)


def test_ewc_penalty_is_lambda_half_fisher_weighted_squared_drift():
    g = torch.Generator().manual_seed(1)
    names = {"a": (3, 2), "b": (4,)}
    cur = {k: torch.randn(s, generator=g) for k, s in names.items()}
    old = {k: torch.randn(s, generator=g) for k, s in names.items()}
    fisher = {k: torch.rand(s, generator=g) for k, s in names.items()}
    ref = 0.0
    for k in names:
        for c, o, f in zip(cur[k].flatten().tolist(), old[k].flatten().tolist(), fisher[k].flatten().tolist()):
            ref += f * (o - c) ** 2 / 2
    assert float(ewc_penalty(cur, old, fisher, 1e4)) == pytest.approx(1e4 * ref, rel=1e-5)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_knn_score_sums_the_k_smallest_squared_distances(k):
    g = torch.Generator().manual_seed(2)
    train, test = torch.randn(23, 6, generator=g) * 3, torch.randn(9, 6, generator=g) * 3
    ref = []
    for x in test.tolist():
        d = sorted(sum((a - b) ** 2 for a, b in zip(x, y)) for y in train.tolist())
        ref.append(sum(d[:k]))
    np.testing.assert_allclose(knn_sq_scores(test, train, k, chunk=4).numpy(), ref, rtol=1e-5)


@pytest.fixture
def panda_cfg(tiny, tmp_path):
    """A tiny PANDA config on random ResNet18 stand-in weights (never a result)."""
    path = weights.save_random_weights("torchvision/resnet18-imagenet1k-v1", tmp_path / "r18.pth")
    # 32 px, stored and trained: at 16 px the ResNet's last stage sees 1 x 1 inputs, which the engine
    # refuses under bf16 autocast on a CPU (method_fixtures.TRAIN_SIZE)
    size = TRAIN_SIZE["panda"]
    return {**tiny, "image_size": size, "method": "panda", "params": {"backbone": "resnet18", "weights": str(path)}}


def test_training_keeps_panda_frozen_layers_and_batchnorm_statistics(panda_cfg):
    cfg = make_config({**panda_cfg, "max_steps": 3})
    method = build_method(cfg)
    before = {k: v.clone() for k, v in method.encoder.backbone.state_dict().items()}
    images = torch.randint(0, 256, (40, 3, 16, 16), dtype=torch.uint8)
    method.prepare(images)  # the runner hands every method the whole training set before training
    fit(
        method,
        images,
        TrainSettings(epochs=1, batch_size=8, max_steps=3, channels_last=False, progress=False),
        torch.device("cpu"),
    )
    after = method.encoder.backbone.state_dict()
    for k, v in before.items():
        if k.startswith(("conv1", "bn1", "layer1", "layer2")) or "running_" in k or "num_batches" in k:
            assert torch.equal(v, after[k]), f"{k} changed: PANDA freezes the stem, layer1-2 and BatchNorm statistics"
    assert any(not torch.equal(before[k], after[k]) for k in before if k.startswith("layer4")), "layer4 is fine-tuned"
    assert bool(method.centre_ready)


def test_the_centre_is_the_mean_pretrained_feature_of_the_training_images(panda_cfg):
    from con2.data.rundata import load_run_data
    from con2.run.execute import to_tensor

    cfg = make_config(panda_cfg)
    method = build_method(cfg)
    train = to_tensor(load_run_data(cfg).train)
    method.prepare(train)
    method.eval()
    with torch.no_grad():  # the digits are prepared at the run's size: the identity view is the image itself
        expected = method.encoder(normalize(to_float(train))).mean(0)
    method.train()
    s = cfg.image_size
    method.training_loss(torch.randint(0, 256, (8, 1, s, s), dtype=torch.uint8), 0.0)
    assert torch.allclose(method.centre, expected, atol=1e-4)
    first = method.centre.clone()
    method.training_loss(torch.randint(0, 256, (8, 1, s, s), dtype=torch.uint8), 0.1)
    assert torch.equal(method.centre, first), "the centre is computed once, before the first step"


def test_the_ewc_variant_needs_a_fisher_file_and_adds_its_penalty(panda_cfg, tmp_path):
    spec = get_spec("panda")
    ewc = {**panda_cfg, "params": {**panda_cfg["params"], "variant": "ewc"}}
    with pytest.raises(ConfigError, match="params.fisher") as err:
        spec.params_for(make_config(ewc))
    assert "no Fisher diagonal is published for resnet18" in str(err.value)
    fisher_set = spec.weight_sets(spec.Params(backbone="resnet18", variant="ewc"))["fisher"]
    fisher = weights.save_random_weights(fisher_set, tmp_path / "fisher.pth")
    ewc["params"]["fisher"] = str(fisher)
    method = build_method(make_config(ewc))
    method.prepare(torch.randint(0, 256, (16, 1, 16, 16), dtype=torch.uint8))
    out = method.training_loss(torch.randint(0, 256, (8, 1, 16, 16), dtype=torch.uint8), 0.0)
    out = {k: v.detach() for k, v in out.items()}
    assert float(out["ewc"]) == 0.0 and float(out["loss"]) == pytest.approx(float(out["compactness"]))
    with torch.no_grad():
        method.encoder.backbone.layer4[0].conv1.weight.add_(0.01)
    out = {
        k: v.detach()
        for k, v in method.training_loss(torch.randint(0, 256, (8, 1, 16, 16), dtype=torch.uint8), 0.0).items()
    }
    drift = method.fisher["layer4.0.conv1.weight"] * 0.01**2
    assert float(out["ewc"]) == pytest.approx(1e4 * float(drift.sum()) / 2, rel=1e-3)
    assert math.isclose(float(out["loss"]), float(out["compactness"] + out["ewc"]), rel_tol=1e-6)
