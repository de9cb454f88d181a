"""Synthetic run records, the profile and the paper's numbers that the con2.report tests share (no training, no torch).

Records are written by hand with con2.run.records.write_record; the fixtures ``runs``, ``config`` and
``paper`` are imported by the tests that use them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from con2.aggregate.collect import collect_runs
from con2.aggregate.runs_csv import load_runs
from con2.aggregate.score_files import RUN_FOLDERS
from con2.report.artefacts import PcaPanel, ReportInputs
from con2.report.paper import load_paper_numbers
from con2.run.records import write_record

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
            "scopes": {"length_curve": ["study_length"], "length_claims": ["study_length"]},  # the other variants
            "length_claims": [{"a": "con2/flip", "b": "con2/k3"}],
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
    """A builder's inputs from ``runs``' record folders: the scores beside each record, named on purpose
    (:data:`~con2.aggregate.score_files.RUN_FOLDERS`; no builder defaults to them)."""
    return ReportInputs(runs=runs, paper=paper, config=config, scores=RUN_FOLDERS, **more)


def pca_panel(title: str, run_dir: Path) -> PcaPanel:
    """The PCA figure's panel of the run in ``run_dir``: its record, features.npz and scores.csv, as the
    figure's rule names them (:meth:`con2.workflow.artefact_rules.ArtefactRules.pca_panels`)."""
    return PcaPanel(title, str(run_dir / "record.json"), str(run_dir / "features.npz"), str(run_dir / "scores.csv"))


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


def load_runs_of(tmp_path: Path, seeds: int) -> pd.DataFrame:
    recs = [
        fake_record("cifar10", "cat", "con2", "invert", s, {"nnd": 80.0 + s}, {"contexts": ["invert"]})
        for s in range(seeds)
    ]
    return collect(tmp_path / f"seeds{seeds}", recs)


def carded(rec: dict, card: dict) -> dict:
    return {**rec, "method_card": card}


def drawn(draw, inputs: ReportInputs, monkeypatch: pytest.MonkeyPatch):
    """The matplotlib figure a figure builder draws (its ``save`` caught) and every text on it."""
    from matplotlib.text import Text

    from con2.builders import figures as F

    caught = []
    monkeypatch.setattr(F, "save", lambda fig, png, pdf: caught.append(fig))
    draw(inputs, "x.png", "x.pdf")
    (fig,) = caught
    return fig, [t.get_text() for t in fig.findobj(Text) if t.get_text()]
