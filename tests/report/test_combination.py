"""The verdict's combination line (issue 33): paired tests over seeds, Holm, the guard datasets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ttest_rel

from con2.builders.reproduction import combination_lines, paired_p, paired_tests

CON2 = {"label": "CON2 as printed", "method": "con2", "variant": "invert", "score": "nnd"}
BOTH = {"label": "both", "method": "con2", "variant": "bn_strength", "score": "nnd"}
CONTENT = {"label": "content alone", "method": "con2", "variant": "content_only", "score": "nnd"}
SIMCLR = {"label": "SimCLR + kNN", "method": "simclr", "variant": "default", "score": "knn"}
SPEC = {
    "target": "breastmnist",
    "guard": ["digits"],
    "reference": CON2,
    "candidates": [CON2, BOTH],
    "against": [CONTENT, SIMCLR],
}


def frame(values: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    """A runs table: ``{(dataset, variant label): per-seed AUROCs}``."""
    rows = {r["label"]: r for r in (CON2, BOTH, CONTENT, SIMCLR)}
    out = []
    for (dataset, label), aurocs in values.items():
        r = rows[label]
        for seed, a in enumerate(aurocs):
            out.append({"dataset": dataset, "normal_class": "0", "method": r["method"], "variant": r["variant"],
                        "score": r["score"], "seed": seed, "auroc": a})  # fmt: skip
    return pd.DataFrame(out)


def test_paired_p_is_scipys_paired_t_test() -> None:
    a = {0: 60.0, 1: 62.5, 2: 58.0, 3: 61.0}
    b = {0: 66.0, 1: 64.0, 2: 65.5, 3: 70.0, 9: 99.0}  # seed 9 has no partner: left out
    expected = ttest_rel([b[s] for s in range(4)], [a[s] for s in range(4)]).pvalue
    assert paired_p(a, b) == pytest.approx(expected, rel=1e-9)
    assert np.isnan(paired_p({0: 1.0}, {0: 2.0}))  # one seed: no test
    assert np.isnan(paired_p({0: 1.0, 1: 2.0}, {0: 2.0, 1: 3.0}))  # no spread: no test


def test_holm_runs_over_every_candidate_and_reference() -> None:
    runs = frame({
        ("breastmnist", "CON2 as printed"): [57.0, 58.0, 56.5],
        ("breastmnist", "both"): [70.0, 73.0, 71.5],
        ("breastmnist", "content alone"): [64.0, 66.0, 63.0],
        ("breastmnist", "SimCLR + kNN"): [66.0, 65.0, 67.0],
    })  # fmt: skip
    tests = paired_tests(runs, "breastmnist", [CON2, BOTH], [CONTENT, SIMCLR])
    assert [(t.candidate, t.against) for t in tests] == [
        ("CON2 as printed", "content alone"), ("CON2 as printed", "SimCLR + kNN"),
        ("both", "content alone"), ("both", "SimCLR + kNN"),
    ]  # fmt: skip
    raw = np.array([t.p for t in tests])
    order = np.argsort(raw)  # Holm by hand: k - i times the i-th smallest, running maximum, capped at 1
    adjusted = np.maximum.accumulate(np.minimum(1.0, (len(raw) - np.arange(len(raw))) * raw[order]))
    expected = np.empty_like(raw)
    expected[order] = adjusted
    assert [t.p_holm for t in tests] == pytest.approx(list(expected))
    both_vs_content = tests[2]
    assert both_vs_content.diff == pytest.approx(np.mean([6.0, 7.0, 8.5])) and both_vs_content.n == 3


def test_a_clear_win_on_the_target_that_holds_on_the_guard() -> None:
    runs = frame({
        ("breastmnist", "CON2 as printed"): [57.0, 58.0, 56.5, 57.5, 58.2],
        ("breastmnist", "both"): [75.0, 76.1, 75.4, 74.8, 75.9],
        ("breastmnist", "content alone"): [64.0, 66.0, 63.0, 65.0, 64.4],
        ("breastmnist", "SimCLR + kNN"): [66.0, 65.0, 67.0, 66.5, 65.9],
        ("digits", "CON2 as printed"): [99.0, 99.2, 99.1],
        ("digits", "both"): [99.1, 99.3, 99.0],
    })  # fmt: skip
    text = " ".join(combination_lines(runs, SPEC))
    assert "**both brings CON2 above every reference on BreastMNIST**" in text
    assert "both 75.4 ± 0.6 (5 seeds)" in text
    assert "does not fall below CON2 as printed on" in text and "(+0.0 [" in text


def test_no_significant_win_and_a_guard_that_falls() -> None:
    runs = frame({
        ("breastmnist", "CON2 as printed"): [57.0, 58.0, 56.5],
        ("breastmnist", "both"): [67.0, 61.0, 69.0],
        ("breastmnist", "content alone"): [64.0, 66.0, 63.0],
        ("breastmnist", "SimCLR + kNN"): [66.0, 65.0, 67.0],
        ("digits", "CON2 as printed"): [99.0, 99.2, 99.1],
        ("digits", "both"): [90.0, 90.5, 90.2],
    })  # fmt: skip
    text = " ".join(combination_lines(runs, SPEC))
    no = "**No combination brings CON2 above every reference on BreastMNIST**: the best, both: "
    assert no + "not significantly above content alone, SimCLR + kNN" in text
    assert "falls below CON2 as printed on" in text and "does not fall" not in text


def test_unmeasured_pieces_are_named_not_guessed() -> None:
    runs = frame({("breastmnist", "both"): [70.0, 71.0], ("breastmnist", "content alone"): [64.0, 65.0]})
    text = " ".join(combination_lines(runs, SPEC))
    assert "not significantly above content alone; SimCLR + kNN not measured on BreastMNIST" in text
    assert text.endswith("; it is not measured on Digits.")
    assert combination_lines(frame({("digits", "both"): [1.0]}), SPEC) == []  # nothing on the target: no line
