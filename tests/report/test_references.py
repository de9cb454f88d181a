"""Issue 44: other sources' published numbers (con2/resources/reference_numbers.csv: CSI's repository on
one-class CIFAR-10) shown beside ours and the paper's, each row naming its source, never as the paper's."""

from __future__ import annotations

import pandas as pd
from report_fixtures import RESOURCES, config, inputs_of, paper, runs  # noqa: F401  (fixtures)

from con2.builders.method_tables import natural_summary
from con2.report.paper import load_reference_numbers


def test_the_reference_file_names_its_source_for_every_number() -> None:
    refs = load_reference_numbers(RESOURCES / "reference_numbers.csv")
    assert not refs.empty
    for column in ("source", "url", "commit", "where", "setting"):
        assert refs[column].astype(str).str.len().gt(0).all(), column
    assert refs["commit"].str.fullmatch(r"[0-9a-f]{40}").all()  # a pinned version of the source, not a branch
    csi = refs[refs["source"] == "CSI's repository"].set_index("method")["auroc_mean"].to_dict()
    assert csi == {"SimCLR": 87.9, "Rot+Trans": 90.0, "CSI": 94.3}  # alinlab/CSI README, one-class CIFAR-10


def test_the_natural_summary_shows_them_beside_the_paper_under_their_source(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict
) -> None:
    refs = load_reference_numbers(RESOURCES / "reference_numbers.csv")
    table = natural_summary(inputs_of(runs, paper, config, references=refs))
    ref_rows = [r for r in table.rows if r[1] == "CSI's repository"]
    assert [r[0] for r in ref_rows] == ["SimCLR", "Rot+Trans", "CSI"]
    cifar = table.columns.index("CIFAR10")
    assert [r[cifar] for r in ref_rows] == ["87.9", "90.0", "94.3"]
    assert not any(r[1].startswith("paper") and r[0] in ("Rot+Trans",) for r in table.rows)  # never the paper's
    note = next(n for n in table.notes if n.startswith("Other sources:"))
    assert "https://github.com/alinlab/CSI at 08ef9fb" in note and "README.md" in note
    frame = table.data[table.data["source"] == "CSI's repository"]
    assert sorted(frame["paper_method"]) == ["CSI", "Rot+Trans", "SimCLR"] and frame["ours_mean"].isna().all()
    # without the file (a builder called by hand), the table is the paper's alone
    plain = natural_summary(inputs_of(runs, paper, config))
    assert not any(r[1] == "CSI's repository" for r in plain.rows) and set(plain.data["source"]) <= {"paper"}
