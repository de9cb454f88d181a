"""Issue 35, points 2 and 3: the operating_points table and `con2 metrics`, both from each run's
scores.csv (old records included), against slow references written here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest
from sklearn.metrics import average_precision_score, roc_curve
from test_uncertainty import CONFIG, VARIANT, synthetic_scores, validation_scores, write_runs

from con2.aggregate.score_files import RUN_FOLDERS
from con2.builders.operating import operating_points
from con2.cli.main import main as con2_main
from con2.report.artefacts import ReportInputs
from con2.report.format import MISSING


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
    table = operating_points(ReportInputs(config=CONFIG, runs=runs, scores=RUN_FOLDERS))
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


def fpr_at_95_tpr_by_sklearn(y: np.ndarray, s: np.ndarray) -> float:
    """FPR (%) at scikit-learn's first ROC point (anomalies positive) whose TPR reaches 95%."""
    fprs, tprs, _ = roc_curve(y, s)
    return 100 * float(fprs[np.argmax(tprs >= 0.95 - 1e-12)])


def test_the_fpr_at_95_tpr_column_against_scikit_learn(tmp_path: Path) -> None:
    """Issue 44: FPR@95TPR per method, mean ± std over seeds, against scikit-learn's ROC curve; one run
    shows its exact binomial interval."""
    runs = write_runs(tmp_path)
    table = operating_points(ReportInputs(config=CONFIG, runs=runs, scores=RUN_FOLDERS))
    column = table.columns.index("FPR at 95% TPR (%)")
    by_label = {r[1]: r for r in table.rows}
    for method, score, label in (("con2", "nnd", "CON2 (NND)"), ("simclr", "knn", "SimCLR (kNN)")):
        fprs = []
        for seed in (0, 1, 2):
            y, scores = synthetic_scores(seed)
            fprs.append(fpr_at_95_tpr_by_sklearn(y, scores[(method, score)]))
        assert by_label[label][column] == f"{np.mean(fprs):.1f} ± {np.std(fprs, ddof=1):.1f}"
    one = operating_points(ReportInputs(config=CONFIG, runs=runs[runs["seed"] == 0], scores=RUN_FOLDERS))
    y, scores = synthetic_scores(0)
    fpr = fpr_at_95_tpr_by_sklearn(y, scores[("con2", "nnd")])
    n0 = int((y == 0).sum())
    ci = binomtest(round(fpr * n0 / 100), n0).proportion_ci(0.95, method="exact")
    cell = next(r for r in one.rows if r[1] == "CON2 (NND)")[column]
    assert cell == f"{fpr:.1f} [{100 * ci.low:.1f}, {100 * ci.high:.1f}]"


def rates_at_validation_threshold(y: np.ndarray, s: np.ndarray, val: np.ndarray) -> tuple[float, float]:
    """(sensitivity, specificity) in % on the test set of the smallest validation score that keeps at
    least 95% of the validation normals at or below it, found by trying every validation score."""
    t = min(v for v in val if (val <= v).mean() >= 0.95)
    return 100 * float((s[y == 1] > t).mean()), 100 * float((s[y == 0] <= t).mean())


def test_the_validation_threshold_columns_against_a_sweep_and_exact_intervals(tmp_path: Path) -> None:
    """Issue 35: runs that scored validation normals get the test rates of the threshold set on them
    (a sweep over the validation scores here), mean ± std over seeds, and for one run the exact
    binomial interval (scipy's Clopper-Pearson); runs without validation scores show the missing mark."""
    runs = write_runs(tmp_path, validation={"con2": 40})
    table = operating_points(ReportInputs(config=CONFIG, runs=runs, scores=RUN_FOLDERS))
    sens_at = table.columns.index("Sens at val threshold (%)")
    spec_at = table.columns.index("Spec at val threshold (%)")
    by_label = {r[1]: r for r in table.rows}
    sens, spec = [], []
    for seed in (0, 1, 2):
        y, scores = synthetic_scores(seed)
        a, b = rates_at_validation_threshold(y, scores[("con2", "nnd")], validation_scores(seed, "con2", 40)["nnd"])
        sens.append(a)
        spec.append(b)
    assert by_label["CON2 (NND)"][sens_at] == f"{np.mean(sens):.1f} ± {np.std(sens, ddof=1):.1f}"
    assert by_label["CON2 (NND)"][spec_at] == f"{np.mean(spec):.1f} ± {np.std(spec, ddof=1):.1f}"
    assert by_label["SimCLR (kNN)"][sens_at] == by_label["SimCLR (kNN)"][spec_at] == MISSING
    simclr = table.data[table.data["method"] == "simclr"]
    assert simclr["val_problem"].eq("no validation images scored").all()

    one = write_runs(tmp_path / "one", seeds=(0,), validation={"con2": 40})
    row = next(
        r
        for r in operating_points(ReportInputs(config=CONFIG, runs=one, scores=RUN_FOLDERS)).rows
        if r[1] == "CON2 (NND)"
    )
    y, scores = synthetic_scores(0)
    n_pos = int((y == 1).sum())
    k = round(sens[0] / 100 * n_pos)
    ci = binomtest(k, n_pos).proportion_ci(0.95, method="exact")
    assert row[sens_at] == f"{sens[0]:.1f} [{100 * ci.low:.1f}, {100 * ci.high:.1f}]"


