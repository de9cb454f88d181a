"""Table 1 with a floor (``report.floors``): the floor's row comes first, and a dataset whose floor no
method beats, or whose floor is within 2 points of 100, is flagged in one line (issue 35, point 1)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from con2.aggregate.collect import collect_runs
from con2.aggregate.score_files import RUN_FOLDERS
from con2.builders.method_tables import table1_medical
from con2.grid.checks import GridError
from con2.grid.workflow_grid import check_report
from con2.report.artefacts import ReportInputs
from con2.report.methods import method_names
from con2.report.paper import load_paper_numbers
from con2.run.records import write_record

ROOT = Path(__file__).resolve().parents[2]


def record(method: str, variant: str, seed: int, score: str, auroc: float) -> dict:
    return {
        "schema_version": 1,
        "dataset": "breastmnist",
        "normal_class": "1",
        "method": method,
        "variant": variant,
        "seed": seed,
        "metrics": {"auroc": {score: auroc}},
        "timing": {"fit_seconds": 1.0, "score_seconds": 1.0, "wall_seconds": 2.0},
        "n_train": 10,
        "n_test": 5,
        "n_anomalous": 2,
        "epochs": 0 if method == "floor_pixels" else 10,
        "config": {"image_size": 28, "width": 16, "tta": 40, "params": {}},
        "config_hash": "x",
    }


def runs_with(tmp_path: Path, floor: float, con2: tuple[float, ...], simclr: tuple[float, ...]) -> pd.DataFrame:
    recs = [record("floor_pixels", "floor", 0, "nnd", floor)]
    recs += [record("con2", "invert", s, "nnd", v) for s, v in enumerate(con2)]
    recs += [record("simclr", "default", s, "knn", v) for s, v in enumerate(simclr)]
    paths = []
    for i, r in enumerate(recs):
        write_record(r, tmp_path / str(i) / "record.json")
        paths.append(tmp_path / str(i) / "record.json")
    return collect_runs(paths)


CONFIG = {
    "report": {
        "subject": "con2",
        "floors": ["floor_pixels"],
        "medical": ["breastmnist"],
        "main_variants": {"con2": "invert", "simclr": "default", "floor_pixels": "floor"},
    }
}


def table(tmp_path: Path, floor: float, con2: tuple[float, ...], simclr: tuple[float, ...]):
    paper = load_paper_numbers(ROOT / "con2" / "resources" / "paper_numbers.csv")
    return table1_medical(
        ReportInputs(runs=runs_with(tmp_path, floor, con2, simclr), paper=paper, config=CONFIG, scores=RUN_FOLDERS)
    )


def test_the_floor_row_comes_first_then_the_subject(tmp_path: Path) -> None:
    t = table(tmp_path, 72.0, (57.0, 58.0, 59.0), (65.0, 66.0, 67.0))
    ours = [row[0] for row in t.rows if row[1] == "ours"]
    assert ours[:2] == ["Floor: pixel NN (NND)", "CON2 (NND)"]


@pytest.mark.parametrize(
    ("floor", "con2", "simclr", "expected"),
    [
        (
            72.0,
            (57.0, 58.0, 59.0),
            (65.0, 66.0, 67.0),
            "BreastMNIST: floor not beaten: the best other method, "
            "SimCLR (kNN) 66.0, is not above the floor (Floor: pixel NN (NND), no training) 72.0.",
        ),
        (66.0, (57.0, 58.0, 59.0), (65.0, 66.0, 67.0), "BreastMNIST: floor not beaten"),  # equal: not above
        (
            98.5,
            (99.0, 99.0, 99.0),
            (97.0, 97.0, 97.0),
            "BreastMNIST: too easy to rank methods: the floor "
            "(Floor: pixel NN (NND), no training) scores 98.5, within 2 points of 100.",
        ),
        (60.0, (57.0, 58.0, 59.0), (65.0, 66.0, 67.0), None),
    ],
)
def test_a_dataset_is_flagged_when_no_method_beats_its_floor_or_the_floor_is_near_100(
    tmp_path: Path, floor, con2, simclr, expected
) -> None:
    notes = [n for n in table(tmp_path, floor, con2, simclr).notes if "floor" in n and n.startswith("BreastMNIST")]
    if expected is None:
        assert notes == []
    else:
        assert len(notes) == 1 and notes[0].startswith(expected)


def test_a_floor_that_is_no_method_of_the_profile_is_refused() -> None:
    config = {
        "datasets": {"breastmnist": {}},
        "experiments": {"main": {"datasets": ["breastmnist"], "methods": {"con2": ["default"]}}},
        "report": {"floors": ["floor_pixels"]},
    }
    with pytest.raises(GridError, match=r"report\.floors: 'floor_pixels' is not a method of the experiments"):
        check_report(config)


def scored_runs(tmp_path: Path) -> pd.DataFrame:
    """The floor (one run: it trains nothing), CON2 clearly above it and SimCLR level with it, 3 seeds
    each, with their scores.csv: the test images shared, the training noise per seed."""
    import numpy as np

    from con2.maths.metrics import auroc as auroc_of
    from con2.run.records import build_record

    y = np.r_[np.ones(60), np.zeros(140)].astype(int)
    latent = np.random.default_rng(1).normal(size=y.size)
    floor = latent + 0.8 * y
    paths = []

    def write(method: str, variant: str, seed: int, score: str, values: np.ndarray) -> None:
        rec = build_record(
            dataset="breastmnist", normal_class="1", method=method, variant=variant, seed=seed, labels=y,
            scores={score: values}, n_train=100, config={"image_size": 28, "width": 16, "tta": 4, "params": {}},
            training={"epochs": 0 if method == "floor_pixels" else 10},
        )  # fmt: skip
        run = tmp_path / "runs" / "breastmnist" / "1" / method / variant / f"seed{seed}"
        write_record(rec, run / "record.json")
        pd.DataFrame({"index": np.arange(y.size), "label": y, score: values}).to_csv(run / "scores.csv", index=False)
        paths.append(run / "record.json")
        assert abs(rec["metrics"]["auroc"][score] - auroc_of(y, values)) < 1e-9

    write("floor_pixels", "floor", 0, "nnd", floor)
    for seed in (0, 1, 2):
        noise = np.random.default_rng(10 + seed).normal(size=y.size)
        write("con2", "invert", seed, "nnd", floor + 1.5 * y + 0.3 * noise)  # far above the floor
        write("simclr", "default", seed, "knn", floor + 0.3 * noise)  # the floor plus noise
    return collect_runs(paths)


def test_a_cell_says_whether_it_beats_the_floor(tmp_path: Path) -> None:
    """Issue 35, point 1: from the paired test on the same images (the floor's one run paired with every
    seed), Holm over the floor's comparisons: ‡ on CON2, none on SimCLR, none on the floor itself."""
    from con2.report.paired import BEATS_FLOOR, compare

    runs = scored_runs(tmp_path)
    table = table1_medical(
        ReportInputs(
            config=CONFIG,
            runs=runs,
            paper=load_paper_numbers(ROOT / "con2" / "resources" / "paper_numbers.csv"),
            scores=RUN_FOLDERS,
        )
    )
    ours = {r[0]: r[2] for r in table.rows if r[1] == "ours"}
    assert ours["CON2 (NND)"].endswith(BEATS_FLOOR)
    assert not any(v.endswith(BEATS_FLOOR) for k, v in ours.items() if k != "CON2 (NND)")
    assert any(n.startswith(f"{BEATS_FLOOR}: above the floor") for n in table.notes)
    frame = compare(
        runs, CONFIG, "breastmnist", method_names(CONFIG, runs), ref=("floor_pixels", "nnd"), scores=RUN_FOLDERS
    )
    con2 = frame[frame["method"] == "con2"].iloc[0]
    assert con2["n_seeds"] == 3 and con2["holds"] and con2["diff"] > 0
    simclr = frame[frame["method"] == "simclr"].iloc[0]
    assert not simclr["holds"]


