"""Score files and runs.csv are checked by their content, never by their mtimes (issue 47, item 4).

Before: a ``scores.csv`` sorted within each label kept its AUROC and passed; one restored from a
backup with an mtime older than its record was never noticed; ``validation_scores.csv`` was not
checked at all (shifted by -1000 it moved the validation threshold to 100.0 / 0.0); and a hand edit
of ``runs.csv`` reached the tables. Now a record keeps the sha256 of the score files its run wrote
(``files_sha256``), the aggregation leaves out a record whose files are not those bytes, the
workflow's aggregation reruns on any such file whatever its mtime (:meth:`Session.edited_scores`),
and the runs CSV is sealed in the scores bundle, which every table reading it checks.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import TINY
from data_fixtures import write_medmnist_npz

from con2.aggregate.bundle import bundle_bytes
from con2.aggregate.collect import collect_valid_runs
from con2.config import make_config
from con2.report.tables import table_from_files
from con2.run.rundir import SCORES, VALIDATION, score_file_state
from con2.run.runner import RECORD, run

COUNTS = {"train": [30, 70], "val": [4, 6], "test": [20, 25]}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One tiny BreastMNIST-shaped run (it scores validation images): its folder and record."""
    root = tmp_path_factory.mktemp("content")
    write_medmnist_npz(root / "data" / "medmnist" / "breastmnist.npz", COUNTS)
    cfg = {**TINY, "dataset": "breastmnist", "data_dir": str(root / "data"), "image_size": 28, "epochs": 1}
    rd = root / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CON2_CACHE_DIR", str(root / "cache"))  # the prepared copy stays in this test
        return rd, run(make_config(cfg), rd)


@pytest.fixture
def copy(trained: tuple[Path, dict[str, Any]], tmp_path: Path) -> Path:
    """A copy of the trained run's folder, every file's mtime as it was."""
    return Path(shutil.copytree(trained[0], tmp_path / "copy"))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_record_keeps_the_sha256_of_what_its_run_wrote(trained: tuple[Path, dict[str, Any]]) -> None:
    rd, record = trained
    assert record["n_val"] == 6
    assert record["files_sha256"] == {SCORES: sha256(rd / SCORES), VALIDATION: sha256(rd / VALIDATION)}
    frame, skipped = collect_valid_runs([rd / RECORD])
    assert not skipped and len(frame) > 0


def keep_mtime(path: Path, edit: Any) -> None:
    """Apply ``edit`` to the file at ``path``, then give it back an mtime older than its record's."""
    edit(path)
    old = os.stat(path.parent / RECORD).st_mtime - 100
    os.utime(path, (old, old))


def sort_within_labels(path: Path) -> None:
    df = pd.read_csv(path)
    for col in [c for c in df.columns if c not in ("index", "label")]:
        for label in (0, 1):
            rows = df["label"] == label
            df.loc[rows, col] = np.sort(df.loc[rows, col].to_numpy())
    df.to_csv(path, index=False)


def shift(path: Path) -> None:
    df = pd.read_csv(path)
    for col in [c for c in df.columns if c != "index"]:
        df[col] = df[col] - 1000
    df.to_csv(path, index=False)


@pytest.mark.parametrize(
    ("name", "edit"),
    [(SCORES, sort_within_labels), (VALIDATION, shift), (SCORES, lambda p: p.write_bytes(p.read_bytes() + b"\n"))],
    ids=["scores sorted within labels", "validation shifted", "scores restored with other bytes"],
)
def test_a_score_file_its_run_did_not_write_is_left_out_whatever_its_mtime(copy: Path, name: str, edit: Any) -> None:
    before = pd.read_csv(copy / name)
    keep_mtime(copy / name, edit)
    assert os.stat(copy / name).st_mtime < os.stat(copy / RECORD).st_mtime
    if name == SCORES and "sorted" in str(edit):
        assert not pd.read_csv(copy / name).equals(before)
    frame, skipped = collect_valid_runs([copy / RECORD])
    assert frame.empty, "a score file its run did not write reached runs.csv"
    assert len(skipped) == 1 and f"its {name} is not the file its run wrote" in skipped[0].problem
    assert score_file_state(copy / RECORD, name) == "edited"  # the workflow's aggregation reruns on it


