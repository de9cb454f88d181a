"""A FIFO at a run file's name is refused at once, never waited on (issue 47, item 11).

A FIFO named ``record.json`` or ``validation_scores.csv`` in a run folder hung the aggregation and
``con2 metrics`` forever (and a SIGTERM then said "resume from the last checkpoint"). Each command
runs in a subprocess with a timeout, so a hang fails the test instead of stopping the suite.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from con2.run.records import build_record, write_record
from con2.run.rundir import RunDir

ROOT = Path(__file__).resolve().parents[2]


def run_folder(root: Path, fifo: str) -> Path:
    """A run folder whose ``fifo`` file is a FIFO (its record and scores otherwise whole)."""
    labels = np.array([0] * 10 + [1] * 10)
    scores, val = {"nnd": np.linspace(0, 1, 20)}, {"nnd": np.zeros(4)}
    folder = root / "run"
    rd = RunDir(folder)
    folder.mkdir()
    files = {"scores.csv": rd.write_scores(labels, scores), "validation_scores.csv": rd.write_validation_scores(val)}
    record = build_record(
        dataset="digits", normal_class="0", method="extm", variant="default", seed=0, labels=labels,
        scores=scores, n_train=10, config={}, validation=val, files_sha256=files,
    )  # fmt: skip
    write_record(record, folder / "record.json")
    (folder / fifo).unlink()
    os.mkfifo(folder / fifo)
    return folder


def python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("fifo", ["record.json", "scores.csv", "validation_scores.csv"])
def test_metrics_and_the_aggregation_refuse_a_fifo_at_once(tmp_path: Path, fifo: str) -> None:
    folder = run_folder(tmp_path, fifo)
    metrics = python("import sys; from con2.cli.main import main; sys.exit(main(sys.argv[1:]))", "metrics", str(folder))
    if fifo == "validation_scores.csv":  # the run's numbers, and why it has no validation line (item 13)
        assert metrics.returncode == 0, metrics.stdout + metrics.stderr
        assert "at the validation threshold: not computed (" in metrics.stdout and "regular file" in metrics.stdout
    else:
        assert metrics.returncode == 1 and "not filled" in metrics.stdout and "regular file" in metrics.stdout
    code = (
        "import sys; from con2.aggregate.collect import collect_valid_runs; "
        "from con2.aggregate.bundle import bundle_bytes;"
        "f, s = collect_valid_runs([sys.argv[1]]); bundle_bytes(f['record'].unique());"
        "print(len(f), *[x.problem for x in s], sep='|')"
    )
    collected = python(code, str(folder / "record.json"))
    assert collected.returncode == 0, collected.stderr[-2000:]
    rows, *problems = collected.stdout.strip().split("|")
    assert rows == "0" and len(problems) == 1 and "regular file" in problems[0], collected.stdout


def test_metrics_says_why_a_validation_line_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 47, item 13: a validation_scores.csv holding a NaN dropped the validation line without a word."""
    from con2.cli.main import main

    folder = run_folder(tmp_path, "validation_scores.csv")
    (folder / "validation_scores.csv").unlink()
    (folder / "validation_scores.csv").write_text("index,nnd\n0,0.1\n1,nan\n2,0.2\n3,0.3\n")
    record = json.loads((folder / "record.json").read_text())  # as if its run wrote it (else refused: issue 57)
    record["files_sha256"]["validation_scores.csv"] = hashlib.sha256(
        (folder / "validation_scores.csv").read_bytes()
    ).hexdigest()
    (folder / "record.json").write_text(json.dumps(record))
    assert main(["metrics", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "at the validation threshold: not computed (" in out and "non-finite" in out, out
