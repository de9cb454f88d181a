"""The workflow layer (con2/workflow/) without Snakemake: what the rules are given, asked directly.

One end-to-end run per behaviour that needs Snakemake itself stays in tests/test_workflow_*.py;
here each answer of :class:`con2.workflow.session.Session` (and of its artefact rules, targets and
progress line) is checked against what it must be for a profile and the files on disk.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from snakemake.exceptions import WorkflowError

from con2 import paths as P
from con2.grid.experiments import expand_grid
from con2.report.artefacts import FIGURES, TABLES
from con2.workflow.artefact_rules import ArtefactRules
from con2.workflow.eta import PRIOR_STEPS, STEP_SECONDS, format_duration
from con2.workflow.progress import ProgressLine, end_lines
from con2.workflow.session import DATA_STATUS, RUNS_CSV, Session, method_regex, registry_normal_classes
from con2.workflow.targets import Targets

ROOT = Path(__file__).resolve().parents[2]
PROFILE = yaml.safe_load((ROOT / "workflow/config/test.yaml").read_text())
STUDY = "fidelity"


def profile(data_dir: Path, **extra: Any) -> dict[str, Any]:
    """The test profile, its data in ``data_dir``, plus a study (a scoped table) of one CSI run."""
    cfg = {**PROFILE, "data_dir": str(data_dir), **extra}
    cfg["experiments"] = {
        **PROFILE["experiments"],
        "study": {"datasets": ["digits"], "normal_classes": ["1"], "methods": {"csi": ["default"]}},
    }
    cfg["report"] = {**PROFILE["report"], "scopes": {STUDY: ["study"]}}
    return cfg


def session(tmp_path: Path, targets: list[str] | None = None, status: dict | None = None, **extra: Any) -> Session:
    return Session(profile(tmp_path / "data", **extra), ROOT, lambda: targets or [], lambda: status or {})


def wildcards(run: Any) -> SimpleNamespace:
    return SimpleNamespace(
        dataset=run.dataset, normal_class=run.normal_class, method=run.method, variant=run.variant, seed=str(run.seed)
    )


def finish(run: Any, marker: bool = True) -> None:
    """A finished run on disk: its config file, its record (newer), and, unless told, its data marker
    (one written already is kept)."""
    for path in (run.config_file, run.record) + ((P.data_marker(run.dataset, run.data_size),) if marker else ()):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        if not Path(path).exists():
            Path(path).write_text("{}")
    old = time.time() - 100
    os.utime(run.config_file, (old, old))


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_the_grid_is_the_profiles(tmp_path: Path) -> None:
    s = session(tmp_path)
    expected = {r.key for r in expand_grid(profile(tmp_path), registry_normal_classes)}
    assert {r.key for r in s.runs} == expected
    assert s.grid.cli_methods == {r.method for r in s.runs}  # no method of this profile has its own rule file
    assert s.data.data_targets == [("digits", 16)]
    assert s.scopes == {STUDY: ["study"]}
    assert s.files.study_files and {Path(f).stem for f in s.files.study_files} == {STUDY}
    assert not any(Path(f).stem == STUDY for f in s.files.table_files)


def test_run_of_maps_wildcards_to_the_run_and_names_an_unknown_key(tmp_path: Path) -> None:
    s = session(tmp_path)
    for run in s.runs:
        assert s.jobs.run_of(wildcards(run)) is run
        assert s.jobs.run_config_file(wildcards(run)) == run.config_file
        assert s.jobs.data_marker(wildcards(run)) == P.data_marker("digits", 16)
    stranger = SimpleNamespace(dataset="digits", normal_class="7", method="con2", variant="invert", seed="0")
    with pytest.raises(WorkflowError, match="digits/7/con2/invert/seed0 is not a run of this profile"):
        s.jobs.run_of(stranger)
    no_method = SimpleNamespace(dataset="digits", normal_class="0", variant="invert", seed="0")
    with pytest.raises(WorkflowError, match="no {method} wildcard"):
        s.jobs.run_of(no_method)
    run = s.runs[0]
    assert s.jobs.run_of(no_method, method=run.method).method == run.method


def test_run_config_text_refuses_a_file_of_another_hash(tmp_path: Path) -> None:
    s = session(tmp_path)
    run = s.runs[0]
    text = s.jobs.run_config_text(wildcards(run), SimpleNamespace(config=run.config_file))
    assert yaml.safe_load(text)["method"] == run.method
    other = run.config_file.replace(run.config_hash, "0" * len(run.config_hash))
    with pytest.raises(WorkflowError, match=f"has config hash {run.config_hash}"):
        s.jobs.run_config_text(wildcards(run), SimpleNamespace(config=other))


def test_runtime_keys_and_resources_come_from_the_profile(tmp_path: Path) -> None:
    s = session(tmp_path, resources={"mem_mb": 123})
    run = s.runs[0]
    given = s.jobs.runtime_set(wildcards(run), 3)
    assert sorted(given) == sorted(
        ['device="cpu"', "threads=3", f"data_dir={json.dumps(str(tmp_path / 'data'))}", "eval_batch_size=512"]
    )
    assert s.jobs.train_resource("mem_mb", 7)(wildcards(run)) == 123
    assert s.jobs.train_resource("gpu", 7)(wildcards(run)) == 7


def test_priorities_put_the_costlier_run_first(tmp_path: Path) -> None:
    s = session(tmp_path)
    p = {r.key: s.jobs.train_priority(wildcards(r)) for r in s.runs}
    assert all(0 <= v <= 1000 for v in p.values())
    k3 = next(r.key for r in s.runs if r.variant == "k3")  # six views (tta 6) against two
    invert = next(r.key for r in s.runs if r.variant == "invert" and r.normal_class == "0")
    assert p[k3] >= p[invert]
    assert s.jobs.train_priority(SimpleNamespace(dataset="x", normal_class="0", method="y", variant="z", seed="0")) == 0


def test_the_embedded_dataset_is_checked_by_its_fingerprint_alone(tmp_path: Path) -> None:
    s = session(tmp_path)
    check = s.data.check(SimpleNamespace(dataset="digits", size="16"))
    assert set(check) == {"embedded"} and check["embedded"]
    other = Session(profile(tmp_path / "elsewhere", download=False), ROOT, lambda: [], lambda: {})
    assert other.data.check(SimpleNamespace(dataset="digits", size="16")) == check


def test_a_dataset_with_files_is_checked_again_where_data_dir_changed(tmp_path: Path, monkeypatch) -> None:
    s = session(tmp_path)
    monkeypatch.setattr(s.data, "embedded_source", lambda dataset, size: None)  # as a dataset kept in files
    monkeypatch.setattr(s.data, "found_on_disk", lambda dataset, size: None)
    wc = SimpleNamespace(dataset="digits", size="16")
    fresh = s.data.check(wc)
    assert fresh == {"data_dir": str(tmp_path / "data"), "download": False, "strict": False, "on_disk": False}
    marker = Path(P.data_marker("digits", 16))
    marker.parent.mkdir(parents=True)
    old_check = {"data_dir": "/old", "download": False, "strict": False, "on_disk": True}
    marker.write_text(json.dumps({"status": "ok", "check": old_check, "data_dir": "/old"}))
    assert s.data.check(wc) == fresh  # checked in /old, runs left to train: checked again here
    for run in s.runs:
        finish(run)
    assert s.data.check(wc) == old_check  # nothing would train, no copy here: kept as last checked
    monkeypatch.setattr(s.data, "_on_disk", {("digits", 16): True})  # another copy in this data_dir (issue 57)
    assert s.data.check(wc) == {**fresh, "on_disk": False}  # checked again there, to compare its images
    rebuild = Session(profile(tmp_path / "data"), ROOT, lambda: ["results/tables/x.md"], lambda: {})
    monkeypatch.setattr(rebuild.data, "embedded_source", lambda dataset, size: None)
    assert rebuild.data.check(wc) == old_check


def test_ready_and_checked_runs_split_the_grid_at_the_data_check(tmp_path: Path, monkeypatch) -> None:
    status: dict[str, Any] = {}
    s = Session(profile(tmp_path / "data"), ROOT, lambda: [], lambda: status)
    # digits are embedded (on disk from the start): every run is ready, none waits for the check
    assert s.data.ready_runs() == s.runs and s.data.checked_runs() == []
    late = Session(profile(tmp_path / "data"), ROOT, lambda: [], lambda: status)
    monkeypatch.setattr(late.data, "found_on_disk", lambda dataset, size: None)  # not there at the start
    assert late.data.ready_runs() == []
    status["digits/16"] = {"status": "ok"}
    assert late.data.checked_runs() == late.runs
    status["digits/16"] = {"status": "skipped"}
    assert late.data.checked_runs() == []
    strict = Session(profile(tmp_path / "data", strict=True), ROOT, lambda: [], lambda: 1 / 0)  # never asked
    monkeypatch.setattr(strict.data, "found_on_disk", lambda dataset, size: None)
    assert strict.data.ready_runs() == strict.runs and strict.data.checked_runs() == []


def test_records_follow_the_targets(tmp_path: Path) -> None:
    grid = session(tmp_path)
    study_runs = [r for r in grid.runs if "study" in r.experiments]
    main_runs = [r for r in grid.runs if not grid.scoped_only(r)]
    assert study_runs and all(grid.scoped_only(r) for r in study_runs if set(r.experiments) == {"study"})
    assert grid.grid_records.ready() == [r.record for r in main_runs]
    assert grid.all_records.ready() == [r.record for r in grid.runs]
    assert grid.grid_records.checked() == []
    assert grid.study_records.ready() == [r.record for r in study_runs]
    assert grid.scope_records.ready(SimpleNamespace(scope=STUDY)) == []  # `all`: a study's finished runs only

    done = main_runs[0]
    finish(done)
    rebuild = session(tmp_path, targets=["results/tables/table1_medical.md"])
    assert not rebuild.targets.trains_anything
    assert rebuild.grid_records.ready() == [done.record] and rebuild.grid_records.checked() == []
    assert rebuild.available_runs() == [done]

    named = session(tmp_path, targets=[f"results/tables/{STUDY}.md"])
    assert named.targets.trains_scope(STUDY) and not named.targets.trains_grid
    assert named.scope_records.ready(SimpleNamespace(scope=STUDY)) == [r.record for r in study_runs]


def test_records_outside_the_grid_are_stamped_with_their_mtime(tmp_path: Path) -> None:
    other = Path("results/runs/digits/0/con2/old/seed0/record.json")
    other.parent.mkdir(parents=True)
    other.write_text("{}")
    stray = Path("results/runs/digits/0/con2/old/seed0.bak/record.json")
    stray.parent.mkdir(parents=True)
    stray.write_text("{}")
    s = session(tmp_path)
    assert list(s.records_outside()) == [f"{other}@{os.stat(other).st_mtime_ns}"]
    assert list(s.not_run_records) == [str(stray)]
    assert repr(s.records_outside()).startswith("<outside ")  # a short hash in Snakemake's reasons


def test_edited_scores_are_those_newer_than_their_record(tmp_path: Path) -> None:
    runs = session(tmp_path).runs[:2]
    for run in runs:
        finish(run)
        Path(run.run_dir, "scores.csv").write_text("x\n")
        old = time.time() - 10
        os.utime(Path(run.run_dir, "scores.csv"), (old, old))
    later = time.time() + 10
    os.utime(Path(runs[1].run_dir, "scores.csv"), (later, later))
    assert session(tmp_path).edited_scores() == [os.path.join(runs[1].run_dir, "scores.csv")]


def test_a_run_reads_its_data_marker_as_ancient_only_once_finished(tmp_path: Path) -> None:
    """`RunJobs.trains`: common.smk's data_marker wraps the marker in `ancient` only for a finished
    run (re-checking data never retrains it); one without a record, or whose config is newer, trains."""
    run = session(tmp_path).runs[0]
    assert session(tmp_path).jobs.trains(wildcards(run))
    finish(run)
    assert not session(tmp_path).jobs.trains(wildcards(run))
    later = time.time() + 10
    os.utime(run.config_file, (later, later))  # a config written after the record: a changed setting
    assert session(tmp_path).jobs.trains(wildcards(run))


def test_status_input_in_a_rebuild_is_the_file_as_last_checked(tmp_path: Path) -> None:
    assert session(tmp_path).data.status_input() == [DATA_STATUS]  # the grid trains: the checkpoint
    rebuild = session(tmp_path, targets=["results/tables/table1_medical.md"])
    assert rebuild.data.status_input() == []  # never checked: none
    Path(P.data_marker("digits", 16)).parent.mkdir(parents=True)
    Path(P.data_marker("digits", 16)).write_text("{}")
    assert rebuild.data.status_input() == [DATA_STATUS]
    assert session(tmp_path, strict=True).data.status_input() == []


def test_each_artefact_rule_reads_what_its_builder_reads(tmp_path: Path) -> None:
    s = session(tmp_path)
    rules = ArtefactRules(s)
    for artefact in [*TABLES.values(), *FIGURES.values()]:
        inputs = rules.inputs(artefact)
        files = {"records", "status", "scores"} if "panels" in artefact.reads else set()
        assert set(inputs) <= set(artefact.reads) | files | {"scores"}, artefact.name
        if "runs" in artefact.reads:
            assert inputs["runs"] == (
                f"results/evaluation/scopes/{artefact.name}.csv" if artefact.name == STUDY else RUNS_CSV
            )
        if "table" in artefact.reads:
            assert inputs["table"] == f"results/tables/{TABLES[artefact.table].stem}.csv"
        assert "settings" in rules.params(artefact)
    assert "device" not in rules.settings() and "report" in rules.settings()
    assert rules.caption("no_such_table").endswith("workflow/report/artefact.rst")


def test_the_pca_panel_is_the_subjects_first_finished_run(tmp_path: Path) -> None:
    s = session(tmp_path)
    first = min(
        (r for r in s.runs if r.method == "con2" and r.variant == "invert"), key=lambda r: (r.seed, r.normal_class)
    )
    rules = ArtefactRules(s)
    assert rules.pca_runs() == [
        (f"digits (normal: {first.normal_class}), con2 invert, seed {first.seed}", first.run_dir)
    ]
    assert rules.pca_records() == [f"{first.run_dir}/record.json"]


def test_targets_classify_what_trains() -> None:
    scoped = ["fidelity"]
    assert Targets([], scoped).trains_grid  # `all`
    assert Targets(["runs"], scoped).trains_grid
    for rebuild in (["results/tables/table1_medical.md"], ["table_silhouette"], ["figure_pca"], ["aggregate"]):
        t = Targets(rebuild, scoped)
        assert not t.trains_grid and not t.trains_anything, rebuild
    for study in (
        ["studies"],
        ["table_fidelity"],
        ["results/tables/fidelity.md"],
        ["results/evaluation/scopes/fidelity.csv"],
    ):
        t = Targets(study, scoped)
        assert t.trains_scope("fidelity") and not t.trains_grid, study
    assert Targets([os.path.abspath("results/tables/fidelity.csv")], scoped).scope_of("results/tables/fidelity.csv")


def test_no_progress_line_while_nothing_trains_and_the_rebuild_names_what_it_left_out(tmp_path: Path) -> None:
    s = session(tmp_path, targets=["results/tables/table1_medical.md"])
    line = ProgressLine(s, dag_outputs=lambda: set(), slots=lambda: 2)
    assert line.line() is None
    lines = end_lines(s)
    untrained = [r for r in s.runs if not s.scoped_only(r)]
    assert any(f"{len(untrained)} run(s) of the grid have no record yet (digits {len(untrained)})" in x for x in lines)


def test_the_progress_line_counts_the_runs_of_the_dag(tmp_path: Path) -> None:
    s = session(tmp_path)
    in_dag = {r.record for r in s.runs[:3]}
    line = ProgressLine(s, dag_outputs=lambda: in_dag, slots=lambda: 2)
    text = line.line()
    assert text is not None and "0 of 3" in text
    assert set(line.weighed) == {r.key for r in s.runs[:3]}


def test_method_regex_matches_exactly_the_methods() -> None:
    import re

    assert re.fullmatch(method_regex(["con2", "csi"]), "csi") and not re.fullmatch(method_regex(["con2"]), "con")
    assert not re.fullmatch(method_regex([]), "")


def test_a_rebuild_says_in_one_line_what_the_last_data_check_skipped(tmp_path: Path) -> None:
    """Issue 46, point 7: a table rebuild checks no data, so the dataset the last data check skipped is one
    line, without `--config data_dir=DIR` or a download (the README rebuilds without them); `all` still
    gets the whole block with each fix."""
    marker = Path(P.data_marker("digits", 16))
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"status": "skipped", "reason": "digits: not found", "data_dir": "data"}))
    rebuild = "\n".join(end_lines(session(tmp_path, targets=["results/tables/table1_medical.md"])))
    assert "the last data check skipped 1 dataset(s), digits (16 px): a table rebuild checks no data" in rebuild
    assert "data_dir=DIR`" not in rebuild and "fix: " not in rebuild and "SKIPPED" not in rebuild, rebuild
    grid = "\n".join(end_lines(session(tmp_path)))
    assert "1 dataset(s) SKIPPED" in grid and "fix: " in grid and "add `--config data_dir=DIR`" in grid, grid


def test_the_progress_line_counts_the_steps_after_the_runs(tmp_path: Path) -> None:
    """Issue 46, point 3: the aggregation, tables and figures of the DAG are the steps after the runs; one
    whose outputs were written since the start is done and paces the others (from its job's start)."""
    s = session(tmp_path)
    in_dag = {r.record for r in s.runs[:2]}
    done_table = ["results/tables/a.csv", "results/tables/a.md"]
    jobs = [
        ("train", [s.runs[0].record]),
        ("train", [s.runs[1].record]),
        ("run_config", ["results/configs/x.yaml"]),  # no job after the runs
        ("aggregate", [RUNS_CSV]),
        ("table_a", done_table),
        ("figure_b", ["results/figures/b.png", "results/figures/b.pdf"]),
    ]
    line = ProgressLine(s, dag_outputs=lambda: in_dag, slots=lambda: 2, dag_jobs=lambda: jobs)
    for path in done_table:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("x")
    written = os.stat(done_table[-1]).st_mtime
    line.job_started[done_table[0]] = written - 3.0
    Path("results/figures").mkdir(parents=True)
    Path("results/figures/b.png").write_text("older than the start: still to be written")
    os.utime("results/figures/b.png", (s.started - 10, s.started - 10))
    after = line.after_runs()
    assert (after.total, after.left, after.serial, after.paced) == (3, 2, 1, 1), after
    assert after.pace == pytest.approx((3.0 + PRIOR_STEPS * STEP_SECONDS) / (1 + PRIOR_STEPS), abs=0.01)
    record = Path(s.runs[0].record)  # one run finished since the start: the line has a pace
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"timing": {"fit_seconds": 5.0, "score_seconds": 5.0, "wall_seconds": 12.0}}))
    text = line.line()
    assert text is not None and text.startswith("con2 grid: 1 of 2 training runs done; about "), text
    each = f"{after.pace:.1f} s each"
    both = format_duration(2 * after.pace)  # the aggregation, then the one table after it: one after the other
    assert text.endswith(
        f"+ 2 steps after the runs (aggregation, tables, figures): {both} at {each} (from the 1 finished))"
    ), text
