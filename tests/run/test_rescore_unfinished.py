"""``con2 evaluate`` of a run that has not finished training (issue 47, item 2).

It used to exit 0 on a run still training (its lock held by ``con2 train``) and on a run killed
unfinished, writing a record with ``epochs 0`` and ``steps 0`` and nothing naming the checkpoint's
epoch, which the tables then showed as the run. Now a run still training is refused; a re-scoring
names the checkpoint it scored (``rescored``) and marks an unfinished one, which the aggregation
leaves out of every table (named, with the fix), and ``con2 train`` resumes it instead of calling
it complete.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import TINY
from test_resume_data import killed_after_epoch_1

from con2.aggregate.collect import collect_valid_runs
from con2.cli.main import main
from con2.config import make_config
from con2.run.lock import locked
from con2.run.records import read_record
from con2.run.runner import CHECKPOINT, RECORD, run

UNFINISHED = {**TINY, "epochs": 3}


@pytest.fixture
def killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run killed right after its epoch-1 checkpoint (3 epochs planned): its folder."""
    rd = tmp_path / "run"
    killed_after_epoch_1(make_config(UNFINISHED), rd, monkeypatch)
    assert (rd / CHECKPOINT).is_file() and not (rd / RECORD).exists()
    return rd


def test_a_run_still_training_is_refused(killed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    with locked(killed / ".lock"):  # con2 train holds it while it trains
        assert main(["evaluate", "--run-dir", str(killed), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "still training" in err and "Fix: wait for that run to finish" in err, err
    assert not out.exists(), "a refused re-scoring wrote something"


def test_an_unfinished_rescore_is_marked_left_out_of_the_tables_and_resumed(
    killed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["evaluate", "--run-dir", str(killed), "--out", str(out)]) == 0
    # issue 57, item 8: the console says it too, in one line after the result line, with the command that resumes
    lines = capsys.readouterr().out.splitlines()
    notes = [line for line in lines if "had not finished" in line]
    assert len(notes) == 1 and notes[0] == lines[-1], lines
    assert notes[0].startswith(f"note: {out / RECORD} was re-scored (con2 evaluate) from a checkpoint at epoch 1 of 3")
    assert f"con2 train --config {killed / 'config.yaml'} --run-dir {killed}" in notes[0]
    record = read_record(out / RECORD)
    rescored = record["rescored"]
    assert rescored["checkpoint_epoch"] == 1 and rescored["planned_epochs"] == 3 and rescored["unfinished"] is True
    assert rescored["checkpoint_step"] > 0

    frame, skipped = collect_valid_runs([out / RECORD])
    assert frame.empty, "an unfinished re-scoring reached runs.csv, so every table"
    assert [s.record for s in skipped] == [str(out / RECORD)]
    assert "epoch 1 of 3" in skipped[0].problem and "con2 train --run-dir" in skipped[0].fix

    # re-scored in place, the run is still unfinished: con2 train resumes it rather than calling it complete
    assert main(["evaluate", "--run-dir", str(killed)]) == 0
    assert read_record(killed / RECORD)["rescored"]["unfinished"] is True
    cfg = make_config(yaml.safe_load((killed / "config.yaml").read_text()))
    finished = run(cfg, killed)
    assert finished["resumed_from_epoch"] == 1 and finished["epochs"] == 3 and "rescored" not in finished
    frame, skipped = collect_valid_runs([killed / RECORD])
    assert not skipped and len(frame) > 0


def test_a_finished_rescore_is_marked_finished(
    killed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = make_config(yaml.safe_load((killed / "config.yaml").read_text()))
    run(cfg, killed)  # training finishes
    out = tmp_path / "out"
    assert main(["evaluate", "--run-dir", str(killed), "--out", str(out)]) == 0
    rescored = read_record(out / RECORD)["rescored"]
    assert rescored["checkpoint_epoch"] == 3 and rescored["unfinished"] is False
    assert "had not finished" not in capsys.readouterr().out  # a finished checkpoint's numbers stand without a note
    frame, skipped = collect_valid_runs([out / RECORD])
    assert not skipped and len(frame) > 0
