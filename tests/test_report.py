"""con2.report: record collection, every table and figure, on synthetic records.

Fast (no training, no torch): records are written by hand with con2.run.records.write_record.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from con2.report import tables as T
from con2.report.artefacts import FIGURES, TABLES, ReportInputs, figure_targets, table_targets
from con2.report.collect import collect_runs, dataset_level, load_runs, summarize
from con2.report.format import Table, latex_cell, mean_std, shown_diff
from con2.report.paper import load_compute_hours, load_paper_numbers, paper_value
from con2.run.records import RecordError, read_record, write_record

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ROOT / "con2" / "resources"


def fake_record(
    dataset: str,
    normal_class: str,
    method: str,
    variant: str,
    seed: int,
    aurocs: dict[str, float],
    params: dict | None = None,
    silhouette: float | None = 0.5,
    epochs: int = 4,
) -> dict:
    curve = {"views": 2, "points": [{"epoch": e, "auroc": {k: v - 4 + e for k, v in aurocs.items()}} for e in (1, 4)]}
    return {
        "schema_version": 1,
        "dataset": dataset,
        "normal_class": normal_class,
        "method": method,
        "variant": variant,
        "seed": seed,
        "metrics": {"auroc": aurocs, "silhouette": silhouette},
        "timing": {"fit_seconds": 12.0, "score_seconds": 3.0, "wall_seconds": 16.0, "images_per_second": 100.0},
        "peak_memory_mb": 900.0,
        "n_train": 100,
        "n_test": 50,
        "n_anomalous": 20,
        "epochs": epochs,
        "steps": 8,
        "config": {"image_size": 28, "width": 16, "tta": 4, "params": params or {}},
        "config_hash": "abc",
        "device": "cpu",
        "curve": curve,  # after metrics: a NaN in both is named at metrics first
    }


@pytest.fixture
def runs(tmp_path: Path) -> pd.DataFrame:
    """A small grid of records: BreastMNIST (medical) and CIFAR-10 (natural, 2 classes), CON2 variants + a baseline."""
    rng = np.random.default_rng(0)
    recs = []
    inv = {"contexts": ["invert"]}
    for seed in (0, 1, 2):
        for ds, cls in (("breastmnist", "1"), ("cifar10", "airplane"), ("cifar10", "cat")):
            base = 80 + rng.normal(0, 1)
            recs.append(fake_record(ds, cls, "con2", "invert", seed, {"nnd": base, "lh": base - 2}, inv))
            recs.append(
                fake_record(ds, cls, "con2", "flip", seed, {"nnd": base - 1, "lh": base - 3}, {"contexts": ["flip"]})
            )
            recs.append(fake_record(ds, cls, "simclr", "default", seed, {"knn": base - 5, "ssd": base - 6}, {}, None))
        recs.append(
            fake_record(
                "breastmnist",
                "1",
                "con2",
                "context_only",
                seed,
                {"nnd": 70.0, "lh": 71.0},
                {"contexts": ["invert"], "loss": "context_only"},
            )
        )
        recs.append(fake_record("breastmnist", "1", "con2", "k3", seed, {"nnd": 75.0, "lh": 74.0}, {"n_contexts": 3}))
    paths = []
    for r in recs:
        p = (
            tmp_path
            / "results"
            / "runs"
            / r["dataset"]
            / r["normal_class"]
            / r["method"]
            / r["variant"]
            / f"seed{r['seed']}"
            / "record.json"
        )
        write_record(r, p)
        paths.append(p)
    df = collect_runs(paths)
    df.to_csv(tmp_path / "runs.csv", index=False)
    return load_runs(tmp_path / "runs.csv")


@pytest.fixture
def config() -> dict:
    return {
        "report": {
            "subject": "con2",
            "medical": ["breastmnist", "pneumoniamnist"],
            "natural": ["cifar10"],
            "per_class": ["cifar10"],
            "curves": ["breastmnist"],
            "main_variants": {"con2": "invert"},
            "contexts": ["invert", "flip", "equalize"],
            "fidelity": {
                "datasets": ["breastmnist"],
                "reference": "as printed",
                "rows": [
                    {"label": "as printed", "method": "con2", "variant": "invert", "score": "nnd"},
                    {"label": "k3", "method": "con2", "variant": "k3", "score": "nnd"},
                ],
            },
            "fidelity_native": {
                "datasets": ["breastmnist"],
                "reference": "flip",
                "rows": [{"label": "flip", "method": "con2", "variant": "flip", "score": "nnd"}],
            },
            "fidelity_length": {
                "datasets": ["breastmnist"],
                "rows": [{"label": "SimCLR", "method": "simclr", "variant": "default", "score": "knn"}],
            },
            "bound": {
                "dataset": "breastmnist",
                "budgets": [{"label": "28 px", "con2": "invert", "content": "context_only", "simclr": "default"}],
            },
        }
    }


@pytest.fixture
def paper() -> pd.DataFrame:
    return load_paper_numbers(RESOURCES / "paper_numbers.csv")


def inputs_of(runs: pd.DataFrame, paper: pd.DataFrame, config: dict, **more: object) -> ReportInputs:
    return ReportInputs(runs=runs, paper=paper, config=config, **more)


# ----------------------------------------------------------------------------- collect
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
    from con2.report.collect import collect_valid_runs

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


def test_the_workflow_s_last_lines_list_skipped_records_while_they_are_unchanged(tmp_path: Path) -> None:
    from con2.grid.status import summary_lines

    _, bad = bad_records(tmp_path)
    corrupt = next(p for p in bad if "digits/2/" in str(p))
    skipped = tmp_path / "skipped.csv"
    pd.DataFrame(
        [(str(corrupt), corrupt.stat().st_mtime_ns, "not valid JSON (...)", "delete it")],
        columns=["record", "mtime_ns", "problem", "fix"],
    ).to_csv(skipped, index=False)
    lines = summary_lines([], {}, tmp_path / "no_runs.csv", skipped_files=[skipped, tmp_path / "missing.csv"])
    text = "\n".join(lines)
    assert "1 record(s) SKIPPED by the aggregation" in text
    assert f"  {corrupt}: not valid JSON (...)" in lines and "      fix: delete it" in lines
    corrupt.write_text("{}")  # replaced since (e.g. retrained): no longer reported
    os.utime(corrupt, ns=(0, 0))
    assert summary_lines([], {}, tmp_path / "no_runs.csv", skipped_files=[skipped]) == []


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


# ----------------------------------------------------------------------------- tables
def test_every_table_builds_and_writes(runs: pd.DataFrame, paper: pd.DataFrame, config: dict, tmp_path: Path) -> None:
    hours = load_compute_hours(RESOURCES / "paper_compute_hours.csv")
    measured = score_runtime_measurements()
    for name in TABLES:
        table = T.build_table(name, inputs_of(runs, paper, config, hours=hours, measured=measured, dataset="cifar10"))
        out = [tmp_path / f"{name}.{ext}" for ext in ("csv", "md", "tex")]
        table.write(*out)
        assert all(p.stat().st_size > 0 for p in out)
        tex = out[2].read_text()
        assert "\\toprule" in tex and "\\bottomrule" in tex, name
        assert table.rows, f"{name} has no rows"
    table = T.per_class(inputs_of(runs, paper, config, dataset="cifar10"))
    assert [r[0] for r in table.rows] == ["airplane", "cat", "mean"]


def test_table1_puts_the_paper_beside_ours(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    t = T.table1_medical(inputs_of(runs, paper, config))
    labels = [(r[0], r[1]) for r in t.rows]
    i = labels.index(("CON2 (NND)", "ours"))
    assert labels[i + 1] == ("CON2 (NND)", "paper")
    assert t.columns[:3] == ["Method", "Source", "BreastMNIST"] and "PneumoniaMNIST" in t.columns
    row = t.rows[i + 1]
    assert row[2] == "81.7 ± 1.4"  # the paper's Table 1, CON2 BreastMNIST (invert, NND)
    assert ("SimCLR (kNN)", "ours") in labels and ("SimCLR", "paper") in labels
    assert any(r[0] == "PANDA" for r in t.rows)  # paper-only rows stay
    d = t.data[(t.data.dataset == "breastmnist") & (t.data.method == "con2") & (t.data.score == "nnd")].iloc[0]
    assert d["diff"] == pytest.approx(round(d["ours_mean"], 1) - 81.7)


def test_context_and_ablation_tables(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    alt = T.alt_contexts(inputs_of(runs, paper, config))
    assert alt.columns[-3:] == ["invert", "flip", "equalize"]
    paper_rows = [r for r in alt.rows if r[0] == "BreastMNIST" and r[2] == "paper"]
    assert paper_rows and paper_rows[0][3:] == ["81.7 ± 0.9", "81.7 ± 1.4", "72.2 ± 1.8"]
    loss = T.loss_ablation(inputs_of(runs, paper, config))
    nnd = next(r for r in loss.rows if r[0] == "BreastMNIST" and r[1] == "NND")
    # the losses that ran, the main variant's first
    assert loss.columns == ["Dataset", "Score", "loss: full", "loss: context only"]
    assert nnd[3] == "70.0 ± 0.0 [1×3]" and len(nnd) == 4
    multi = T.multi_context(inputs_of(runs, paper, config))
    assert multi.columns[-2:] == ["k = 2", "k = 3"]
    allc = T.all_contexts(inputs_of(runs, paper, config))
    assert any(r[0] == "CIFAR10" and r[2] == "paper" for r in allc.rows)


def test_reproduction_lists_every_paper_number(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    t = T.reproduction(inputs_of(runs, paper, config))
    assert len(t.rows) == len(paper)
    matched = t.data.dropna(subset=["ours_mean"])
    # CON2 BreastMNIST invert/flip (Table 1 + alt contexts), CIFAR-10 invert/flip x NND/LH, SimCLR/SSD BreastMNIST
    assert set(matched["table"]) >= {"table1_medical", "table_alt_contexts", "table_all_contexts_natural"}
    row = matched[(matched["table"] == "table_alt_contexts") & (matched["context"] == "flip")].iloc[0]
    assert row["ours"] == "con2/nnd" and row["diff"] == pytest.approx(round(row["ours_mean"], 1) - 81.7)
    assert paper_value(paper, "table1_medical", "BreastMNIST", "SSD") == (44.6, 4.3)


def test_formatting() -> None:
    assert mean_std(81.66, 0.94) == "81.7 ± 0.9"
    assert mean_std(81.66, float("nan")) == "81.7"
    assert mean_std(float("nan")) == "–"
    assert latex_cell("81.7 ± 0.9") == "$81.7 \\pm 0.9$"
    assert latex_cell("vehicles_1") == "vehicles\\_1"
    t = Table("x", "T", ["A", "B"], [["a_b", "1.0 ± 0.1"]], pd.DataFrame())
    assert "\\begin{tabular}{lr}" in t.latex() and "| A | B |" in t.markdown()


def write_pca_run(run_dir: Path) -> None:
    """A run directory with what the PCA figure reads: features.npz (both contexts) and scores.csv."""
    run_dir.mkdir(parents=True)
    rng = np.random.default_rng(0)
    np.savez(
        run_dir / "features.npz",
        **{
            f"{s}_context{c}": rng.normal(size=(n, 8)).astype(np.float16)
            for s, n in (("train", 30), ("test", 20))
            for c in (0, 1)
        },
    )
    pd.DataFrame({"index": range(20), "label": [0] * 12 + [1] * 8, "nnd": rng.normal(size=20)}).to_csv(
        run_dir / "scores.csv", index=False
    )


def score_runtime_measurements() -> pd.DataFrame:
    """A measurement CSV as workflow/scripts/score_runtime.py writes it (two sweeps, both scores)."""
    return pd.DataFrame(
        [
            {
                "score": s,
                "sweep": sw,
                "n_train": n,
                "n_batches": b,
                "seconds": 0.01 * n,
                "memory_mb": 0.1 * n,
                "dim": 8,
                "views": 2,
                "batch_size": 4,
                "batches_n_train": 10,
                "device": "cpu",
            }
            for s in ("nnd", "lh")
            for sw, n, b in (("n_train", 1, 1), ("n_train", 10, 1), ("n_batches", 10, 1), ("n_batches", 10, 3))
        ]
    )


# ----------------------------------------------------------------------------- figures
def test_figures_write_png_and_pdf(runs: pd.DataFrame, paper: pd.DataFrame, config: dict, tmp_path: Path) -> None:
    from con2.report import figures as F

    per_class = T.per_class(inputs_of(runs, paper, config, dataset="cifar10")).data
    F.per_class_figure(ReportInputs(table=per_class, dataset="cifar10"), tmp_path / "a.png", tmp_path / "a.pdf")
    silhouette = T.silhouette(inputs_of(runs, paper, config)).data
    F.silhouette_figure(ReportInputs(table=silhouette), tmp_path / "b.png", tmp_path / "b.pdf")
    F.score_runtime_figure(ReportInputs(measured=score_runtime_measurements()), tmp_path / "c.png", tmp_path / "c.pdf")
    run_dir = tmp_path / "run"
    write_pca_run(run_dir)
    panels = (("run", str(run_dir)), ("missing", str(tmp_path / "nope")))
    pca = ReportInputs(config={"report": {"pca_max_points": 10}}, panels=panels)
    F.pca_figure(pca, tmp_path / "d.png", tmp_path / "d.pdf")
    for stem in "abcd":
        assert (tmp_path / f"{stem}.png").stat().st_size > 1000 and (tmp_path / f"{stem}.pdf").stat().st_size > 1000


def test_report_imports_no_torch() -> None:
    code = (
        "import sys, con2.grid.experiments, con2.grid.status, con2.report.collect, con2.report.tables, "
        "con2.report.figures, con2.report.artefacts, con2.report.methods as M; M.method_names({}); "
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


# ----------------------------------------------------------------------------- one registry per kind
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
    files = {
        "runs": str(runs_csv),
        "paper": str(RESOURCES / "paper_numbers.csv"),
        "hours": str(RESOURCES / "paper_compute_hours.csv"),
        "measured": str(measured),
        "status": str(status),
        "gpu": str(ROOT / "benchmarks" / "measured"),
    }
    report = config["report"]
    made = set()
    for name, artefact in TABLES.items():
        for stem in artefact.stems(report):
            dataset = stem.removeprefix(f"{name}_") if artefact.each else ""
            given = {k: v for k, v in files.items() if k in artefact.reads}
            table = artefact.builder()(ReportInputs.load(artefact, given, config, dataset))
            assert table.name == stem and table.rows, stem
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
            inputs = ReportInputs.load(artefact, given, config, dataset, panels=[("run", str(run_dir))])
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
    assert f"| all | {len(runs)} |" in md and "outside this profile's grid" in md  # every table gets the note
    fake_job("make_figure.py", {"figure": "toy"}, {"runs": str(runs_csv)}, {"png": out["csv"], "pdf": out["md"]}, {})
    assert (tmp_path / "toy.md").read_text() == f"{len(runs)} rows"


# ----------------------------------------------------------------------------- what a cell averages
def collect(tmp_path: Path, recs: list[dict], benchmarks: dict[int, str] | None = None) -> pd.DataFrame:
    """Write records (and, by index, benchmark TSV texts), collect them, round-trip through runs.csv."""
    paths, bench = [], {}
    for i, r in enumerate(recs):
        p = (
            tmp_path
            / "results"
            / "runs"
            / r["dataset"]
            / r["normal_class"]
            / r["method"]
            / r["variant"]
            / f"seed{r['seed']}"
            / "record.json"
        )
        write_record(r, p)
        paths.append(p)
        if benchmarks and i in benchmarks:
            tsv = tmp_path / f"bench{i}.tsv"
            tsv.write_text(benchmarks[i])
            bench[str(p)] = tsv
    collect_runs(paths, bench).to_csv(tmp_path / "runs.csv", index=False)
    return load_runs(tmp_path / "runs.csv")


@pytest.fixture
def uneven(tmp_path: Path) -> tuple[pd.DataFrame, dict]:
    """CIFAR-10 with CON2 invert on three normal classes and flip / k3 on one (as the default profile's digits)."""
    auroc = {
        ("invert", "airplane"): 91.0,
        ("invert", "cat"): 70.0,
        ("invert", "dog"): 85.0,
        ("flip", "airplane"): 88.0,
        ("k3", "airplane"): 93.0,
    }
    sil = {
        ("invert", "airplane"): 0.61,
        ("invert", "cat"): 0.20,
        ("invert", "dog"): 0.40,
        ("flip", "airplane"): 0.55,
        ("k3", "airplane"): 0.70,
    }
    params = {"invert": {"contexts": ["invert"]}, "flip": {"contexts": ["flip"]}, "k3": {"n_contexts": 3}}
    recs = [
        fake_record("cifar10", c, "con2", v, 0, {"nnd": a, "lh": a - 4}, params[v], sil[(v, c)])
        for (v, c), a in auroc.items()
    ]
    return collect(tmp_path, recs), auroc


def test_cells_say_over_how_many_classes_and_seeds(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    t1 = T.table1_medical(inputs_of(runs, paper, config))
    ours = next(r for r in t1.rows if r[:2] == ["CON2 (NND)", "ours"])
    breast = runs[(runs.dataset == "breastmnist") & (runs.variant == "invert") & (runs.score == "nnd")]["auroc"]
    assert ours[2] == f"{breast.mean():.1f} ± {breast.std(ddof=1):.1f} [1×3]"  # one class x three seeds
    natural = T.natural_summary(inputs_of(runs, paper, config))
    cifar = next(r for r in natural.rows if r[:2] == ["CON2 (NND)", "ours"])
    assert cifar[natural.columns.index("CIFAR10")].endswith("[2×3]")  # two classes x three seeds
    assert any("[c×s]" in n for n in natural.notes)
    assert "$\\times$" in latex_cell(ours[2]) and latex_cell(ours[2]).startswith("$")


def test_context_tables_never_set_a_class_mean_beside_one_class(uneven, paper: pd.DataFrame, config: dict) -> None:
    runs, auroc = uneven
    allc = T.all_contexts(inputs_of(runs, paper, config))
    row = next(r for r in allc.rows if r[:3] == ["CIFAR10", "NND", "ours"])
    invert, flip = row[3], row[4]
    # both cells average the class both contexts ran (airplane), not invert over three classes
    assert invert == f"{auroc[('invert', 'airplane')]:.1f} [1×1]" and flip == f"{auroc[('flip', 'airplane')]:.1f} [1×1]"
    assert any("airplane" in n and "only" in n for n in allc.notes)
    multi = T.multi_context(inputs_of(runs, paper, config))
    nnd = next(r for r in multi.rows if r[:2] == ["CIFAR10", "NND"])
    assert nnd[2:] == [f"{auroc[('invert', 'airplane')]:.1f} [1×1]", f"{auroc[('k3', 'airplane')]:.1f} [1×1]"]
    sil = T.silhouette(inputs_of(runs, paper, config))
    srow = sil.rows[0]
    assert (
        srow[sil.columns.index("CON2 invert")] == "0.610 [1×1]" and srow[sil.columns.index("CON2 k3")] == "0.700 [1×1]"
    )
    # the natural summary still averages every class CON2 ran, and says so
    natural = T.natural_summary(inputs_of(runs, paper, config))
    mean3 = np.mean([auroc[("invert", c)] for c in ("airplane", "cat", "dog")])
    std3 = np.std([auroc[("invert", c)] for c in ("airplane", "cat", "dog")], ddof=1)
    cifar = next(r for r in natural.rows if r[:2] == ["CON2 (NND)", "ours"])
    assert cifar[natural.columns.index("CIFAR10")] == f"{mean3:.1f} ± {std3:.1f} [3×1]"


def test_differences_are_taken_from_the_shown_values(tmp_path: Path, paper: pd.DataFrame, config: dict) -> None:
    recs = [fake_record("breastmnist", "1", "con2", "invert", 0, {"nnd": 56.24, "lh": 40.66}, {"contexts": ["invert"]})]
    t = T.nnd_vs_lh(inputs_of(collect(tmp_path, recs), paper, config))
    row = t.rows[0]
    assert row[1].startswith("56.2") and row[2].startswith("40.7")
    assert row[3] == "+15.5"  # 56.2 - 40.7, not 56.24 - 40.66 = 15.58 -> +15.6
    assert shown_diff(56.24, 40.66) == pytest.approx(15.5) and shown_diff(float("nan"), 1.0) != shown_diff(
        float("nan"), 1.0
    )


def test_per_class_with_one_seed_does_not_claim_a_spread_over_seeds(
    tmp_path: Path, paper: pd.DataFrame, config: dict
) -> None:
    recs = [
        fake_record("cifar10", c, "con2", "invert", 0, {"nnd": a}, {"contexts": ["invert"]})
        for c, a in (("airplane", 90.0), ("cat", 80.0))
    ]
    t = T.per_class(inputs_of(collect(tmp_path, recs), paper, config, dataset="cifar10"))
    assert [r[1] for r in t.rows] == ["90.0 [1×1]", "80.0 [1×1]", f"85.0 ± {np.std([90, 80], ddof=1):.1f} [2×1]"]
    assert "one seed per class" in t.notes[0] and "over seeds" not in t.notes[0]
    assert (
        "mean ± std of its 3 seeds"
        in T.per_class(inputs_of(load_runs_of(tmp_path, 3), paper, config, dataset="cifar10")).notes[0]
    )


def load_runs_of(tmp_path: Path, seeds: int) -> pd.DataFrame:
    recs = [
        fake_record("cifar10", "cat", "con2", "invert", s, {"nnd": 80.0 + s}, {"contexts": ["invert"]})
        for s in range(seeds)
    ]
    return collect(tmp_path / f"seeds{seeds}", recs)


def test_reproduction_report_opens_with_a_summary_line(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    t = T.reproduction(inputs_of(runs, paper, config))
    md = t.markdown().splitlines()
    i = next(i for i, line in enumerate(md) if line.startswith("**Summary:"))
    assert md[2].startswith("**Verdict**") and md[i + 2].startswith("| Table |")  # verdict, summary, then the table
    matched = t.data.dropna(subset=["ours_mean"])
    with_std = matched.dropna(subset=["paper_std"])
    # reference: within = |round(ours) - round(paper)| <= round(paper std), recomputed here
    within = sum(
        abs(round(o, 1) - round(p, 1)) <= round(s, 1) + 1e-9
        for o, p, s in zip(with_std["ours_mean"], with_std["paper_mean"], with_std["paper_std"])
    )
    assert f"{len(matched)} of {len(paper)} published numbers have a counterpart" in md[i]
    assert f"{within} of the {len(with_std)} of those with a published std are within it" in md[i]
    assert len(matched) > 0 and len(with_std) > 0


BENCH = (
    "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    "{s}\t0:00:00\t900\t0\t0\t0\t0\t0\t50\t{cpu}\n"
)


def test_compute_cost_carries_the_load_and_warns_when_extrapolating_from_it(
    tmp_path: Path, paper: pd.DataFrame, config: dict
) -> None:
    def rec(ds: str, threads: int) -> dict:
        r = fake_record(ds, "1", "con2", "invert", 0, {"nnd": 80.0}, {"contexts": ["invert"]})
        r["config"]["threads"] = threads
        return r

    recs = [rec("breastmnist", 2), rec("octmnist", 1), rec("pneumoniamnist", 1)]
    # breastmnist: 2 threads, 100 s wall, 190 CPU s -> share 0.95 (idle); octmnist: 100 s, 40 CPU s -> 0.40 (loaded)
    runs = collect(tmp_path, recs, {0: BENCH.format(s=100, cpu=190), 1: BENCH.format(s=100, cpu=40)})
    t = T.compute_cost(inputs_of(runs, paper, config))
    share = {r[0]: r[t.columns.index("CPU share")] for r in t.rows}
    assert share == {"BreastMNIST": "0.95", "OctMNIST": "0.40*", "PneumoniaMNIST": "–?"}
    hours = {r[0]: r[t.columns.index("h at 2048 ep")] for r in t.rows}
    assert hours["BreastMNIST"] == f"{12.0 / 4 * 2048 / 3600:.1f}" and hours["OctMNIST"].endswith("*")
    warning = next(n for n in t.notes if n.startswith("WARNING"))
    assert "OctMNIST" in warning and "PneumoniaMNIST" in warning and "BreastMNIST" not in warning
    idle = collect(tmp_path / "idle", [recs[0]], {0: BENCH.format(s=100, cpu=190)})
    assert not any(n.startswith("WARNING") for n in T.compute_cost(inputs_of(idle, paper, config)).notes)


def test_tables_use_headline_scores_and_tolerate_extra_readings(
    tmp_path: Path, paper: pd.DataFrame, config: dict
) -> None:
    aurocs = {"nnd": 80.0, "lh": 78.0, "nnd@content/original": 60.0, "lh@context/inverted": 55.0}
    recs = [fake_record("breastmnist", "1", "con2", "invert", 0, aurocs, {"contexts": ["invert"]})]
    runs = collect(tmp_path, recs)
    assert set(runs.loc[~runs["headline"], "score"]) == {"nnd@content/original", "lh@context/inverted"}
    for name, artefact in TABLES.items():
        if "runs" in artefact.reads:
            text = T.build_table(name, inputs_of(runs, paper, config, dataset="breastmnist")).markdown()
            assert "@" not in text and "60.0" not in text, name
    assert T.per_class(inputs_of(runs, paper, config, dataset="breastmnist")).columns == [
        "Normal class",
        "CON2 (NND)",
        "CON2 (LH)",
    ]


def test_records_outside_the_grid_are_kept_and_noted(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    assert runs["in_grid"].all() and T.outside_grid_note(runs) is None
    marked = runs.assign(in_grid=runs["dataset"] != "breastmnist")
    n = marked.loc[~marked["in_grid"], "record"].nunique()
    assert f"holds {n} run(s) outside this profile's grid" in T.outside_grid_note(marked)
    assert (
        T.table1_medical(inputs_of(marked, paper, config)).rows == T.table1_medical(inputs_of(runs, paper, config)).rows
    )  # kept, not dropped


# ----------------------------------------------------------------------------- figure details
def test_pca_axes_say_how_much_variance_each_component_explains() -> None:
    import matplotlib.pyplot as plt

    from con2.report import figures as F

    rng = np.random.default_rng(1)
    feats = {
        f"{s}_context{c}": rng.normal(size=(n, 6)) * np.array([5, 2, 1, 1, 1, 1])
        for s, n in (("train", 40), ("test", 30))
        for c in (0, 1)
    }
    labels = np.array([0] * 20 + [1] * 10)
    fig, ax = plt.subplots()
    F.pca_panel(ax, feats, labels, "t", 50, 0)
    allx = np.concatenate(
        [feats["train_context0"], feats["train_context1"], feats["test_context0"], feats["test_context1"]]
    )
    eig = np.sort(np.linalg.eigvalsh(np.cov(allx.T)))[::-1]  # reference: eigenvalues of the covariance
    assert ax.get_xlabel() == f"PC1 ({100 * eig[0] / eig.sum():.0f}% var.)"
    assert ax.get_ylabel() == f"PC2 ({100 * eig[1] / eig.sum():.0f}% var.)"
    plt.close(fig)


def test_bars_have_error_bars_only_over_several_runs_and_a_legend_outside() -> None:
    import matplotlib.pyplot as plt

    from con2.report import figures as F

    fig, ax = plt.subplots()
    means = np.array([[80.0, 70.0], [85.0, 75.0]])
    stds = np.array([[1.0, np.nan], [2.0, 0.5]])  # series 1: group a one run, group b two
    F.grouped_bars(ax, ["a", "b"], ["three seeds", "mixed"], means, stds, "AUROC", np.array([[3, 1], [3, 2]]))
    from matplotlib.container import BarContainer

    several, mixed = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert several.errorbar is not None
    caps = mixed.errorbar.lines[1][0].get_ydata()  # lower caps: group a's (a single run) is not drawn
    assert np.isnan(caps[0]) and caps[1] == pytest.approx(75.0 - 0.5)
    fig2, ax2 = plt.subplots()
    F.grouped_bars(ax2, ["a"], ["one seed"], np.array([[70.0]]), np.array([[np.nan]]), "AUROC", np.array([[1]]))
    assert [c for c in ax2.containers if isinstance(c, BarContainer)][0].errorbar is None
    plt.close(fig2)
    anchor = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
    assert anchor.x0 >= 1.0  # right of the axes, not over the bars
    plt.close(fig)


# ----------------------------------------------------------------------------- methods named by their specs and cards
def carded(rec: dict, card: dict) -> dict:
    return {**rec, "method_card": card}


def test_tables_read_the_tags_of_the_method_card_not_the_params(
    tmp_path: Path, paper: pd.DataFrame, config: dict
) -> None:
    """A record whose card says `flip` lands in the flip column although its params say nothing."""
    card = {
        "label": "CON2",
        "score_labels": {"nnd": "NND", "lh": "LH"},
        "paper_rows": {"nnd": ["CON2", "NND"]},
        "compute_name": "CON2",
        "tags": {"contexts": "flip", "n_contexts": 2, "loss": "full"},
    }
    main = {**card, "tags": {"contexts": "invert", "n_contexts": 2, "loss": "full"}}
    recs = [
        carded(fake_record("cifar10", "cat", "con2", "v1", 0, {"nnd": 61.0, "lh": 60.0}, {}), card),
        carded(fake_record("cifar10", "cat", "con2", "invert", 0, {"nnd": 71.0, "lh": 70.0}, {}), main),
    ]
    allc = T.all_contexts(inputs_of(collect(tmp_path, recs), paper, config))
    row = next(r for r in allc.rows if r[:3] == ["CIFAR10", "NND", "ours"])
    assert allc.columns[3:] == ["invert", "flip", "equalize"] and row[3:5] == ["71.0 [1×1]", "61.0 [1×1]"]


def test_a_method_the_report_never_heard_of_appears_in_every_method_table(
    tmp_path: Path, paper: pd.DataFrame, config: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A toy method registered by its spec: its label, score label and paper row come from the spec."""
    from con2.methods import MethodSpec, registry

    spec = MethodSpec(
        name="toy",
        Params=dict,
        implementation="nowhere:Toy",
        score_names=("pix",),
        label="Toy",
        score_labels={"pix": "PIX"},
        paper_rows={"pix": ("PANDA", "")},
        compute_name="CSI",
    )
    registry.all_methods()
    monkeypatch.setitem(registry.METHODS, "toy", spec)
    recs = [fake_record("breastmnist", "1", "toy", "default", s, {"pix": 60.0 + s}, {}) for s in range(3)]
    recs += [fake_record("breastmnist", "1", "con2", "invert", 0, {"nnd": 80.0, "lh": 78.0}, {"contexts": ["invert"]})]
    runs = collect(tmp_path, recs)
    t1 = T.table1_medical(inputs_of(runs, paper, config))
    labels = [(r[0], r[1]) for r in t1.rows]
    assert labels[:2] == [("CON2 (NND)", "ours"), ("CON2 (NND)", "paper")]  # the subject first
    i = labels.index(("Toy (PIX)", "ours"))
    assert labels[i + 1] == ("PANDA", "paper") and t1.rows[i][2] == "61.0 ± 1.0 [1×3]"
    per_class = T.per_class(inputs_of(runs, paper, config, dataset="breastmnist"))
    assert per_class.columns == ["Normal class", "CON2 (NND)", "CON2 (LH)", "Toy (PIX)"]
    repro = T.reproduction(inputs_of(runs, paper, config)).data
    assert set(repro.loc[(repro.method == "PANDA") & repro.ours_mean.notna(), "ours"]) == {"toy/pix"}
    hours = pd.DataFrame([{"method": "CSI", "dataset": "BreastMNIST", "gpu_hours_per_run": 7.5}])
    cost = T.compute_cost(inputs_of(runs, paper, config, hours=hours)).data
    assert float(cost.loc[cost.method == "toy", "paper_gpu_h"].iloc[0]) == 7.5


def test_a_method_without_spec_is_named_by_its_records_card_or_the_config(
    tmp_path: Path, paper: pd.DataFrame, config: dict
) -> None:
    card = {
        "label": "Ext",
        "score_labels": {"s": "S"},
        "paper_rows": {"s": ["CSI", ""]},
        "compute_name": None,
        "tags": {},
    }
    recs = [
        carded(fake_record("breastmnist", "1", "ext", "default", 0, {"s": 55.0}, {}), card),
        fake_record("breastmnist", "1", "pixel", "default", 0, {"pixel_nn": 52.0}, {}),
    ]
    runs = collect(tmp_path, recs)
    cfg = {**config, "paper_names": {"methods": {"pixel/pixel_nn": "PANDA"}}}
    labels = [(r[0], r[1]) for r in T.table1_medical(inputs_of(runs, paper, cfg)).rows]
    assert labels[:4] == [("Ext (S)", "ours"), ("CSI", "paper"), ("pixel (pixel_nn)", "ours"), ("PANDA", "paper")]


def test_the_subject_key_chooses_the_method_of_the_ablation_tables(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict
) -> None:
    simclr = {**config, "report": {**config["report"], "subject": "simclr", "main_variants": {"simclr": "default"}}}
    t = T.nnd_vs_lh(inputs_of(runs, paper, simclr))
    assert t.columns == ["Dataset", "kNN (ours)", "SSD (ours)", "kNN − SSD", "kNN (paper)", "SSD (paper)"]
    assert (
        t.title.startswith("SimCLR:") and T.table1_medical(inputs_of(runs, paper, simclr)).rows[0][0] == "SimCLR (kNN)"
    )
    none = {**config, "report": {k: v for k, v in config["report"].items() if k != "subject"}}
    for build in (T.nnd_vs_lh, T.loss_ablation, T.alt_contexts, T.all_contexts, T.multi_context):
        empty = build(inputs_of(runs, paper, none))
        assert not empty.rows and "report.subject is not set" in empty.notes[0]
    assert T.table1_medical(inputs_of(runs, paper, none)).rows  # the method tables need no subject


def test_table1_says_which_method_needs_weights_it_does_not_have(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PANDA in the profile's experiments, no weights in any cache: Table 1 says so and how to get them."""
    import hashlib

    monkeypatch.setenv("CON2_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    own = tmp_path / "my_resnet18.pth"
    own.write_bytes(b"not really weights")
    sha = hashlib.sha256(own.read_bytes()).hexdigest()
    variants = {
        "invert": {"params": {"contexts": ["invert"]}},
        "r18": {"params": {"backbone": "resnet18"}},
        "local": {"params": {"backbone": "resnet18", "weights": str(own), "weights_sha256": sha}},
    }
    experiments = {
        "main": {"datasets": ["breastmnist"], "methods": {"con2": ["invert"], "panda": ["default", "r18", "local"]}},
        "natural": {"datasets": ["cifar10"], "methods": {"panda": ["default"]}},
    }
    cfg = {**config, "variants": variants, "experiments": experiments}
    notes = [n for n in T.table1_medical(inputs_of(runs, paper, cfg)).notes if "PANDA" in n]
    assert len(notes) == 2, notes  # default and r18; `local` has its weights (found and checked), so no note
    default, r18 = notes
    assert default.startswith(
        "PANDA (panda/default): not run, needs the pretrained weights 'torchvision/resnet152-imagenet1k-v1' "
        "(params.weights)"
    )
    assert f"was found in {tmp_path / 'weights'}" in default and "curl -L -o resnet152-394f9c45.pth" in default
    assert r18.startswith("PANDA (panda/r18): not run") and "resnet18-f37072fd.pth" in r18
    assert any(n.startswith("PANDA (panda/default)") for n in T.natural_summary(inputs_of(runs, paper, cfg)).notes)
    # runs on the table's datasets: no note
    ran = pd.concat([runs, runs[runs.method == "simclr"].assign(method="panda", variant="default", score="knn")])
    assert [n for n in T.table1_medical(inputs_of(ran, paper, cfg)).notes if "PANDA" in n] == [r18]


# ----------------------------------------------------------------------------- what a reader sees (issue 19)
def test_a_paper_number_without_std_prints_alone_and_the_paper_s_disagreements_are_noted(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict
) -> None:
    """PANDA's published numbers have no std: no invented '± 0.0' in any table that shows them. The
    paper gives CON2 (NND, invert) on BreastMNIST as 81.7 ± 1.4 in Table 1 and 81.7 ± 0.9 in its
    alternative-contexts table: each table keeps its own and one note says so."""
    assert paper.loc[paper["method"] == "PANDA", "auroc_std"].isna().all()
    t1 = T.table1_medical(inputs_of(runs, paper, config))
    panda = next(r for r in t1.rows if r[0] == "PANDA")
    assert panda[t1.columns.index("BreastMNIST")] == "63.9" and "±" not in " ".join(panda)
    assert "PANDA" in t1.markdown() and "63.9 ± 0.0" not in t1.markdown() + t1.latex()
    repro = T.reproduction(inputs_of(runs, paper, config))
    panda_rows = [r for r in repro.rows if r[2] == "PANDA"]
    assert len(panda_rows) == 6 and all("±" not in r[5] for r in panda_rows)
    disagree = "The paper's own tables disagree on CON2 (NND, invert) on BreastMNIST: 81.7 ± 1.4 in table1_medical; "
    disagree += "81.7 ± 0.9 in table_alt_contexts; "
    assert [n for n in t1.notes if "disagree" in n] == [disagree + "this table shows table1_medical's."]
    alt = T.alt_contexts(inputs_of(runs, paper, config))
    assert [n for n in alt.notes if "disagree" in n] == [disagree + "this table shows table_alt_contexts's."]
    assert [n for n in repro.notes if "disagree" in n] == [disagree + "each row shows its own table's number."]
    # the natural-image tables show none of those cells: no note
    assert not [n for n in T.natural_summary(inputs_of(runs, paper, config)).notes if "disagree" in n]


def test_a_dataset_without_runs_says_not_in_the_profile_or_skipped_with_why_and_the_fix(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict
) -> None:
    """Table 1's medical columns without runs: OctMNIST is in no experiment of the profile; PneumoniaMNIST
    is, but its data were missing (the data status the workflow wrote); Kvasir is in the profile, no record yet."""
    cfg = {
        **config,
        "experiments": {"main": {"datasets": ["breastmnist", "pneumoniamnist", "kvasir", "cifar10"]}},
        "only_datasets": [],
    }
    status = {
        "breastmnist/28": {"dataset": "breastmnist", "size": 28, "status": "ok"},
        "pneumoniamnist/28": {
            "dataset": "pneumoniamnist",
            "size": 28,
            "status": "skipped",
            "reason": "pneumoniamnist: pneumoniamnist.npz not found in /d or /d/medmnist. Fix: run `con2 data get "
            "pneumoniamnist --size 28 --data-dir /d` (needs a network, no credentials), or copy it. (download: false "
            "in the profile)",
            "fix": "con2 data get pneumoniamnist --data-dir /d --size 28",
        },
    }
    notes = T.table1_medical(inputs_of(runs, paper, cfg, status=status)).notes
    md = T.table1_medical(inputs_of(runs, paper, cfg, status=status)).markdown()
    assert "Not run in this profile" not in md
    assert (
        "- Not in this profile: OctMNIST, BR35H, Pneumonia, Melanoma (no experiment of the profile names them)." in md
    )
    skipped = [n for n in notes if n.startswith("PneumoniaMNIST:")]
    assert skipped == [
        "PneumoniaMNIST: in this profile but skipped, its data are missing (pneumoniamnist.npz not found in /d or "
        "/d/medmnist (download: false in the profile)). Fix: `con2 data get pneumoniamnist --data-dir /d --size 28`, "
        "or for data already on disk elsewhere `--config data_dir=DIR`; then run the same snakemake command again."
    ]
    assert any(n.startswith("In this profile, no run of a main variant here yet: Kvasir") for n in notes)
    assert not any("BreastMNIST" in n and "profile" in n for n in notes)  # it ran
    # the no-data run: BreastMNIST itself skipped (no runs of it), said so, not "not in the profile"
    none = runs[runs["dataset"] != "breastmnist"]
    status["breastmnist/28"] = {**status["pneumoniamnist/28"], "dataset": "breastmnist", "reason": "no npz"}
    status["breastmnist/28"]["fix"] = "con2 data get breastmnist --data-dir /d --size 28"
    notes = T.table1_medical(inputs_of(none, paper, cfg, status=status)).notes
    assert any(n.startswith("BreastMNIST: in this profile but skipped, its data are missing (no npz)") for n in notes)
    assert not any("Not in this profile" in n and "BreastMNIST" in n for n in notes)
    # without a data status (a builder called by hand), a profile dataset without runs is "no run yet"
    notes = T.table1_medical(inputs_of(none, paper, cfg)).notes
    assert any(n.startswith("In this profile, no run of a main variant here yet: BreastMNIST") for n in notes)
    # the per-class table of a skipped dataset says the same
    pc = T.per_class(inputs_of(none, paper, cfg, status=status, dataset="breastmnist"))
    assert any(n.startswith("BreastMNIST: in this profile but skipped") for n in pc.notes)


def test_the_html_of_a_table_is_its_markdown_rendered_rounded_with_every_note(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict, tmp_path: Path
) -> None:
    """The HTML the report embeds has the Markdown's cells (rounded, "mean ± std [c×s]"), its lead
    and every note (budget, seeds, weights, skipped data), never the CSV's unrounded numbers."""
    import html as H
    import re

    table = T.build_table("reproduction", inputs_of(runs, paper, config))
    out = [tmp_path / f"reproduction.{ext}" for ext in ("csv", "md", "tex", "html")]
    table.write(*out)
    page = out[3].read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page
    text = H.unescape(re.sub(r"<[^>]+>", "", page))
    for row in table.rows:
        assert "".join(row) in text.replace("\n", ""), row  # every cell as the Markdown shows it, in order
    for line in [*table.notes, *[ln for ln in table.lead if ln]]:
        assert line.removeprefix("- ").replace("**", "") in text, line
    assert "<strong>Verdict</strong>" in page  # the lead's Markdown bold as HTML
    raw = table.data["ours_mean"].dropna().iloc[0]
    assert repr(float(raw)) not in page and f"{raw:.1f}" in page  # rounded as in the Markdown
    t1 = T.table1_medical(inputs_of(runs, paper, config))
    t1_page = t1.html()
    budget = next(n for n in t1.notes if n.startswith("Budget of ours:"))
    assert H.escape(budget, quote=False) in t1_page and "63.9</td>" in t1_page
    assert t1_page.count("<tr class=rule>") == 1  # the rule between our rows and the paper-only rows


def drawn(draw, inputs: ReportInputs, monkeypatch: pytest.MonkeyPatch):
    """The matplotlib figure a figure builder draws (its ``save`` caught) and every text on it."""
    from matplotlib.text import Text

    from con2.report import figures as F

    caught = []
    monkeypatch.setattr(F, "save", lambda fig, png, pdf: caught.append(fig))
    draw(inputs, "x.png", "x.pdf")
    (fig,) = caught
    return fig, [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def test_figures_name_datasets_as_the_paper_and_say_what_each_bar_averages(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dataset names as in the paper (BreastMNIST, CIFAR10), the classes and seeds of every bar or
    line in the title, legend or on the bar, and an error bar on every bar that averages 2 or more."""
    import matplotlib.pyplot as plt
    from matplotlib.container import BarContainer

    from con2.report import figures as F

    # silhouette: BreastMNIST 3 seeds of class 1; CIFAR10 classes airplane and cat, but the k3 and
    # context_only variants ran BreastMNIST only
    sil = T.silhouette(inputs_of(runs, paper, config)).data
    fig, texts = drawn(F.silhouette_figure, ReportInputs(table=sil), monkeypatch)
    assert "BreastMNIST\n(normal class 1)" in texts and "CIFAR10\n(normal classes airplane, cat)" in texts
    assert "breastmnist" not in " ".join(texts) and "cifar10" not in " ".join(texts)
    assert texts.count("1×3") == int((sil["dataset"] == "breastmnist").sum()) and "2×3" in texts
    assert any("each bar: mean over c normal classes × s seeds" in t for t in texts)
    ax = fig.axes[0]
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars) == sil["variant"].nunique()
    for container in bars:  # every bar here averages 2 or more (3 seeds, or 2 class means): an error bar each
        lower = np.asarray(container.errorbar.lines[1][0].get_ydata(), dtype=float)
        heights = np.array([p.get_height() for p in container.patches], dtype=float)
        assert np.isfinite(lower[np.isfinite(heights)]).all() and np.isfinite(heights).any()
    plt.close(fig)
    # drawn from the table's CSV (as the rule does): class "0" stays "0"
    csv = tmp_path / "silhouette.csv"
    sil.assign(classes=np.where(sil["dataset"] == "cifar10", "0", sil["classes"])).to_csv(csv, index=False)
    from_csv = ReportInputs.load(FIGURES["silhouette"], {"table": str(csv)}, {})
    fig, texts = drawn(F.silhouette_figure, from_csv, monkeypatch)
    assert "CIFAR10\n(normal class 0)" in texts
    plt.close(fig)
    # per class: the classes and seeds in the title
    pc = T.per_class(inputs_of(runs, paper, config, dataset="cifar10")).data
    fig, texts = drawn(F.per_class_figure, ReportInputs(table=pc, dataset="cifar10"), monkeypatch)
    assert "CIFAR10: AUROC per normal class\n(2 normal classes, 3 seeds each; error bar ± std over seeds)" in texts
    plt.close(fig)
    one_seed = pc.assign(n=1, auroc_std=np.nan)
    fig, texts = drawn(F.per_class_figure, ReportInputs(table=one_seed, dataset="cifar10"), monkeypatch)
    assert any(t.endswith("(2 normal classes, 1 seed each; one run per bar, no error bar)") for t in texts)
    plt.close(fig)
    # learning curve: the paper's name and each line's classes x seeds in the legend
    from con2.report.curves import learning_curve

    lc = learning_curve(inputs_of(runs, paper, config)).data
    fig, texts = drawn(F.learning_curve_figure, ReportInputs(table=lc, dataset="breastmnist"), monkeypatch)
    assert any(t.startswith("BreastMNIST: AUROC during training") for t in texts)
    assert "CON2 (NND) (1 normal class × 3 seeds)" in texts
    plt.close(fig)
    # PCA: the panel title from the record (the paper's dataset name, the method's label)
    run_dir = tmp_path / "run"
    write_pca_run(run_dir)
    write_record(fake_record("breastmnist", "1", "con2", "invert", 0, {"nnd": 80.0}), run_dir / "record.json")
    pca = ReportInputs(config={"report": {"pca_max_points": 10}}, panels=(("breastmnist ...", str(run_dir)),))
    fig, texts = drawn(F.pca_figure, pca, monkeypatch)
    assert "BreastMNIST (normal: 1), CON2 invert, seed 0" in texts
    plt.close(fig)


def test_con2_best_is_a_row_of_its_own_in_the_natural_and_per_class_tables(
    tmp_path: Path, paper: pd.DataFrame, config: dict
) -> None:
    auroc = {("invert", "airplane"): 90.0, ("invert", "cat"): 80.0, ("best", "airplane"): 96.0, ("best", "cat"): 84.0}
    params = {"invert": {"contexts": ["invert"]}, "best": {"contexts": ["best"]}}
    recs = [fake_record("cifar10", c, "con2", v, 0, {"nnd": a, "lh": a}, params[v]) for (v, c), a in auroc.items()]
    runs = collect(tmp_path, recs)
    cfg = {**config, "report": {**config["report"], "best_variant": "best"}}
    natural = T.natural_summary(inputs_of(runs, paper, cfg))
    col = natural.columns.index("CIFAR10")
    rows = {r[0]: r for r in natural.rows if r[1] == "ours"}
    assert rows["CON2 (NND)"][col].startswith("85.0 ") and rows["CON2 (Best) (NND)"][col].startswith("90.0 ")
    labels = [r[0] for r in natural.rows]
    assert labels.index("CON2 (Best) (NND)") > labels.index("CON2 (NND)")
    # no paper row joined to CON2 (Best): the paper prints it only in a figure
    best = natural.data[natural.data["method"] == "con2/best"]
    assert len(best) and (best["paper_method"] == "").all() and best["paper_mean"].isna().all()
    per = T.per_class(inputs_of(runs, paper, cfg, dataset="cifar10"))
    airplane = next(r for r in per.rows if r[0] == "airplane")
    assert airplane[per.columns.index("CON2 (Best) (NND)")] == "96.0 [1×1]"
    assert airplane[per.columns.index("CON2 (NND)")] == "90.0 [1×1]"
    # without report.best_variant the tables are as before
    assert "CON2 (Best) (NND)" not in [r[0] for r in T.natural_summary(inputs_of(runs, paper, config)).rows]


def test_score_runtime_is_rounded_in_milliseconds_and_names_its_repeats() -> None:
    """Issue 27 (12): '0.00047' was a raw float of seconds from one repeat."""
    measured = score_runtime_measurements().assign(repeats=5)
    measured.loc[0, "seconds"] = 0.00047
    table = T.score_runtime(ReportInputs(measured=measured))
    assert table.columns[4] == "Time (ms)" and table.rows[0][4] == "0.5"
    assert all(len(row[4].split(".")[-1]) <= 1 for row in table.rows)  # one decimal at most
    assert "median over 5 repeat(s)" in table.notes[0] and "overhead" in table.notes[1]
