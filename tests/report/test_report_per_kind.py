"""con2.builders.per_kind: AUROC per anomaly kind of a declared mvtec tree (issue 59, item 2), from runs.csv's
``auroc_by_kind`` column (con2.aggregate), and the table's registration (one per such dataset of the tables)."""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from report_fixtures import collect, fake_record

from con2.aggregate.collect import collect_runs
from con2.aggregate.csv_text import csv_frame
from con2.aggregate.runs_csv import by_kind_text, kind_aurocs, load_runs
from con2.builders.per_kind import per_kind
from con2.data import own_folder
from con2.report.artefacts import TABLES, ReportInputs, table_targets
from con2.report.tables import build_table
from con2.run.records import write_record

CONFIG = {
    "report": {
        "medical": ["parts"],
        "floors": ["floor_pixels"],
        "main_variants": {"con2": "invert", "floor_pixels": "floor"},
    }
}
KINDS = ("bar", "disc")


def kind_record(
    normal_class: str, method: str, variant: str, seed: int, aurocs: dict[str, float], by_kind: dict | None
) -> dict:
    """A synthetic record of ``parts`` with ``metrics.auroc_by_kind`` (``None``: without one)."""
    rec = fake_record("parts", normal_class, method, variant, seed, aurocs, {"contexts": ["invert"]})
    if by_kind is not None:
        rec["metrics"]["auroc_by_kind"] = by_kind
    return rec


def random_records(rng: np.random.Generator, classes: tuple[str, ...], seeds: int) -> list[dict]:
    """CON2 (invert: NND and LH, and an extra reading) over ``seeds`` seeds per class, the floor over one, a
    variant that is not the main one, and SimCLR without per-kind AUROCs; every AUROC drawn at random."""

    def draw(columns: tuple[str, ...]) -> tuple[dict[str, float], dict]:
        overall = {c: float(rng.uniform(50, 100)) for c in columns}
        return overall, {k: {c: float(rng.uniform(50, 100)) for c in columns} for k in KINDS}

    recs = []
    for cls in classes:
        for seed in range(seeds):
            recs.append(kind_record(cls, "con2", "invert", seed, *draw(("nnd", "lh", "nnd@content"))))
            recs.append(kind_record(cls, "con2", "flip", seed, *draw(("nnd",))))  # not a main variant
        recs.append(kind_record(cls, "floor_pixels", "floor", 0, *draw(("nnd",))))
        recs.append(kind_record(cls, "simclr", "default", 0, draw(("knn",))[0], None))
    return recs


def brute_force(recs: list[dict], method: str, variant: str, score: str, kind: str) -> str:
    """The cell worked out from the records themselves: per normal class the mean over seeds, then the mean over
    classes; ± the std over seeds (one class, several seeds) or over the class means (several classes)."""
    per_class: dict[str, list[float]] = {}
    for r in recs:
        if (r["method"], r["variant"]) != (method, variant):
            continue
        metrics = r["metrics"]
        value = metrics["auroc"][score] if kind == "all" else metrics["auroc_by_kind"][kind][score]
        per_class.setdefault(r["normal_class"], []).append(value)
    means = [float(np.mean(v)) for v in per_class.values()]
    seeds = sorted({len(v) for v in per_class.values()})
    if len(means) == 1:
        values = next(iter(per_class.values()))
        spread = float(np.std(values, ddof=1)) if len(values) > 1 else None
    else:
        spread = float(np.std(means, ddof=1))
    text = f"{np.mean(means):.1f}" + (f" ± {spread:.1f}" if spread is not None else "")
    over = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    return f"{text} [{len(means)}×{over}]"


