"""A resume trains on the images its checkpoint trained on, or not at all (issue 47, item 1).

A run killed after epoch 1 and resumed with another ``data_dir`` (the same dataset name, other
images) used to print "resuming from ... at epoch 1", train the remaining epochs on the new images
and name only them in its record. Every checkpoint now names its images (the split's sha256), and a
resume on others is refused, leaving the checkpoint as it was; ``--force`` starts afresh.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TINY
from data_fixtures import write_medmnist_npz

import con2.training.engine as engine
from con2.config import RunConfig, make_config
from con2.data.rundata import load_run_data
from con2.errors import ConfigError
from con2.run.execute import DATA_KEY
from con2.run.runner import CHECKPOINT, RECORD, run
from con2.training.checkpoints import load_checkpoint

COUNTS = {"train": [30, 70], "val": [2, 2], "test": [20, 25]}


class Stopped(Exception):
    """The run stopped right after its epoch-1 checkpoint (a kill there)."""


def killed_after_epoch_1(cfg: RunConfig, rd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``cfg`` in ``rd`` and stop it right after its epoch-1 checkpoint, as a kill there would."""
    real = engine.fault_point

    def stop_after_epoch_1(name: str, **context: object) -> None:
        if name == "after_checkpoint" and context.get("epoch") == 1:
            raise Stopped
        real(name, **context)

    monkeypatch.setattr(engine, "fault_point", stop_after_epoch_1)
    with pytest.raises(Stopped):
        run(cfg, rd)
    monkeypatch.setattr(engine, "fault_point", real)


def breastmnist(data_dir: Path, pixel_seed: int) -> dict:
    """A BreastMNIST-shaped copy in ``data_dir`` (images drawn with ``pixel_seed``) and a tiny run on it."""
    write_medmnist_npz(data_dir / "medmnist" / "breastmnist.npz", COUNTS, pixel_seed=pixel_seed)
    return {**TINY, "dataset": "breastmnist", "data_dir": str(data_dir), "image_size": 28, "epochs": 3}


def test_a_resume_on_other_images_is_refused_and_forced_starts_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CON2_CACHE_DIR", str(tmp_path / "cache"))  # the prepared copies stay in this test
    first = make_config(breastmnist(tmp_path / "a", pixel_seed=0))
    other = make_config(breastmnist(tmp_path / "b", pixel_seed=1))
    sha_first = load_run_data(first).manifest["split_sha256"]
    sha_other = load_run_data(other).manifest["split_sha256"]
    assert sha_first != sha_other
    rd = tmp_path / "run"
    killed_after_epoch_1(first, rd, monkeypatch)
    kept = (rd / CHECKPOINT).read_bytes()
    assert load_checkpoint(rd / CHECKPOINT)[DATA_KEY] == sha_first

    with pytest.raises(ConfigError, match=r"trained on other images of breastmnist.*Fix: point data_dir back"):
        run(other, rd)
    assert (rd / CHECKPOINT).read_bytes() == kept, "the refused resume changed the checkpoint"
    assert not (rd / RECORD).exists()

    resumed = run(first, rd)  # the images it trained on: resumed, and named in the record
    assert resumed["resumed_from_epoch"] == 1 and resumed["split_sha256"] == sha_first
    assert load_checkpoint(rd / CHECKPOINT)[DATA_KEY] == sha_first

    fresh = run(other, rd, force=True)  # told to start afresh on the other images
    assert fresh["resumed_from_epoch"] == 0 and fresh["split_sha256"] == sha_other
    assert load_checkpoint(rd / CHECKPOINT)[DATA_KEY] == sha_other
