"""con2.builders.method_tables: Table 1 and the natural-image summary, ours beside the paper's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from report_fixtures import config, inputs_of, paper, runs  # noqa: F401  (fixtures: test parameters of the same name)

from con2.builders.method_tables import natural_summary, table1_medical
from con2.builders.missing import missing
from con2.report.format import latex_cell


def test_table1_puts_the_paper_beside_ours(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    t = table1_medical(inputs_of(runs, paper, config))
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


def test_cells_say_over_how_many_classes_and_seeds(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    t1 = table1_medical(inputs_of(runs, paper, config))
    ours = next(r for r in t1.rows if r[:2] == ["CON2 (NND)", "ours"])
    breast = runs[(runs.dataset == "breastmnist") & (runs.variant == "invert") & (runs.score == "nnd")]["auroc"]
    assert ours[2] == f"{breast.mean():.1f} ± {breast.std(ddof=1):.1f} [1×3]"  # one class x three seeds
    natural = natural_summary(inputs_of(runs, paper, config))
    cifar = next(r for r in natural.rows if r[:2] == ["CON2 (NND)", "ours"])
    assert cifar[natural.columns.index("CIFAR10")].endswith("[2×3]")  # two classes x three seeds
    assert any("[c×s]" in n for n in natural.notes)
    assert "$\\times$" in latex_cell(ours[2]) and latex_cell(ours[2]).startswith("$")


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
    notes = [n for n in table1_medical(inputs_of(runs, paper, cfg)).notes if "PANDA" in n]
    assert len(notes) == 2, notes  # default and r18; `local` has its weights (found and checked), so no note
    default, r18 = notes
    assert default == (
        "PANDA (panda/default): not run, its pretrained weights are missing (how to get them: "
        "results/tables/missing.md)."
    )  # one short line; the file, where it was looked for and the download command are in the missing table
    assert r18.startswith("PANDA (panda/r18): not run, its pretrained weights are missing")
    fixes = missing(inputs_of(runs, paper, cfg, status={})).markdown()
    assert "PANDA (panda/default): its pretrained weights | not run: needs the pretrained weights " in fixes
    assert "'torchvision/resnet152-imagenet1k-v1' (params.weights)" in fixes
    assert f"was found in {tmp_path / 'weights'}" in fixes and "curl -L -o resnet152-394f9c45.pth" in fixes
    assert "resnet18-f37072fd.pth" in fixes and "panda/local" not in fixes
    assert any(n.startswith("PANDA (panda/default)") for n in natural_summary(inputs_of(runs, paper, cfg)).notes)
    # runs on the table's datasets: no note
    ran = pd.concat([runs, runs[runs.method == "simclr"].assign(method="panda", variant="default", score="knn")])
    assert [n for n in table1_medical(inputs_of(ran, paper, cfg)).notes if "PANDA" in n] == [r18]


def test_table1_says_pneumoniamnist_is_not_the_papers_pneumonia(tmp_path, paper: pd.DataFrame) -> None:
    """Issue 36, point 6: Table 1 shows the paper's Pneumonia and our PneumoniaMNIST side by side; a note says why."""
    from report_fixtures import collect, fake_record

    recs = [
        fake_record("pneumoniamnist", "0", "con2", "invert", s, {"nnd": 80.0, "lh": 70.0}, {"contexts": ["invert"]})
        for s in range(2)
    ]
    config = {"report": {"subject": "con2", "medical": ["pneumoniamnist"], "main_variants": {"con2": "invert"}}}
    t = table1_medical(inputs_of(collect(tmp_path, recs), paper, config))
    assert "Pneumonia" in t.columns and "PneumoniaMNIST" in t.columns
    assert any(n.startswith("PneumoniaMNIST (ours) is MedMNIST's 28 px version") for n in t.notes)
