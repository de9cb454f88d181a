"""A resumed run reports the time of the whole run (issue 32, item 6): each checkpoint keeps the
seconds and images spent so far, a resume adds its own, and the record says the run resumed and
over how many sessions its time adds up. Killed with the fault point ``after_checkpoint``
(``CON2_FAULT``, :mod:`con2.faults`) mid-run and after the last checkpoint (before the record)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TINY

from con2.config import make_config
from con2.faults import ENV
from con2.run.records import read_record, validate_record
from con2.run.runner import CHECKPOINT, RECORD, run
from con2.training.checkpoints import load_checkpoint
from con2.training.engine import SpentTime

CURVE = {**TINY, "epochs": 2, "score_at": [1]}  # a learning curve, so curve_seconds is timed too


def killed_run(run_dir: Path, epoch: int) -> dict[str, float]:
    """``con2 train`` of :data:`CURVE` killed (SIGKILL) right after the checkpoint of ``epoch``: the
    checkpoint's kept time (it holds everything that session spent up to the kill)."""
    settings = [f"{k}={json.dumps(v)}" for k, v in CURVE.items()]
    env = {**os.environ, ENV: f"after_checkpoint:epoch={epoch}:signal=SIGKILL:to=process"}
    cmd = [sys.executable, "-m", "con2", "train", "--set", *settings, "--run-dir", str(run_dir)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == -signal.SIGKILL, res.stderr[-2000:]
    assert not (run_dir / RECORD).exists()
    state = load_checkpoint(run_dir / CHECKPOINT)
    assert state["epoch"] == epoch
    assert "timing" in state, "the checkpoint keeps no time spent"
    return state["timing"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return run(make_config(CURVE), tmp_path_factory.mktemp("timing") / "uninterrupted")


@pytest.mark.parametrize("epoch", [1, 2], ids=["mid-run", "after-the-last-checkpoint"])
def test_a_resumed_run_counts_the_time_of_every_session(tmp_path: Path, uninterrupted: dict, epoch: int) -> None:
    run_dir = tmp_path / "killed"
    kept = killed_run(run_dir, epoch)
    assert kept["sessions"] == 1 and kept["fit_seconds"] > 0 and kept["images"] > 0 and kept["curve_seconds"] > 0
    resumed = run(make_config(CURVE), run_dir)

    assert resumed["metrics"]["auroc"] == uninterrupted["metrics"]["auroc"]
    assert resumed["resumed_from_epoch"] == epoch and resumed["steps"] == uninterrupted["steps"]
    timing = resumed["timing"]
    assert timing["fit_seconds"] >= kept["fit_seconds"]
    assert timing["curve_seconds"] >= kept["curve_seconds"] > 0
    assert timing["images_per_second"] > 0
    assert timing["resumed"] is True and timing["sessions"] == 2
    assert uninterrupted["timing"]["resumed"] is False and uninterrupted["timing"]["sessions"] == 1
    assert read_record(run_dir / RECORD)["timing"] == timing
    # every image of the run is counted once: the rate is the run's images over its seconds
    images = uninterrupted["timing"]["images_per_second"] * uninterrupted["timing"]["fit_seconds"]
    assert timing["images_per_second"] * timing["fit_seconds"] == pytest.approx(images)


def test_records_without_the_new_timing_fields_still_read(uninterrupted: dict) -> None:
    old = json.loads(json.dumps(uninterrupted))
    for key in ("resumed", "sessions", "curve_seconds"):
        del old["timing"][key]
    validate_record(old)  # a version-2 record of an older con2
    old["schema_version"] = 1
    del old["metrics"]["auroc_ci"]
    validate_record(old)  # and a version-1 record
    bad = {**uninterrupted, "timing": {**uninterrupted["timing"], "sessions": 0}}
    with pytest.raises(ValueError, match="timing.sessions"):
        validate_record(bad)


@pytest.mark.parametrize(
    "kept",
    [None, {}, {"fit_seconds": "x", "curve_seconds": 0, "images": 1, "sessions": 1}, {"fit_seconds": -1.0}],
    ids=["older-checkpoint", "empty", "not-a-number", "negative"],
)
def test_a_checkpoint_without_usable_time_counts_from_the_resume(kept: object) -> None:
    """What an older con2 (or a damaged entry) kept counts as nothing: the record then says ``resumed`` with
    ``sessions`` 1, so a reader sees that the sessions before the resume are missing."""
    spent = SpentTime.from_state(kept)
    assert spent == SpentTime() and spent.plus(2.0, 0.5, 64) == SpentTime(2.0, 0.5, 64, 1)
    good = {"fit_seconds": 1.5, "curve_seconds": 0.25, "images": 96, "sessions": 1}
    assert SpentTime.from_state(good).plus(2.0, 0.5, 64) == SpentTime(3.5, 0.75, 160, 2)
