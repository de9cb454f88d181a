"""Uncertainty of AUROCs (issue 26, points 1-4): DeLong intervals and paired tests against slow
references written here, Holm against its definition, the record's intervals, the comparisons
table, Table 1's mark and the reproduction verdict's inside/outside and orderings."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from con2.aggregate.score_files import RUN_FOLDERS
from con2.maths import stats

ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- slow references
def slow_components(pos: np.ndarray, neg: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """DeLong's structural components by their O(m n) definition: psi(x, y) = 1, 1/2, 0."""
    psi = np.array([[1.0 if x > y else 0.5 if x == y else 0.0 for y in neg] for x in pos])
    return float(psi.mean()), psi.mean(axis=1), psi.mean(axis=0)


def slow_variance(pos: np.ndarray, neg: np.ndarray) -> float:
    _, v10, v01 = slow_components(pos, neg)
    m, n = len(pos), len(neg)
    return sum((v - v10.mean()) ** 2 for v in v10) / ((m - 1) * m) + sum((v - v01.mean()) ** 2 for v in v01) / (
        (n - 1) * n
    )


def slow_paired(y: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(mean difference, DeLong variance of it over images) from the definition, all 2S scorers."""
    s = a.shape[0]
    scorers = [*a, *b]
    comps = [slow_components(x[y == 1], x[y == 0]) for x in scorers]
    m, n = int((y == 1).sum()), int((y == 0).sum())
    k = len(scorers)
    cov = np.zeros((k, k))
    for i, j in itertools.product(range(k), range(k)):
        v10i, v10j = comps[i][1], comps[j][1]
        v01i, v01j = comps[i][2], comps[j][2]
        s10 = sum((v10i[t] - v10i.mean()) * (v10j[t] - v10j.mean()) for t in range(m)) / (m - 1)
        s01 = sum((v01i[t] - v01i.mean()) * (v01j[t] - v01j.mean()) for t in range(n)) / (n - 1)
        cov[i, j] = s10 / m + s01 / n
    c = np.array([1 / s] * s + [-1 / s] * s)
    diff = float(np.mean([comps[i][0] - comps[s + i][0] for i in range(s)]))
    return diff, float(c @ cov @ c)


def sample(rng: np.random.Generator, m: int, n: int, shift: float = 1.0, ties: bool = False):
    pos = rng.normal(shift, 1.0, m)
    neg = rng.normal(0.0, 1.0, n)
    if ties:
        pos, neg = np.round(pos * 2) / 2, np.round(neg * 2) / 2
    return pos, neg


# ----------------------------------------------------------------------------- point 1: one run
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("m,n", [(2, 2), (5, 17), (42, 114)])
def test_fast_delong_matches_the_definition_and_sklearn(m, n, ties):
    rng = np.random.default_rng(m * 1000 + n + ties)
    pos, neg = sample(rng, m, n, ties=ties)
    auc, var = stats.delong_auc_variance(pos, neg)
    ref_auc, ref_v10, ref_v01 = slow_components(pos, neg)
    comp = stats.delong_components(pos, neg)
    assert auc == pytest.approx(ref_auc, abs=1e-12)
    labels = np.r_[np.ones(m), np.zeros(n)]
    assert auc == pytest.approx(roc_auc_score(labels, np.r_[pos, neg]), abs=1e-12)
    np.testing.assert_allclose(comp.v10[0], ref_v10, atol=1e-12)
    np.testing.assert_allclose(comp.v01[0], ref_v01, atol=1e-12)
    assert var == pytest.approx(slow_variance(pos, neg), abs=1e-9)


def test_midranks_average_tied_ranks():
    np.testing.assert_allclose(stats.midranks(np.array([3.0, 1.0, 3.0, 2.0, 3.0])), [4, 1, 4, 2, 4])
    np.testing.assert_allclose(stats.midranks(np.array([0.5, 0.5])), [1.5, 1.5])


def test_interval_is_wald_clipped_and_agrees_with_a_bootstrap():
    rng = np.random.default_rng(7)
    pos, neg = sample(rng, 42, 114, shift=0.6)
    ci = stats.delong_interval(pos, neg)
    z = 1.959963984540054
    assert ci.se == pytest.approx(math.sqrt(slow_variance(pos, neg)), abs=1e-12)
    assert (ci.lo, ci.hi) == pytest.approx((ci.auc - z * ci.se, ci.auc + z * ci.se), abs=1e-12)
    # a stratified bootstrap over images: its standard error agrees within its own error (B = 2000: ~3% + bias)
    boots = []
    for _ in range(2000):
        p, q = rng.choice(pos, len(pos)), rng.choice(neg, len(neg))
        boots.append(slow_components_fast(p, q))
    assert np.std(boots, ddof=1) == pytest.approx(ci.se, rel=0.1)
    # clipped at 1 for a perfect separation, and zero width
    perfect = stats.delong_interval(np.array([5.0, 6.0]), np.array([1.0, 2.0, 3.0]))
    assert (perfect.auc, perfect.lo, perfect.hi) == (1.0, 1.0, 1.0)
    near = stats.delong_interval(np.array([5.0, 6.0, 0.0]), np.array([1.0, 2.0, 3.0]))
    assert near.hi == 1.0 and near.lo < near.auc < 1.0


def slow_components_fast(pos: np.ndarray, neg: np.ndarray) -> float:
    labels = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    return float(roc_auc_score(labels, np.r_[pos, neg]))


def test_degenerate_runs_give_nan_and_a_reason_not_a_crash():
    empty = stats.delong_interval(np.array([]), np.array([1.0, 2.0]))
    assert math.isnan(empty.auc) and "no anomalous" in empty.reason
    single = stats.delong_interval(np.array([3.0]), np.array([1.0, 2.0]))
    assert single.auc == 1.0 and math.isnan(single.se) and "fewer than two" in single.reason
    paired = stats.delong_paired(np.array([1, 0, 0]), np.array([0.9, 0.1, 0.2]), np.array([0.5, 0.4, 0.6]))
    assert math.isnan(paired.p) and paired.reason


# ----------------------------------------------------------------------------- point 3: paired
@pytest.mark.parametrize("n_seeds", [1, 3])
@pytest.mark.parametrize("ties", [False, True])
def test_paired_delong_matches_the_definition(n_seeds, ties):
    rng = np.random.default_rng(10 + n_seeds + 2 * ties)
    y = np.r_[np.ones(12), np.zeros(30)].astype(int)
    latent = rng.normal(size=len(y)) + y  # the images: shared by every seed and both methods
    a = np.stack([latent + 0.5 * rng.normal(size=len(y)) + 0.4 * y for _ in range(n_seeds)])
    b = np.stack([latent + 0.8 * rng.normal(size=len(y)) for _ in range(n_seeds)])
    if ties:
        a, b = np.round(a), np.round(b)
    got = stats.delong_paired(y, a, b, seed_spread=False)
    diff, var = slow_paired(y, a, b)
    assert got.diff == pytest.approx(diff, abs=1e-12)
    assert got.var_images == pytest.approx(var, abs=1e-9)
    assert got.se == pytest.approx(math.sqrt(var), abs=1e-9)
    from scipy.stats import norm

    assert got.p == pytest.approx(2 * norm.sf(abs(diff) / math.sqrt(var)), abs=1e-9)
    spread = stats.delong_paired(y, a, b)
    per_seed = [
        slow_components(a[i][y == 1], a[i][y == 0])[0] - slow_components(b[i][y == 1], b[i][y == 0])[0]
        for i in range(n_seeds)
    ]
    expected_seeds = float(np.var(per_seed, ddof=1) / n_seeds) if n_seeds > 1 else 0.0
    assert spread.var_seeds == pytest.approx(expected_seeds, abs=1e-12)
    assert spread.se == pytest.approx(math.sqrt(var + expected_seeds), abs=1e-9)


def test_paired_delong_agrees_with_a_paired_bootstrap_over_images():
    rng = np.random.default_rng(3)
    y = np.r_[np.ones(42), np.zeros(114)].astype(int)
    latent = rng.normal(size=len(y)) + 0.8 * y
    a = np.stack([latent + 0.6 * rng.normal(size=len(y)) + 0.3 * y for _ in range(3)])
    b = np.stack([latent + 0.6 * rng.normal(size=len(y)) for _ in range(3)])
    got = stats.delong_paired(y, a, b, seed_spread=False)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    diffs = []
    for _ in range(1000):  # the same resampled images for every seed and both methods
        idx = np.r_[rng.choice(pos, len(pos)), rng.choice(neg, len(neg))]
        yy = y[idx]
        diffs.append(np.mean([roc_auc_score(yy, a[s][idx]) - roc_auc_score(yy, b[s][idx]) for s in range(3)]))
    assert np.std(diffs, ddof=1) == pytest.approx(got.se, rel=0.12)
    assert np.mean(diffs) == pytest.approx(got.diff, abs=2 * got.se / math.sqrt(1000) + 0.01)


def test_paired_test_is_calibrated_enough_and_finds_a_real_difference():
    rng = np.random.default_rng(11)
    y = np.r_[np.ones(40), np.zeros(100)].astype(int)
    null_p, alt_p = [], []
    for _ in range(200):
        latent = rng.normal(size=len(y)) + y
        a = latent + 0.7 * rng.normal(size=len(y))
        b = latent + 0.7 * rng.normal(size=len(y))
        null_p.append(stats.delong_paired(y, a, b).p)
        alt_p.append(stats.delong_paired(y, a + 1.5 * y, b).p)
    assert 0.01 <= np.mean(np.array(null_p) < 0.05) <= 0.12
    assert np.mean(np.array(alt_p) < 0.05) > 0.9


# ----------------------------------------------------------------------------- Holm and means
def holm_by_definition(p: list[float], alpha: float) -> list[bool]:
    """Holm's procedure as written: reject the smallest while p_(i) <= alpha / (k - i), stop at the first failure."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    reject = [False] * len(p)
    for rank, i in enumerate(order):
        if p[i] > alpha / (len(p) - rank):
            break
        reject[i] = True
    return reject


def test_holm_matches_its_definition():
    rng = np.random.default_rng(5)
    for _ in range(300):
        k = int(rng.integers(1, 8))
        p = list(rng.uniform(0, 0.08, k) ** rng.uniform(0.5, 2))
        adj = stats.holm(p)
        for alpha in (0.01, 0.05):
            assert list(adj <= alpha) == holm_by_definition(p, alpha)
        assert np.all(adj >= np.array(p) - 1e-15) and np.all(adj <= 1)
    np.testing.assert_allclose(stats.holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    got = stats.holm([0.02, math.nan, 0.04])
    assert math.isnan(got[1]) and list(got[[0, 2]]) == [0.04, 0.04]


def test_mean_interval_is_the_t_interval_over_seeds():
    from scipy.stats import t

    vals = [57.9, 61.2, 55.0]
    got = stats.mean_interval([vals])
    half = t.ppf(0.975, 2) * np.std(vals, ddof=1) / math.sqrt(3)
    assert (got.lo, got.hi) == pytest.approx((np.mean(vals) - half, np.mean(vals) + half), abs=1e-9)
    assert math.isnan(stats.mean_interval([[50.0]]).lo)
    two = stats.mean_interval([[50.0, 52.0], [70.0, 74.0, 72.0]])
    se2 = np.var([50, 52], ddof=1) / 2 / 4 + np.var([70, 74, 72], ddof=1) / 3 / 4
    assert two.mean == pytest.approx(61.5)
    assert two.hi - two.mean == pytest.approx(t.ppf(0.975, two.df) * math.sqrt(se2), abs=1e-9)
    assert 1 <= two.df <= 3


def test_normal_and_t_functions_are_scipy_stats_bit_for_bit():
    """con2.maths.stats calls scipy.special (a table job then never imports scipy.stats, a second of
    start-up): the same numbers as scipy.stats' norm, t and beta, exactly, edges included."""
    from scipy.stats import beta, norm, t

    qs = [0.0, 1e-12, 0.025, 0.5, 0.8, 0.975, 0.995, 1 - 1e-12, 1.0]
    xs = [-40.0, -3.2, -1e-9, 0.0, 0.7, 1.96, 8.5, math.inf]
    dfs = [0.5, 1, 2, 3.7, 29, 1e6, math.inf]
    same = np.testing.assert_array_equal
    same([stats.normal_quantile(q) for q in qs], [float(norm.ppf(q)) for q in qs])
    same([stats.normal_sf(x) for x in xs], [float(norm.sf(x)) for x in xs])
    same([stats.t_quantile(q, d) for q in qs for d in dfs], [float(t.ppf(q, d)) for q in qs for d in dfs])
    same([stats.t_sf(x, d) for x in xs for d in dfs], [float(t.sf(x, d)) for x in xs for d in dfs])
    shapes = [(1, 1), (1, 5), (3, 38), (40, 961), (8999, 2), (0.5, 0.5)]  # Clopper-Pearson's (k, n - k + 1) and more
    same(
        [stats.beta_quantile(q, a, b) for q in qs for a, b in shapes],
        [float(beta.ppf(q, a, b)) for q in qs for a, b in shapes],
    )


def test_the_report_vocabulary_imports_no_scipy_until_a_number_needs_it():
    """A table job imports the report's vocabulary (paired tests, intervals, operating points); scipy comes in
    with the first interval, not with the import (0.15-0.3 s of every table job's start-up otherwise)."""
    probe = (
        "import sys\n"
        "import con2.maths.stats, con2.maths.operating, con2.report.paired, con2.report.tables\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n"
        "con2.maths.stats.normal_quantile(0.975)\n"
        "print('scipy.special' in sys.modules)\n"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.splitlines() == ["[]", "True"], res.stdout


# ----------------------------------------------------------------------------- the record
def _record_kwargs(labels, scores):
    return dict(
        dataset="breastmnist",
        normal_class="0",
        method="con2",
        variant="default",
        seed=0,
        labels=labels,
        scores=scores,
        n_train=10,
        config={"epochs": 1},
    )


def test_every_record_written_has_intervals_and_old_ones_still_read(tmp_path):
    from con2.run.records import RecordError, build_record, read_record, validate_record, write_record

    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(42), np.zeros(114)].astype(int)
    scores = {"nnd": rng.normal(size=156) + labels, "lh": rng.normal(size=156)}
    rec = build_record(**_record_kwargs(labels, scores))
    for col, s in scores.items():
        ci = rec["metrics"]["auroc_ci"][col]
        ref = stats.delong_interval(s[labels == 1], s[labels == 0])
        assert ci["se"] == pytest.approx(100 * math.sqrt(slow_variance(s[labels == 1], s[labels == 0])), abs=1e-9)
        assert (ci["lo"], ci["hi"]) == pytest.approx((100 * ref.lo, 100 * ref.hi), abs=1e-9)
        assert ci["lo"] <= rec["metrics"]["auroc"][col] <= ci["hi"]
    write_record(rec, tmp_path / "record.json")
    assert read_record(tmp_path / "record.json")["metrics"]["auroc_ci"] == rec["metrics"]["auroc_ci"]
    assert build_record(**_record_kwargs(labels, scores))["metrics"]["auroc_ci"] == rec["metrics"]["auroc_ci"]
    # a new record without intervals is refused; an old (version 1) one without them reads
    bare = json.loads(json.dumps(rec))
    del bare["metrics"]["auroc_ci"]
    with pytest.raises(RecordError, match="auroc_ci"):
        validate_record(bare)
    validate_record({**bare, "schema_version": 1})
    odd = json.loads(json.dumps(rec))
    del odd["metrics"]["auroc_ci"]["lh"]
    with pytest.raises(RecordError, match="auroc_ci"):
        validate_record(odd)
    # one anomaly: AUROC defined, the interval null (not NaN, which a record refuses)
    one = np.r_[1, np.zeros(5)].astype(int)
    rec1 = build_record(**_record_kwargs(one, {"nnd": np.arange(6.0)}))
    assert rec1["metrics"]["auroc_ci"]["nnd"] == {"lo": None, "hi": None, "se": None}
    validate_record(rec1)


# ----------------------------------------------------------------------------- points 2-4: the report
N_POS, N_NEG = 42, 114  # BreastMNIST's test set
SHIFTS = {("con2", "nnd"): 1.5, ("con2", "lh"): 1.45, ("simclr", "knn"): 0.5, ("simclr", "ssd"): 2.4}
VARIANT = {"con2": "invert", "simclr": "default"}
CONFIG = {
    "report": {
        "subject": "con2",
        "medical": ["breastmnist"],
        "comparisons": ["breastmnist"],
        "main_variants": {"con2": "invert", "simclr": "default"},
        "paper_epochs": 2048,
    }
}


def synthetic_scores(seed: int) -> tuple[np.ndarray, dict[tuple[str, str], np.ndarray]]:
    """Labels and per-image scores of every (method, score) for one seed: a latent shared by every
    run (the images), a per-method separation, per-seed noise (training)."""
    y = np.r_[np.ones(N_POS), np.zeros(N_NEG)].astype(int)
    latent = np.random.default_rng(100).normal(size=len(y))
    rng = np.random.default_rng(seed)
    return y, {k: latent + shift * y + 0.7 * rng.normal(size=len(y)) for k, shift in SHIFTS.items()}


def validation_scores(seed: int, method: str, n: int) -> dict[str, np.ndarray]:
    """Scores of ``n`` normal validation images for ``method``'s columns (normals: no shift)."""
    rng = np.random.default_rng(1000 + seed)
    return {s: rng.normal(size=n) for (m, s) in SHIFTS if m == method}


def write_runs(
    root: Path,
    seeds=(0, 1, 2),
    with_scores: bool = True,
    old: bool = False,
    classes=("1",),
    validation: dict[str, int] | None = None,
) -> pd.DataFrame:
    """Records (and scores.csv) of CON2 and SimCLR runs on synthetic scores; ``validation``: method ->
    validation images scored (validation_scores.csv and the record's n_val)."""
    from con2.aggregate.collect import collect_runs
    from con2.aggregate.runs_csv import load_runs
    from con2.run.records import build_record, write_record
    from con2.run.rundir import RunDir

    paths = []
    for seed, cls in itertools.product(seeds, classes):
        y, scores = synthetic_scores(seed + 10 * classes.index(cls))
        for method in ("con2", "simclr"):
            cols = {s: v for (m, s), v in scores.items() if m == method}
            params = {"contexts": ["invert"]} if method == "con2" else {}
            n_val = (validation or {}).get(method, 0)
            val = validation_scores(seed, method, n_val) if n_val else None
            rec = build_record(
                dataset="breastmnist",
                normal_class=cls,
                method=method,
                variant=VARIANT[method],
                seed=seed,
                labels=y,
                scores=cols,
                n_train=100,
                config={"image_size": 28, "width": 16, "tta": 4, "params": params},
                training={"epochs": 10},
                validation=val,
            )
            if old:  # as written before intervals existed
                rec["schema_version"] = 1
                del rec["metrics"]["auroc_ci"]
            run = root / "results" / "runs" / "breastmnist" / cls / method / VARIANT[method] / f"seed{seed}"
            write_record(rec, run / "record.json")
            if with_scores:
                pd.DataFrame({"index": np.arange(len(y)), "label": y, **cols}).to_csv(run / "scores.csv", index=False)
            if val:
                RunDir(run).write_validation_scores(val)
            paths.append(run / "record.json")
    collect_runs(paths).to_csv(root / "runs.csv", index=False)
    return load_runs(root / "runs.csv")


def expected_comparison(method: str, score: str, seeds=(0, 1, 2)) -> tuple[float, float]:
    """(difference in %, p) of (method, score) − CON2 (NND) from the slow reference."""
    from scipy.stats import norm

    data = [synthetic_scores(s) for s in seeds]
    y = data[0][0]
    a = np.stack([d[1][(method, score)] for d in data])
    b = np.stack([d[1][("con2", "nnd")] for d in data])
    diff, var = slow_paired(y, a, b)
    per_seed = [
        slow_components(a[i][y == 1], a[i][y == 0])[0] - slow_components(b[i][y == 1], b[i][y == 0])[0]
        for i in range(len(seeds))
    ]
    var += np.var(per_seed, ddof=1) / len(seeds) if len(seeds) > 1 else 0.0
    return 100 * diff, float(2 * norm.sf(abs(diff) / math.sqrt(var)))


@pytest.fixture
def runs(tmp_path: Path) -> pd.DataFrame:
    return write_runs(tmp_path)


@pytest.fixture
def paper() -> pd.DataFrame:
    from con2.report.paper import load_paper_numbers

    return load_paper_numbers(Path(__file__).resolve().parents[2] / "con2" / "resources" / "paper_numbers.csv")


def test_runs_csv_carries_each_runs_interval(runs: pd.DataFrame):
    row = runs[(runs["method"] == "simclr") & (runs["score"] == "knn") & (runs["seed"] == 1)].iloc[0]
    y, scores = synthetic_scores(1)
    s = scores[("simclr", "knn")]
    ci = stats.delong_interval(s[y == 1], s[y == 0])
    assert (row["auroc_lo"], row["auroc_hi"]) == pytest.approx((100 * ci.lo, 100 * ci.hi), abs=1e-9)
    assert row["auroc_se"] == pytest.approx(100 * math.sqrt(slow_variance(s[y == 1], s[y == 0])), abs=1e-9)


def test_comparisons_table_matches_the_slow_reference_with_holm(runs: pd.DataFrame):
    from con2.report.artefacts import ReportInputs
    from con2.report.tables import build_table

    table = build_table(
        "comparisons", ReportInputs(runs=runs, config=CONFIG, dataset="breastmnist", scores=RUN_FOLDERS)
    )
    frame = table.data.set_index(["method", "score"])
    assert set(frame.index) == {("con2", "lh"), ("simclr", "knn"), ("simclr", "ssd")}
    expected = {k: expected_comparison(*k) for k in frame.index}
    for k, (diff, p) in expected.items():
        assert frame.loc[k, "diff"] == pytest.approx(diff, abs=1e-9)
        assert frame.loc[k, "p"] == pytest.approx(p, abs=1e-9)
        assert frame.loc[k, "n_seeds"] == 3 and frame.loc[k, "reference"] == "con2/nnd"
    keys = list(expected)
    holds = holm_by_definition([expected[k][1] for k in keys], 0.05)
    assert [bool(frame.loc[k, "holds"]) for k in keys] == holds
    assert holds.count(True) >= 1 and holds.count(False) >= 1  # the data make both outcomes appear
    md = table.markdown()
    assert table.name == "comparisons_breastmnist" and "Δ vs CON2 (NND)" in md and "Holm" in md
    for k in keys:  # each difference with its interval, p-value and whether it holds
        r = frame.loc[k]
        line = next(line for line in md.splitlines() if f"{r['lo']:.1f} to {r['hi']:.1f}" in line)
        assert f"{r['diff']:+.1f}" in line and ("yes" in line) == bool(r["holds"])
    assert table.latex() and "comparisons_breastmnist" in table.html()


def test_table1_marks_differences_that_hold_and_shows_intervals_on_request(runs: pd.DataFrame, paper):
    from con2.builders.method_tables import table1_medical
    from con2.report.artefacts import ReportInputs
    from con2.report.methods import method_names
    from con2.report.paired import compare

    holds = compare(runs, CONFIG, "breastmnist", method_names(CONFIG, runs), scores=RUN_FOLDERS).set_index(
        ["method", "score"]
    )["holds"]
    t = table1_medical(ReportInputs(runs=runs, paper=paper, config=CONFIG, scores=RUN_FOLDERS))
    cells = {r[0]: r[2] for r in t.rows if r[1] == "ours"}
    assert cells["CON2 (NND)"].endswith("]")  # the reference is never marked
    for (m, s), held in holds.items():
        label = next(
            k for k in cells if k.startswith({"con2": "CON2", "simclr": "SimCLR"}[m]) and s.upper() in k.upper()
        )
        assert cells[label].endswith("†") == bool(held), label
    assert any("†: differs from CON2 (NND)" in n for n in t.notes)
    assert "(" not in cells["CON2 (NND)"].split("]")[-1]  # no interval unless asked
    # report.intervals: the t-interval of the mean over seeds, on a second line in HTML
    config = {"report": {**CONFIG["report"], "intervals": True}}
    t = table1_medical(ReportInputs(runs=runs, paper=paper, config=config, scores=RUN_FOLDERS))
    cell = next(r[2] for r in t.rows if r[0] == "CON2 (NND)")
    vals = runs[(runs["method"] == "con2") & (runs["score"] == "nnd")]["auroc"].to_numpy()
    ci = stats.mean_interval([vals])
    assert cell.endswith(f"({ci.lo:.1f}–{ci.hi:.1f})")
    row = t.data[(t.data["method"] == "con2") & (t.data["score"] == "nnd")].iloc[0]
    assert (row["ours_lo"], row["ours_hi"]) == pytest.approx((ci.lo, ci.hi))
    assert f"<br><small>{ci.lo:.1f}–{ci.hi:.1f}</small>" in t.html()
    from con2.report.format import latex_cell

    assert latex_cell(cell + "†").endswith(
        r"{\scriptsize (" + f"{ci.lo:.1f}--{ci.hi:.1f})" + r"}\textsuperscript{\dag}"
    )


def test_verdict_says_inside_or_outside_and_which_orderings_hold(runs: pd.DataFrame, paper):
    from con2.builders.reproduction import reproduction
    from con2.report.artefacts import ReportInputs
    from con2.report.methods import method_names
    from con2.report.paired import compare

    t = reproduction(ReportInputs(runs=runs, paper=paper, config=CONFIG, scores=RUN_FOLDERS))
    lead = "\n".join(t.lead)
    con2 = runs[(runs["method"] == "con2") & (runs["score"] == "nnd")]["auroc"].to_numpy()
    ci = stats.mean_interval([con2])
    where = "inside" if ci.lo <= 81.7 <= ci.hi else "outside"
    assert (
        f"CON2 (NND) on BreastMNIST, invert: paper 81.7 is {where} our 95% interval {ci.lo:.1f} to {ci.hi:.1f}" in lead
    )
    row = t.data[(t.data["method"] == "CON2") & (t.data["table"] == "table1_medical")].iloc[0]
    assert row["paper_inside"] == (where == "inside")
    frame = compare(runs, CONFIG, "breastmnist", method_names(CONFIG, runs), scores=RUN_FOLDERS).set_index(
        ["method", "score"]
    )
    paper_of = {("simclr", "knn"): 74.7, ("simclr", "ssd"): 44.6}  # the paper's SimCLR and SSD on BreastMNIST
    for k, value in paper_of.items():
        r = frame.loc[k]
        word = ("confirm" if r["diff"] < 0 else "contradict") if r["holds"] else "cannot decide at this budget"
        line = next(line for line in t.lead if f"paper 81.7 vs {value:.1f}" in line)
        assert "CON2 (NND) above" in line and f"our runs {word}" in line, line
    words = " ".join(t.lead)
    assert "our runs confirm " in words and "our runs contradict " in words  # the data make both appear
    assert sum("paper 81.7 is" in line for line in t.lead) == 1  # printed by two of the paper's tables: said once


def test_old_records_without_intervals_or_scores_still_aggregate(tmp_path: Path, paper):
    from con2.builders.method_tables import table1_medical
    from con2.builders.reproduction import reproduction
    from con2.report.artefacts import ReportInputs
    from con2.report.tables import build_table

    runs = write_runs(tmp_path, with_scores=False, old=True)
    assert runs["auroc_lo"].isna().all() and runs["auroc"].notna().all()
    table = build_table(
        "comparisons", ReportInputs(runs=runs, config=CONFIG, dataset="breastmnist", scores=RUN_FOLDERS)
    )
    assert table.data["reason"].str.contains("no scores.csv").all() and table.data["p"].isna().all()
    t1 = table1_medical(ReportInputs(runs=runs, paper=paper, config=CONFIG, scores=RUN_FOLDERS))
    assert not any(c.endswith("†") for r in t1.rows for c in r)
    assert reproduction(ReportInputs(runs=runs, paper=paper, config=CONFIG, scores=RUN_FOLDERS)).rows
    # a single seed: no interval of the mean, and the verdict says so instead of inside/outside
    one = write_runs(tmp_path / "one", seeds=(0,))
    lead = "\n".join(reproduction(ReportInputs(runs=one, paper=paper, config=CONFIG, scores=RUN_FOLDERS)).lead)
    assert "no interval of our mean" in lead


def test_runs_on_other_test_images_are_not_paired(tmp_path: Path):
    from con2.report.methods import method_names
    from con2.report.paired import compare

    runs = write_runs(tmp_path)
    f = tmp_path / "results" / "runs" / "breastmnist" / "1" / "simclr" / "default" / "seed2" / "scores.csv"
    df = pd.read_csv(f)
    df["index"] = df["index"] + 1000
    df.to_csv(f, index=False)
    frame = compare(runs, CONFIG, "breastmnist", method_names(CONFIG, runs), scores=RUN_FOLDERS).set_index(
        ["method", "score"]
    )
    assert "different test images" in frame.loc[("simclr", "knn"), "reason"]
    assert frame.loc[("con2", "lh"), "reason"] == ""


def test_comparisons_are_a_target_per_dataset_of_the_profile():
    import yaml

    from con2.report.artefacts import TABLES, table_targets

    assert TABLES["comparisons"].stems({"comparisons": ["breastmnist", "digits"]}) == [
        "comparisons_breastmnist",
        "comparisons_digits",
    ]
    root = Path(__file__).resolve().parents[2] / "workflow"
    for profile in ("default", "paper", "test"):
        report = yaml.safe_load((root / "config" / f"{profile}.yaml").read_text())["report"]
        assert set(report["comparisons"]) >= set(report.get("medical") or [])
        assert all(f"results/tables/comparisons_{d}.md" in table_targets(report) for d in report["comparisons"])
    assert (root / "report" / "comparisons.rst").is_file()


def test_several_classes_average_their_differences_and_the_reference_is_a_setting(tmp_path: Path):
    from con2.report.methods import method_names
    from con2.report.paired import compare

    runs = write_runs(tmp_path, seeds=(0, 1), classes=("1", "2"))
    names = method_names(CONFIG, runs)
    per_class = {
        c: compare(runs[runs["normal_class"] == c], CONFIG, "breastmnist", names, scores=RUN_FOLDERS).set_index(
            ["method", "score"]
        )
        for c in ("1", "2")
    }
    both = compare(runs, CONFIG, "breastmnist", names, scores=RUN_FOLDERS).set_index(["method", "score"])
    k = ("simclr", "knn")
    assert both.loc[k, "n_classes"] == 2 and both.loc[k, "n_seeds"] == 2
    assert both.loc[k, "diff"] == pytest.approx((per_class["1"].loc[k, "diff"] + per_class["2"].loc[k, "diff"]) / 2)
    se = math.sqrt(per_class["1"].loc[k, "se"] ** 2 + per_class["2"].loc[k, "se"] ** 2) / 2
    assert both.loc[k, "se"] == pytest.approx(se, abs=1e-9)
    config = {"report": {**CONFIG["report"], "compare_to": "simclr/knn"}}
    other = compare(runs, config, "breastmnist", method_names(config, runs), scores=RUN_FOLDERS).set_index(
        ["method", "score"]
    )
    assert set(other.index) == {("con2", "nnd"), ("con2", "lh"), ("simclr", "ssd")}
    assert other.loc[("con2", "nnd"), "diff"] == pytest.approx(-both.loc[k, "diff"], abs=1e-9)
