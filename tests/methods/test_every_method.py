"""Every registered method trains a few steps on tiny data (one that trains nothing: none) and writes a valid record.

The test is parametrised over the registry when pytest collects it, so a method that registers
itself (in ``baselines/``, in ``con2/methods/`` or through a ``con2.methods`` entry point) joins
with no other edit. The last test shows that with the documented example of a new baseline (docs/methods.md). A
method that needs pretrained weights (``MethodSpec.weights``) trains on random stand-ins of the
right layout, written to a temporary folder.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from method_fixtures import tiny_for, with_stand_in_weights
from torch import nn

from con2.config import make_config
from con2.data import load_one_class
from con2.methods import Method, all_methods, build_method, register, registry
from con2.methods.features import view_features
from con2.methods.scoring import Reading, Scorer, ScoringSpec, crossed_views
from con2.run.execute import to_tensor
from con2.run.records import read_record
from con2.run.runner import RECORD, SCORES, run
from con2.training.engine import load_weights
from con2.transforms.augment import IDENTITY_VIEW


def check_method_run(name: str, tiny: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """Run method ``name`` with its ``test_params`` on the tiny config; check record and scores."""
    cls = all_methods()[name]
    params = with_stand_in_weights(name, dict(cls.test_params), run_dir / "stand_in_weights")
    run(make_config({**tiny_for(name, tiny), "method": name, "params": params}), run_dir)
    record = read_record(run_dir / RECORD)  # validates against the schema
    assert record["method"] == name
    aurocs = record["metrics"]["auroc"]
    headline = [k for k in aurocs if "@" not in k]
    assert sorted(headline) == sorted(cls.score_names), "the headline columns must be exactly the declared score_names"
    assert {k.split("@")[0] for k in aurocs} == set(cls.score_names), "every other reading is <score>@<reading>"
    assert sorted(record["scoring"]["headline"]) == sorted(cls.score_names)
    assert sorted(record["scoring"]["columns"]) == sorted(aurocs)
    for score, value in aurocs.items():
        assert math.isfinite(value) and 0.0 <= value <= 100.0, (score, value)
    table = pd.read_csv(run_dir / SCORES)
    assert list(table.columns[:2]) == ["index", "label"] and sorted(table.columns[2:]) == sorted(aurocs)
    assert len(table) == record["n_test"] and int(table["label"].sum()) == record["n_anomalous"]
    assert np.isfinite(table[list(aurocs)].to_numpy()).all()
    return record


@pytest.mark.parametrize("name", list(all_methods()))
def test_every_registered_method_writes_a_valid_record(name, tiny, tmp_path):
    record = check_method_run(name, tiny, tmp_path)
    # a method with a trainable weight trains; one with every weight frozen (a floor, a zero-shot baseline) is
    # scored untrained and says so (issue 47, item 7: it recorded steps over a constant loss)
    trains = build_method(make_config(read_record(tmp_path / RECORD)["config"])).trains()
    assert (record["steps"] > 0) == trains and (record["epochs"] > 0) == trains
    spec = all_methods()[name]
    used = record["method_card"].get("weights", {})  # the pretrained files the record names (the stand-ins here)
    assert sorted(used) == sorted(spec.weight_sets(spec.Params(**spec.test_params)))
    assert all(w["file"].startswith(str(tmp_path)) and len(w["sha256"]) == 64 for w in used.values())


PRICED = [(n, {}) for n, s in all_methods().items() if s.views_per_image is not None] + [
    ("con2", {"contexts": ["invert", "flip"]}),  # k = 3 contexts: 6 views
    ("con2", {"n_contexts": 4}),
    ("unicon_ha", {"stage_weights": [0.0, 0.0, 1.0, 1.0]}),  # two aggregated stages
]


@pytest.mark.parametrize(("name", "extra"), PRICED)
def test_a_priced_method_passes_as_many_views_through_its_encoder_as_its_spec_says(name, extra, tiny):
    """The plan, the ETA and the job order price a run by its spec's ``views_per_image`` (issue 45, item 4):
    here one training step counts the images the encoder really sees."""
    spec = all_methods()[name]
    params = {**spec.test_params, **extra}
    cfg = make_config({**tiny_for(name, tiny), "method": name, "params": params, "tta": 12})  # splits over k contexts
    method = build_method(cfg)
    train = to_tensor(load_one_class(cfg.dataset, cfg.data_dir, cfg.normal_class, seed=cfg.split_seed, size=16).train)
    seen: list[int] = []
    method.encoder.register_forward_hook(lambda module, args, out: seen.append(len(args[0])))
    if hasattr(method.encoder, "forward_intermediates"):  # a pass up to a stage (UniCon-HA) counts as a pass
        whole = method.encoder.forward_intermediates

        def counted(x, *args, **kwargs):
            seen.append(len(x))
            return whole(x, *args, **kwargs)

        method.encoder.forward_intermediates = counted
    method.prepare(train)
    seen.clear()
    method.training_loss(train[:8], 0.0)
    assert sum(seen) == 8 * spec.training_views(params), (seen, spec.training_views(params))


# --- docs/methods.md's example of way (a): a rotation-prediction baseline as a registered class. -


@dataclass
class RotNetParams:
    head_weight: float = 1.0  # weight of the rotation cross-entropy


class RotNet(Method):
    """Rotation prediction (Golan & El-Yaniv 2018): score = -log p(correct rotation), over 4 rotations."""

    name = "rotnet_example"
    Params = RotNetParams
    test_params = {"head_weight": 1.0}
    score_names = ("rotation",)
    description = "example: rotation prediction"
    views_per_image = staticmethod(lambda params: 4)  # the 4 rotations: what the plan and the ETA price a run by

    def __init__(self, cfg, params: RotNetParams) -> None:
        super().__init__(cfg, params)
        self.rotation_head = nn.Linear(self.encoder.out_dim, 4)

    def training_loss(self, images, progress):
        rotated = torch.cat([torch.rot90(images, k, dims=(-2, -1)) for k in range(4)])
        labels = torch.arange(4, device=images.device).repeat_interleave(len(images))
        logits = self.rotation_head(self.encoder(self.augment(rotated))).float()
        return {"loss": self.params.head_weight * F.cross_entropy(logits, labels)}

    # Scoring is declared: the identity view in each of the 4 rotations, the rotation head's
    # logits as the feature space, and the score -log p(rotation k | view in rotation k).
    def test_contexts(self):
        return [lambda x, k=k: torch.rot90(x, k, dims=(-2, -1)) for k in range(4)]

    def test_views(self):
        return crossed_views(0, self.test_contexts(), self.cfg.tta_seed)

    def feature_spaces(self):
        return {"encoder": None, "rotation": self.rotation_head}

    def scoring(self):
        reading = Reading("rotation")
        return ScoringSpec({"rotation": Scorer(lambda test, train, k: -test.log_softmax(1)[:, k])}, (reading,), reading)


def test_a_newly_registered_method_joins_the_registry_and_this_test(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "METHODS", dict(registry.all_methods()))  # undo the registration afterwards
    monkeypatch.setattr(registry, "_CLASSES", dict(registry._CLASSES))
    register(RotNet)
    assert "rotnet_example" in all_methods()  # what the parametrisation above iterates over
    assert all_methods()["rotnet_example"].training_views({}) == 4  # priced from the class, as a spec would be
    check_method_run("rotnet_example", tiny, tmp_path)
    # The shared loop computed -mean_k log p(k | rotated identity view), as a loop by hand shows.
    method = build_method(make_config({**tiny, "method": "rotnet_example"}))
    load_weights(method, tmp_path / "checkpoint.pt", torch.device("cpu"))
    cfg = make_config(tiny)
    test = to_tensor(load_one_class(cfg.dataset, cfg.data_dir, cfg.normal_class, seed=cfg.split_seed, size=16).test)
    expected = torch.zeros(len(test))
    for k in range(4):
        logits = view_features(
            method.encoder,
            torch.rot90(test, k, dims=(-2, -1)),
            IDENTITY_VIEW,
            lambda x: x,
            16,
            torch.device("cpu"),
            head=method.rotation_head,
        )
        expected -= logits.log_softmax(1)[:, k] / 4
    np.testing.assert_allclose(pd.read_csv(tmp_path / SCORES)["rotation"], expected.numpy(), rtol=1e-4, atol=1e-5)
