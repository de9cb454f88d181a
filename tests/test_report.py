"""con2.report: grid expansion, record collection, every table and figure, on synthetic records.

Fast (no training, no torch): records are written by hand with con2.records.write_record.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from con2.records import RecordError, write_record
from con2.report import grid as G
from con2.report import tables as T
from con2.report.collect import collect_runs, context_fields, dataset_level, load_runs, summarize
from con2.report.format import Table, latex_cell, mean_std
from con2.report.paper import load_compute_hours, load_paper_numbers, paper_value

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ROOT / "workflow" / "resources"
CONFIGS = ROOT / "workflow" / "config"


def load_profile(name: str) -> dict:
    return yaml.safe_load((CONFIGS / f"{name}.yaml").read_text())


def fake_record(dataset: str, normal_class: str, method: str, variant: str, seed: int, aurocs: dict[str, float],
                params: dict | None = None, silhouette: float | None = 0.5, epochs: int = 4) -> dict:  # fmt: skip
    return {
        "schema_version": 1, "dataset": dataset, "normal_class": normal_class, "method": method, "variant": variant,
        "seed": seed, "metrics": {"auroc": aurocs, "silhouette": silhouette},
        "timing": {"fit_seconds": 12.0, "score_seconds": 3.0, "wall_seconds": 16.0, "images_per_second": 100.0},
        "peak_memory_mb": 900.0, "n_train": 100, "n_test": 50, "n_anomalous": 20, "epochs": epochs, "steps": 8,
        "config": {"image_size": 28, "width": 16, "tta": 4, "params": params or {}}, "config_hash": "abc",
        "device": "cpu",
    }  # fmt: skip


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
            recs.append(fake_record(ds, cls, "con2", "flip", seed, {"nnd": base - 1, "lh": base - 3}, {"contexts": ["flip"]}))
            recs.append(fake_record(ds, cls, "simclr", "default", seed, {"knn": base - 5, "ssd": base - 6}, {}, None))
        recs.append(fake_record("breastmnist", "1", "con2", "context_only", seed, {"nnd": 70.0, "lh": 71.0},
                                {"contexts": ["invert"], "loss": "context_only"}))  # fmt: skip
        recs.append(fake_record("breastmnist", "1", "con2", "k3", seed, {"nnd": 75.0, "lh": 74.0}, {"n_contexts": 3}))
    paths = []
    for r in recs:
        p = tmp_path / "results" / "runs" / r["dataset"] / r["normal_class"] / r["method"] / r["variant"] / f"seed{r['seed']}" / "record.json"
        write_record(r, p)
        paths.append(p)
    df = collect_runs(paths)
    df.to_csv(tmp_path / "runs.csv", index=False)
    return load_runs(tmp_path / "runs.csv")


@pytest.fixture
def config() -> dict:
    return {
        "report": {
            "medical": ["breastmnist", "pneumoniamnist"], "natural": ["cifar10"], "per_class": ["cifar10"],
            "main_variants": {"con2": "invert"}, "contexts": ["invert", "flip", "equalize"],
        }
    }  # fmt: skip


@pytest.fixture
def paper() -> pd.DataFrame:
    return load_paper_numbers(RESOURCES / "paper_numbers.csv")


# ----------------------------------------------------------------------------- grid
def test_grid_expands_the_paper_profile() -> None:
    from con2.data import normal_classes

    runs = G.expand_grid(load_profile("paper"), normal_classes)
    keys = [r.key for r in runs]
    assert len(keys) == len(set(keys))
    # 6 medical (1 class) + CIFAR-10 (10) + CIFAR-100 (20) + ImageNet30 (30) + 2 + 2 = 70 (dataset, class) pairs
    pairs = {(r.dataset, r.normal_class) for r in runs}
    assert len(pairs) == 70
    main = [r for r in runs if "main" in r.experiments]
    assert len(main) == 70 * 3 * 3  # con2 + simclr + csi, 3 seeds
    cifar = next(r for r in runs if r.dataset == "cifar10")
    assert cifar.settings["batch_size"] == 512 and cifar.settings["image_size"] == 32 and cifar.settings["epochs"] == 2048
    k3 = next(r for r in runs if r.variant == "k3")
    assert k3.settings["params"] == {"n_contexts": 3} and k3.settings["tta"] == 42


def test_grid_overrides_round_trip_through_con2_config() -> None:
    from con2.config import load_config

    cfg = {
        "seeds": [1], "run": {"epochs": 2, "image_size": 16},
        "datasets": {"digits": {"normal_classes": ["3"], "run": {"width": 8}}},
        "variants": {"flip": {"params": {"contexts": ["flip"], "temperature": 0.2}}},
        "experiments": {"e": {"datasets": ["digits"], "methods": {"con2": ["flip"]}}},
    }  # fmt: skip
    (run,) = G.expand_grid(cfg, lambda d: ["0"])
    assert run.key == "digits/3/con2/flip/seed1"
    rc = load_config(None, run.overrides())
    assert (rc.dataset, rc.normal_class, rc.seed, rc.width, rc.epochs) == ("digits", "3", 1, 8, 2)
    assert rc.params == {"contexts": ["flip"], "temperature": 0.2}


def test_grid_errors_name_the_key() -> None:
    cfg = {"seeds": [0], "run": {}, "datasets": {"digits": {}}, "variants": {},
           "experiments": {"e": {"datasets": ["digits"], "methods": {"con2": ["nope"]}}}}  # fmt: skip
    with pytest.raises(G.GridError, match="experiments.e.methods.con2: variant 'nope'"):
        G.expand_grid(cfg, lambda d: ["0"])
    cfg["experiments"]["e"] = {"datasets": ["cifar"], "methods": {"con2": ["default"]}}
    with pytest.raises(G.GridError, match="'cifar' is not a key of `datasets`"):
        G.expand_grid(cfg, lambda d: ["0"])


def test_grid_extra_methods_and_filters() -> None:
    cfg = {"seeds": [0, 1], "run": {}, "datasets": {"a": {}, "b": {}}, "only_datasets": "a",
           "experiments": {"e": {"datasets": ["a", "b"], "methods": {"con2": ["default"]}, "extra_methods": True},
                           "f": {"datasets": ["a"], "methods": {"con2": ["default"]}}},
           "extra_methods": ["toy"]}  # fmt: skip
    runs = G.expand_grid(cfg, lambda d: ["x"])
    assert sorted(r.key for r in runs) == ["a/x/con2/default/seed0", "a/x/con2/default/seed1", "a/x/toy/default/seed0", "a/x/toy/default/seed1"]
    assert next(r for r in runs if r.method == "con2").experiments == ("e", "f")
    assert G.expand_grid(cfg, lambda d: ["x"], available=lambda d: False) == []


# ----------------------------------------------------------------------------- collect
def test_collect_rejects_a_broken_record_naming_file_and_field(tmp_path: Path) -> None:
    p = tmp_path / "record.json"
    rec = fake_record("digits", "0", "con2", "invert", 0, {"nnd": 90.0})
    del rec["timing"]["fit_seconds"]
    p.write_text(json.dumps(rec))
    with pytest.raises(RecordError, match=r"record.json.*timing.fit_seconds"):
        collect_runs([p])


def test_summaries(runs: pd.DataFrame) -> None:
    s = summarize(runs)
    one = s[(s.dataset == "breastmnist") & (s.method == "con2") & (s.variant == "k3") & (s.score == "nnd")].iloc[0]
    assert one["mean"] == pytest.approx(75.0) and one["std"] == pytest.approx(0.0) and one["n"] == 3
    lvl = dataset_level(s)
    cifar = lvl[(lvl.dataset == "cifar10") & (lvl.variant == "invert") & (lvl.score == "nnd")].iloc[0]
    per_class = s[(s.dataset == "cifar10") & (s.variant == "invert") & (s.score == "nnd")]["mean"]
    assert cifar["mean"] == pytest.approx(per_class.mean()) and cifar["n_classes"] == 2
    assert cifar["std"] == pytest.approx(per_class.std(ddof=1))
    assert context_fields({"params": {"n_contexts": 4}})[:2] == ("k4", 4.0)
    assert context_fields({"params": {"contexts": ["flip"], "loss": "content_only"}}) == ("flip", 2.0, "content_only")


# ----------------------------------------------------------------------------- tables
def test_every_table_builds_and_writes(runs: pd.DataFrame, paper: pd.DataFrame, config: dict, tmp_path: Path) -> None:
    hours = load_compute_hours(RESOURCES / "paper_compute_hours.csv")
    for name, build in T.TABLES.items():
        table = build(runs, paper, config, hours) if name == "compute_cost" else build(runs, paper, config)
        out = [tmp_path / f"{name}.{ext}" for ext in ("csv", "md", "tex")]
        table.write(*out)
        assert all(p.stat().st_size > 0 for p in out)
        tex = out[2].read_text()
        assert "\\toprule" in tex and "\\bottomrule" in tex, name
        assert table.rows, f"{name} has no rows"
    table = T.per_class(runs, paper, config, "cifar10")
    assert [r[0] for r in table.rows] == ["airplane", "cat", "mean"]


def test_table1_puts_the_paper_beside_ours(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    t = T.table1_medical(runs, paper, config)
    labels = [(r[0], r[1]) for r in t.rows]
    i = labels.index(("CON2 (NND)", "ours"))
    assert labels[i + 1] == ("CON2 (NND)", "paper")
    assert t.columns[:3] == ["Method", "Source", "BreastMNIST"] and "PneumoniaMNIST" in t.columns
    row = t.rows[i + 1]
    assert row[2] == "81.7 ± 1.4"  # the paper's Table 1, CON2 BreastMNIST (invert, NND)
    assert ("SimCLR (kNN)", "ours") in labels and ("SimCLR", "paper") in labels
    assert any(r[0] == "PANDA" for r in t.rows)  # paper-only rows stay
    d = t.data[(t.data.dataset == "breastmnist") & (t.data.method == "con2") & (t.data.score == "nnd")].iloc[0]
    assert d["diff"] == pytest.approx(d["ours_mean"] - 81.7)


def test_context_and_ablation_tables(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    alt = T.alt_contexts(runs, paper, config)
    assert alt.columns[-3:] == ["invert", "flip", "equalize"]
    paper_rows = [r for r in alt.rows if r[0] == "BreastMNIST" and r[2] == "paper"]
    assert paper_rows and paper_rows[0][3:] == ["81.7 ± 0.9", "81.7 ± 1.4", "72.2 ± 1.8"]
    loss = T.loss_ablation(runs, paper, config)
    nnd = next(r for r in loss.rows if r[0] == "BreastMNIST" and r[1] == "NND")
    assert nnd[3] == "70.0 ± 0.0" and nnd[4] == "–"
    multi = T.multi_context(runs, paper, config)
    assert multi.columns[-2:] == ["k = 2", "k = 3"]
    allc = T.all_contexts(runs, paper, config)
    assert any(r[0] == "CIFAR10" and r[2] == "paper" for r in allc.rows)


def test_reproduction_lists_every_paper_number(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    t = T.reproduction(runs, paper, config)
    assert len(t.rows) == len(paper)
    matched = t.data.dropna(subset=["ours_mean"])
    # CON2 BreastMNIST invert/flip (Table 1 + alt contexts), CIFAR-10 invert/flip x NND/LH, SimCLR/SSD BreastMNIST
    assert set(matched["table"]) >= {"table1_medical", "table_alt_contexts", "table_all_contexts_natural"}
    row = matched[(matched["table"] == "table_alt_contexts") & (matched["context"] == "flip")].iloc[0]
    assert row["ours"] == "con2/nnd" and row["diff"] == pytest.approx(row["ours_mean"] - 81.7)
    assert paper_value(paper, "table1_medical", "BreastMNIST", "SSD") == (44.6, 4.3)


def test_formatting() -> None:
    assert mean_std(81.66, 0.94) == "81.7 ± 0.9"
    assert mean_std(81.66, float("nan")) == "81.7"
    assert mean_std(float("nan")) == "–"
    assert latex_cell("81.7 ± 0.9") == "$81.7 \\pm 0.9$"
    assert latex_cell("vehicles_1") == "vehicles\\_1"
    t = Table("x", "T", ["A", "B"], [["a_b", "1.0 ± 0.1"]], pd.DataFrame())
    assert "\\begin{tabular}{lr}" in t.latex() and "| A | B |" in t.markdown()


# ----------------------------------------------------------------------------- figures
def test_figures_write_png_and_pdf(runs: pd.DataFrame, paper: pd.DataFrame, config: dict, tmp_path: Path) -> None:
    from con2.report import figures as F

    F.per_class_figure(T.per_class(runs, paper, config, "cifar10").data, "cifar10", tmp_path / "a.png", tmp_path / "a.pdf")
    F.silhouette_figure(T.silhouette(runs, paper, config).data, tmp_path / "b.png", tmp_path / "b.pdf")
    timing = pd.DataFrame([
        {"score": s, "sweep": sw, "n_train": n, "n_batches": b, "seconds": 0.01 * n, "memory_mb": 0.1 * n, "dim": 8,
         "views": 2, "batch_size": 4, "batches_n_train": 10, "device": "cpu"}
        for s in ("nnd", "lh") for sw, n, b in (("n_train", 1, 1), ("n_train", 10, 1), ("n_batches", 10, 1), ("n_batches", 10, 3))
    ])  # fmt: skip
    F.score_runtime_figure(timing, tmp_path / "c.png", tmp_path / "c.pdf")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rng = np.random.default_rng(0)
    np.savez(run_dir / "features.npz", **{f"{s}_context{c}": rng.normal(size=(n, 8)).astype(np.float16)
                                          for s, n in (("train", 30), ("test", 20)) for c in (0, 1)})  # fmt: skip
    pd.DataFrame({"index": range(20), "label": [0] * 12 + [1] * 8, "nnd": rng.normal(size=20)}).to_csv(run_dir / "scores.csv", index=False)
    F.pca_figure([("run", run_dir), ("missing", tmp_path / "nope")], tmp_path / "d.png", tmp_path / "d.pdf", max_points=10)
    for stem in "abcd":
        assert (tmp_path / f"{stem}.png").stat().st_size > 1000 and (tmp_path / f"{stem}.pdf").stat().st_size > 1000


def test_report_imports_no_torch() -> None:
    code = (
        "import sys, con2.report.grid, con2.report.collect, con2.report.tables, con2.report.figures, "
        "con2.report.artefacts; bad = [m for m in ('torch', 'con2.engine', 'con2.methods', 'con2.data') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
