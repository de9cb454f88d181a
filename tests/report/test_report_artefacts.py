"""con2.report.artefacts: the registry of tables and figures, what each reads, and that its import stays light."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import astuple
from pathlib import Path

import pandas as pd
import pytest
from report_fixtures import (  # noqa: F401  (fixtures: test parameters of the same name)
    RESOURCES,
    ROOT,
    collect,
    config,
    paper,
    pca_panel,
    runs,
    score_runtime_measurements,
    write_pca_run,
)

from con2.aggregate.bundle import bundle_bytes
from con2.report.artefacts import FIGURES, TABLES, ReportInputs, figure_targets, table_targets


def test_report_imports_no_torch() -> None:
    code = (
        "import sys, con2.grid.experiments, con2.workflow.status, con2.aggregate.collect, con2.report.tables, "
        "con2.builders.figures, con2.report.artefacts, con2.report.methods as M; M.method_names({}); "
        "bad = [m for m in ('torch', 'con2.training.engine', 'con2.data') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_registry_the_snakefile_reads_imports_neither_pandas_nor_matplotlib() -> None:
    """The Snakefile imports con2.report.artefacts and con2.grid.experiments at parse time: they stay light."""
    code = (
        "import sys, con2.grid.experiments, con2.report.artefacts as A; A.table_targets({'per_class': ['x']}); "
        "bad = [m for m in ('pandas', 'matplotlib', 'torch') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_every_artefact_is_made_from_exactly_the_inputs_it_declares(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict, tmp_path: Path
) -> None:
    """Each builder gets only the files its registry entry lists (the rule gives no more), read by
    ReportInputs.load, and every figure draws from the table files made the same way."""
    runs_csv = tmp_path / "runs.csv"
    runs.to_csv(runs_csv, index=False)
    measured = tmp_path / "measured.csv"
    score_runtime_measurements().to_csv(measured, index=False)
    status = tmp_path / "status.json"
    status.write_text(json.dumps({"cifar10/32": {"dataset": "cifar10", "size": 32, "status": "ok"}}))
    bundle = tmp_path / "scores.json.gz"  # what the aggregation writes beside runs.csv
    bundle.write_bytes(bundle_bytes(runs["record"].unique()))
    files = {
        "runs": str(runs_csv),
        "paper": str(RESOURCES / "paper_numbers.csv"),
        "hours": str(RESOURCES / "paper_compute_hours.csv"),
        "measured": str(measured),
        "status": str(status),
        "gpu": str(ROOT / "benchmarks" / "measured"),
        "scores": str(bundle),
        "references": str(RESOURCES / "reference_numbers.csv"),
    }
    report = config["report"]
    made = set()
    for name, artefact in TABLES.items():
        for stem in artefact.stems(report):
            dataset = stem.removeprefix(f"{name}_") if artefact.each else ""
            given = {k: v for k, v in files.items() if k in artefact.reads}
            table = artefact.builder()(ReportInputs.load(artefact, given, config, dataset))
            assert table.name == stem and (table.rows or stem == "missing"), stem  # missing: nothing is
            table.write(*(tmp_path / "tables" / f"{stem}.{ext}" for ext in ("csv", "md", "tex")))
            made.add(f"results/tables/{stem}.csv")
    assert made == {f for f in table_targets(report) if f.endswith(".csv")}
    run_dir = tmp_path / "run"
    write_pca_run(run_dir)
    for name, artefact in FIGURES.items():
        for stem in artefact.stems(report):
            dataset = stem.removeprefix(f"{name}_") if artefact.each else ""
            given = {k: v for k, v in files.items() if k in artefact.reads}
            if artefact.table:
                given["table"] = str(tmp_path / "tables" / f"{TABLES[artefact.table].stem.format(dataset=dataset)}.csv")
            inputs = ReportInputs.load(artefact, given, config, dataset, panels=[astuple(pca_panel("run", run_dir))])
            png, pdf = tmp_path / f"{stem}.png", tmp_path / f"{stem}.pdf"
            artefact.builder()(inputs, png, pdf)
            assert png.stat().st_size > 1000 and pdf.stat().st_size > 1000, stem
    assert [Path(f).stem for f in figure_targets(report) if f.endswith(".png")] == [
        "silhouette",
        "score_runtime",
        "pca_representations",
        "per_class_cifar10",
        "learning_curve_breastmnist",
    ]


def test_inputs_name_the_file_a_rule_did_not_give() -> None:
    with pytest.raises(ValueError, match=r"compute_cost reads \['hours'\]: give the rule these inputs"):
        ReportInputs.load(TABLES["compute_cost"], {"runs": "runs.csv"}, {})


TOY_BUILDERS = """
from con2.report.format import Table


def toy_table(inputs):
    return Table("toy", "Toy", ["Dataset", "Runs"], [[inputs.dataset or "all", str(len(inputs.runs))]], inputs.runs)


def toy_figure(inputs, png, pdf):
    for path in (png, pdf):
        open(path, "w").write(f"{len(inputs.runs)} rows")
"""


def fake_job(script: str, params: dict, inputs: dict, outputs: dict, config: dict) -> None:
    """Run a workflow script as Snakemake's script directive does (a global `snakemake` object);
    the profile settings come as the rule gives them, the param `settings` (a rerun trigger), and
    not as Snakemake's config (empty here)."""
    import runpy
    import types

    class Named(types.SimpleNamespace):
        def keys(self) -> list[str]:
            return list(vars(self))

    job = Named(
        params=Named(**params, settings=config),
        input=Named(**inputs),
        output=Named(**outputs),
        wildcards=Named(),
        config={},
        log=[],
        scriptdir=str(ROOT / "workflow" / "scripts"),
    )
    runpy.run_path(str(ROOT / "workflow" / "scripts" / script), init_globals={"snakemake": job})


def test_a_registered_table_and_figure_are_targets_and_built_by_the_scripts_with_no_other_change(
    runs: pd.DataFrame, config: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One registry entry each: the workflow's targets name them, and make_table.py / make_figure.py
    build them by name (no list elsewhere, no branch on names)."""
    from con2.report.artefacts import Artefact

    (tmp_path / "toy_builders.py").write_text(TOY_BUILDERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(TABLES, "toy", Artefact("toy", "toy_builders:toy_table", ("runs",), "a toy table"))
    monkeypatch.setitem(FIGURES, "toy", Artefact("toy", "toy_builders:toy_figure", ("runs",), "a toy figure"))
    assert "results/tables/toy.tex" in table_targets({}) and "results/figures/toy.pdf" in figure_targets({})
    runs_csv = tmp_path / "runs.csv"
    runs.assign(in_grid=runs["dataset"] != "cifar10").to_csv(runs_csv, index=False)
    out = {ext: str(tmp_path / f"toy.{ext}") for ext in ("csv", "md", "tex", "html")}
    fake_job("make_table.py", {"table": "toy"}, {"runs": str(runs_csv)}, out, config)
    md = (tmp_path / "toy.md").read_text()
    in_grid = int((runs["dataset"] != "cifar10").sum())  # the runs outside the grid are left out, and counted
    assert f"| all | {in_grid} |" in md and "outside this profile's grid" in md  # every table gets the note
    fake_job("make_figure.py", {"figure": "toy"}, {"runs": str(runs_csv)}, {"png": out["csv"], "pdf": out["md"]}, {})
    assert (tmp_path / "toy.md").read_text() == f"{in_grid} rows"
