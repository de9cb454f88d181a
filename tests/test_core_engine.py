"""Determinism, checkpoint-resume, and the run directory contract on tiny budgets."""

import json

import numpy as np
import pandas as pd
import pytest

from con2.atomic import partials
from con2.config import make_config
from con2.data import load_one_class
from con2.engine import derived_seed, steps_per_epoch
from con2.records import read_record
from con2.rundir import load_checkpoint
from con2.runner import CHECKPOINT, RECORD, SCORES, run


class Interrupt(Exception):
    pass


def test_same_seed_same_numbers_on_cpu(tiny, tmp_path):
    a = run(make_config(tiny), tmp_path / "a")
    b = run(make_config(tiny), tmp_path / "b")
    assert a["metrics"] == b["metrics"]
    sa, sb = pd.read_csv(tmp_path / "a" / SCORES), pd.read_csv(tmp_path / "b" / SCORES)
    pd.testing.assert_frame_equal(sa, sb)
    c = run(make_config({**tiny, "seed": 1}), tmp_path / "c")
    assert not np.allclose(pd.read_csv(tmp_path / "c" / SCORES)["nnd"], sa["nnd"])


def test_interrupted_run_resumes_to_identical_metrics(tiny, tmp_path):
    cfg = make_config({**tiny, "epochs": 4, "batch_size": 16})
    full = run(cfg, tmp_path / "full")

    def stop_after_two(epoch: int) -> None:
        if epoch == 2:
            raise Interrupt

    with pytest.raises(Interrupt):
        run(cfg, tmp_path / "resumed", on_epoch_end=stop_after_two)
    assert (tmp_path / "resumed" / CHECKPOINT).is_file()
    assert not (tmp_path / "resumed" / RECORD).exists()  # an interrupted run leaves no record
    assert load_checkpoint(tmp_path / "resumed" / CHECKPOINT)["epoch"] == 2
    resumed = run(cfg, tmp_path / "resumed")
    assert resumed["resumed_from_epoch"] == 2 and full["resumed_from_epoch"] == 0
    assert resumed["metrics"] == full["metrics"]
    assert resumed["steps"] == full["steps"] == 4 * steps_per_epoch(full["n_train"], 16)


def test_checkpoint_of_another_config_is_refused(tiny, tmp_path):
    run(make_config(tiny), tmp_path)
    (tmp_path / RECORD).unlink()
    from con2.errors import ConfigError

    with pytest.raises(ConfigError, match="another configuration"):
        run(make_config({**tiny, "lr": 0.01}), tmp_path)


def test_run_directory_holds_a_valid_record_and_scores(tiny, tmp_path):
    record = run(make_config(tiny), tmp_path)
    on_disk = read_record(tmp_path / RECORD)
    assert on_disk == json.loads(json.dumps(record))
    assert {k for k in on_disk["metrics"]["auroc"] if "@" not in k} == {"nnd", "lh"}  # headline readings
    assert -1 <= on_disk["metrics"]["silhouette"] <= 1
    data = load_one_class("digits", None, seed=0)
    assert on_disk["n_train"] == len(data.train) and on_disk["n_test"] == len(data.test)
    assert on_disk["n_anomalous"] == data.n_anomalous > 0
    scores = pd.read_csv(tmp_path / SCORES)
    assert len(scores) == len(data.test) and scores["label"].sum() == data.n_anomalous
    assert not partials(tmp_path)


def test_max_steps_caps_training(tiny, tmp_path):
    record = run(make_config({**tiny, "epochs": 50, "max_steps": 3}), tmp_path)
    assert record["steps"] == 3


def test_derived_seed_is_stable_and_distinct():
    assert derived_seed(0, 1) == derived_seed(0, 1)
    assert len({derived_seed(s, e) for s in range(5) for e in range(5)}) == 25
