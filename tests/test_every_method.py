"""Every registered method trains a few steps on tiny data and writes a valid record.

The test is parametrised over the registry when pytest collects it, so a method that registers
itself (in ``baselines/``, in ``con2/methods/`` or through a ``con2.methods`` entry point) joins
with no other edit. The last test shows that with the README's example of a new baseline.
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
from torch import nn

from con2.augment import IDENTITY_VIEW
from con2.config import make_config
from con2.evaluation import view_features
from con2.methods import Method, MethodScores, all_methods, register, registry
from con2.records import read_record
from con2.runner import RECORD, SCORES, run


def check_method_run(name: str, tiny: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """Run method ``name`` with its ``test_params`` on the tiny config; check record and scores."""
    cls = all_methods()[name]
    run(make_config({**tiny, "method": name, "params": dict(cls.test_params)}), run_dir)
    record = read_record(run_dir / RECORD)  # validates against the schema
    assert record["method"] == name
    aurocs = record["metrics"]["auroc"]
    assert sorted(aurocs) == sorted(cls.score_names), "score() must return exactly the declared score_names"
    for score, value in aurocs.items():
        assert math.isfinite(value) and 0.0 <= value <= 100.0, (score, value)
    table = pd.read_csv(run_dir / SCORES)
    assert list(table.columns[:2]) == ["index", "label"] and sorted(table.columns[2:]) == sorted(cls.score_names)
    assert len(table) == record["n_test"] and int(table["label"].sum()) == record["n_anomalous"]
    assert np.isfinite(table[list(cls.score_names)].to_numpy()).all()
    return record


@pytest.mark.parametrize("name", list(all_methods()))
def test_every_registered_method_writes_a_valid_record(name, tiny, tmp_path):
    record = check_method_run(name, tiny, tmp_path)
    assert record["steps"] > 0


# --- The README's example of way (a): a rotation-prediction baseline as a registered class. -----


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

    def __init__(self, cfg, params: RotNetParams) -> None:
        super().__init__(cfg, params)
        self.rotation_head = nn.Linear(self.encoder.out_dim, 4)

    def training_loss(self, images, progress):
        rotated = torch.cat([torch.rot90(images, k, dims=(-2, -1)) for k in range(4)])
        labels = torch.arange(4, device=images.device).repeat_interleave(len(images))
        logits = self.rotation_head(self.encoder(self.augment(rotated))).float()
        return {"loss": self.params.head_weight * F.cross_entropy(logits, labels)}

    @torch.no_grad()
    def score(self, train, test, device):
        nll = torch.zeros(len(test))
        for k in range(4):
            logits = view_features(
                self.encoder, test, IDENTITY_VIEW, lambda x, k=k: torch.rot90(x, k, dims=(-2, -1)),
                self.cfg.image_size, device, head=self.rotation_head,
            )
            nll -= logits.log_softmax(1)[:, k].cpu()
        return MethodScores(scores={"rotation": (nll / 4).numpy()})


def test_a_newly_registered_method_joins_the_registry_and_this_test(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "METHODS", dict(registry.METHODS))  # undo the registration afterwards
    register(RotNet)
    assert "rotnet_example" in all_methods()  # what the parametrisation above iterates over
    check_method_run("rotnet_example", tiny, tmp_path)
