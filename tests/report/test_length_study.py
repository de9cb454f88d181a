"""Issue 56: the length study's curve table (per class, every series, the floor, published numbers), its figure
(a panel per class) and its claims table after the last epoch (per class with DeLong intervals, paired over the
classes, Holm), on synthetic CIFAR-10 runs with per-image scores and curves."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from report_fixtures import RESOURCES
from test_uncertainty import slow_paired

from con2.aggregate.collect import collect_runs
from con2.aggregate.runs_csv import load_runs
from con2.aggregate.score_files import RUN_FOLDERS
from con2.builders.length import HOLDS, REVERSED, length_claims, length_curve
from con2.errors import ConfigError
from con2.maths.stats import normal_sf
from con2.report.artefacts import FIGURES, TABLES, ReportInputs
from con2.report.paper import load_paper_numbers, load_reference_numbers
from con2.run.records import build_record, write_record

N_POS, N_NEG = 80, 40
CLASSES = ("airplane", "automobile")
EPOCHS = (1, 2, 5)
# (method, variant) -> (score columns, separation of the first score, contexts): flip above SimCLR, the floor low
RUNS = {
    ("con2", "flip_length128"): (("nnd", "lh"), 2.0, ["flip"]),
    ("con2", "length128"): (("nnd", "lh"), 1.5, ["invert"]),
    ("con2", "content_only_length128"): (("nnd", "lh"), 1.0, ["invert"]),
    ("simclr", "length128"): (("knn", "ssd"), 0.5, None),
    ("csi", "length128"): (("csi",), 1.0, None),
    ("floor_pixels", "floor"): (("nnd",), -0.2, None),
    ("con2", "invert"): (("nnd", "lh"), 9.0, ["invert"]),  # a main variant: not the study's
}
CONFIG = {
    "report": {
        "subject": "con2",
        "natural": ["cifar10"],
        "medical": [],
        "floors": ["floor_pixels"],
        "main_variants": {"con2": "invert", "simclr": "default", "csi": "default", "floor_pixels": "floor"},
        "scopes": {"length_curve": ["length"], "length_claims": ["length"]},
        "curve_scores": {"simclr": ["knn", "ssd"]},
        "length_claims": [
            {"a": "con2/flip_length128", "b": "simclr/length128/ssd"},
            {"a": "con2/flip_length128", "b": "csi/length128"},
            {"a": "floor_pixels/floor", "b": "con2/flip_length128"},
        ],
    }
}


def scores_of(method: str, variant: str, cls: str, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Labels and scores of one run: a latent per class shared by every run (the images), the run's separation
    (the second score half of it), noise per run."""
    y = np.r_[np.ones(N_POS), np.zeros(N_NEG)].astype(int)
    latent = np.random.default_rng(CLASSES.index(cls)).normal(size=len(y))
    columns, shift, _ = RUNS[(method, variant)]
    shift = shift if column == columns[0] else shift / 2
    noise = np.random.default_rng(100 * list(RUNS).index((method, variant)) + 7 * CLASSES.index(cls))
    return y, latent + shift * y + 0.8 * noise.normal(size=len(y))


def timing_of(method: str, variant: str, cls: str) -> dict[str, float]:
    """A run's record timing: seconds that differ per run, CSI on airplane resumed over 3 sessions; a floor
    trains nothing and keeps no curve time."""
    i, c = list(RUNS).index((method, variant)), CLASSES.index(cls)
    if method == "floor_pixels":
        return {"fit_seconds": 0.0, "score_seconds": 36.0 + c, "wall_seconds": 40.0}
    sessions = 3 if (method, cls) == ("csi", "airplane") else 1
    return {
        "fit_seconds": 3600.0 * (i + 1) + 360.0 * c,
        "curve_seconds": 720.0 + 36.0 * i,
        "score_seconds": 72.0 * (c + 1),
        "wall_seconds": 9000.0,
        "sessions": sessions,
        "resumed": sessions > 1,
    }


def curve_value(method: str, variant: str, cls: str, score: str, epoch: int) -> float:
    return 50.0 + 3 * epoch + 10 * CLASSES.index(cls) + len(variant) + (1.0 if score in ("ssd", "lh") else 0.0)


