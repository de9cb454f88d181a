"""con2.report.methods: methods named by their specs and their records' cards in every table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from report_fixtures import carded, collect, config, fake_record, inputs_of, paper, runs  # noqa: F401  (fixtures: test parameters of the same name)

from con2.builders.ablations import all_contexts
from con2.builders.compute import compute_cost
from con2.builders.method_tables import table1_medical
from con2.builders.per_class import per_class as per_class_table
from con2.builders.reproduction import reproduction


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
    allc = all_contexts(inputs_of(collect(tmp_path, recs), paper, config))
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
    t1 = table1_medical(inputs_of(runs, paper, config))
    labels = [(r[0], r[1]) for r in t1.rows]
    assert labels[:2] == [("CON2 (NND)", "ours"), ("CON2 (NND)", "paper")]  # the subject first
    i = labels.index(("Toy (PIX)", "ours"))
    assert labels[i + 1] == ("PANDA", "paper") and t1.rows[i][2] == "61.0 ± 1.0 [1×3]"
    per_class = per_class_table(inputs_of(runs, paper, config, dataset="breastmnist"))
    assert per_class.columns == ["Normal class", "CON2 (NND)", "CON2 (LH)", "Toy (PIX)"]
    repro = reproduction(inputs_of(runs, paper, config)).data
    assert set(repro.loc[(repro.method == "PANDA") & repro.ours_mean.notna(), "ours"]) == {"toy/pix"}
    hours = pd.DataFrame([{"method": "CSI", "dataset": "BreastMNIST", "gpu_hours_per_run": 7.5}])
    cost = compute_cost(inputs_of(runs, paper, config, hours=hours)).data
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
    labels = [(r[0], r[1]) for r in table1_medical(inputs_of(runs, paper, cfg)).rows]
    assert labels[:4] == [("Ext (S)", "ours"), ("CSI", "paper"), ("pixel (pixel_nn)", "ours"), ("PANDA", "paper")]
