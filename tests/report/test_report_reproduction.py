"""con2.builders.reproduction: every paper number next to ours, the report's opening lines."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from report_fixtures import config, inputs_of, paper, runs  # noqa: F401  (fixtures: test parameters of the same name)

from con2.builders.ablations import alt_contexts
from con2.builders.method_tables import natural_summary, table1_medical
from con2.builders.reproduction import reproduction
from con2.report.paper import paper_value


def test_reproduction_lists_every_paper_number(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    t = reproduction(inputs_of(runs, paper, config))
    assert len(t.data) == len(paper)  # the CSV: every published number
    # the page: the numbers on datasets with a run here of methods that ran (issue 36, point 6); the others
    # counted in two notes: datasets without runs, methods not run (a page of "not run" rows read as a log)
    ran = {"BreastMNIST", "CIFAR10"}
    assert {r[1] for r in t.rows} == ran and all(r[6] != "–" or "needs weights" in r[8] for r in t.rows)
    note = next(n for n in t.notes if n.startswith("Not listed: the") and "on datasets" in n)
    assert f"the {int((~paper['dataset'].isin(ran)).sum())} published numbers on datasets" in note
    assert "OctMNIST" in note and "every one is in reproduction.csv" in note
    not_run = next(n for n in t.notes if "of methods this profile does not run" in n)
    n_not_run = int(re.search(r"the (\d+) published numbers of methods", not_run).group(1))
    assert len(t.rows) + n_not_run == int(paper["dataset"].isin(ran).sum())
    shown = t.data[t.data["dataset"].isin(ran)]
    assert n_not_run == int(shown["ours_mean"].isna().sum()) - sum("needs weights" in r[8] for r in t.rows)
    matched = t.data.dropna(subset=["ours_mean"])
    # CON2 BreastMNIST invert/flip (Table 1 + alt contexts), CIFAR-10 invert/flip x NND/LH, SimCLR/SSD BreastMNIST
    assert set(matched["table"]) >= {"table1_medical", "table_alt_contexts", "table_all_contexts_natural"}
    row = matched[(matched["table"] == "table_alt_contexts") & (matched["context"] == "flip")].iloc[0]
    assert row["ours"] == "con2/nnd" and row["diff"] == pytest.approx(round(row["ours_mean"], 1) - 81.7)
    assert paper_value(paper, "table1_medical", "BreastMNIST", "SSD") == (44.6, 4.3)


def test_reproduction_report_opens_with_a_summary_line(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    t = reproduction(inputs_of(runs, paper, config))
    md = t.markdown().splitlines()
    i = next(i for i, line in enumerate(md) if line.startswith("**Summary:"))
    assert md[2].startswith("**Verdict**") and md[i + 2].startswith("| Table |")  # verdict, summary, then the table
    matched = t.data.dropna(subset=["ours_mean"])
    with_std = matched.dropna(subset=["paper_std"])
    # reference: within = |round(ours) - round(paper)| <= round(paper std), recomputed here
    within = sum(
        abs(round(o, 1) - round(p, 1)) <= round(s, 1) + 1e-9
        for o, p, s in zip(with_std["ours_mean"], with_std["paper_mean"], with_std["paper_std"])
    )
    assert f"{len(matched)} of {len(paper)} published numbers have a counterpart" in md[i]
    assert f"{within} of the {len(with_std)} of those with a published std are within it" in md[i]
    assert len(matched) > 0 and len(with_std) > 0


def test_a_paper_number_without_std_prints_alone_and_the_paper_s_disagreements_are_noted(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict
) -> None:
    """PANDA's published numbers have no std: no invented '± 0.0' in any table that shows them. The
    paper gives CON2 (NND, invert) on BreastMNIST as 81.7 ± 1.4 in Table 1 and 81.7 ± 0.9 in its
    alternative-contexts table: each table keeps its own and one note says so."""
    assert paper.loc[paper["method"] == "PANDA", "auroc_std"].isna().all()
    t1 = table1_medical(inputs_of(runs, paper, config))
    panda = next(r for r in t1.rows if r[0] == "PANDA")
    assert panda[t1.columns.index("BreastMNIST")] == "63.9" and "±" not in " ".join(panda)
    assert "PANDA" in t1.markdown() and "63.9 ± 0.0" not in t1.markdown() + t1.latex()
    repro = reproduction(inputs_of(runs, paper, config))
    assert not [r for r in repro.rows if r[2] == "PANDA"]  # not run here: counted under the table, in the CSV
    assert any("PANDA" in n for n in repro.notes if "of methods this profile does not run" in n)
    assert (repro.data["method"] == "PANDA").sum() == 6 and repro.data.loc[
        repro.data["method"] == "PANDA", "paper_std"
    ].isna().all()
    disagree = "The paper's own tables disagree on CON2 (NND, invert) on BreastMNIST: 81.7 ± 1.4 in table1_medical; "
    disagree += "81.7 ± 0.9 in table_alt_contexts; "
    assert [n for n in t1.notes if "disagree" in n] == [disagree + "this table shows table1_medical's."]
    alt = alt_contexts(inputs_of(runs, paper, config))
    assert [n for n in alt.notes if "disagree" in n] == [disagree + "this table shows table_alt_contexts's."]
    assert [n for n in repro.notes if "disagree" in n] == [disagree + "each row shows its own table's number."]
    # the natural-image tables show none of those cells: no note
    assert not [n for n in natural_summary(inputs_of(runs, paper, config)).notes if "disagree" in n]


def test_a_studys_reading_with_the_main_tags_is_not_pooled_into_the_papers_rows(tmp_path, paper) -> None:
    """BatchNorm per context carries CON2 (invert)'s tags (contexts invert, full loss, k = 2): the
    reproduction's CON2 (invert) rows and the context table read the main variant's runs, not the
    study's (found with the combination study: 1×12 runs pooled, 61.0 for 57.9)."""
    from report_fixtures import collect, fake_record

    from con2.report.methods import study_only_variants

    inv = {"contexts": ["invert"]}
    recs = [fake_record("breastmnist", "1", "con2", "invert", s, {"nnd": 58.0 + s, "lh": 50.0}, inv) for s in range(3)]
    recs += [
        fake_record("breastmnist", "1", "con2", "bn_per_context", s, {"nnd": 70.0, "lh": 60.0}, {**inv, "x": 1})
        for s in range(3)
    ]
    runs = collect(tmp_path, recs)
    config = {
        "experiments": {
            "main": {"datasets": ["breastmnist"], "methods": {"con2": ["invert"]}},
            "fidelity": {"datasets": ["breastmnist"], "methods": {"con2": ["invert", "bn_per_context"]}},
        },
        "report": {
            "subject": "con2",
            "medical": ["breastmnist"],
            "main_variants": {"con2": "invert"},
            "scopes": {"fidelity": ["fidelity"]},
        },
    }
    assert study_only_variants(config, "con2") == {"bn_per_context"}
    data = reproduction(inputs_of(runs, paper, config)).data
    con2 = data[(data["method"] == "CON2") & (data["context"] == "invert") & (data["dataset"] == "BreastMNIST")]
    con2 = con2[con2["score"] == "NND"]
    assert len(con2) == 2 and (con2["ours_mean"] == 59.0).all() and (con2["ours_over"] == "1×3").all()
    alt = alt_contexts(inputs_of(runs, paper, config))
    assert "59.0 ± 1.0 [1×3]" in alt.markdown() and "70.0" not in alt.markdown()
