"""con2.aggregate.collect: record collection and the summaries over seeds, on synthetic records."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from report_fixtures import collect, config, fake_record, runs  # noqa: F401  (fixtures: test parameters of the same name)

from con2.aggregate.collect import collect_runs
from con2.aggregate.runs_csv import dataset_level, summarize
from con2.run.records import RecordError, read_record, write_record


def test_collect_rejects_a_broken_record_naming_file_and_field(tmp_path: Path) -> None:
    p = tmp_path / "record.json"
    rec = fake_record("digits", "0", "con2", "invert", 0, {"nnd": 90.0})
    del rec["timing"]["fit_seconds"]
    p.write_text(json.dumps(rec))
    with pytest.raises(RecordError, match=r"record.json.*timing.fit_seconds"):
        collect_runs([p])


def run_path(root: Path, dataset: str, cls: str, method: str, variant: str, seed_dir: str) -> Path:
    return root / "results" / "runs" / dataset / cls / method / variant / seed_dir / "record.json"


def bad_records(root: Path) -> tuple[list[Path], dict[Path, str]]:
    """Two good records of one cell (seeds 0 and 1) and one of every kind of bad one, written under
    ``root/results/runs``: ``(good, {bad path: what its skip line must say})``."""
    good = []
    for seed in (0, 1):
        p = run_path(root, "digits", "0", "con2", "invert", f"seed{seed}")
        write_record(fake_record("digits", "0", "con2", "invert", seed, {"nnd": 80.0 + seed}), p)
        good.append(p)
    bad: dict[Path, str] = {}
    corrupt = run_path(root, "digits", "2", "con2", "invert", "seed0")
    corrupt.parent.mkdir(parents=True)
    corrupt.write_text('{"schema_version": 1, "datas')  # cut off mid-write by hand
    bad[corrupt] = "not valid JSON"
    binary = run_path(root, "digits", "3", "con2", "invert", "seed0")
    binary.parent.mkdir(parents=True)
    binary.write_bytes(bytes(range(256)))
    bad[binary] = "not a text file"
    invalid = fake_record("digits", "4", "con2", "invert", 0, {"nnd": 80.0})
    del invalid["timing"]["fit_seconds"]
    nan = fake_record("digits", "5", "con2", "invert", 0, {"nnd": float("nan")})
    inf = fake_record("digits", "6", "con2", "invert", 0, {"nnd": 80.0}, silhouette=float("inf"))
    for rec, says in ((invalid, "'timing.fit_seconds'"), (nan, "'metrics.auroc.nnd'"), (inf, "'metrics.silhouette'")):
        p = run_path(root, "digits", rec["normal_class"], "con2", "invert", "seed0")
        p.parent.mkdir(parents=True)
        p.write_text(json.dumps(rec))  # json writes NaN and Infinity unless told not to
        bad[p] = says
    seed0 = good[0].parent
    for copy, says in (
        ("seed0.bak", "its folder is not a run directory"),
        ("seed7", "the record is run digits/0/con2/invert/seed0 but sits in digits/0/con2/invert/seed7"),
    ):
        shutil.copytree(seed0, seed0.parent / copy)
        bad[seed0.parent / copy / "record.json"] = says
    shallow = root / "results" / "runs" / "digits" / "0" / "con2" / "record.json"
    shutil.copy(good[0], shallow)
    bad[shallow] = "its folder is not a run directory"
    return good, bad


def test_aggregation_skips_each_bad_record_naming_the_file_and_the_fix(tmp_path: Path) -> None:
    """Issue 16, cases 5-7: a corrupt, binary, schema-invalid or NaN record, or a copied run folder,
    is left out with one line naming it and the fix; the others are aggregated; only the strict
    reader raises."""
    from con2.aggregate.collect import collect_valid_runs

    good, bad = bad_records(tmp_path)
    paths = [*good, *bad]
    df, skipped = collect_valid_runs(paths, runs_root=tmp_path / "results" / "runs")
    assert sorted(df["record"].unique()) == sorted(map(str, good))
    summary = summarize(df)
    assert summary["n"].tolist() == [2] and summary["mean"].tolist() == [80.5]  # seed0.bak, seed7: no seeds
    assert {Path(s.record) for s in skipped} == set(bad)
    for s in skipped:
        line = s.line()
        assert "\n" not in line and line.startswith(f"skipped {s.record}: ") and bad[Path(s.record)] in line, line
        assert "; fix: " in line and ("rm " in s.fix or "mv " in s.fix), line
    with pytest.raises(RecordError):
        collect_runs(paths, runs_root=tmp_path / "results" / "runs")
    # without a runs root, only paths of the run layout are checked against their records
    df_all, skipped_all = collect_valid_runs([*good, bad_path(bad, "seed7")])
    assert len(df_all["record"].unique()) == 2 and [Path(s.record).parent.name for s in skipped_all] == ["seed7"]


def bad_path(bad: dict[Path, str], folder: str) -> Path:
    return next(p for p in bad if p.parent.name == folder)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_the_record_schema_refuses_nan_and_infinity_on_write_and_read(tmp_path: Path, value: float) -> None:
    rec = fake_record("digits", "0", "con2", "invert", 0, {"nnd": 80.0, "lh": value})
    p = tmp_path / "record.json"
    with pytest.raises(RecordError, match=r"field 'metrics.auroc.lh'.*not a finite number"):
        write_record(rec, p)
    assert not p.exists()
    p.write_text(json.dumps(rec))
    with pytest.raises(RecordError, match=rf"{p}: invalid run record at field 'metrics.auroc.lh'"):
        read_record(p)
    rec["metrics"]["auroc"]["lh"] = 70.0
    rec["timing"]["images_per_second"] = value
    p.write_text(json.dumps(rec))
    with pytest.raises(RecordError, match=r"'timing.images_per_second'"):
        read_record(p)


@pytest.mark.parametrize("key", ["fit_seconds", "score_seconds", "wall_seconds", "curve_seconds"])
def test_the_record_schema_bounds_every_timing(tmp_path: Path, key: str) -> None:
    """Issue 57, item 6: a record's timing of 1e308 s passed the schema and printed a 300-digit cost table. A
    timing is 0 to ten years (records.MAX_SECONDS); the aggregation leaves a record beyond it out, naming it."""
    from con2.aggregate.collect import collect_valid_runs
    from con2.run.records import MAX_SECONDS, RECORD_SCHEMA

    assert MAX_SECONDS == 315_576_000 and "ten years" in RECORD_SCHEMA["properties"]["timing"]["description"]
    rec = fake_record("digits", "0", "con2", "invert", 0, {"nnd": 80.0})
    p = tmp_path / "runs" / "digits" / "0" / "con2" / "invert" / "seed0" / "record.json"
    p.parent.mkdir(parents=True)
    rec["timing"][key] = 9 * 365 * 24 * 3600.0  # nine years: long, and a time
    p.write_text(json.dumps(rec))
    assert read_record(p)["timing"][key] == rec["timing"][key]
    for value in (1e308, MAX_SECONDS * 1.001, -1.0):
        rec["timing"][key] = value
        p.write_text(json.dumps(rec))
        with pytest.raises(RecordError, match=rf"field 'timing.{key}'"):
            read_record(p)
        frame, skipped = collect_valid_runs([p])
        assert frame.empty and len(skipped) == 1 and f"timing.{key}" in skipped[0].problem
    rec["timing"][key] = 1.0
    rec["timing"]["images_per_second"] = 1e308
    p.write_text(json.dumps(rec))
    with pytest.raises(RecordError, match=r"field 'timing.images_per_second'"):
        read_record(p)


def test_the_workflow_s_last_lines_list_skipped_records_while_they_are_unchanged(tmp_path: Path) -> None:
    from con2.workflow.status import closing_lines

    _, bad = bad_records(tmp_path)
    corrupt = next(p for p in bad if "digits/2/" in str(p))
    skipped = tmp_path / "skipped.csv"
    pd.DataFrame(
        [(str(corrupt), corrupt.stat().st_mtime_ns, "not valid JSON (...)", "delete it")],
        columns=["record", "mtime_ns", "problem", "fix"],
    ).to_csv(skipped, index=False)
    lines = closing_lines([], {}, tmp_path / "no_runs.csv", skipped_files=[skipped, tmp_path / "missing.csv"])
    text = "\n".join(lines)
    assert "1 record(s) SKIPPED by the aggregation" in text
    assert f"  {corrupt}: not valid JSON (...)" in lines and "      fix: delete it" in lines
    corrupt.write_text("{}")  # replaced since (e.g. retrained): no longer reported
    os.utime(corrupt, ns=(0, 0))
    assert closing_lines([], {}, tmp_path / "no_runs.csv", skipped_files=[skipped]) == []


def test_summaries(runs: pd.DataFrame) -> None:
    s = summarize(runs)
    one = s[(s.dataset == "breastmnist") & (s.method == "con2") & (s.variant == "k3") & (s.score == "nnd")].iloc[0]
    assert one["mean"] == pytest.approx(75.0) and one["std"] == pytest.approx(0.0) and one["n"] == 3
    lvl = dataset_level(s)
    cifar = lvl[(lvl.dataset == "cifar10") & (lvl.variant == "invert") & (lvl.score == "nnd")].iloc[0]
    per_class = s[(s.dataset == "cifar10") & (s.variant == "invert") & (s.score == "nnd")]["mean"]
    assert cifar["mean"] == pytest.approx(per_class.mean()) and cifar["n_classes"] == 2
    assert cifar["std"] == pytest.approx(per_class.std(ddof=1))
    # records without a method_card: the tags come from the method's spec applied to the config's params
    k4 = runs[(runs.variant == "k3")].iloc[0]
    assert (k4["contexts"], k4["n_contexts"], k4["loss"]) == ("k3", 3.0, "full")
    ablated = runs[(runs.variant == "context_only")].iloc[0]
    assert (ablated["contexts"], ablated["n_contexts"], ablated["loss"]) == ("invert", 2.0, "context_only")
    knn = runs[(runs.method == "simclr") & (runs.score == "knn")].iloc[0]
    assert pd.isna(knn["contexts"])
    assert (knn["method_label"], knn["score_label"], knn["paper_method"]) == ("SimCLR", "kNN", "SimCLR")
