"""A table rebuilt alone never trains, checks or downloads data (issue 27, point 10; issue 36, point 4).

An interrupted grid (some runs finished, some not) whose data live in another folder than
``./data``, then the documented one-table command without ``--config data_dir=...``: it reads the
records on disk and nothing else. No training job (the unfinished runs stay unfinished), no data
check (the marker keeps the folder it was checked in; nothing is created under ``./data``), the
finished runs in the table without a "skipped" note, and the workflow's last lines say how many runs
have no record and which command trains them. ``all`` with the grid's ``data_dir`` trains what is left.
Then, on the same grid, BreastMNIST's runs and its data both deleted: the same ``all`` drops them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
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
    assert "prepare_data" not in job_stats(out), out[-3000:]  # (data_status may merge the markers: no check)
    assert "Error in rule" not in out
    # no data check: the marker still names the grid's folder, and nothing was fetched into ./data
    marker = json.loads((wd / MARKER).read_text())
    assert marker["status"] == "ok" and same(marker["check"]["data_dir"], data)
    assert json.loads((wd / "results/data/status.json").read_text())["breastmnist/28"]["status"] == "ok"
    assert not (wd / "data").exists()
    # the finished runs stay in the grid and in the table: BreastMNIST's cell over its one seed
    assert runs_csv_records(wd) == {BREAST0: True, DIGITS0: True}
    assert re.search(r"\| CON2 \(NND\) \| ours \| \d+\.\d \[1×1\]", rebuilt["table"]), rebuilt["table"]
    # what the rebuild left out, and the command that trains it: in the workflow's last lines
    assert "SKIPPED" not in one.stderr
    assert re.search(r"a table rebuild trains nothing: 1 run\(s\) of the grid have no record yet \(\w+ 1\)", one.stderr)
    assert "`snakemake --cores N all`" in one.stderr


def test_the_rebuilt_table_says_nothing_was_skipped(rebuilt: dict) -> None:
    notes = [ln for ln in rebuilt["table"].splitlines() if ln.startswith("- BreastMNIST")]
    assert not any("skipped now" in ln for ln in notes), rebuilt["table"]


def test_a_rebuild_after_a_new_record_reads_it_and_still_trains_nothing(rebuilt: dict) -> None:
    """The rebuild's aggregate follows the records on disk (their names and mtimes are a param), so a
    record written since (here: by `all`) is in the next rebuild, and `all` trains what is left."""
    wd, data = rebuilt["wd"], rebuilt["data"]
    again = snakemake(wd, "--cores", "2", "all", "--configfile", rebuilt["prof"], "--config", f"data_dir={data}")
    out = again.stdout + again.stderr
    assert again.returncode == 0, again.stderr[-3000:]
    assert finished(out)["train"] == 1, out[-3000:]
    assert (wd / BREAST1).is_file()
    assert runs_csv_records(wd) == {BREAST0: True, BREAST1: True, DIGITS0: True}
    assert re.search(r"\| CON2 \(NND\) \| ours \| \d+\.\d ± \d+\.\d \[1×2\]", (wd / TABLE).read_text())
    assert "SKIPPED" not in again.stderr
    (wd / TABLE).unlink()
    rebuild = snakemake(wd, "--cores", "1", TABLE, "--configfile", rebuilt["prof"])
    out = rebuild.stdout + rebuild.stderr
    assert rebuild.returncode == 0, rebuild.stderr[-3000:]
    assert "train" not in job_stats(out) and "a table rebuild trains nothing" not in rebuild.stderr, out[-3000:]
    assert re.search(r"\| CON2 \(NND\) \| ours \| \d+\.\d ± \d+\.\d \[1×2\]", (wd / TABLE).read_text())


def test_deleted_runs_whose_data_are_gone_leave_runs_csv_and_the_tables(rebuilt: dict) -> None:
    """The finished grid (the test above finishes it; `all` again trains what is left if it did not run), then
    BreastMNIST's run folders and its data files both deleted and the same command (same data_dir, offline):
    the dataset is checked again and skipped, nothing trains or fails, and the deleted runs' rows leave
    runs.csv and Table 1 (digits' run stays). (Issue 32, point 3; the run deleted alone, its data still
    there, is retrained: tests/workflow/test_workflow_deleted_run.py.)"""
    wd, data = rebuilt["wd"], rebuilt["data"]
    command = ("--cores", "2", "all", "--configfile", rebuilt["prof"], "--config", f"data_dir={data}")
    full = snakemake(wd, *command)
    assert full.returncode == 0, full.stderr[-3000:]
    assert runs_csv_records(wd) == {BREAST0: True, BREAST1: True, DIGITS0: True}
    table = wd / TABLE
    assert re.search(r"\| CON2 \(NND\) \| ours \| \d+\.\d ± \d+\.\d \[1×2\]", table.read_text())

    shutil.rmtree(wd / "results/runs/breastmnist")
    shutil.rmtree(data / "medmnist")
    res = snakemake(wd, *command)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert "Nothing to be done" not in out and "Error in rule" not in out, out[-3000:]
    assert finished(out)["train"] == 0 and finished(out)["aggregate"] == 1, out[-3000:]
    assert runs_csv_records(wd) == {DIGITS0: True}
    marker = json.loads((wd / MARKER).read_text())
    assert marker["status"] == "skipped", marker
    ours = [ln for ln in table.read_text().splitlines() if ln.startswith("| CON2 (NND) | ours |")]
    assert not re.search(r"\[\d+×\d+\]", "".join(ours)), ours  # no BreastMNIST cell left (nor its row)
    assert "breastmnist (28 px)" in res.stderr and "SKIPPED" in res.stderr