@pytest.mark.parametrize(("classes", "seeds"), [(("good",), 3), (("good",), 1), (("good", "clean"), 2)])
def test_each_cell_is_the_mean_of_its_runs_per_kind(tmp_path: Path, classes: tuple[str, ...], seeds: int) -> None:
    recs = random_records(np.random.default_rng(len(classes) * 10 + seeds), classes, seeds)
    table = per_kind(ReportInputs(config=CONFIG, runs=collect(tmp_path, recs), dataset="parts"))
    assert table.name == "per_kind_parts" and table.columns == ["Method", "bar", "disc", "all"]
    # the floor first, then CON2's scores; no extra reading, no other variant, no run without per-kind AUROCs
    assert [r[0] for r in table.rows] == ["Floor: pixel NN (NND)", "CON2 (NND)", "CON2 (LH)"]
    expected = [("floor_pixels", "floor", "nnd"), ("con2", "invert", "nnd"), ("con2", "invert", "lh")]
    for row, (method, variant, score) in zip(table.rows, expected):
        assert row[1:] == [brute_force(recs, method, variant, score, k) for k in (*KINDS, "all")], row
    data = table.data.set_index(["method", "score", "kind"])
    con2 = [r for r in recs if r["method"] == "con2" and r["variant"] == "invert"]
    per_class = [
        np.mean([r["metrics"]["auroc_by_kind"]["disc"]["lh"] for r in con2 if r["normal_class"] == c]) for c in classes
    ]
    assert data.loc[("con2", "lh", "disc"), "auroc_mean"] == pytest.approx(np.mean(per_class), abs=1e-9)
    assert set(data["n_classes"]) == {len(classes)} and set(table.data["dataset"]) == {"parts"}
    assert list(dict.fromkeys(table.data["label"])) == [r[0] for r in table.rows]  # the CSV in the table's order


def test_a_table_without_per_kind_aurocs_says_why(tmp_path: Path) -> None:
    recs = [kind_record("good", "con2", "invert", 0, {"nnd": 80.0}, None)]
    runs = collect(tmp_path, recs)
    table = per_kind(ReportInputs(config=CONFIG, runs=runs, dataset="parts"))
    assert table.rows == [] and "(no AUROC per anomaly kind)" in table.markdown()
    assert table.notes == [
        "No record of parts keeps an AUROC per anomaly kind: only a folder declared with the mvtec layout "
        "(test/<anomaly kind>/) gives them (docs/own_data.md)."
    ]
    none = per_kind(ReportInputs(config=CONFIG, runs=runs, dataset="other"))
    assert none.rows == [] and "(no runs)" in none.markdown() and none.notes[0].startswith("Not in this profile")


def test_a_kind_named_all_is_kept_beside_the_column_all(tmp_path: Path) -> None:
    by_kind = {"all": {"nnd": 61.0}, "bar": {"nnd": 99.0}}
    table = per_kind(
        ReportInputs(
            config=CONFIG,
            runs=collect(tmp_path, [kind_record("good", "con2", "invert", 0, {"nnd": 80.0}, by_kind)]),
            dataset="parts",
        )
    )
    assert table.columns == ["Method", "all (kind)", "bar", "all"]
    assert table.rows == [["CON2 (NND)", "61.0 [1×1]", "99.0 [1×1]", "80.0 [1×1]"]]


def test_runs_csv_keeps_each_score_s_aurocs_per_kind(tmp_path: Path) -> None:
    by_kind = {"disc": {"nnd": 91.5, "lh": 97.25}, "bar": {"nnd": 100.0, "lh": 99.0}}
    recs = [
        kind_record("good", "con2", "invert", 0, {"nnd": 95.0, "lh": 98.0}, by_kind),
        kind_record("good", "floor_pixels", "floor", 0, {"nnd": 90.0}, None),
    ]
    runs = collect(tmp_path, recs).set_index(["method", "score"])
    assert json.loads(runs.loc[("con2", "lh"), "auroc_by_kind"]) == {"bar": 99.0, "disc": 97.25}
    assert list(json.loads(runs.loc[("con2", "nnd"), "auroc_by_kind"])) == ["bar", "disc"]  # kinds sorted
    assert runs.loc[("floor_pixels", "nnd"), "auroc_by_kind"] == ""
    old = pd.read_csv(tmp_path / "runs.csv").drop(columns=["auroc_by_kind"])  # a runs.csv from before the column
    old.to_csv(tmp_path / "old.csv", index=False)
    assert set(load_runs(tmp_path / "old.csv")["auroc_by_kind"]) == {""}


