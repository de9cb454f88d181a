"""A finished run deleted from disk is retrained by the same command (issue 32, point 3).

After the tiny profile, ``rm -rf`` one run's folder (or only its ``record.json``) and the same
``snakemake ... all``: Snakemake 9 never rebuilds a deleted intermediate file whose consumers are
up to date (``runs.csv`` is newer than every record still there), so the run was neither retrained
nor dropped and the tables kept its rows. The run is retrained, alone, and the aggregation and
the tables are rebuilt from its new record. A deleted run whose data are gone too is dropped from
runs.csv and the tables instead (its dataset is checked again and skipped): tests/workflow/test_table_rebuild.py,
on the grid with data of its own that it has built. The workflow's tiny profile runs once per session (the
``tiny_run`` fixture, tests/conftest.py); those tests work in a copy of it.
"""

from __future__ import annotations

import csv
import json
import shutil
import time
from pathlib import Path

import pytest
from workflow_helpers import TEST_CONFIG, clone, finished, records, snakemake

pytestmark = pytest.mark.slow

RUN = "results/runs/digits/0/con2/flip/seed0"
RECORD = f"{RUN}/record.json"
RUNS_CSV = "results/evaluation/runs.csv"
TABLE = "results/tables/all_contexts.csv"  # one row per (dataset, score, context): flip's is this run's AUROC
FLIP_NND = ("digits", "nnd", "flip")


def rows_of(wd: Path, record: str) -> list[dict[str, str]]:
    with open(wd / RUNS_CSV, newline="") as fh:
        return [row for row in csv.DictReader(fh) if row["record"] == record]


def flip_auroc(wd: Path) -> float:
    """The flip column of the contexts table (digits, score nnd): the AUROC it shows for this run."""
    with open(wd / TABLE, newline="") as fh:
        (row,) = [r for r in csv.DictReader(fh) if (r["dataset"], r["score"], r["context"]) == FLIP_NND]
    return float(row["ours_mean"])


@pytest.mark.parametrize("deleted", ["run folder", "record.json"])
def test_a_deleted_finished_run_is_retrained_by_the_same_command(tiny_run: Path, tmp_path: Path, deleted: str) -> None:
    wd = clone(tiny_run, tmp_path / "wd")
    before = json.loads((wd / RECORD).read_text())
    n_rows = len(rows_of(wd, RECORD))
    others = {p: t for p, t in records(wd).items() if p != RECORD}
    assert n_rows > 0 and flip_auroc(wd) == pytest.approx(before["metrics"]["auroc"]["nnd"])

    shutil.rmtree(wd / RUN) if deleted == "run folder" else (wd / RECORD).unlink()
    deleted_at = time.time()
    res = snakemake(wd, "--cores", "2", "all", "--configfile", TEST_CONFIG)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert "Nothing to be done" not in out, out[-3000:]

    # the deleted run, and only it, trained again under the same config
    assert finished(out)["train"] == 1, out[-3000:]
    after = json.loads((wd / RECORD).read_text())
    assert (wd / RECORD).stat().st_mtime > deleted_at
    assert after["config_hash"] == before["config_hash"] and after["seed"] == before["seed"]
    assert {p: t for p, t in records(wd).items() if p != RECORD} == others  # no other run touched

    # the aggregation and the tables are rebuilt from the new record
    assert (wd / RUNS_CSV).stat().st_mtime > deleted_at and (wd / TABLE).stat().st_mtime > deleted_at
    rows = rows_of(wd, RECORD)
    assert len(rows) == n_rows
    nnd = [float(r["auroc"]) for r in rows if r["score"] == "nnd"]
    assert nnd == [pytest.approx(after["metrics"]["auroc"]["nnd"])]
    assert flip_auroc(wd) == pytest.approx(after["metrics"]["auroc"]["nnd"])

    # and nothing is left to do afterwards
    again = snakemake(wd, "--cores", "2", "all", "--configfile", TEST_CONFIG)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stderr[-3000:]


def test_a_record_named_as_the_target_trains_when_the_data_check_must_run_again(tiny_run: Path, tmp_path: Path) -> None:
    """Found with the BR35H study: after a change to the data check's code, ``snakemake <record>``
    ran only the data check and ended "1 of 1 steps (100%) done" without the record (Snakemake 9
    skips a job below an `ancient` input whose job must run). A run that trains anyway reads its
    marker as a plain input (`RunJobs.trains`): the one command trains it; finished runs still
    never retrain for a data check."""
    wd = clone(tiny_run, tmp_path / "wd")
    others = {p: t for p, t in records(wd).items() if p != RECORD}
    (wd / RECORD).unlink()
    script = wd / "workflow/scripts/prepare_data.py"
    script.write_text(script.read_text() + "\n# an edit: the data check's code changed\n")
    res = snakemake(wd, "--cores", "2", RECORD, "--configfile", TEST_CONFIG)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert finished(out) == {"prepare_data": 1, "train": 1}, out[-3000:]
    assert (wd / RECORD).is_file()
    assert {p: t for p, t in records(wd).items() if p != RECORD} == others  # no finished run retrained
