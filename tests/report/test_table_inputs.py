"""Issue 34, point 4, and issue 45, item 5: no side door. Every file a table's or figure's builder opens is
named by its rule.

Each table of :data:`con2.report.artefacts.TABLES` and each figure of :data:`~con2.report.artefacts.FIGURES`
is built as its rule builds it (the rule's script's call, with the inputs and params :class:`ArtefactRules`
gives the rule) while an audit hook (:func:`sys.addaudithook`, event ``open``: every file Python or a C
extension opens through Python's ``open``/``os.open``) records the files opened for reading; any file of the
project or of the run folders that the rule does not name fails the test. The records beside the runs CSV
have scores.csv and validation_scores.csv, and the PCA figure's run has features.npz, so a builder reading a
run folder would be caught: the last tests show the check catching exactly that (the tables as they read
scores before issue 34, the PCA figure as its rule declared it before issue 45).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
import yaml
from report_fixtures import fake_record, score_runtime_measurements, write_pca_run
from test_uncertainty import write_runs

from con2 import paths as P
from con2.aggregate.bundle import ScoresBundle, bundle_bytes
from con2.aggregate.collect import collect_valid_runs
from con2.aggregate.runs_csv import load_runs
from con2.aggregate.score_files import RUN_FOLDERS
from con2.report.artefacts import FIGURES, FILE_INPUTS, TABLES, Artefact, PcaPanel, ReportInputs
from con2.report.paper import load_paper_numbers
from con2.report.tables import build_table, table_from_files
from con2.resources import resource
from con2.run.records import write_record
from con2.workflow.artefact_rules import ArtefactRules
from con2.workflow.session import DATA_STATUS, RUNS_CSV, SCORE_RUNTIME_CSV, Session

ROOT = Path(__file__).resolve().parents[2]
PROFILE = yaml.safe_load((ROOT / "workflow/config/test.yaml").read_text())

_opened: list[str] | None = None  # the files opened while a builder runs (None: not watching)


WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND  # a file opened with one of these is written
INSTALLED = tuple(os.path.abspath(p) + os.sep for p in {sys.prefix, sys.base_prefix})  # the interpreter, packages


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Record each file opened for reading (``open``'s arguments: path, mode, flags); a figure's own PNG
    and PDF, written, are its outputs."""
    if _opened is None or event != "open" or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    if isinstance(args[2], int) and args[2] & WRITES:
        return
    _opened.append(os.path.abspath(os.fsdecode(args[0])))


sys.addaudithook(_audit)  # a hook stays for the process: it records only inside `watching`


@contextmanager
def watching() -> Iterator[list[str]]:
    """The absolute paths of every file opened inside the block."""
    global _opened
    _opened = seen = []
    try:
        yield seen
    finally:
        _opened = None


def undeclared(opened: list[str], declared: list[str], roots: list[Path]) -> list[str]:
    """The files under ``roots`` opened but neither declared nor inside a declared folder (code the
    interpreter imports, .py and compiled modules, and the installed packages' own files, matplotlib's
    fonts say, are not a builder's input)."""
    allowed = [os.path.abspath(p) for p in declared]
    out = []
    for path in dict.fromkeys(opened):
        if not any(path.startswith(str(r) + os.sep) for r in roots) or path.endswith((".py", ".pyc", ".so")):
            continue
        if path.startswith(INSTALLED):
            continue
        if any(path == a or path.startswith(a + os.sep) for a in allowed):
            continue
        out.append(path)
    return out


def profile() -> dict[str, Any]:
    """The test profile with the synthetic BreastMNIST runs in its tables (outside its grid)."""
    report = {
        **PROFILE["report"],
        "medical": ["breastmnist"],
        "comparisons": ["breastmnist"],
        "per_class": ["breastmnist"],
        "main_variants": {**(PROFILE["report"].get("main_variants") or {}), "con2": "invert", "simclr": "default"},
        "include_outside_grid": True,
    }
    datasets = {**PROFILE["datasets"], "breastmnist": {}}  # a dataset of the profile, no run of its grid
    return {**PROFILE, "data_dir": "data", "datasets": datasets, "report": report}


def aggregate(records: list[str], runs_csv: str) -> None:
    """What rule aggregate writes: the runs CSV and the scores bundle beside it."""
    runs, skipped = collect_valid_runs(records)
    assert not skipped
    runs["in_grid"] = False
    Path(runs_csv).parent.mkdir(parents=True, exist_ok=True)
    runs.to_csv(runs_csv, index=False)
    Path(P.scores_bundle(runs_csv)).write_bytes(bundle_bytes(runs["record"].unique()))


def rule_inputs(rules: ArtefactRules, artefact: Artefact, dataset: str) -> dict[str, list[str]]:
    """input name -> paths, as Snakemake hands the artefact's rule its inputs (functions called, the
    ``{dataset}`` wildcard filled, an empty list left out)."""
    files = {}
    for key, value in rules.inputs(artefact).items():
        if callable(value):
            value = value(SimpleNamespace(dataset=dataset))
        paths = [str(v).replace("{dataset}", dataset) for v in (value if isinstance(value, list) else [value])]
        if paths:
            files[key] = paths
    return files


