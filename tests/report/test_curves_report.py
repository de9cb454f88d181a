"""The learning-curve table and figure from records' curves (no training)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from con2.aggregate.collect import collect_runs
from con2.aggregate.score_files import RUN_FOLDERS
from con2.report.artefacts import FIGURES, TABLES, ReportInputs
from con2.run.records import write_record

CURVES = {  # seed -> epoch -> nnd (CON2) ; SimCLR's knn is 10 below
    0: {2: 55.0, 5: 58.0, 10: 60.0},
    1: {2: 53.0, 5: 59.0, 10: 61.0},
    2: {2: 54.0, 5: 57.0, 10: 62.0},
}


def record(method: str, seed: int, curve: dict[int, float] | None) -> dict:
    scores = ("nnd", "lh") if method == "con2" else ("knn", "ssd")
    shift = 0.0 if method == "con2" else -10.0
    rec = {
        "schema_version": 1,
        "dataset": "breastmnist",
        "normal_class": "1",
        "method": method,
        "variant": "invert" if method == "con2" else "default",
        "seed": seed,
        "metrics": {"auroc": {s: 60.0 for s in scores} | {f"{scores[0]}@encoder/original": 70.0}},
        "timing": {"fit_seconds": 1.0, "score_seconds": 1.0, "wall_seconds": 2.0},
        "n_train": 10,
        "n_test": 5,
        "n_anomalous": 2,
        "config": {"params": {"contexts": ["invert"]} if method == "con2" else {}},
        "config_hash": "x",
    }
    if curve is not None:
        points = [
            {"epoch": e, "auroc": {scores[0]: v + shift, scores[1]: 1.0, f"{scores[0]}@encoder/original": 99.0}}
            for e, v in curve.items()
        ]
        rec["curve"] = {"views": 2, "points": points}
    return rec


@pytest.fixture
def runs(tmp_path: Path):
    paths = []
    for method in ("con2", "simclr"):
        for seed, curve in CURVES.items():
            rec = record(method, seed, curve)
            p = tmp_path / "runs" / "breastmnist" / "1" / method / rec["variant"] / f"seed{seed}" / "record.json"
            write_record(rec, p)
            paths.append(p)
    p = tmp_path / "runs" / "breastmnist" / "1" / "con2" / "flip" / "seed0" / "record.json"  # not a main variant
    write_record({**record("con2", 0, {2: 1.0}), "variant": "flip"}, p)
    paths.append(p)
    return collect_runs(paths)


CONFIG = {"report": {"subject": "con2", "medical": ["breastmnist"], "main_variants": {"con2": "invert"}}}


def test_learning_curve_table_averages_each_methods_headline_score_over_seeds(runs) -> None:
    table = TABLES["learning_curve"].builder()(ReportInputs(runs=runs, config=CONFIG, scores=RUN_FOLDERS))
    assert table.columns == ["Dataset", "Method", "epoch 2", "epoch 5", "epoch 10"]
    assert [row[1] for row in table.rows] == ["CON2 (NND)", "SimCLR (kNN)"]  # the subject first, headline scores only
    frame = table.data
    for method, shift, score in (("con2", 0.0, "nnd"), ("simclr", -10.0, "knn")):
        for epoch in (2, 5, 10):
            values = [CURVES[s][epoch] + shift for s in CURVES]
            row = frame[(frame.method == method) & (frame.epoch == epoch)].iloc[0]
            assert row["score"] == score and row["n"] == 3
            assert row["mean"] == pytest.approx(np.mean(values)) and row["std"] == pytest.approx(np.std(values, ddof=1))
    assert table.rows[0][2] == "54.0 ± 1.0 [1×3]"
    assert "2 views" in " ".join(table.notes)


def test_learning_curve_table_says_when_no_run_has_a_curve(tmp_path: Path) -> None:
    p = tmp_path / "r" / "record.json"
    write_record(record("con2", 0, None), p)
    table = TABLES["learning_curve"].builder()(ReportInputs(runs=collect_runs([p]), config=CONFIG, scores=RUN_FOLDERS))
    assert table.rows == [] and any("score_at" in n for n in table.notes)


def test_learning_curve_figure_draws_the_tables_csv(runs, tmp_path: Path) -> None:
    import pandas as pd

    table = TABLES["learning_curve"].builder()(ReportInputs(runs=runs, config=CONFIG, scores=RUN_FOLDERS))
    table.write(tmp_path / "t.csv", tmp_path / "t.md", tmp_path / "t.tex")
    figure = FIGURES["learning_curve"]
    assert figure.each == "curves" and figure.table == "learning_curve"
    for dataset in ("breastmnist", "digits"):  # digits: no curve, an empty panel that says so
        inputs = ReportInputs(table=pd.read_csv(tmp_path / "t.csv", dtype={"normal_class": str}), dataset=dataset)
        png, pdf = tmp_path / f"{dataset}.png", tmp_path / f"{dataset}.pdf"
        figure.builder()(inputs, png, pdf)
        assert png.stat().st_size > 1000 and pdf.stat().st_size > 1000
