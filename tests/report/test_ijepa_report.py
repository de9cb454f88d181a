"""Table 1 and the reproduction report with the default profile's I-JEPA and CLIP rows (issue 20)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from report_fixtures import RESOURCES, collect, fake_record, inputs_of
from test_ijepa_zsad import caches  # noqa: F401  (fixture: model caches that hold nothing, as on this machine)

from con2.builders.method_tables import table1_medical
from con2.builders.missing import missing
from con2.builders.reproduction import reproduction
from con2.report.paper import load_paper_numbers

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def default_profile() -> dict:
    return yaml.safe_load((ROOT / "workflow" / "config" / "default.yaml").read_text())


def test_table1_shows_ijepa_ad_beside_the_paper_and_says_what_the_other_rows_need(tmp_path, caches, default_profile):
    recs = [
        fake_record("breastmnist", "1", "con2", "invert", s, {"nnd": 58.0 + s, "lh": 42.0}, {"contexts": ["invert"]})
        for s in range(3)
    ]
    recs += [fake_record("breastmnist", "1", "ijepa_ad", "default", s, {"nnd": 60.0 + s}, {}, None) for s in range(3)]
    runs = collect(tmp_path, recs)
    paper = load_paper_numbers(RESOURCES / "paper_numbers.csv")
    t = table1_medical(inputs_of(runs, paper, default_profile))
    rows = {(r[0], r[1]): r[2] for r in t.rows}
    assert rows[("I-JEPA-AD (NND)", "ours")] == "61.0 ± 1.0 [1×3]"
    assert rows[("I-JEPA-AD", "paper")] == "70.4 ± 0.2"  # the paper's row sits under ours
    for paper_only in ("I-JEPA-ZSAD", "CLIP-AD", "AnomalyCLIP", "MVFA", "MediCLIP"):
        assert any(r[0] == paper_only and r[1].startswith("paper") for r in t.rows), paper_only
    notes = "\n".join(t.notes)
    short = "not run, its pretrained weights are missing (how to get them: results/tables/missing.md)."
    assert (
        f"I-JEPA-ZSAD (ijepa_zsad/pretrained): {short}" in notes and f"CLIP-AD (clip_ad/pretrained): {short}" in notes
    )
    assert "hf download" not in notes and "curl" not in notes  # the fixes are in the missing table
    fixes = missing(inputs_of(runs, paper, default_profile, status={})).markdown()
    assert (
        "I-JEPA-ZSAD (ijepa_zsad/pretrained): its pretrained weights | not run: needs the pretrained weights " in fixes
    )
    assert "'facebook/ijepa_vith14_1k'" in fixes and "`hf download facebook/ijepa_vith14_1k`" in fixes
    assert "CLIP-AD (clip_ad/pretrained): its pretrained weights | not run: needs the pretrained weights " in fixes
    assert "curl -L -o ViT-L-14-336px.pt https://openaipublic.azureedge.net/clip/models/3035c92b" in fixes
    for m, code in (
        ("AnomalyCLIP", "zqhang/AnomalyCLIP"),
        ("MVFA", "MediaBrain-SJTU/MVFA-AD"),
        ("MediCLIP", "cnulab/MediCLIP"),
    ):
        assert f"{m}: the paper's number only; its code is github.com/{code}: add it as an external program" in notes
    assert "I-JEPA-AD: the paper's number only" not in notes  # it runs here

    rep = reproduction(inputs_of(runs, paper, default_profile))
    by = {(r[0], r[1], r[2]): r for r in rep.rows}
    assert by[("table1_medical", "BreastMNIST", "I-JEPA-AD")][6] == "61.0 ± 1.0 [1×3]"
    assert by[("table1_medical", "BreastMNIST", "I-JEPA-ZSAD")][-1] == "needs weights (results/tables/missing.md)"
    assert by[("table1_medical", "BreastMNIST", "CLIP-AD")][-1] == "needs weights (results/tables/missing.md)"
    assert ("table1_medical", "BreastMNIST", "MVFA") not in by  # not run: counted under the table, in the CSV
    assert any("MVFA" in n for n in rep.notes if "of methods this profile does not run" in n)
    clip = runs[runs.method == "ijepa_ad"].assign(method="clip_ad", variant="pretrained", score="clip")
    ran = pd.concat([runs, clip, clip.assign(dataset="pneumoniamnist")])  # on both of the profile's datasets
    notes = "\n".join(table1_medical(inputs_of(ran, paper, default_profile)).notes)
    assert "CLIP-AD (clip_ad" not in notes and "I-JEPA-ZSAD (ijepa_zsad" in notes  # a run that ran needs no note


def test_the_budget_names_each_methods_encoder(tmp_path, caches, default_profile):
    """Issue 36, point 6: I-JEPA-AD trains a ViT (params.backbone), not the ResNet18 the others train."""
    from con2.report.budget import budget_of
    from con2.report.methods import method_names

    recs = [
        fake_record("breastmnist", "1", "con2", "invert", s, {"nnd": 58.0}, {"contexts": ["invert"]}) for s in range(3)
    ]
    recs += [
        fake_record(
            "breastmnist", "1", "ijepa_ad", "default", s, {"nnd": 60.0}, {"backbone": "vit_tiny_patch16_224"}, None
        )
        for s in range(3)
    ]
    runs = collect(tmp_path, recs)
    names = method_names(default_profile, runs)
    both = budget_of(runs, names).text()
    assert "ResNet18 width 16 (I-JEPA-AD: vit_tiny_patch16_224)" in both
    alone = budget_of(runs[runs["method"] == "ijepa_ad"], names).text()
    assert "vit_tiny_patch16_224" in alone and "ResNet18 width" not in alone