def rule_files(rules: ArtefactRules, artefact: Artefact, dataset: str) -> dict[str, str]:
    """input name -> path of the inputs a builder reads, as the rule's script passes them (a list of one
    file that file)."""
    files = {}
    for key, paths in rule_inputs(rules, artefact, dataset).items():
        if key in FILE_INPUTS:
            assert len(paths) == 1, (artefact.name, key, paths)
            files[key] = paths[0]
    return files


def rule_panels(rules: ArtefactRules, artefact: Artefact) -> list[tuple[str, str, str, str]]:
    """The rule's param ``panels`` (the PCA figure's runs: title, record, features, scores), else none."""
    panels = rules.params(artefact).get("panels")
    return panels(SimpleNamespace()) if callable(panels) else []


def declared(rules: ArtefactRules, artefact: Artefact, dataset: str) -> list[str]:
    """Every file the artefact's rule names: its inputs, and the files of its panels."""
    inputs = [p for paths in rule_inputs(rules, artefact, dataset).values() for p in paths]
    return [*inputs, *(f for panel in rule_panels(rules, artefact) for f in PcaPanel(*panel).files)]


def each_dataset(artefact: Artefact, report: dict[str, Any]) -> list[str]:
    """The datasets an artefact is made for ("" for one made once, or for none listed)."""
    return (report.get(artefact.each) or [""]) if artefact.each else [""]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Session, dict[str, Any]]:
    """A results folder as the workflow leaves it: records with both score files, the aggregation's
    outputs, the data status, the score-runtime measurements."""
    monkeypatch.chdir(tmp_path)
    write_runs(tmp_path, validation={"con2": 40})
    records = sorted(str(p) for p in (tmp_path / "results" / "runs").rglob("record.json"))
    assert records and all((Path(r).parent / "scores.csv").is_file() for r in records)
    aggregate(records, RUNS_CSV)
    Path(DATA_STATUS).parent.mkdir(parents=True, exist_ok=True)
    Path(DATA_STATUS).write_text('{"breastmnist/28": {"status": "ok"}}')
    Path(SCORE_RUNTIME_CSV).parent.mkdir(parents=True, exist_ok=True)
    score_runtime_measurements().to_csv(SCORE_RUNTIME_CSV, index=False)
    config = profile()
    session = Session(config, ROOT, lambda: ["all"], lambda: {})
    for scope in session.scopes:  # a scoped table's own runs CSV: the same records
        aggregate(records, f"results/evaluation/scopes/{scope}.csv")
    return session, config


def test_every_table_opens_only_its_rules_inputs(project: tuple[Session, dict[str, Any]], tmp_path: Path) -> None:
    session, config = project
    rules = ArtefactRules(session)
    settings = rules.settings()
    read_scores, built = [], set()
    for name, artefact in TABLES.items():
        for dataset in each_dataset(artefact, config["report"]):
            files = rule_files(rules, artefact, dataset)
            with watching() as opened:
                table_from_files(name, files, settings, dataset)
            assert undeclared(opened, declared(rules, artefact, dataset), [tmp_path, ROOT]) == [], name
            built.add(name)
            if "runs" in files:  # the hook sees the builder's reads: its runs CSV among them
                assert os.path.abspath(files["runs"]) in opened, name
            if "scores" in artefact.reads:
                read_scores.append(name)
                assert os.path.abspath(files["scores"]) in opened, name
    assert {"table1_medical", "comparisons", "operating_points", "reproduction"} <= set(read_scores)
    assert built == set(TABLES)


def write_tables(rules: ArtefactRules, settings: dict[str, Any], report: dict[str, Any]) -> None:
    """Every table's CSV (and other files) where its rule writes it: what a figure's rule reads."""
    for name, artefact in TABLES.items():
        for dataset in each_dataset(artefact, report):
            table = table_from_files(name, rule_files(rules, artefact, dataset), settings, dataset)
            stem = artefact.stem.replace("{dataset}", dataset)
            table.write(*(f"results/tables/{stem}.{ext}" for ext in ("csv", "md", "tex", "html")))


def write_panel_runs(rules: ArtefactRules) -> list[tuple[str, str, str, str]]:
    """The PCA figure's runs as training leaves them: record, features.npz and scores.csv."""
    panels = rules.pca_panels()
    for _, record, _, _ in panels:
        write_pca_run(Path(record).parent)
        write_record(fake_record("digits", "0", "con2", "invert", 0, {"nnd": 80.0}), record)
    return panels


def draw(rules: ArtefactRules, artefact: Artefact, dataset: str, settings: dict[str, Any], out: Path) -> None:
    """The figure as its rule's script draws it (``workflow/scripts/make_figure.py``)."""
    inputs = ReportInputs.load(
        artefact, rule_files(rules, artefact, dataset), settings, dataset, rule_panels(rules, artefact)
    )
    artefact.builder()(inputs, out / f"{artefact.name}.png", out / f"{artefact.name}.pdf")


