"""The smaller findings of issue 47, item 13, each checked as a user meets it.

``--log /dev/full`` failed (exit 1, "(unknown path)") only after the run had finished; the workflow
printed a ``con2 data get breastmnist --size 16`` that the command refuses; ``con2 contexts
--split-seed -1`` was accepted; ``con2 metrics --score nnd lh RUN`` took the run folder for a score
column. (The floors' batch, ``--rules /etc/passwd`` and the silent validation line are tested beside
their fixes: tests/run/test_floors.py, tests/cli/test_methods_cli.py, tests/report/test_fifo_files.py.)
"""

from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np
import pytest
from conftest import TINY

from con2.cli.main import main
from con2.data.medmnist_source import check_size
from con2.run.external import write_external_run
from con2.workflow.status import data_fix


def one_line(capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("con2: error: ") and "Fix: " in err, err
    for needle in needles:
        assert needle in err, (needle, err)


def test_a_log_that_is_a_device_is_refused_before_the_run(tmp_path: Path, capsys) -> None:
    argv = ["train", "--set", *[f"{k}={v}" for k, v in TINY.items()], "--run-dir", str(tmp_path / "r")]
    assert main([*argv, "--log", "/dev/full"]) == 2
    one_line(capsys, "--log /dev/full is not a regular file")
    assert not (tmp_path / "r").exists()


def test_the_printed_data_fix_is_a_command_that_runs(tmp_path: Path) -> None:
    first, command = data_fix("breastmnist", 16, tmp_path)
    argv = shlex.split(command)
    size = int(argv[argv.index("--size") + 1])
    check_size("breastmnist", size)  # the command's own check: --size 16 raised here
    assert size == 28 and "data_size: 28" in first
    assert data_fix("breastmnist", 64, tmp_path) == ("", f"con2 data get breastmnist --data-dir {tmp_path} --size 64")


def test_contexts_refuses_a_negative_split_seed(capsys) -> None:
    assert main(["contexts", "--dataset", "digits", "--split-seed", "-1"]) == 2
    one_line(capsys, "--split-seed -1", "Fix: --split-seed 0")


def test_metrics_takes_a_folder_after_score_columns_as_a_run(tmp_path: Path, capsys) -> None:
    labels = np.array([0] * 8 + [1] * 8)
    scores = {"nnd": np.linspace(0, 1, 16), "lh": np.linspace(1, 0, 16)}
    run = tmp_path / "run"
    write_external_run(run, dataset="digits", normal_class="0", method="extm", seed=0, labels=labels,
                       scores=scores, n_train=10)  # fmt: skip
    assert main(["metrics", "--score", "nnd", str(run)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{run}:" and [line.split(":")[0].strip() for line in out[1:]] == ["nnd"]
    assert main(["metrics", "--score", "nnd", "lh"]) == 2
    one_line(capsys, "no run folder given")