def test_a_runs_csv_without_any_per_kind_auroc_reads_back_as_text_without_a_warning(tmp_path: Path) -> None:
    """Every cell empty: pandas reads the column as float64, where filling it with text warns in pandas 3 and
    raises in pandas 4 (the warning of every report test until then)."""
    import warnings

    collect(tmp_path, [kind_record("good", "floor_pixels", "floor", 0, {"nnd": 90.0}, None)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runs = load_runs(tmp_path / "runs.csv")
    assert list(runs["auroc_by_kind"]) == [""] and runs["auroc_by_kind"].map(type).eq(str).all()


def test_a_cell_of_auroc_by_kind_reads_back_only_finite_aurocs() -> None:
    by_kind = {"b": {"nnd": 90.0, "lh": True}, "a": {"nnd": 70}, "c": "not a mapping", "d": {"lh": 1.0}}
    assert by_kind_text(by_kind, "nnd") == '{"a": 70.0, "b": 90.0}'
    assert by_kind_text(by_kind, "lh") == '{"d": 1.0}' and by_kind_text(None, "nnd") == ""
    assert by_kind_text({"a": {"nnd": float("nan")}}, "nnd") == ""
    assert kind_aurocs('{"a": 70.0, "b": 90.0}') == {"a": 70.0, "b": 90.0}
    for cell in ("", float("nan"), None, "[1, 2]", "{not json", '{"a": "x", "b": Infinity}'):
        assert kind_aurocs(cell) == {}, cell


def test_hostile_kind_names_reach_no_cell_as_a_formula_or_a_control_character(tmp_path: Path) -> None:
    """Kind names come from a record (a hand-written one may hold anything): runs.csv and the table's files
    escape them as every other name."""
    hostile = ["=HYPERLINK(1)", "esc\x1b[2J", "<script>x</script>", "two\nlines"]
    by_kind = {k: {"nnd": 70.0 + i} for i, k in enumerate(hostile)}
    rec = kind_record("good", "con2", "invert", 0, {"nnd": 80.0}, by_kind)
    path = tmp_path / "results/runs/parts/good/con2/invert/seed0/record.json"
    write_record(rec, path)
    csv_frame(collect_runs([path])).to_csv(tmp_path / "runs.csv", index=False)  # as the aggregation writes it
    control = re.compile("[\x00-\x1f\x7f]")
    for row in csv.reader(open(tmp_path / "runs.csv", newline="")):
        assert not any(control.search(c) or c[:1] in "=+@" for c in row if c), row
    table = build_table("per_kind", ReportInputs(config=CONFIG, runs=load_runs(tmp_path / "runs.csv"), dataset="parts"))
    assert set(table.columns[1:-1]) == set(hostile)  # read back as they were
    out = {ext: tmp_path / f"t.{ext}" for ext in ("csv", "md", "tex", "html")}
    table.write(out["csv"], out["md"], out["tex"], out["html"])
    md = out["md"].read_text()
    assert "<script>" not in md and not control.search(md.replace("\n", ""))
    assert "<script>" not in out["html"].read_text()


def test_a_table_per_dataset_of_the_tables_declared_as_an_mvtec_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workflow names per_kind_<dataset> for the datasets the tables show that this process registered as
    mvtec folders (the Snakefile registers the profile's before it names its targets), and no other."""
    report = {"medical": ["parts", "breastmnist"], "natural": ["scans"], "per_class": ["parts"]}
    spec = own_folder.FolderSpec
    monkeypatch.setitem(own_folder.DECLARED, "parts", spec("parts", "parts", layout="mvtec"))
    monkeypatch.setitem(own_folder.DECLARED, "scans", spec("scans", "scans", layout="normal_anomalous"))
    monkeypatch.setitem(own_folder.DECLARED, "unshown", spec("unshown", "unshown", layout="mvtec"))
    assert TABLES["per_kind"].stems(report) == ["per_kind_parts"]
    assert [f for f in table_targets(report) if "per_kind" in f] == [
        f"results/tables/per_kind_parts.{ext}" for ext in ("csv", "md", "tex", "html")
    ]
    assert TABLES["per_kind"].stem == "per_kind_{dataset}"
    monkeypatch.delitem(sys.modules, "con2.data.own_folder")  # a process that loaded no declared folder
    assert TABLES["per_kind"].stems(report) == []
