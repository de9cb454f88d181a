"""The floors (baselines/floors.py) against brute force: the record of a ``floor_pixels`` run holds the
AUROC of the raw-pixel cosine nearest neighbour computed here by a plain double loop over the run's own
split, and ``floor_random`` trains nothing (its scores are those of the seeded random encoder)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import roc_auc_score

from con2.config import make_config
from con2.data.rundata import load_run_data
from con2.run.records import read_record
from con2.run.runner import RECORD, SCORES, run


def brute_force_pixel_nn(train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """-max cos over the training images, one test image and one training image at a time -> ``[M]``."""
    out = []
    for x in test.reshape(len(test), -1).astype(np.float64):
        best = -np.inf
        for y in train.reshape(len(train), -1).astype(np.float64):
            best = max(best, float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y))))
        out.append(-best)
    return np.array(out)


@pytest.fixture
def digits_cfg(tmp_path: Path):
    return make_config(
        {"dataset": "digits", "normal_class": "3", "image_size": 8, "data_size": 8, "device": "cpu", "threads": 1}
    )


@pytest.mark.parametrize("center_crop", [1.0, 0.875])
def test_the_pixel_floor_is_the_raw_pixel_cosine_nearest_neighbour(digits_cfg, tmp_path: Path, center_crop) -> None:
    """Digits at their stored 8 px (no resize: the views leave the pixels as stored) or centre-cropped."""
    cfg = dataclasses.replace(digits_cfg, method="floor_pixels", max_steps=0, center_crop=center_crop)
    run(cfg, tmp_path / "run")
    record = read_record(tmp_path / "run" / RECORD)
    scores = pd.read_csv(tmp_path / "run" / SCORES)
    if center_crop == 1.0:
        data = load_run_data(cfg)
        expected = brute_force_pixel_nn(np.asarray(data.train), np.asarray(data.test))
        np.testing.assert_allclose(scores["nnd"].to_numpy(), expected, atol=1e-5)
        assert record["metrics"]["auroc"]["nnd"] == pytest.approx(
            100 * roc_auc_score(np.asarray(data.test_labels), expected), abs=1e-6
        )
    assert record["metrics"]["auroc"]["nnd"] == pytest.approx(
        100 * roc_auc_score(scores["label"], scores["nnd"]), abs=1e-6
    )


def test_the_random_floor_trains_nothing_and_depends_on_its_seed(digits_cfg, tmp_path: Path) -> None:
    """Its scores are the random encoder's: a budget of epochs changes nothing, another seed changes them."""
    base = dataclasses.replace(digits_cfg, method="floor_random", width=8, max_steps=0)
    run(base, tmp_path / "a")
    run(dataclasses.replace(base, max_steps=None, epochs=2), tmp_path / "b")  # steps over a constant loss
    run(dataclasses.replace(base, seed=1), tmp_path / "c")
    a, b, c = (pd.read_csv(tmp_path / x / SCORES)["nnd"].to_numpy() for x in "abc")
    np.testing.assert_allclose(a, b, atol=1e-6)
    assert not np.allclose(a, c)


def test_the_pixel_floor_on_real_breastmnist_is_the_brute_force_one(tmp_path: Path, shared_data: Path) -> None:
    """The real 28 px file, no crop and no test-time augmentation: the setting ../shared/data/README.md
    measures its raw-pixel floor in."""
    torch.set_num_threads(1)
    settings = {"dataset": "breastmnist", "data_dir": str(shared_data), "method": "floor_pixels", "max_steps": 0}
    cfg = make_config({**settings, "device": "cpu"})
    run(cfg, tmp_path / "run")
    data = load_run_data(cfg)
    expected = 100 * roc_auc_score(
        np.asarray(data.test_labels), brute_force_pixel_nn(np.asarray(data.train), np.asarray(data.test))
    )
    assert read_record(tmp_path / "run" / RECORD)["metrics"]["auroc"]["nnd"] == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("method", ["floor_pixels", "floor_random"])
def test_a_floor_without_max_steps_0_records_no_training(digits_cfg, tmp_path: Path, method: str) -> None:
    """Issue 47, item 7: without the workflow's ``max_steps: 0`` a floor recorded its epochs and images per
    second of training it never did (2048 epochs, 33,862 img/s); and a batch larger than its training set,
    which it never draws, was refused (item 13). Its record now says what it did: nothing, as with max_steps 0."""
    n_train = len(load_run_data(digits_cfg).train)
    untold = dataclasses.replace(digits_cfg, method=method, width=8, epochs=64, batch_size=n_train + 1)
    told = dataclasses.replace(untold, max_steps=0)
    a, b = run(untold, tmp_path / "untold"), run(told, tmp_path / "told")
    for record in (a, b):
        assert record["epochs"] == 0 and record["steps"] == 0
        assert not record["timing"]["images_per_second"] and record["timing"]["fit_seconds"] < 1  # 0 images
        assert record["batch_size"] is None
    assert a["metrics"]["auroc"] == b["metrics"]["auroc"]
    assert (tmp_path / "untold" / SCORES).read_bytes() == (tmp_path / "told" / SCORES).read_bytes()
