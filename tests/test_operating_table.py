"""Issue 35, points 2 and 3: the operating_points table and `con2 metrics`, both from each run's
scores.csv (old records included), against slow references written here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score
from test_uncertainty import CONFIG, VARIANT, synthetic_scores, write_runs

from con2.cli.main import main as con2_main
from con2.report.artefacts import ReportInputs
from con2.report.operating import operating_points


def sensitivity_at_95_by_sweep(y: np.ndarray, s: np.ndarray) -> tuple[float, float]:
    """(sensitivity, specificity) in % of the best threshold keeping >= 95% of normals normal: every
    candidate threshold tried (each score, and below the lowest), flagged = strictly above."""
    best = (-1.0, -1.0)
    for t in np.r_[s.min() - 1.0, np.unique(s)]:
        spec = float((s[y == 0] <= t).mean())
        sens = float((s[y == 1] > t).mean())
        if spec >= 0.95 and (sens, spec) > best:
            best = (sens, spec)
    return 100 * best[0], 100 * best[1]


@pytest.mark.parametrize("old", [False, True])
def test_operating_points_table_against_sklearn_and_a_sweep(tmp_path: Path, old: bool) -> None:
    """Records as written now (schema 2) and before intervals (schema 1): the same numbers, read from
    their scores.csv."""
    runs = write_runs(tmp_path, old=old)
    table = operating_points(ReportInputs(config=CONFIG, runs=runs))
    by_label = {r[1]: r for r in table.rows}
    assert list(by_label) == ["CON2 (NND)", "CON2 (LH)", "SimCLR (kNN)", "SimCLR (SSD)"]  # the subject first
    for method, score, label in (("con2", "nnd", "CON2 (NND)"), ("simclr", "knn", "SimCLR (kNN)")):
        aps, sens = [], []
        for seed in (0, 1, 2):
            y, scores = synthetic_scores(seed)
            aps.append(100 * average_precision_score(y, scores[(method, score)]))
            sens.append(sensitivity_at_95_by_sweep(y, scores[(method, score)])[0])
        row = by_label[label]
        assert row[0] == "BreastMNIST" and row[-1] == "1×3"
        assert row[2] == f"{np.mean(aps):.1f} ± {np.std(aps, ddof=1):.1f}"
        assert row[4] == f"{np.mean(sens):.1f} ± {np.std(sens, ddof=1):.1f}"
        per_run = table.data[(table.data["method"] == method) & (table.data["score"] == score)]
        assert per_run.sort_values("seed")["ap"].to_numpy() == pytest.approx(aps)
    assert table.data["problem"].eq("").all()


def test_a_run_without_scores_is_named_not_guessed(tmp_path: Path) -> None:
    runs = write_runs(tmp_path)
    gone = tmp_path / "results" / "runs" / "breastmnist" / "1" / "simclr" / VARIANT["simclr"] / "seed1" / "scores.csv"
    gone.unlink()
    table = operating_points(ReportInputs(config=CONFIG, runs=runs))
    assert any("breastmnist/1 simclr/default seed 1: no scores.csv beside the record" in n for n in table.notes)
    simclr = next(r for r in table.rows if r[1] == "SimCLR (kNN)")
    assert simclr[-1] == "1×2"  # the two runs that have their scores


def test_con2_metrics_fills_old_records_from_their_scores(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    write_runs(tmp_path, old=True, seeds=(0,))
    run = tmp_path / "results" / "runs" / "breastmnist" / "1" / "con2" / "invert" / "seed0"
    missing = tmp_path / "nowhere"
    assert con2_main(["metrics", str(run), str(missing), "--score", "nnd", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    y, scores = synthetic_scores(0)
    got = out["runs"][str(run)]["nnd"]
    assert got["ap"]["ap"] == pytest.approx(100 * average_precision_score(y, scores[("con2", "nnd")]))
    sens, spec = sensitivity_at_95_by_sweep(y, scores[("con2", "nnd")])
    assert got["at_specificity"]["sensitivity"] == pytest.approx(sens)
    assert got["at_specificity"]["specificity"] == pytest.approx(spec)
    assert "record file not found" in out["not_filled"][str(missing)]
    scores_csv = run / "scores.csv"
    pd.read_csv(scores_csv).assign(nnd=0.0).to_csv(scores_csv, index=False)  # scores that disagree with the record
    assert con2_main(["metrics", str(run)]) == 1
    assert "gives AUROC 50.00 for column 'nnd'" in capsys.readouterr().out


def test_an_average_precision_interval_over_seeds_stays_within_0_and_100() -> None:
    """Found on BR35H: SimCLR's SSD AP over 3 seeds printed "96.1 to 100.5"; the t-interval is clipped."""
    from con2.report.operating import _ap_interval

    group = pd.DataFrame({"normal_class": ["no"] * 3, "ap": [99.9, 97.0, 99.8]})
    m, sd = group["ap"].mean(), group["ap"].std(ddof=1)
    assert m + 4.3 * sd / np.sqrt(3) > 100  # the unclipped t-interval (t(0.975, 2) = 4.30) passes 100
    lo, hi = _ap_interval(group).removesuffix(" (over seeds)").split(" to ")
    assert float(hi) == 100.0 and 0 < float(lo) < m
