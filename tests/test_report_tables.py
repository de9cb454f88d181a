"""con2.report.tables: every table of the registry built by name, headline scores, records outside the grid."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from report_fixtures import RESOURCES, collect, config, fake_record, inputs_of, paper, runs, score_runtime_measurements  # noqa: F401  (fixtures: test parameters of the same name)

from con2.report.artefacts import TABLES
from con2.report.paper import load_compute_hours
from con2.report.per_class import per_class as per_class_table
from con2.report.summary import table1_medical
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
        assert table.rows, f"{name} has no rows"
    table = per_class_table(inputs_of(runs, paper, config, dataset="cifar10"))
    assert [r[0] for r in table.rows] == ["airplane", "cat", "mean"]


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


def test_records_outside_the_grid_are_kept_and_noted(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    assert runs["in_grid"].all() and outside_grid_note(runs) is None
    marked = runs.assign(in_grid=runs["dataset"] != "breastmnist")
    n = marked.loc[~marked["in_grid"], "record"].nunique()
    assert f"holds {n} run(s) outside this profile's grid" in outside_grid_note(marked)
    assert (
        table1_medical(inputs_of(marked, paper, config)).rows == table1_medical(inputs_of(runs, paper, config)).rows
    )  # kept, not dropped
