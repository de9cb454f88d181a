"""The fidelity table from a synthetic run frame: settings and readings against the reference row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from con2.builders.fidelity import fidelity
from con2.report.artefacts import ReportInputs


# ----------------------------------------------------------------------------- the fidelity table
def _fidelity_runs() -> pd.DataFrame:
    rows = []
    for seed, (a, b, c) in enumerate([(55.0, 67.0, 64.0), (57.0, 66.0, 66.0), (56.6, 68.0, 65.0)]):
        for variant, score, value in (
            ("invert", "nnd", a),
            ("invert", "nnd@encoder/original", b),
            ("content_only", "nnd", c),
        ):
            rows.append(
                {
                    "dataset": "breastmnist",
                    "normal_class": "1",
                    "method": "con2",
                    "variant": variant,
                    "seed": seed,
                    "score": score,
                    "auroc": value,
                }
            )
    rows.append(
        {
            "dataset": "digits",
            "normal_class": "0",
            "method": "con2",
            "variant": "invert",
            "seed": 0,
            "score": "nnd",
            "auroc": 99.0,
        }
    )
    return pd.DataFrame(rows)


def test_fidelity_table_reads_settings_and_readings_against_the_reference():
    paper = pd.DataFrame(
        [
            {
                "table": "table1_medical",
                "dataset": "BreastMNIST",
                "method": "CON2",
                "family": "ours",
                "context": "invert",
                "score": "NND",
                "auroc_mean": 81.7,
                "auroc_std": 1.4,
            }
        ]
    )
    config = {
        "report": {
            "subject": "con2",
            "fidelity": {
                "datasets": ["breastmnist", "digits"],
                "reference": "as printed",
                "rows": [
                    {"label": "as printed", "method": "con2", "variant": "invert", "score": "nnd", "change": "-"},
                    {"label": "original", "method": "con2", "variant": "invert", "score": "nnd@encoder/original"},
                    {"label": "content only", "method": "con2", "variant": "content_only", "score": "nnd"},
                    {"label": "never run", "method": "con2", "variant": "k9", "score": "nnd"},
                ],
            },
        }
    }
    table = fidelity(ReportInputs(runs=_fidelity_runs(), paper=paper, config=config))
    assert table.columns == [
        "Setting",
        "Change from the default",
        "BreastMNIST",
        "Δ",
        "Digits",
        "Δ",
        "Paper BreastMNIST",
    ]
    ref, orig, content, never = table.rows
    mean = np.mean([55.0, 57.0, 56.6])
    assert ref[2] == f"{mean:.1f} ± {np.std([55.0, 57.0, 56.6], ddof=1):.1f}" and ref[3] == "ref."
    assert orig[2].startswith("67.0 ±") and orig[3] == f"{67.0 - round(mean, 1):+.1f}"  # from the rounded values
    assert content[3] == f"{65.0 - round(mean, 1):+.1f}"
    assert ref[4] == "99.0" and content[4] == "–" and content[5] == "–"  # digits: one seed, no std; not run
    assert ref[6] == orig[6] == "81.7 ± 1.4"  # the paper's CON2 (NND) beside every CON2 reading
    assert never[2] == "–" and any("Not run yet: never run" in n for n in table.notes)
    assert any("BreastMNIST: 3 seeds x 1 normal class per cell" in n for n in table.notes)
    csv = table.data
    assert set(csv["setting"]) == {"as printed", "original", "content only", "never run"}
    assert float(
        csv[(csv.setting == "original") & (csv.dataset == "breastmnist")]["diff_to_reference"].iloc[0]
    ) == pytest.approx(67.0 - round(mean, 1))


def test_fidelity_table_notes_the_paper_s_own_disagreement_on_its_paper_column():
    """Its paper column is Table 1's: 81.7 ± 1.4 for CON2 on BreastMNIST, which the paper's
    alternative-contexts table gives as 81.7 ± 0.9; one note says so."""
    from con2.report.paper import load_paper_numbers

    paper = load_paper_numbers(Path(__file__).resolve().parents[2] / "con2/resources/paper_numbers.csv")
    config = {
        "report": {
            "subject": "con2",
            "fidelity": {
                "datasets": ["breastmnist"],
                "reference": "as printed",
                "rows": [{"label": "as printed", "method": "con2", "variant": "invert", "score": "nnd"}],
            },
        }
    }
    table = fidelity(ReportInputs(runs=_fidelity_runs(), paper=paper, config=config))
    assert table.rows[0][-1] == "81.7 ± 1.4"
    assert [n for n in table.notes if "disagree" in n] == [
        "The paper's own tables disagree on CON2 (NND, invert) on BreastMNIST: 81.7 ± 1.4 in table1_medical; "
        "81.7 ± 0.9 in table_alt_contexts; this table shows table1_medical's."
    ]