@pytest.fixture
def runs(tmp_path: Path) -> pd.DataFrame:
    paths = []
    for (method, variant), cls in itertools.product(RUNS, CLASSES):
        columns, _, contexts = RUNS[(method, variant)]
        scores = {c: scores_of(method, variant, cls, c)[1] for c in columns}
        y = scores_of(method, variant, cls, columns[0])[0]
        trains = method != "floor_pixels"
        params = {"contexts": contexts, **({"loss": "content_only"} if "content_only" in variant else {})}
        params = params if contexts else {}
        curve = (
            {
                "views": 2,
                "points": [
                    {"epoch": e, "auroc": {c: curve_value(method, variant, cls, c, e) for c in columns}} for e in EPOCHS
                ],
            }
            if trains
            else None
        )
        rec = build_record(
            dataset="cifar10",
            normal_class=cls,
            method=method,
            variant=variant,
            seed=0,
            labels=y,
            scores=scores,
            n_train=50,
            config={"image_size": 32, "tta": 4 if trains else 0, "params": params},
            training={"epochs": 128 if trains else 0, "steps": 100 if trains else 0},
            curve=curve,
            timing=timing_of(method, variant, cls),
            extras={"test_views": 40, "test_views_averaged": "features"} if method == "csi" else None,
        )
        run = tmp_path / "runs" / "cifar10" / cls / method / variant / "seed0"
        write_record(rec, run / "record.json")
        pd.DataFrame({"index": np.arange(len(y)), "label": y, **scores}).to_csv(run / "scores.csv", index=False)
        paths.append(run / "record.json")
    collect_runs(paths).to_csv(tmp_path / "runs.csv", index=False)
    return load_runs(tmp_path / "runs.csv")


def inputs(runs: pd.DataFrame, config: dict = CONFIG) -> ReportInputs:
    return ReportInputs(
        runs=runs,
        config=config,
        paper=load_paper_numbers(RESOURCES / "paper_numbers.csv"),
        references=load_reference_numbers(RESOURCES / "reference_numbers.csv"),
        scores=RUN_FOLDERS,
        dataset="cifar10",
    )


def auroc(method: str, variant: str, cls: str, column: str) -> float:
    from sklearn.metrics import roc_auc_score

    y, s = scores_of(method, variant, cls, column)
    return 100 * float(roc_auc_score(y, s))


def test_length_curve_has_a_row_per_class_and_series_then_the_mean(runs: pd.DataFrame) -> None:
    table = length_curve(inputs(runs))
    assert table.columns == [
        "Dataset",
        "Normal class",
        "Method",
        "epoch 1",
        "epoch 2",
        "epoch 5",
        "final (own test views)",
        "published",
        "hours: train + curve + final score",
    ]
    frame = table.data
    assert "invert" not in set(frame["variant"])  # the main variant is learning_curve's
    # SimCLR: both scores (report.curve_scores); CON2: its first only (no lh)
    assert set(frame.loc[frame["method"] == "simclr", "score"]) == {"knn", "ssd"}
    assert set(frame.loc[frame["method"] == "con2", "score"]) == {"nnd"}
    for (method, variant), cls in itertools.product([("simclr", "length128"), ("con2", "flip_length128")], CLASSES):
        for score in ("knn", "ssd") if method == "simclr" else ("nnd",):
            got = frame[
                (frame["method"] == method)
                & (frame["variant"] == variant)
                & (frame["score"] == score)
                & (frame["normal_class"] == cls)
            ].set_index("epoch")
            for e in EPOCHS:
                assert got.loc[e, "mean"] == pytest.approx(curve_value(method, variant, cls, score, e))
            assert got["final"].iloc[0] == pytest.approx(auroc(method, variant, cls, score))
    # the mean over the two classes, and what it averages
    mean = frame[(frame["method"] == "csi") & (frame["normal_class"].fillna("") == "") & (frame["epoch"] == 5)].iloc[0]
    assert mean["mean"] == pytest.approx(np.mean([curve_value("csi", "length128", c, "csi", 5) for c in CLASSES]))
    assert mean["n_classes"] == 2
    # the floor: no curve, its final AUROC, drawn as a line
    floor = frame[frame["method"] == "floor_pixels"]
    assert floor["epoch"].isna().all() and floor["test_views"].iloc[0] == "1 view"
    by_class = floor.set_index("normal_class")
    assert by_class.loc["airplane", "final"] == pytest.approx(auroc("floor_pixels", "floor", "airplane", "nnd"))
    # published: the paper's CON2 by context (flip 95.3, invert 94.6), CSI's repository for the baselines; none
    # for content alone (the paper has no such CIFAR-10 number)
    pub = frame.groupby(["method", "variant", "score"])["published"].first()
    assert pub[("con2", "flip_length128", "nnd")] == 95.3 and pub[("con2", "length128", "nnd")] == 94.6
    assert pub[("csi", "length128", "csi")] == 94.3 and pub[("simclr", "length128", "knn")] == 87.9
    assert math.isnan(pub[("con2", "content_only_length128", "nnd")])
    csi = frame[frame["method"] == "csi"]["test_views"]
    assert set(csi) == {"40 views, features averaged"}  # what CSI's record says, not its tta
    rows = [r for r in table.rows if r[1] == "mean of 2"]
    assert len(rows) == 7 and all(r[6].endswith(("(4 views)", "(1 view)", "averaged)")) for r in rows)


def hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f}"


def test_length_curve_says_what_each_run_and_the_whole_study_cost(runs: pd.DataFrame) -> None:
    table = length_curve(inputs(runs))
    cells = {(r[1], r[2]): r[-1] for r in table.rows}
    labels = {r[2] for r in table.rows}
    csi = next(label for label in labels if label.startswith("CSI"))
    # a class's row: its run's training + curve + final scoring, in hours, and the sessions of a resumed run
    for cls in CLASSES:
        t = timing_of("csi", "length128", cls)
        parts = " + ".join(hours(t[k]) for k in ("fit_seconds", "curve_seconds", "score_seconds"))
        assert cells[(cls, csi)] == parts + (" (3 sessions)" if cls == "airplane" else "")
    # the mean row: the sum over the classes, marked
    both = [timing_of("csi", "length128", c) for c in CLASSES]
    assert cells[("mean of 2", csi)] == "total " + " + ".join(
        hours(sum(t[k] for t in both)) for k in ("fit_seconds", "curve_seconds", "score_seconds")
    )
    # a floor keeps no curve time
    floor = next(label for label in labels if "floor" in label.lower())
    assert cells[("airplane", floor)] == "0.00 + – + 0.01"
    # the note: the study's runs, each counted once (SimCLR's two scores are one run), and their total
    study = [(m, v) for (m, v) in RUNS if v != "invert"]
    note = next(n for n in table.notes if n.startswith("Time ("))
    total = sum(timing_of(m, v, c)["fit_seconds"] for (m, v), c in itertools.product(study, CLASSES))
    assert f"The study's {len(study) * len(CLASSES)} runs: {total / 3600:.1f} h of training" in note
    frame = table.data
    got = frame[(frame["method"] == "csi") & (frame["normal_class"] == "airplane")]
    assert set(got["sessions"]) == {3} and set(got["fit_seconds"]) == {both[0]["fit_seconds"]}


def test_length_curve_without_a_study_says_so(runs: pd.DataFrame) -> None:
    plain = {"report": {k: v for k, v in CONFIG["report"].items() if k != "scopes"}}
    table = length_curve(inputs(runs, plain))
    assert not table.rows and any("no length study" in n for n in table.notes)


def test_length_claims_are_the_paired_differences_per_class_and_over_the_classes(runs: pd.DataFrame) -> None:
    table = length_claims(inputs(runs))
    frame = table.data
    flip_ssd = frame[frame["claim"].str.startswith("CON2 (NND) flip_length128 above SimCLR (SSD)")]
    assert list(flip_ssd["normal_class"]) == [*CLASSES, ""]
    per_class = []
    for cls in CLASSES:
        y = scores_of("con2", "flip_length128", cls, "nnd")[0]
        a = scores_of("con2", "flip_length128", cls, "nnd")[1][None]
        b = scores_of("simclr", "length128", cls, "ssd")[1][None]
        diff, var = slow_paired(y, a, b)
        per_class.append((diff, var))
        row = flip_ssd[flip_ssd["normal_class"] == cls].iloc[0]
        assert row["diff"] == pytest.approx(100 * diff)
        half = 1.959963984540054 * 100 * math.sqrt(var)
        assert row["lo"] == pytest.approx(100 * diff - half, abs=1e-6) and row["hi"] == pytest.approx(100 * diff + half)
        assert row["a_mean"] == pytest.approx(auroc("con2", "flip_length128", cls, "nnd"))
        assert row["verdict"] == ""  # a class: its interval only
    over = flip_ssd[flip_ssd["normal_class"] == ""].iloc[0]
    diff = np.mean([d for d, _ in per_class])
    se = math.sqrt(sum(v for _, v in per_class)) / len(per_class)
    assert over["diff"] == pytest.approx(100 * diff)
    assert over["p"] == pytest.approx(2 * normal_sf(abs(diff) / se))
    # Holm over the three over-the-classes tests: the slow rule
    ps = frame.loc[frame["normal_class"] == "", "p"].to_numpy()
    order = np.argsort(ps)
    adjusted = np.empty_like(ps)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    np.testing.assert_allclose(frame.loc[frame["normal_class"] == "", "p_holm"], adjusted)
    assert over["verdict"] == HOLDS
    floor = frame[(frame["a"] == "Floor (raw pixels) floor") | frame["claim"].str.startswith("Raw")]
    floor_over = frame[frame["claim"].str.contains("above CON2") & (frame["normal_class"] == "")].iloc[0]
    assert floor_over["verdict"] == REVERSED and floor_over["diff"] < 0, floor
    assert table.lead and "3 claims" in table.lead[0] and "128 epochs" in table.lead[0]