def test_validation_scores_that_disagree_with_their_record_are_named(tmp_path: Path) -> None:
    runs = write_runs(tmp_path, seeds=(0,), validation={"con2": 40})
    run = tmp_path / "results" / "runs" / "breastmnist" / "1" / "con2" / VARIANT["con2"] / "seed0"
    pd.read_csv(run / "validation_scores.csv").head(30).to_csv(run / "validation_scores.csv", index=False)
    table = operating_points(ReportInputs(config=CONFIG, runs=runs, scores=RUN_FOLDERS))
    row = next(r for r in table.rows if r[1] == "CON2 (NND)")
    assert row[table.columns.index("Sens at val threshold (%)")] == MISSING
    problems = table.data[table.data["method"] == "con2"]["val_problem"]
    assert problems.str.contains("holds 30 row").all() and problems.str.contains("scored 40 validation").all()


def test_a_run_without_scores_is_named_not_guessed(tmp_path: Path) -> None:
    runs = write_runs(tmp_path)
    gone = tmp_path / "results" / "runs" / "breastmnist" / "1" / "simclr" / VARIANT["simclr"] / "seed1" / "scores.csv"
    gone.unlink()
    table = operating_points(ReportInputs(config=CONFIG, runs=runs, scores=RUN_FOLDERS))
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
    assert got["fpr_at_tpr"]["fpr"] == pytest.approx(fpr_at_95_tpr_by_sklearn(y, scores[("con2", "nnd")]))
    assert "record file not found" in out["not_filled"][str(missing)]
    scores_csv = run / "scores.csv"
    pd.read_csv(scores_csv).assign(nnd=0.0).to_csv(scores_csv, index=False)  # scores that disagree with the record
    assert con2_main(["metrics", str(run)]) == 1
    assert "gives AUROC 50.00 for column 'nnd'" in capsys.readouterr().out


def test_an_average_precision_interval_over_seeds_stays_within_0_and_100() -> None:
    """Found on BR35H: SimCLR's SSD AP over 3 seeds printed "96.1 to 100.5"; the t-interval is clipped."""
    from con2.builders.operating import _ap_interval

    group = pd.DataFrame({"normal_class": ["no"] * 3, "ap": [99.9, 97.0, 99.8]})
    m, sd = group["ap"].mean(), group["ap"].std(ddof=1)
    assert m + 4.3 * sd / np.sqrt(3) > 100  # the unclipped t-interval (t(0.975, 2) = 4.30) passes 100
    lo, hi = _ap_interval(group).removesuffix(" (over seeds)").split(" to ")
    assert float(hi) == 100.0 and 0 < float(lo) < m


def test_con2_metrics_prints_the_validation_threshold_where_the_run_scored_its_validation_images(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    write_runs(tmp_path, seeds=(0,), validation={"con2": 40})
    run = tmp_path / "results" / "runs" / "breastmnist" / "1" / "con2" / VARIANT["con2"] / "seed0"
    assert con2_main(["metrics", str(run), "--score", "nnd", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["runs"][str(run)]["nnd"]["from_validation"]
    y, scores = synthetic_scores(0)
    sens, spec = rates_at_validation_threshold(y, scores[("con2", "nnd")], validation_scores(0, "con2", 40)["nnd"])
    assert (got["sensitivity"], got["specificity"]) == pytest.approx((sens, spec))
    assert con2_main(["metrics", str(run), "--score", "nnd"]) == 0
    assert f"at the validation threshold {got['threshold']:.4g}: sensitivity {sens:.1f}" in capsys.readouterr().out


def test_an_external_programs_run_shows_no_validation_columns_and_the_note_says_why(tmp_path: Path) -> None:
    """Issue 46, point 7: an external program's run on BreastMNIST (which has a validation split) has no
    validation scores: its validation columns show the missing mark, and a note says why."""
    from con2.aggregate.collect import collect_runs
    from con2.run.external import write_external_run

    y, scores = synthetic_scores(0)
    run_dir = tmp_path / "runs" / "breastmnist" / "1" / "pixel_nn" / "default" / "seed0"
    write_external_run(
        run_dir, dataset="breastmnist", normal_class="1", method="pixel_nn", variant="default", seed=0,
        labels=y, scores={"nnd": scores[("con2", "nnd")]}, n_train=100, label="Pixel NN",
    )  # fmt: skip
    table = operating_points(
        ReportInputs(config=CONFIG, runs=collect_runs([run_dir / "record.json"]), scores=RUN_FOLDERS)
    )
    row = next(r for r in table.rows if r[1].startswith("Pixel NN"))
    assert row[table.columns.index("Sens at val threshold (%)")] == MISSING, row
    assert row[table.columns.index("AP (%)")] != MISSING, row  # its test scores are read
    note = next(n for n in table.notes if n.startswith("At val threshold"))
    assert "an external program's run" in note and "python -m con2.run.external" in note, note
