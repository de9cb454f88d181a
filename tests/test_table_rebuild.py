"""A table rebuilt without the grid's ``data_dir`` never trains (issue 27, point 10).

An interrupted grid (some runs finished, some not) whose data live in another folder than
``./data``, then the documented one-table command without ``--config data_dir=...``: the data
marker was written for the other folder, so the dataset is checked again in this one, where its
data are missing. It is skipped: its unfinished runs are not scheduled (no training job, none
failed), its finished runs stay in the table, and the workflow's last lines say which dataset was
skipped, why, and the fix. The grid's ``data_dir`` again checks it again and trains what is left.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from workflow_helpers import (
    copy_workflow,
    fake_breastmnist,
    finished,
    job_stats,
    runs_csv_records,
    small_profile,
    snakemake,
)

pytestmark = pytest.mark.slow

BREAST0 = "results/runs/breastmnist/1/con2/invert/seed0/record.json"
BREAST1 = "results/runs/breastmnist/1/con2/invert/seed1/record.json"
DIGITS0 = "results/runs/digits/0/con2/invert/seed0/record.json"
MARKER = "results/data/breastmnist/28px.json"
TABLE = "results/tables/table1_medical.md"


def same(a: str | Path, b: str | Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """An interrupted grid (data in a folder of their own), then the one-table command without
    data_dir: the work folder, the grid's data folder, that command's result and its table."""
    root = tmp_path_factory.mktemp("rebuild")
    wd = copy_workflow(root / "wd")
    data = root / "data"
    datasets, main = fake_breastmnist(data)
    more = {"datasets": ["breastmnist"], "seeds": [1], "methods": {"con2": ["invert"]}}
    prof = small_profile(wd, datasets, {"main": main, "more": more})

    # the grid, interrupted: BreastMNIST's seed 0 and digits finished, BreastMNIST's seed 1 not
    part = snakemake(wd, "--cores", "2", BREAST0, DIGITS0, "--configfile", prof, "--config", f"data_dir={data}")
    assert part.returncode == 0, part.stderr[-3000:]
    assert finished(part.stdout + part.stderr)["train"] == 2
    assert (wd / BREAST0).is_file() and not (wd / BREAST1).exists()
    marker = json.loads((wd / MARKER).read_text())
    assert marker["status"] == "ok" and same(marker["check"]["data_dir"], data)

    # the documented one-table command, without data_dir (nothing under ./data, offline)
    one = snakemake(wd, "--cores", "1", TABLE, "--configfile", prof)
    table = (wd / TABLE).read_text() if (wd / TABLE).is_file() else ""
    return {"wd": wd, "data": data, "prof": prof, "one": one, "table": table}


def test_a_table_rebuilt_without_the_grids_data_dir_trains_nothing_and_keeps_the_finished_runs(rebuilt: dict) -> None:
    wd, data, one = rebuilt["wd"], rebuilt["data"], rebuilt["one"]
    out = one.stdout + one.stderr
    assert one.returncode == 0, one.stderr[-3000:]
    assert finished(out)["train"] == 0 and "train" not in job_stats(out), out[-3000:]
    assert "Error in rule" not in out
    # the marker was checked again in the current data_dir, and says so
    marker = json.loads((wd / MARKER).read_text())
    assert marker["status"] == "skipped" and "breastmnist.npz not found" in marker["reason"]
    assert same(marker["check"]["data_dir"], wd / "data") and same(wd / marker["data_dir"], wd / "data")
    assert json.loads((wd / "results/data/status.json").read_text())["breastmnist/28"]["status"] == "skipped"
    # digits (embedded: its check is its source's fingerprint, whatever data_dir says) is not checked again
    digits = json.loads((wd / "results/data/digits/16px.json").read_text())
    assert set(digits["check"]) == {"embedded"} and same(wd / digits["data_dir"], data), digits
    # the finished runs stay in the grid and in the table: BreastMNIST's cell over its one seed
    assert runs_csv_records(wd) == {BREAST0: True, DIGITS0: True}
    assert re.search(r"\| CON2 \(NND\) \| ours \| \d+\.\d \[1×1\]", rebuilt["table"]), rebuilt["table"]
    # what is missing, why, and the fix: in the workflow's last lines
    assert "1 dataset(s) SKIPPED" in one.stderr and "records already on disk stay in the tables" in one.stderr
    assert "breastmnist (28 px): breastmnist: breastmnist.npz not found" in one.stderr
    assert "fix: con2 data get breastmnist --data-dir data --size 28" in one.stderr
    assert "add `--config data_dir=DIR`" in one.stderr


def test_the_rebuilt_table_names_the_skipped_dataset_and_its_fix(rebuilt: dict) -> None:
    notes = [ln for ln in rebuilt["table"].splitlines() if ln.startswith("- BreastMNIST")]
    assert any("skipped now" in ln and "results/tables/missing.md" in ln for ln in notes), rebuilt["table"]


def test_the_grids_data_dir_again_checks_the_data_again_and_trains_what_is_left(rebuilt: dict) -> None:
    wd, data = rebuilt["wd"], rebuilt["data"]
    again = snakemake(wd, "--cores", "2", TABLE, "--configfile", rebuilt["prof"], "--config", f"data_dir={data}")
    out = again.stdout + again.stderr
    assert again.returncode == 0, again.stderr[-3000:]
    assert finished(out)["train"] == 1 and finished(out)["prepare_data"] == 1, out[-3000:]
    marker = json.loads((wd / MARKER).read_text())
    assert marker["status"] == "ok" and same(marker["check"]["data_dir"], data)
    assert (wd / BREAST1).is_file()
    assert runs_csv_records(wd) == {BREAST0: True, BREAST1: True, DIGITS0: True}
    assert re.search(r"\| CON2 \(NND\) \| ours \| \d+\.\d ± \d+\.\d \[1×2\]", (wd / TABLE).read_text())
    assert "SKIPPED" not in again.stderr
