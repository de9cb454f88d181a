"""Issue 57 item 5: a finished grid run again with ``data_dir`` naming a changed copy of a dataset trains
nothing ("Nothing to be done"); its closing lines must say that the records were trained on other images
than ``data_dir`` now holds, and how to retrain. A faithful copy (same bytes elsewhere) says nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from data_fixtures import isolated_env, write_medmnist_npz  # noqa: F401  (isolated_env is autouse)

from con2.data import load_one_class
from con2.data.manifest import data_source
from con2.workflow.status import closing_lines, data_now, other_data, trained_on

COUNTS = {"train": [30, 20], "val": [2, 2], "test": [10, 12]}


def _record(root: Path, data_dir: Path, seed: int = 0) -> Path:
    """A run record of breastmnist class 0 as a run writes its ``data_source`` (from the prepared manifest)."""
    data = load_one_class("breastmnist", data_dir, None, 0, 28)
    path = root / "breastmnist" / "0" / "con2" / "invert" / f"seed{seed}" / "record.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"data_source": data_source(data.manifest)}))
    return path


@pytest.fixture
def grid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with ``data/`` (a BreastMNIST npz) and one finished run's record on it."""
    monkeypatch.chdir(tmp_path)
    write_medmnist_npz(tmp_path / "data" / "medmnist" / "breastmnist.npz", COUNTS)
    _record(tmp_path / "results" / "runs", tmp_path / "data")
    return tmp_path


def test_the_same_or_copied_bytes_say_nothing(grid: Path) -> None:
    shutil.copytree(grid / "data", grid / "copy")
    sha = next(iter(trained_on("breastmnist", grid / "results/runs")))
    assert data_now("breastmnist", 28, grid / "copy") == (sha, str(grid / "copy/medmnist/breastmnist.npz"))
    for where in ("data", "copy"):
        assert other_data([("breastmnist", 28)], grid / where) == []
        assert closing_lines([("breastmnist", 28)], {"data_dir": where}, grid / "no-runs.csv") == []


def test_changed_images_in_data_dir_are_named_with_the_fix(grid: Path) -> None:
    write_medmnist_npz(grid / "other" / "medmnist" / "breastmnist.npz", COUNTS, pixel_seed=1)  # other pixels
    before = (grid / "results/runs/breastmnist/0/con2/invert/seed0/record.json").read_bytes()
    found = other_data([("breastmnist", 28), ("breastmnist", 64)], grid / "other")
    assert found == [("breastmnist", 1, 1, str(grid / "other/medmnist/breastmnist.npz"))]  # once per dataset
    lines = closing_lines([("breastmnist", 28)], {"data_dir": "other"}, grid / "no-runs.csv")
    text = "\n".join(lines)
    assert "breastmnist: 1 of its 1 record(s) were trained on other images than data_dir holds now" in text, text
    assert "move results/runs/breastmnist aside and run the same command again" in text
    assert (grid / "results/runs/breastmnist/0/con2/invert/seed0/record.json").read_bytes() == before  # said, not done


def test_records_on_both_copies_count_only_the_others(grid: Path) -> None:
    write_medmnist_npz(grid / "other" / "medmnist" / "breastmnist.npz", COUNTS, pixel_seed=1)
    _record(grid / "results/runs", grid / "other", seed=1)  # one run retrained on the new images
    assert sum(trained_on("breastmnist", grid / "results/runs").values()) == 2
    assert [row[1:3] for row in other_data([("breastmnist", 28)], grid / "other")] == [(1, 2)]


def test_missing_data_or_no_records_say_nothing(grid: Path) -> None:
    assert other_data([("breastmnist", 28)], grid / "nowhere") == []  # the skipped-data lines say that
    assert other_data([("pneumonia", 28)], grid / "data") == []  # no record of it


def _marker(grid: Path, **fields: object) -> Path:
    """This invocation's data-check marker of breastmnist at 28 px, as rule prepare_data writes it."""
    path = grid / "results" / "data" / "breastmnist" / "28px.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"dataset": "breastmnist", "size": 28, "status": "ok", **fields}))
    return path


def test_the_data_check_marker_carries_the_records_content_key(grid: Path) -> None:
    from con2.workflow.status import check_dataset

    marker = check_dataset("breastmnist", 28, grid / "data", download=False)
    assert {marker["source_sha256"]} == set(trained_on("breastmnist", grid / "results/runs"))


def test_a_dataset_checked_in_this_invocation_is_not_read_again_at_the_close(
    grid: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 58: the close stat'ed CIFAR-10's 60,000 files again (2.1 s after the last job); a marker written
    since the invocation's start answers for the data instead, and an older one leaves the reading to data_now."""
    import time

    import con2.workflow.status as status

    sha = next(iter(trained_on("breastmnist", grid / "results/runs")))
    read: list[str] = []
    real = status.data_now
    monkeypatch.setattr(status, "data_now", lambda *a: read.append(str(a[2])) or real(*a))
    start = time.time() - 5
    _marker(grid, source_sha256=sha, location="/checked/breastmnist.npz")
    assert other_data([("breastmnist", 28)], grid / "nowhere", since=start) == [] and read == []
    _marker(grid, source_sha256="f" * 64, location="/checked/breastmnist.npz")  # the check found other images
    assert other_data([("breastmnist", 28)], grid / "nowhere", since=start) == [
        ("breastmnist", 1, 1, "/checked/breastmnist.npz")
    ]
    assert read == []
    # a marker of an earlier invocation, or one without the key: the data are read now
    assert other_data([("breastmnist", 28)], grid / "data", since=time.time() + 60) == [] and read == [
        str(grid / "data")
    ]
    _marker(grid, location="/checked/breastmnist.npz")
    assert other_data([("breastmnist", 28)], grid / "nowhere", since=start) == [] and read[-1] == str(grid / "nowhere")