def test_length_claims_refuse_a_side_that_is_not_method_variant(runs: pd.DataFrame) -> None:
    bad = {"report": {**CONFIG["report"], "length_claims": [{"a": "con2", "b": "csi/length128"}]}}
    with pytest.raises(ConfigError, match="method/variant"):
        length_claims(inputs(runs, bad))


def test_length_curve_figure_draws_a_panel_per_class(runs: pd.DataFrame, tmp_path: Path) -> None:
    table = TABLES["length_curve"].builder()(inputs(runs))
    table.write(tmp_path / "t.csv", tmp_path / "t.md", tmp_path / "t.tex")
    figure = FIGURES["length_curve"]
    assert figure.table == "length_curve"
    frame = pd.read_csv(tmp_path / "t.csv", dtype={"normal_class": str})
    png, pdf = tmp_path / "f.png", tmp_path / "f.pdf"
    figure.builder()(ReportInputs(table=frame, dataset="cifar10"), png, pdf)
    assert png.stat().st_size > 1000 and pdf.stat().st_size > 1000
    import matplotlib.image as mpimg

    wide = mpimg.imread(png).shape[1]
    single = tmp_path / "one.png"
    figure.builder()(
        ReportInputs(table=frame[frame["normal_class"].fillna("") != "automobile"], dataset="cifar10"),
        single,
        tmp_path / "one.pdf",
    )
    assert mpimg.imread(single).shape[1] < wide  # one panel per class: fewer classes, a narrower figure


def test_studies_build_the_figures_that_draw_a_studys_table() -> None:
    """`snakemake studies` names the length study's figure with its tables (the Snakefile's rule reads this list)."""
    from con2.report.artefacts import study_figures

    report = {"length_curve": ["cifar10"], "curves": ["cifar10"], "per_class": ["cifar10"]}
    assert study_figures(report, {"length_curve", "fidelity"}) == [
        "results/figures/length_curve_cifar10.png",
        "results/figures/length_curve_cifar10.pdf",
    ]
    assert study_figures(report, {"fidelity"}) == []  # no study's table is drawn: no figure
    snakefile = (Path(__file__).resolve().parents[2] / "Snakefile").read_text()
    studies_rule = snakefile[snakefile.index("rule studies:") : snakefile.index("rule runs:")]
    assert "F.study_figure_files" in studies_rule


def test_a_length_claim_without_runs_names_the_side_that_has_none(runs: pd.DataFrame) -> None:
    """A study still training (or a profile without one side's runs) says which side has no run, not only that
    no class was shared: the reader knows what to train."""
    unfinished = runs[runs["variant"] != "content_only_length128"]
    claims = [
        {"a": "con2/length128", "b": "con2/content_only_length128"},  # one side not trained
        {"a": "con2/epochs128", "b": "simclr/epochs128/knn"},  # neither side in this grid
        {"a": "con2/flip_length128", "b": "csi/length128"},  # both trained: tested
    ]
    config = {"report": {**CONFIG["report"], "length_claims": claims}}
    frame = length_claims(inputs(unfinished, config)).data.set_index("claim")
    over = frame[frame["normal_class"] == ""]
    one = over.loc[over.index.str.contains("content_only_length128"), "verdict"].item()
    assert one == "cannot test: no run of CON2 (NND) content_only_length128"
    both = over.loc[over.index.str.contains("epochs128"), "verdict"].item()
    assert both.startswith("cannot test: no run of CON2") and " nor of SimCLR (kNN) epochs128" in both
    tested = over.loc[over.index.str.contains("above CSI"), "verdict"].item()
    assert not tested.startswith("cannot test")
