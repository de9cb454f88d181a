"""A deleted aggregate is brought back by the same ``snakemake ... all`` (issue 47, item 3).

After an aggregation that failed (a full disk: Snakemake removes the job's outputs) or an
``rm results/evaluation/runs.csv`` (or ``scores.json.gz``, or the whole folder), the same command
said "Nothing to be done": Snakemake 9 rebuilds a deleted intermediate only for a job that must run,
and the tables were up to date. ``all`` names the aggregates itself now, so they come back, equal to
what the records give, and the tables are rebuilt from them; nothing is trained.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from pathlib import Path

import pytest
from workflow_helpers import TEST_CONFIG, clone, finished, snakemake

pytestmark = pytest.mark.slow

EVALUATION = "results/evaluation"
AGGREGATES = ("runs.csv", "summary.csv", "skipped.csv", "scores.json.gz")
TABLE = "results/tables/all_contexts.csv"  # read from runs.csv


def digests(wd: Path) -> dict[str, str]:
    return {name: hashlib.sha256((wd / EVALUATION / name).read_bytes()).hexdigest() for name in AGGREGATES}


@pytest.mark.parametrize("deleted", ["runs.csv", "scores.json.gz", EVALUATION])
def test_a_deleted_aggregate_is_rebuilt_by_all(tiny_run: Path, tmp_path: Path, deleted: str) -> None:
    wd = clone(tiny_run, tmp_path / "wd")
    before = digests(wd)
    target = wd / (deleted if deleted == EVALUATION else f"{EVALUATION}/{deleted}")
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    deleted_at = time.time()

    res = snakemake(wd, "--cores", "2", "all", "--configfile", TEST_CONFIG)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert "Nothing to be done" not in out, out[-3000:]
    assert finished(out)["aggregate"] == 1 and finished(out)["train"] == 0, out[-3000:]
    assert digests(wd) == before, "the rebuilt aggregates differ from what the same records gave"
    assert (wd / TABLE).stat().st_mtime > deleted_at, "the tables were not rebuilt from the new aggregate"
