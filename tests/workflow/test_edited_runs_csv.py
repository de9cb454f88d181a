"""A hand-edited ``runs.csv`` stops the launch in one line and keeps every table (issue 57, item 7).

A ``runs.csv`` edited by hand (content changed, a normal mtime) is newer than the tables, so every table job
ran, each failed on the seal (:func:`con2.aggregate.bundle.check_runs_seal`) with its own traceback, and
Snakemake deleted the outputs of every failed job: the 76 tables and figures built before. Now the workflow
checks the seal once, before any job (:meth:`con2.workflow.artefact_files.ArtefactFiles.check_seals`): one line with the
fix, no job, every table and figure as it was; the fix then gives back the tables the records give.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from workflow_helpers import TEST_CONFIG, clone, finished, snakemake

pytestmark = pytest.mark.slow

RUNS_CSV = "results/evaluation/runs.csv"


def built(wd: Path, folders: tuple[str, ...] = ("results/tables", "results/figures")) -> dict[str, bytes]:
    """Every file under ``folders`` of ``wd``: its bytes, by its path."""
    return {str(p.relative_to(wd)): p.read_bytes() for f in folders for p in sorted((wd / f).rglob("*")) if p.is_file()}


def test_a_hand_edited_runs_csv_stops_the_launch_in_one_line_and_keeps_every_table(
    tiny_run: Path, tmp_path: Path
) -> None:
    wd = clone(tiny_run, tmp_path / "wd")
    before = built(wd)
    assert sum(name.startswith("results/tables/") for name in before) > 20, sorted(before)
    written = (wd / RUNS_CSV).read_bytes()
    runs = pd.read_csv(wd / RUNS_CSV)
    runs.loc[0, "auroc"] = runs.loc[0, "auroc"] + 10  # a hand edit: the content changes, the mtime is now's
    runs.to_csv(wd / RUNS_CSV, index=False)
    edited = (wd / RUNS_CSV).read_bytes()
    assert edited != written

    res = snakemake(wd, "--cores", "2", "all", "--configfile", TEST_CONFIG)
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    lines = [line for line in out.splitlines() if "is not the file the aggregation wrote" in line]
    assert len(lines) == 1, out[-5000:]
    assert lines[0].startswith(f"con2 workflow: {RUNS_CSV} is not the file the aggregation wrote"), lines
    assert f"Fix: delete it (rm {RUNS_CSV}) and run the same snakemake command again" in lines[0]
    assert "Traceback" not in out and "Error in rule" not in out and not finished(out), out[-5000:]
    assert built(wd) == before, "a table or figure was changed or deleted"
    assert (wd / RUNS_CSV).read_bytes() == edited, "the hand-edited file is the user's to delete"

    (wd / RUNS_CSV).unlink()  # the fix the line names
    res = snakemake(wd, "--cores", "2", "all", "--configfile", TEST_CONFIG)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert finished(out)["train"] == 0 and finished(out)["aggregate"] == 1, out[-3000:]
    assert (wd / RUNS_CSV).read_bytes() == written, "the rebuilt runs.csv is not what the records give"
    tables = built(wd, ("results/tables",))
    assert tables == {name: data for name, data in before.items() if name in tables} and len(tables) > 20
