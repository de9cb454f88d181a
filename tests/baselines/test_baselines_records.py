"""Records from outside the harness: the external-program path, and schema rejection on read."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from con2.run.external import main as external_main
from con2.run.external import write_external_run
from con2.run.records import RecordError, read_record

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def record_file(tmp_path) -> Path:
    labels = np.array([0, 0, 0, 1, 1])
    write_external_run(
        tmp_path / "run",
        dataset="digits",
        normal_class="3",
        method="ext",
        seed=0,
        labels=labels,
        scores={"s": np.array([0.1, 0.2, 0.3, 0.9, 0.25])},
        n_train=10,
    )
    return tmp_path / "run" / "record.json"


def test_external_run_writes_standard_files(record_file):
    record = read_record(record_file)
    assert record["metrics"]["auroc"]["s"] == pytest.approx(100 * 5 / 6)
    assert (record["n_test"], record["n_anomalous"], record["n_train"]) == (5, 2, 10)
    table = pd.read_csv(record_file.parent / "scores.csv")
    assert list(table.columns) == ["index", "label", "s"]


def rewrite(path: Path, edit) -> Path:
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record))
    return path


def test_record_missing_field_is_rejected_naming_field_and_file(record_file):
    rewrite(record_file, lambda r: r.pop("seed"))
    with pytest.raises(RecordError) as err:
        read_record(record_file)
    assert str(record_file) in str(err.value) and "'seed'" in str(err.value)


@pytest.mark.parametrize(
    "field,edit",
    [
        ("n_test", lambda r: r.update(n_test="5")),
        ("seed", lambda r: r.update(seed=0.5)),
        ("metrics.auroc.s", lambda r: r["metrics"]["auroc"].update(s="high")),
        ("timing.fit_seconds", lambda r: r["timing"].pop("fit_seconds")),
    ],
)
def test_record_wrong_type_is_rejected_naming_field_and_file(record_file, field, edit):
    rewrite(record_file, edit)
    with pytest.raises(RecordError) as err:
        read_record(record_file)
    assert str(record_file) in str(err.value) and repr(field) in str(err.value)


def test_external_cli_refuses_scores_of_another_test_set(tmp_path, capsys):
    raw = tmp_path / "raw.csv"
    raw.write_text("label,score\n0,0.1\n1,0.9\n")
    code = external_main(
        [
            "--scores",
            str(raw),
            "--run-dir",
            str(tmp_path / "run"),
            "--dataset",
            "digits",
            "--normal-class",
            "0",
            "--method",
            "ext",
            "--seed",
            "0",
            "--data-dir",
            str(tmp_path),
        ]
    )
    assert code == 2 and "labels differ from the harness's digits split" in capsys.readouterr().err
    assert not (tmp_path / "run" / "record.json").exists()
    raw.write_text("label,score\n0,0.1\n1,oops\n")
    code = external_main(
        [
            "--scores",
            str(raw),
            "--run-dir",
            str(tmp_path / "run"),
            "--dataset",
            "d",
            "--normal-class",
            "0",
            "--method",
            "ext",
            "--seed",
            "0",
            "--n-train",
            "3",
        ]
    )
    assert code == 2 and "['score'] are not numeric" in capsys.readouterr().err


@pytest.mark.slow
def test_snakemake_rule_for_an_external_program(tmp_path):
    """The documented example rule runs a stand-in external program and leaves a valid record."""
    snakemake = shutil.which("snakemake", path=str(Path(sys.executable).parent)) or shutil.which("snakemake")
    if snakemake is None:
        pytest.skip("snakemake is not installed (pip install -e '.[workflow]')")
    target = "results/runs/digits/0/pixel_nn/default/seed0/record.json"
    res = subprocess.run(
        [
            snakemake,
            "-s",
            str(REPO / "baselines/examples/pixel_nn.smk"),
            "--cores",
            "1",
            "--directory",
            str(tmp_path),
            "--config",
            f"data_dir={tmp_path / 'data'}",
            "--",
            target,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    record = read_record(tmp_path / target)
    assert record["method"] == "pixel_nn"
    # the plumbing, not the outcome: the record's AUROC is the one of the scores it wrote beside it
    scores = pd.read_csv(tmp_path / Path(target).parent / "scores.csv")
    assert record["n_test"] == len(scores) and record["n_anomalous"] == int(scores["label"].sum())
    assert record["metrics"]["auroc"]["nnd"] == pytest.approx(100 * roc_auc_score(scores["label"], scores["nnd"]))
