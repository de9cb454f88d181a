"""con2.report.tables: every table of the registry built by name, headline scores, records outside the grid."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from report_fixtures import RESOURCES, collect, config, fake_record, inputs_of, paper, runs, score_runtime_measurements  # noqa: F401  (fixtures: test parameters of the same name)

from con2.aggregate.bundle import bundle_bytes
from con2.builders.per_class import per_class as per_class_table
from con2.report.artefacts import TABLES, ReportInputs
from con2.report.format import Table
from con2.report.paper import load_compute_hours
from con2.report.tables import build_table, outside_grid_note


def test_every_table_builds_and_writes(runs: pd.DataFrame, paper: pd.DataFrame, config: dict, tmp_path: Path) -> None:
    hours = load_compute_hours(RESOURCES / "paper_compute_hours.csv")
    measured = score_runtime_measurements()
    for name in TABLES:
        table = build_table(name, inputs_of(runs, paper, config, hours=hours, measured=measured, dataset="cifar10"))
        out = [tmp_path / f"{name}.{ext}" for ext in ("csv", "md", "tex")]
        table.write(*out)
        assert all(p.stat().st_size > 0 for p in out)
        tex = out[2].read_text()
        assert "\\toprule" in tex and "\\bottomrule" in tex, name
        empty = {  # what the tables empty on these records (no mvtec tree: no AUROC per anomaly kind) say instead
            "missing": "Nothing is missing",
            "per_kind": "keeps an AUROC per anomaly kind: only a folder declared with the mvtec layout",
        }
        assert table.rows or empty.get(name, "\0") in table.markdown(), f"{name} has no rows"
    table = per_class_table(inputs_of(runs, paper, config, dataset="cifar10"))
    # each class with several seeds, then its seed-0 row (issue 58, item 6)
    assert [r[0] for r in table.rows] == ["airplane", "airplane (seed 0)", "cat", "cat (seed 0)", "mean"]


def test_tables_use_headline_scores_and_tolerate_extra_readings(
    tmp_path: Path, paper: pd.DataFrame, config: dict
) -> None:
    aurocs = {"nnd": 80.0, "lh": 78.0, "nnd@content/original": 60.0, "lh@context/inverted": 55.0}
    recs = [fake_record("breastmnist", "1", "con2", "invert", 0, aurocs, {"contexts": ["invert"]})]
    runs = collect(tmp_path, recs)
    assert set(runs.loc[~runs["headline"], "score"]) == {"nnd@content/original", "lh@context/inverted"}
    for name, artefact in TABLES.items():
        if "runs" in artefact.reads:
            text = build_table(name, inputs_of(runs, paper, config, dataset="breastmnist")).markdown()
            assert "@" not in text and "60.0" not in text, name
    assert per_class_table(inputs_of(runs, paper, config, dataset="breastmnist")).columns == [
        "Normal class",
        "CON2 (NND)",
        "CON2 (LH)",
    ]


def test_records_outside_the_grid_are_left_out_and_counted_in_one_note(
    tmp_path: Path, runs: pd.DataFrame, config: dict
) -> None:
    """Issue 27, point 1: another profile's runs in the same results folder reach none of this profile's
    tables (nor figures: both read through ReportInputs.load) unless report.include_outside_grid."""
    marked = runs.assign(in_grid=runs["dataset"] != "breastmnist")  # BreastMNIST's runs: another profile's
    n = marked.loc[~marked["in_grid"], "record"].nunique()
    status = tmp_path / "status.json"
    status.write_text("{}")
    bundle = tmp_path / "scores.json.gz"
    bundle.write_bytes(bundle_bytes(runs["record"].unique()))
    files = {"paper": str(RESOURCES / "paper_numbers.csv"), "status": str(status), "scores": str(bundle)}

    def table1(frame: pd.DataFrame, cfg: dict) -> tuple[ReportInputs, Table]:
        inputs = ReportInputs.load(TABLES["table1_medical"], {**files, "runs": str(_written(tmp_path, frame))}, cfg)
        return inputs, build_table("table1_medical", inputs)

    whole_inputs, whole = table1(runs, config)  # every run in the grid
    assert whole_inputs.outside_grid == () and outside_grid_note(whole_inputs) is None
    own_inputs, own = table1(marked, config)
    assert len(own_inputs.outside_grid) == n and "breastmnist" not in set(own_inputs.frame("runs")["dataset"])
    assert own.rows != whole.rows  # BreastMNIST's numbers are gone from this profile's Table 1
    assert f"{n} run(s) outside this profile's grid left out" in own.markdown()
    assert "`report.include_outside_grid: true` shows them" in own.markdown()
    _, shown = table1(marked, {**config, "report": {**config["report"], "include_outside_grid": True}})
    assert shown.rows == whole.rows and f"{n} run(s) outside this profile's grid (" in shown.markdown()


def _written(tmp_path: Path, runs: pd.DataFrame) -> Path:
    path = tmp_path / "runs.csv"
    runs.to_csv(path, index=False)
    return path


def test_every_table_showing_a_re_encoded_dataset_says_so_and_no_other(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict
) -> None:
    """Issue 44: CIFAR-10 read from an image folder (runs.csv data_format image-folder, from the record's
    data_source) is named as a re-encoding in the notes of every table that shows a CIFAR-10 number, and
    in no table that shows none; official copies (an empty data_format) get no such note."""
    more = {
        "hours": load_compute_hours(RESOURCES / "paper_compute_hours.csv"),
        "measured": score_runtime_measurements(),
    }
    marked = runs.assign(data_format=runs["dataset"].map({"cifar10": "image-folder"}).fillna(""))
    noted = set()
    for name, artefact in TABLES.items():
        for dataset in ("cifar10", "breastmnist") if artefact.each else ("cifar10",):
            table = build_table(name, inputs_of(marked, paper, config, dataset=dataset, **more))
            shows = "dataset" in table.data and "cifar10" in set(table.data["dataset"].astype(str))
            has = [n for n in table.notes if n.startswith("CIFAR10: read from an image folder") and "official" in n]
            assert len(has) == (1 if shows else 0), (name, dataset, table.notes)
            noted |= {name} if has else set()
        official = build_table(name, inputs_of(runs.assign(data_format=""), paper, config, dataset="cifar10", **more))
        assert not any("read from an image folder" in n for n in official.notes), name
    # the natural tables are among them (the test looks where CIFAR-10 is shown)
    assert {"natural_summary", "all_contexts", "per_class", "operating_points", "comparisons"} <= noted
