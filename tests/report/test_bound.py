"""The budget bound (report.bound): paired differences over seeds, GPU lines, the verdict's sentences."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from con2.report.artefacts import TABLES, ReportInputs
from con2.report.budget import bound_lines, bound_rows
from con2.report.gpu_runs import read_gpu_lines
from con2.report.paired import paired_interval

ROOT = Path(__file__).resolve().parents[2]
SPEC = {
    "dataset": "breastmnist",
    "budgets": [{"label": "28 px, 10 epochs", "con2": "invert", "content": "content_only", "simclr": "default"}],
    "gpu": [
        {
            "label": "224 px, 128 epochs",
            "epochs": 128,
            "image_size": 224,
            "con2": "as printed",
            "content": "content only",
            "simclr": "SimCLR + kNN",
        },
        {
            "label": "224 px, 2048 epochs",
            "epochs": 2048,
            "image_size": 224,
            "con2": "as printed",
            "content": "content only",
            "simclr": "SimCLR + kNN",
        },
    ],
    "unsettled": "2048 epochs at 224 px",
}


def _runs(values: dict[tuple[str, str, str], list[float]]) -> pd.DataFrame:
    rows = [
        {
            "dataset": "breastmnist",
            "normal_class": "1",
            "method": m,
            "variant": v,
            "score": s,
            "seed": i,
            "auroc": a,
            "record": None,
            "device": "cpu",
        }
        for (m, v, s), aurocs in values.items()
        for i, a in enumerate(aurocs)
    ]
    return pd.DataFrame(rows)


def test_paired_interval_is_the_t_interval_of_the_per_seed_differences():
    a = {0: 57.0, 1: 58.4, 2: 57.5, 3: 59.0}
    b = {0: 66.0, 1: 67.1, 2: 65.2, 3: 70.0, 9: 99.0}  # seed 9 has no partner: left out
    mean, low, high, n = paired_interval(a, b)
    d = np.array([b[s] - a[s] for s in range(4)])
    ref_low, ref_high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert n == 4 and mean == pytest.approx(d.mean(), abs=1e-12)
    assert (low, high) == pytest.approx((ref_low, ref_high), abs=1e-9)
    assert math.isnan(paired_interval({0: 1.0}, {0: 2.0})[1]) and paired_interval({}, {0: 1.0})[3] == 0


def test_rows_from_records_and_gpu_lines_and_the_verdict(tmp_path):
    runs = _runs(
        {
            ("con2", "invert", "nnd"): [57.0, 58.4, 57.5],
            ("con2", "content_only", "nnd"): [64.0, 61.0, 67.6],
            ("simclr", "default", "knn"): [66.0, 67.1, 65.2],
            ("con2", "invert", "lh"): [1.0, 1.0, 1.0],  # another score: not read
        }
    )
    lines = [
        {"setting": "as printed", "seed": 0, "epochs": 128, "main": "nnd", "auroc": {"nnd": 62.5}, "device": "cuda"},
        {"event": "point", "setting": "as printed", "seed": 0, "epoch": 64, "auroc": {"nnd": 1.0}},
        {"event": "run", "setting": "SimCLR + kNN", "seed": 0, "epochs": 128, "main": "knn", "auroc": {"knn": 73.1}},
        {
            "event": "run",
            "setting": "as printed",
            "seed": 0,
            "epochs": 128,
            "image_size": 64,
            "main": "nnd",
            "auroc": {"nnd": 10.0},
        },  # 64 px: another budget
    ]
    f = tmp_path / "h200_x_gpu_fidelity.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    gpu = read_gpu_lines([f])
    assert sorted(gpu["auroc"]) == [10.0, 62.5, 73.1]

    rows = bound_rows(runs, gpu, SPEC)
    assert [r["budget"] for r in rows] == ["28 px, 10 epochs", "224 px, 128 epochs"]  # 2048 not measured
    cpu, g = rows
    assert cpu["con2_mean"] == pytest.approx(np.mean([57.0, 58.4, 57.5]))
    assert cpu["simclr_minus_con2"] == pytest.approx(np.mean([9.0, 8.7, 7.7]))
    assert cpu["simclr_low"] > 0  # SimCLR above CON2 on every seed by ~8: the interval excludes 0
    assert cpu["content_low"] < 0 < cpu["content_high"]  # 7.0, 2.6, 10.1: the interval holds 0
    assert g["con2_mean"] == 62.5 and g["simclr_minus_con2"] == pytest.approx(10.6) and math.isnan(g["simclr_low"])
    assert math.isnan(g["content_mean"])

    said = bound_lines(rows, SPEC)
    assert "SimCLR + kNN above it by 8.5 (95% interval over seeds)" in said[0]
    assert "content alone +6.6, not decided at 3 paired seed(s)" in said[0]
    assert "SimCLR + kNN +10.6, not decided at 1 paired seed(s)" in said[1] and "content alone" not in said[1]
    assert said[-1].startswith("Not measured: 224 px, 2048 epochs") and "2048 epochs at 224 px" in said[-1]


def test_budget_bound_table_builds_from_the_committed_gpu_lines():
    """The GPU lines in benchmarks/measured/ give the 224 px rows: 128 epochs (H200, seeds 0 and 1) and
    2048 epochs (H100, seed 0)."""
    from con2.report.artefacts import _read_gpu_folder

    gpu = _read_gpu_folder(str(ROOT / "benchmarks" / "measured"))
    measured = gpu[(gpu["setting"] == "as printed") & (gpu["epochs"] == 128) & (gpu["image_size"] == 224)]
    assert len(measured) >= 2  # seeds 0 and 1 (issue 17's calls)
    inputs = ReportInputs(
        config={"report": {"bound": SPEC}},
        runs=_runs({}).reindex(columns=["dataset", "method", "variant", "score", "seed", "auroc", "record"]),
        gpu=gpu,
    )
    table = TABLES["budget_bound"].builder()(inputs)
    # the 2048-epoch row: the H100 call of 2026-11-27 (CON2 as printed, seed 0; content alone and SimCLR not yet)
    assert [row[0] for row in table.rows] == ["224 px, 128 epochs", "224 px, 2048 epochs"]
    expected = measured.groupby("seed")["auroc"].last().mean()
    assert table.data.loc[0, "con2_mean"] == pytest.approx(expected)
    paper_length = gpu[(gpu["setting"] == "as printed") & (gpu["epochs"] == 2048) & (gpu["image_size"] == 224)]
    assert table.data.loc[1, "con2_mean"] == pytest.approx(paper_length["auroc"].iloc[-1])
    assert not any(n.startswith("Not measured: 224 px, 2048 epochs") for n in table.notes)


def test_a_checkout_without_gpu_lines_builds_the_bound_from_the_records(tmp_path):
    """The gpu input is optional (an installed workflow has no benchmarks/measured/): no GPU rows then."""
    from con2.aggregate.runs_csv import RUN_COLUMNS

    runs_csv = tmp_path / "runs.csv"
    pd.DataFrame(columns=RUN_COLUMNS).to_csv(runs_csv, index=False)
    inputs = ReportInputs.load(TABLES["budget_bound"], {"runs": str(runs_csv)}, {"report": {"bound": SPEC}})
    assert inputs.gpu is None
    table = TABLES["budget_bound"].builder()(inputs)
    assert table.rows == [] and table.notes[0].startswith("No budget of report.bound measured yet")
    with pytest.raises(ValueError, match="runs"):
        ReportInputs.load(TABLES["budget_bound"], {}, {})


def test_a_budget_without_con2_runs_says_so() -> None:
    runs = _runs({("con2", "content_only", "nnd"): [78.2]})
    rows = bound_rows(runs, None, {**SPEC, "gpu": []})
    assert bound_lines(rows, SPEC)[0] == "28 px, 10 epochs (cpu): CON2 as printed not measured yet."
