"""con2.report.select and con2.report.notes: why a dataset has no run, CON2 (Best) as a method of its own."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from report_fixtures import collect, config, fake_record, inputs_of, paper, runs  # noqa: F401  (fixtures: test parameters of the same name)

from con2.builders.method_tables import natural_summary, table1_medical
from con2.builders.missing import missing
from con2.builders.per_class import per_class as per_class_table


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
            "data_dir": "/d",
        },
    }
    notes = table1_medical(inputs_of(runs, paper, cfg, status=status)).notes
    md = table1_medical(inputs_of(runs, paper, cfg, status=status)).markdown()
    assert "Not run in this profile" not in md
    assert (
        "- Not in this profile: OctMNIST, BR35H, Pneumonia, Melanoma (no experiment of the profile names them)." in md
    )
    skipped = [n for n in notes if n.startswith("PneumoniaMNIST:")]
    assert skipped == [
        "PneumoniaMNIST: skipped, its data are missing (how to get them: results/tables/missing.md)."
    ]  # one short line; why and the fix are in the missing table
    fixes = missing(inputs_of(runs, paper, cfg, status=status))
    assert fixes.rows == [
        [
            "PneumoniaMNIST: its data (28 px)",
            "skipped: pneumoniamnist.npz not found in /d or /d/medmnist (download: false in the profile)",
            "command (1) below, or for data already on disk elsewhere "
            "`--config data_dir=DIR`; then run the same snakemake command again",
        ]
    ]
    assert fixes.code == [
        "# (1) PneumoniaMNIST: its data (28 px)",
        "con2 data get pneumoniamnist --data-dir /d --size 28",
    ]
    assert any(n.startswith("In this profile, no run of a main variant here yet: Kvasir") for n in notes)
    assert not any("BreastMNIST" in n and "profile" in n for n in notes)  # it ran
    # the no-data run: BreastMNIST itself skipped (no runs of it), said so, not "not in the profile"
    none = runs[runs["dataset"] != "breastmnist"]
    status["breastmnist/28"] = {**status["pneumoniamnist/28"], "dataset": "breastmnist", "reason": "no npz"}
    status["breastmnist/28"]["fix"] = "con2 data get breastmnist --data-dir /d --size 28"
    notes = table1_medical(inputs_of(none, paper, cfg, status=status)).notes
    assert "BreastMNIST: skipped, its data are missing (how to get them: results/tables/missing.md)." in notes
    assert not any("Not in this profile" in n and "BreastMNIST" in n for n in notes)
    # without a data status (a builder called by hand), a profile dataset without runs is "no run yet"
    notes = table1_medical(inputs_of(none, paper, cfg)).notes
    assert any(n.startswith("In this profile, no run of a main variant here yet: BreastMNIST") for n in notes)
    # the per-class table of a skipped dataset says the same
    pc = per_class_table(inputs_of(none, paper, cfg, status=status, dataset="breastmnist"))
    assert any(n.startswith("BreastMNIST: skipped, its data are missing") for n in pc.notes)


def test_con2_best_is_a_row_of_its_own_in_the_natural_and_per_class_tables(
    tmp_path: Path, paper: pd.DataFrame, config: dict
) -> None:
    auroc = {("invert", "airplane"): 90.0, ("invert", "cat"): 80.0, ("best", "airplane"): 96.0, ("best", "cat"): 84.0}
    params = {"invert": {"contexts": ["invert"]}, "best": {"contexts": ["best"]}}
    recs = [fake_record("cifar10", c, "con2", v, 0, {"nnd": a, "lh": a}, params[v]) for (v, c), a in auroc.items()]
    runs = collect(tmp_path, recs)
    cfg = {**config, "report": {**config["report"], "best_variant": "best"}}
    natural = natural_summary(inputs_of(runs, paper, cfg))
    col = natural.columns.index("CIFAR10")
    rows = {r[0]: r for r in natural.rows if r[1] == "ours"}
    assert rows["CON2 (NND)"][col].startswith("85.0 ") and rows["CON2 (Best) (NND)"][col].startswith("90.0 ")
    labels = [r[0] for r in natural.rows]
    assert labels.index("CON2 (Best) (NND)") > labels.index("CON2 (NND)")
    # no paper row joined to CON2 (Best): the paper prints it only in a figure
    best = natural.data[natural.data["method"] == "con2/best"]
    assert len(best) and (best["paper_method"] == "").all() and best["paper_mean"].isna().all()
    per = per_class_table(inputs_of(runs, paper, cfg, dataset="cifar10"))
    airplane = next(r for r in per.rows if r[0] == "airplane")
    assert airplane[per.columns.index("CON2 (Best) (NND)")] == "96.0 [1×1]"
    assert airplane[per.columns.index("CON2 (NND)")] == "90.0 [1×1]"
    # without report.best_variant the tables are as before
    assert "CON2 (Best) (NND)" not in [r[0] for r in natural_summary(inputs_of(runs, paper, config)).rows]
