"""con2.builders.missing (issue 27, "Tables ... Notes"): one short line per missing thing in a table, the
long fixes in one table (results/tables/missing.md), and empty tables and figures that say what fills them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from report_fixtures import config, inputs_of, paper, runs  # noqa: F401  (fixtures: test parameters of the same name)

from con2.builders.bound import budget_bound
from con2.builders.fidelity import fidelity, fidelity_length, fidelity_native
from con2.builders.figures import learning_curve_figure, no_curve
from con2.builders.method_tables import natural_summary, table1_medical
from con2.builders.missing import missing
from con2.builders.per_class import per_class
from con2.report.artefacts import FIGURES, MISSING_FILE, TABLES, ReportInputs, table_targets
from con2.report.format import Table

SKIPPED = {
    "dataset": "pneumoniamnist",
    "size": 28,
    "status": "skipped",
    "reason": "pneumoniamnist: pneumoniamnist.npz not found in /d or /d/medmnist. Fix: run `con2 data get "
    "pneumoniamnist --size 28 --data-dir /d` (needs a network, no credentials), or copy it.",
    "fix": "con2 data get pneumoniamnist --data-dir /d --size 28",
    "data_dir": "/d",
}
STATUS = {"breastmnist/28": {"dataset": "breastmnist", "size": 28, "status": "ok"}, "pneumoniamnist/28": SKIPPED}


@pytest.fixture
def no_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Caches that hold no pretrained weights."""
    monkeypatch.setenv("CON2_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    return tmp_path / "weights"


def with_panda(config: dict) -> dict:
    experiments = {
        "main": {"datasets": ["breastmnist", "pneumoniamnist"], "methods": {"con2": ["invert"], "panda": ["default"]}}
    }
    return {**config, "experiments": experiments}


def test_the_missing_table_is_in_the_registry_and_built_by_all() -> None:
    assert TABLES["missing"].reads == ("runs", "status")  # its rule gets runs.csv and the data status
    assert "results/tables/missing.md" in table_targets({}) and MISSING_FILE == "results/tables/missing.md"
    assert "status" in FIGURES["learning_curve"].reads  # the empty figure can say the data were missing


def test_nothing_missing_is_said_in_one_line(runs: pd.DataFrame, config: dict, no_weights: Path) -> None:
    t = missing(inputs_of(runs, None, config, status={"breastmnist/28": STATUS["breastmnist/28"]}))
    assert t.rows == [] and t.notes == [] and list(t.data.columns) == ["kind", "name", "what", "why", "fix", "command"]
    line = "Nothing is missing: every dataset's data and every method's pretrained weights were found."
    assert t.markdown().splitlines()[4] == f"| {line} |  |  |"
    assert line in t.html() and line in t.latex()


def test_missing_data_and_weights_one_short_line_in_the_tables_the_fixes_in_one_table(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict, no_weights: Path
) -> None:
    cfg = with_panda(config)
    inputs = inputs_of(runs, paper, cfg, status=STATUS)
    t1 = table1_medical(inputs)
    data_note = f"PneumoniaMNIST: skipped, its data are missing (how to get them: {MISSING_FILE})."
    weights_note = (
        f"PANDA (panda/default): not run, its pretrained weights are missing (how to get them: {MISSING_FILE})."
    )
    assert data_note in t1.notes and weights_note in t1.notes
    md = t1.markdown()
    assert f"- {data_note}\n" in md and f"- {weights_note}\n" in md
    assert "con2 data get" not in md and "curl" not in md and "https://" not in md  # no long fix in Table 1
    assert weights_note not in natural_summary(inputs_of(runs, paper, cfg, status=STATUS)).notes  # not its datasets
    none = runs[runs["dataset"] != "pneumoniamnist"]
    assert data_note in per_class(inputs_of(none, paper, cfg, status=STATUS, dataset="pneumoniamnist")).notes

    fixes = missing(inputs)
    assert [r[0] for r in fixes.rows] == [
        "PneumoniaMNIST: its data (28 px)",
        "PANDA (panda/default): its pretrained weights",
    ]
    data_row, weights_row = fixes.rows
    assert data_row[1] == "skipped: pneumoniamnist.npz not found in /d or /d/medmnist"
    assert data_row[2].startswith("command (1) below, or for data already on disk")  # the commands: under the table
    assert weights_row[1].startswith("not run: needs the pretrained weights 'torchvision/resnet152-imagenet1k-v1'")
    assert f"was found in {no_weights}" in weights_row[1] and "get it" not in weights_row[1]
    assert weights_row[2].startswith("get it on a machine with internet access: `curl -L -o resnet152-394f9c45.pth ")
    assert all(r[2].endswith("then run the same snakemake command again") for r in fixes.rows)
    assert fixes.data[["kind", "name"]].values.tolist() == [["data", "pneumoniamnist/28"], ["weights", "panda/default"]]
    assert "\ncon2 data get pneumoniamnist --data-dir /d --size 28\n```\n" in fixes.markdown()
    assert "\ncon2 data get pneumoniamnist --data-dir /d --size 28</code></pre>" in fixes.html()
    # without a data status (a builder called by hand) only the weights are checked, and it says so
    by_hand = missing(inputs_of(runs, paper, cfg))
    assert len(by_hand.rows) == 1 and "No data status was given" in by_hand.notes[-1]


def test_an_empty_study_names_the_command_that_trains_it(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    empty = runs.iloc[0:0]
    for build, name in (
        (fidelity, "fidelity"),
        (fidelity_native, "fidelity_native"),
        (fidelity_length, "fidelity_length"),
    ):
        unscoped = build(inputs_of(empty, paper, config))
        assert unscoped.rows == [] and "| (no runs) |" in unscoped.markdown()  # not a study: as before
        cfg = {**config, "report": {**config["report"], "scopes": {name: ["study"]}}}
        t = build(inputs_of(empty, paper, cfg))
        line = (
            "(no runs: `snakemake --cores 2 studies` trains them, or name this file as the target: "
            f"`snakemake --cores 2 results/tables/{name}.md`)"
        )
        assert f"| {line} |" in t.markdown(), t.markdown()
        assert f"<code>snakemake --cores 2 results/tables/{name}.md</code>" in t.html()
        assert "\\multicolumn" in t.latex() and "snakemake --cores 2 studies" in t.latex()
        assert build(inputs_of(runs, paper, cfg)).rows  # with runs: its rows, no placeholder
    cfg = {**config, "report": {**config["report"], "scopes": {"budget_bound": ["bound_default"]}}}
    bound = budget_bound(ReportInputs(runs=empty, config=cfg))
    assert "(no runs: `snakemake --cores 2 studies` trains them" in bound.markdown()
    assert "results/tables/budget_bound.md" in bound.markdown()
    assert "| (no runs) |" in budget_bound(ReportInputs(runs=empty, config=config)).markdown()


def test_an_empty_table_keeps_no_runs_by_default() -> None:
    t = Table("t", "T", ["a", "b"], [], pd.DataFrame())
    assert "| (no runs) |  |" in t.markdown() and "{(no runs)}" in t.latex() and ">(no runs)</td>" in t.html()


def test_an_empty_learning_curve_says_the_data_were_missing(tmp_path: Path) -> None:
    table = pd.DataFrame(
        columns=["dataset", "label", "epoch", "mean", "std", "n", "seeds_min", "seeds_max", "n_classes"]
    )
    skipped = ReportInputs(table=table, status=STATUS, dataset="pneumoniamnist")
    assert (
        no_curve(skipped)
        == f"no learning curve of PneumoniaMNIST: its data are missing\n(how to get them: {MISSING_FILE})"
    )
    ran = ReportInputs(table=table, status=STATUS, dataset="breastmnist")
    assert no_curve(ran) == "no learning curve of BreastMNIST (config score_at)"  # data there: no scored epoch
    assert no_curve(ReportInputs(table=table, dataset="pneumoniamnist")).endswith("(config score_at)")  # no status
    png, pdf = tmp_path / "c.png", tmp_path / "c.pdf"
    learning_curve_figure(skipped, png, pdf)
    assert png.stat().st_size > 1000 and pdf.stat().st_size > 1000


def test_a_dataset_with_runs_whose_data_are_missing_now_says_so_in_table_1(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict
) -> None:
    """Issue 27, point 10: a table rebuilt under another data_dir keeps a dataset's finished runs and
    says in one line that its data are missing now and its runs without a record were not trained."""
    stale = {"breastmnist/28": {**SKIPPED, "dataset": "breastmnist"}}
    notes = table1_medical(inputs_of(runs, paper, config, status=stale)).notes
    line = next(n for n in notes if n.startswith("BreastMNIST: skipped now"))
    assert "results/tables/missing.md" in line and "runs without a record were not trained" in line
    assert not any(
        n.startswith("BreastMNIST: skipped now")
        for n in table1_medical(inputs_of(runs, paper, config, status=STATUS)).notes
    )