def test_a_sorted_scores_csv_keeps_its_auroc(copy: Path, trained: tuple[Path, dict[str, Any]]) -> None:
    """Why the check must be by content: the sorted file gives the record's AUROCs (checked before, passed)."""
    from con2.aggregate.score_files import Expected, read_run_scores

    sort_within_labels(copy / SCORES)
    aurocs = tuple(sorted(trained[1]["metrics"]["auroc"].items()))
    assert read_run_scores(copy / RECORD, Expected(aurocs=aurocs)).problem == ""


def test_con2_metrics_refuses_a_validation_file_its_run_did_not_write(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 57, item 3: ``con2 metrics`` read an edited ``validation_scores.csv`` (its threshold moved, the
    sensitivity with it, exit 0) although the record keeps its sha256. Now the run is not filled: one line
    naming the file and the fix, no number; the file its run wrote gives the numbers again."""
    from con2.cli.main import main

    assert main(["metrics", str(copy), "--json"]) == 0
    good = json.loads(capsys.readouterr().out)["runs"][str(copy)]
    assert all(m["from_validation"] for m in good.values())
    written = (copy / VALIDATION).read_bytes()
    keep_mtime(copy / VALIDATION, shift)

    assert main(["metrics", str(copy)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"not filled: {copy}: {copy / VALIDATION} is not the file its run wrote")
    assert "Fix: restore the file its run wrote" in lines[0] and f"con2 evaluate --run-dir {copy}" in lines[0]
    assert "AUROC" not in lines[0] and "sensitivity" not in lines[0], "a number printed from the edited file"
    assert main(["metrics", str(copy), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["runs"] == {}

    (copy / VALIDATION).write_bytes(written)
    assert main(["metrics", str(copy), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][str(copy)] == good


def test_a_deleted_validation_file_of_a_record_that_keeps_it_is_named(copy: Path) -> None:
    (copy / VALIDATION).unlink()
    frame, skipped = collect_valid_runs([copy / RECORD])
    assert frame.empty and "its validation_scores.csv is missing" in skipped[0].problem
    assert score_file_state(copy / RECORD, VALIDATION) == "gone"


def test_the_workflow_s_aggregation_sees_an_older_restored_scores_csv(tmp_path: Path) -> None:
    from test_workflow_session import finish, session

    runs = session(tmp_path).runs[:2]
    for r in runs:
        finish(r)
        scores = Path(r.run_dir, SCORES)
        scores.write_text("index,label,nnd\n0,0,0.1\n1,1,0.9\n")
        Path(r.record).write_text(json.dumps({"files_sha256": {SCORES: sha256(scores)}}))
    keep_mtime(Path(runs[1].run_dir, SCORES), lambda p: p.write_text("index,label,nnd\n0,0,0.9\n1,1,0.1\n"))
    s = session(tmp_path)
    assert s.edited_scores() == [os.path.join(runs[1].run_dir, SCORES)]
    Path(runs[0].run_dir, SCORES).unlink()
    assert list(session(tmp_path).gone_scores()) == [os.path.join(runs[0].run_dir, SCORES)]


def test_a_hand_edited_runs_csv_is_refused_by_every_table_that_reads_it(
    trained: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    rd, _ = trained
    frame, _ = collect_valid_runs([rd / RECORD])
    runs_csv, bundle = tmp_path / "runs.csv", tmp_path / "scores.json.gz"
    text = frame.to_csv(index=False)
    runs_csv.write_text(text)
    bundle.write_bytes(bundle_bytes(frame["record"].unique(), hashlib.sha256(text.encode()).hexdigest()))
    files = {"runs": str(runs_csv), "scores": str(bundle)}
    settings = {"report": {"subject": "con2", "medical": ["breastmnist"]}}
    table = table_from_files("operating_points", files, settings)  # sealed: builds
    assert "breastmnist" in table.data.to_csv()

    edited = frame.copy()
    edited["auroc"] = 99.9
    edited.to_csv(runs_csv, index=False)
    for name in ("operating_points", "loss_ablation", "missing"):  # with and without per-image scores
        with pytest.raises(ValueError, match=r"runs.csv is not the file the aggregation wrote.*Fix: delete it"):
            table_from_files(name, files, settings)