def test_every_figure_opens_only_its_rules_inputs(project: tuple[Session, dict[str, Any]], tmp_path: Path) -> None:
    """The figures too, the PCA figure's run files among them: each opens the files its rule names, and
    every file of the PCA figure's panels is opened (the check sees them)."""
    session, config = project
    rules = ArtefactRules(session)
    settings = rules.settings()
    write_tables(rules, settings, config["report"])
    panels = write_panel_runs(rules)
    assert panels, "the test profile's PCA figure draws a run"
    panel_files = {os.path.abspath(f) for panel in panels for f in PcaPanel(*panel).files}
    drawn = set()
    for name, artefact in FIGURES.items():
        for dataset in each_dataset(artefact, config["report"]):
            with watching() as opened:
                draw(rules, artefact, dataset, settings, tmp_path)
            assert undeclared(opened, declared(rules, artefact, dataset), [tmp_path, ROOT]) == [], name
            if "table" in artefact.reads:
                assert os.path.abspath(rule_files(rules, artefact, dataset)["table"]) in opened, name
            if "panels" in artefact.reads:  # the hook sees the run files: each panel's three among them
                assert panel_files <= set(opened), name
            drawn.add(name)
    assert drawn == set(FIGURES)


def test_the_check_catches_a_figure_that_opens_an_undeclared_run_file(
    project: tuple[Session, dict[str, Any]], tmp_path: Path
) -> None:
    """The PCA figure as its rule declared it before this issue (the runs' records and the data status) opens
    features.npz and scores.csv beside each record: the check names exactly those."""
    session, _ = project
    rules = ArtefactRules(session)
    settings = rules.settings()
    write_panel_runs(rules)
    pca = FIGURES["pca_representations"]
    with watching() as opened:
        draw(rules, pca, "", settings, tmp_path)
    inputs_only = [p for paths in rule_inputs(rules, pca, "").values() for p in paths]
    side = undeclared(opened, inputs_only, [tmp_path, ROOT])
    assert sorted(Path(p).name for p in side) == ["features.npz", "scores.csv"]
    assert undeclared(opened, declared(rules, pca, ""), [tmp_path, ROOT]) == []


@pytest.mark.parametrize("name", ["operating_points", "comparisons", "table1_medical"])
def test_the_bundle_gives_the_tables_the_run_folders_give(project: tuple[Session, dict[str, Any]], name: str) -> None:
    """The same table, cell for cell and number for number, from the bundle and from the run folders."""
    _, config = project
    paper = load_paper_numbers(str(resource("paper_numbers.csv")))
    common = {"config": config, "runs": load_runs(RUNS_CSV), "paper": paper}
    common["dataset"] = "breastmnist" if TABLES[name].each else ""
    bundled = build_table(name, ReportInputs(**common, scores=ScoresBundle.read(P.scores_bundle(RUNS_CSV))))
    folders = build_table(name, ReportInputs(**common, scores=RUN_FOLDERS))
    assert bundled.rows == folders.rows and bundled.notes == folders.notes
    pd.testing.assert_frame_equal(bundled.data, folders.data)
    numbers = bundled.data.select_dtypes("number")
    assert numbers.notna().to_numpy().any(), name  # numbers from the scores, not only missing marks


def test_the_check_catches_a_table_that_reads_a_run_folder(
    project: tuple[Session, dict[str, Any]], tmp_path: Path
) -> None:
    """A builder given only the runs CSV that reads the scores beside each record (as the operating
    points did before this issue) is caught, naming the run files."""
    _, config = project
    runs = load_runs(RUNS_CSV)
    with watching() as opened:
        build_table("operating_points", ReportInputs(config=config, runs=runs, scores=RUN_FOLDERS))
    side = undeclared(opened, [RUNS_CSV], [tmp_path, ROOT])
    assert side and all(Path(p).name in {"scores.csv", "validation_scores.csv"} for p in side)
    assert {Path(p).name for p in side} == {"scores.csv", "validation_scores.csv"}


def test_an_edited_scores_file_changes_the_bundle_and_a_damaged_bundle_is_named(tmp_path: Path) -> None:
    """The bundle is the files' bytes: the same files give the same bytes (no timestamp), an edit
    gives others; a file that is not a bundle is an error naming it and the fix."""
    write_runs(tmp_path)
    records = sorted(str(p) for p in (tmp_path / "results" / "runs").rglob("record.json"))
    first, again = bundle_bytes(records), bundle_bytes(reversed(records))
    assert first == again
    scores = Path(records[0]).parent / "scores.csv"
    scores.write_text(scores.read_text())  # the same bytes, a new mtime
    assert bundle_bytes(records) == first
    scores.write_text(scores.read_text() + "\n")
    assert bundle_bytes(records) != first
    bad = tmp_path / "scores.json.gz"
    bad.write_text("not gzip")
    with pytest.raises(ValueError, match=r"scores.json.gz is no scores bundle .*rerun snakemake"):
        ScoresBundle.read(bad)