def test_a_method_that_trains_nothing_is_paired_the_same_way_whatever_its_name(tmp_path: Path) -> None:
    """Issue 46, point 6: the floor's one run (in `report.floors`), the same scores as one run under a name
    that is no floor, and the same scores written for every seed by an external program (whose record
    says nothing of training) read the same difference against CON2, each paired with its 3 seeds; a
    method that trained, with one seed, stays paired by seed."""
    import numpy as np

    from con2.report.paired import compare
    from con2.run.records import build_record

    y = np.r_[np.ones(40), np.zeros(80)].astype(int)
    floor = np.random.default_rng(3).normal(size=y.size) + 0.6 * y
    paths = []

    def write(method: str, variant: str, seed: int, values: np.ndarray, training: dict | None) -> None:
        rec = build_record(
            dataset="breastmnist", normal_class="1", method=method, variant=variant, seed=seed, labels=y,
            scores={"nnd": values}, n_train=50, config={"image_size": 28, "width": 16, "tta": 4, "params": {}},
            training=training,
        )  # fmt: skip
        run = tmp_path / "runs" / "breastmnist" / "1" / method / variant / f"seed{seed}"
        write_record(rec, run / "record.json")
        pd.DataFrame({"index": np.arange(y.size), "label": y, "nnd": values}).to_csv(run / "scores.csv", index=False)
        paths.append(run / "record.json")

    nothing = {"epochs": 0, "steps": 0}
    write("floor_pixels", "floor", 0, floor, nothing)
    write("pixel_copy", "default", 0, floor, nothing)  # the floor's scores under another name, not in report.floors
    write("ijepa_ad", "default", 0, floor + 0.2 * y, {"epochs": 10, "steps": 60})  # trained, one seed
    for seed in (0, 1, 2):
        write("pixel_nn", "default", seed, floor, None)  # an external program: the same scores on every seed
        noise = np.random.default_rng(20 + seed).normal(size=y.size)
        write("con2", "invert", seed, floor + 0.5 * y + 0.4 * noise, {"epochs": 10, "steps": 60})
    runs = collect_runs(paths)
    config = {"report": {**CONFIG["report"], "main_variants": {"con2": "invert", "floor_pixels": "floor"}}}
    names = method_names(config, runs)
    frame = compare(runs, config, "breastmnist", names, scores=RUN_FOLDERS).set_index("method")
    same = frame.loc[["floor_pixels", "pixel_copy", "pixel_nn"], ["diff", "lo", "hi", "p", "n_seeds"]]
    assert (same["n_seeds"] == 3).all(), same
    for column in ("diff", "lo", "hi", "p"):
        assert np.allclose(same[column], same[column].iloc[0], rtol=0, atol=1e-12), same
    assert frame.loc["ijepa_ad", "n_seeds"] == 1  # seed 0 against seed 0: its own seed matters
    # as the reference too: the floor's one run against every seed of CON2, the same difference reversed
    reverse = compare(runs, config, "breastmnist", names, ref=("floor_pixels", "nnd"), scores=RUN_FOLDERS).set_index(
        "method"
    )
    assert reverse.loc["con2", "n_seeds"] == 3
    assert np.isclose(reverse.loc["con2", "diff"], -frame.loc["floor_pixels", "diff"])
