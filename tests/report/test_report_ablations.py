"""con2.builders.ablations: the subject's scores, context, loss and number-of-contexts tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from report_fixtures import collect, config, fake_record, inputs_of, paper, runs, uneven  # noqa: F401  (fixtures: test parameters of the same name)

from con2.builders.ablations import all_contexts, alt_contexts, loss_ablation, multi_context, nnd_vs_lh
from con2.builders.method_tables import natural_summary, table1_medical
from con2.builders.silhouette import silhouette as silhouette_table
from con2.report.format import shown_diff


def test_context_and_ablation_tables(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    alt = alt_contexts(inputs_of(runs, paper, config))
    assert alt.columns[-3:] == ["invert", "flip", "equalize"]
    paper_rows = [r for r in alt.rows if r[0] == "BreastMNIST" and r[2] == "paper"]
    assert paper_rows and paper_rows[0][3:] == ["81.7 ± 0.9", "81.7 ± 1.4", "72.2 ± 1.8"]
    loss = loss_ablation(inputs_of(runs, paper, config))
    nnd = next(r for r in loss.rows if r[0] == "BreastMNIST" and r[1] == "NND")
    # the losses that ran, the main variant's first
    assert loss.columns == ["Dataset", "Score", "loss: full", "loss: context only"]
    assert nnd[3] == "70.0 ± 0.0 [1×3]" and len(nnd) == 4
    multi = multi_context(inputs_of(runs, paper, config))
    assert multi.columns[-2:] == ["k = 2", "k = 3"]
    allc = all_contexts(inputs_of(runs, paper, config))
    assert any(r[0] == "CIFAR10" and r[2] == "paper" for r in allc.rows)


def test_context_tables_never_set_a_class_mean_beside_one_class(uneven, paper: pd.DataFrame, config: dict) -> None:
    runs, auroc = uneven
    allc = all_contexts(inputs_of(runs, paper, config))
    row = next(r for r in allc.rows if r[:3] == ["CIFAR10", "NND", "ours"])
    invert, flip = row[3], row[4]
    # both cells average the class both contexts ran (airplane), not invert over three classes
    assert invert == f"{auroc[('invert', 'airplane')]:.1f} [1×1]" and flip == f"{auroc[('flip', 'airplane')]:.1f} [1×1]"
    assert any("airplane" in n and "only" in n for n in allc.notes)
    multi = multi_context(inputs_of(runs, paper, config))
    nnd = next(r for r in multi.rows if r[:2] == ["CIFAR10", "NND"])
    assert nnd[2:] == [f"{auroc[('invert', 'airplane')]:.1f} [1×1]", f"{auroc[('k3', 'airplane')]:.1f} [1×1]"]
    sil = silhouette_table(inputs_of(runs, paper, config))
    srow = sil.rows[0]
    assert (
        srow[sil.columns.index("CON2 invert")] == "0.610 [1×1]" and srow[sil.columns.index("CON2 k3")] == "0.700 [1×1]"
    )
    # the natural summary still averages every class CON2 ran, and says so
    natural = natural_summary(inputs_of(runs, paper, config))
    mean3 = np.mean([auroc[("invert", c)] for c in ("airplane", "cat", "dog")])
    std3 = np.std([auroc[("invert", c)] for c in ("airplane", "cat", "dog")], ddof=1)
    cifar = next(r for r in natural.rows if r[:2] == ["CON2 (NND)", "ours"])
    assert cifar[natural.columns.index("CIFAR10")] == f"{mean3:.1f} ± {std3:.1f} [3×1]"


def test_differences_are_taken_from_the_shown_values(tmp_path: Path, paper: pd.DataFrame, config: dict) -> None:
    recs = [fake_record("breastmnist", "1", "con2", "invert", 0, {"nnd": 56.24, "lh": 40.66}, {"contexts": ["invert"]})]
    t = nnd_vs_lh(inputs_of(collect(tmp_path, recs), paper, config))
    row = t.rows[0]
    assert row[1].startswith("56.2") and row[2].startswith("40.7")
    assert row[3] == "+15.5"  # 56.2 - 40.7, not 56.24 - 40.66 = 15.58 -> +15.6
    assert shown_diff(56.24, 40.66) == pytest.approx(15.5) and shown_diff(float("nan"), 1.0) != shown_diff(
        float("nan"), 1.0
    )


def test_the_subject_key_chooses_the_method_of_the_ablation_tables(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict
) -> None:
    simclr = {**config, "report": {**config["report"], "subject": "simclr", "main_variants": {"simclr": "default"}}}
    t = nnd_vs_lh(inputs_of(runs, paper, simclr))
    assert t.columns == ["Dataset", "kNN (ours)", "SSD (ours)", "kNN − SSD", "kNN (paper)", "SSD (paper)"]
    assert t.title.startswith("SimCLR:") and table1_medical(inputs_of(runs, paper, simclr)).rows[0][0] == "SimCLR (kNN)"
    none = {**config, "report": {k: v for k, v in config["report"].items() if k != "subject"}}
    for build in (nnd_vs_lh, loss_ablation, alt_contexts, all_contexts, multi_context):
        empty = build(inputs_of(runs, paper, none))
        assert not empty.rows and "report.subject is not set" in empty.notes[0]
    assert table1_medical(inputs_of(runs, paper, none)).rows  # the method tables need no subject


def test_the_silhouette_shows_the_grids_budget_not_a_studys_runs(tmp_path: Path, paper: pd.DataFrame) -> None:
    """A 128-epoch study run has the grid's contexts (invert): it must not enter the grid's CON2 invert cell."""
    ctx = {"contexts": ["invert"]}
    recs = [
        fake_record("cifar10", "airplane", "con2", "invert", 0, {"nnd": 70.0}, ctx, silhouette=0.6),
        fake_record("cifar10", "cat", "con2", "invert", 0, {"nnd": 70.0}, ctx, silhouette=0.7),
        fake_record("cifar10", "airplane", "con2", "length128", 0, {"nnd": 80.0}, ctx, silhouette=0.1, epochs=128),
    ]
    config = {
        "experiments": {
            "main": {"datasets": ["cifar10"], "methods": {"con2": ["invert"]}},
            "length": {"datasets": ["cifar10"], "methods": {"con2": ["length128"]}},
        },
        "report": {"subject": "con2", "natural": ["cifar10"], "scopes": {"length_curve": ["length"]}},
    }
    sil = silhouette_table(inputs_of(collect(tmp_path, recs), paper, config))
    assert sil.columns == ["Dataset", "CON2 invert"] and sil.rows[0][1] == "0.650 ± 0.071 [2×1]", sil.rows
    assert any("only the studies train" in n for n in sil.notes)
    del config["report"]["scopes"]  # not a study: the same runs are one cell (what it was before)
    sil = silhouette_table(inputs_of(collect(tmp_path / "all", recs), paper, config))
    assert sil.rows[0][1] != "0.650 ± 0.071 [2×1]", sil.rows
