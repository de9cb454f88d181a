"""A run's scores.csv is checked before a table trusts it, and is an input of the rules that read it
(issue 32, item 5); a skipped record reached through a linked folder is fixed by removing the link
(item 7); all-tied scores have no DeLong interval (item 15).

The records and scores are those of tests/report/test_uncertainty.py (``write_runs``: CON2 and SimCLR on
BreastMNIST's test-set size, three seeds, records built by con2.run.records.build_record).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_uncertainty import CONFIG, write_runs
from workflow_helpers import TEST_CONFIG, clone, job_stats, snakemake

from con2.aggregate.score_files import RUN_FOLDERS
from con2.report.methods import method_names

RUN = Path("results/runs/breastmnist/1")


def run_dir(root: Path, method: str, seed: int) -> Path:
    return root / RUN / method / ("invert" if method == "con2" else "default") / f"seed{seed}"


def records_of(root: Path) -> list[str]:
    return sorted(str(p) for p in (root / "results" / "runs").rglob("record.json"))


def compared(runs: pd.DataFrame) -> pd.DataFrame:
    from con2.report.paired import compare

    return compare(runs, CONFIG, "breastmnist", method_names(CONFIG, runs), scores=RUN_FOLDERS).set_index(
        ["method", "score"]
    )


def every_table(runs: pd.DataFrame, paper: pd.DataFrame) -> dict[str, str]:
    """The tables that read scores.csv (comparisons; Table 1's marks; the reproduction's orderings)."""
    from con2.report.artefacts import ReportInputs
    from con2.report.tables import build_table

    inputs = ReportInputs(runs=runs, paper=paper, config=CONFIG, dataset="breastmnist", scores=RUN_FOLDERS)
    return {name: build_table(name, inputs).markdown() for name in ("comparisons", "table1_medical", "reproduction")}


@pytest.fixture
def paper() -> pd.DataFrame:
    from con2.report.paper import load_paper_numbers

    return load_paper_numbers(Path(__file__).resolve().parents[2] / "con2" / "resources" / "paper_numbers.csv")


# ----------------------------------------------------------------------------- item 5: scores.csv checked
def test_nan_in_a_score_column_refuses_that_comparison_and_leaves_the_others(tmp_path: Path, paper):
    from con2.aggregate.collect import collect_valid_runs

    runs = write_runs(tmp_path)
    before = compared(runs)
    scores = run_dir(tmp_path, "simclr", 1) / "scores.csv"
    df = pd.read_csv(scores)
    df.loc[df.index[:100], "ssd"] = np.nan  # the record stays valid: its AUROC was computed before
    df.to_csv(scores, index=False)

    after = compared(runs)  # a runs.csv made before the edit: the table still reads the file
    row = after.loc[("simclr", "ssd")]
    assert np.isnan(row["p"]) and np.isnan(row["diff"]) and not row["holds"]
    why = f"class 1: {scores} column 'ssd' holds 100 non-finite values (NaN or infinite)"
    assert row["reason"] == why
    assert after.loc[("simclr", "knn"), "reason"] == why  # the file is refused, as the aggregation refuses the run
    key = ("con2", "lh")  # another method's comparison: unchanged
    assert after.loc[key, "diff"] == before.loc[key, "diff"] and after.loc[key, "p"] == before.loc[key, "p"]
    assert every_table(runs, paper)  # every table reading the scores still builds

    frame, skipped = collect_valid_runs(records_of(tmp_path))
    bad = str(run_dir(tmp_path, "simclr", 1) / "record.json")
    assert [s.record for s in skipped] == [bad]
    assert skipped[0].line().startswith(f"skipped {bad}: its scores.csv column 'ssd' holds 100 non-finite values")
    assert bad not in set(frame["record"]) and len(frame) == len(runs) - 2  # its two scores' rows, nothing else


def test_a_word_in_one_cell_never_stops_a_table(tmp_path: Path, paper):
    from con2.aggregate.collect import collect_valid_runs
    from con2.report.paired import holding_marks

    runs = write_runs(tmp_path)
    before = compared(runs)
    scores = run_dir(tmp_path, "simclr", 2) / "scores.csv"
    lines = scores.read_text().splitlines()
    head = lines[0].split(",")
    cells = lines[5].split(",")
    cells[head.index("knn")] = "abc"
    lines[5] = ",".join(cells)
    scores.write_text("\n".join(lines) + "\n")

    after = compared(runs)
    for score in ("knn", "ssd"):  # the file is refused: both of its columns' comparisons say why
        assert after.loc[("simclr", score), "reason"].endswith("holds 1 non-numeric value")
    assert after.loc[("con2", "lh"), "diff"] == before.loc[("con2", "lh"), "diff"]
    marks = holding_marks(runs, CONFIG, ["breastmnist"], RUN_FOLDERS, method_names(CONFIG, runs))
    assert ("breastmnist", "simclr", "knn") not in marks
    tables = every_table(runs, paper)
    assert "non-numeric" in tables["comparisons"]

    frame, skipped = collect_valid_runs(records_of(tmp_path))
    assert [s.problem for s in skipped] == ["its scores.csv column 'knn' holds 1 non-numeric value"]


def test_a_record_whose_auroc_its_scores_do_not_give_is_left_out_and_named(tmp_path: Path, paper):
    from con2.aggregate.collect import collect_valid_runs

    runs = write_runs(tmp_path)
    record = run_dir(tmp_path, "simclr", 0) / "record.json"
    rec = json.loads(record.read_text())
    true = rec["metrics"]["auroc"]["knn"]
    lo, hi = rec["metrics"]["auroc_ci"]["knn"]["lo"], rec["metrics"]["auroc_ci"]["knn"]["hi"]
    assert not lo <= 12.3 <= hi
    rec["metrics"]["auroc"]["knn"] = 12.3  # still a valid record
    record.write_text(json.dumps(rec))

    frame, skipped = collect_valid_runs(records_of(tmp_path))
    assert len(skipped) == 1
    assert skipped[0].line() == (
        f"skipped {record}: its scores.csv gives AUROC {true:.2f} for column 'knn', the record 12.30; fix: delete it "
        f"(rm {record}) and run the same command again: a run of the profile's grid is re-scored from its checkpoint "
        "(or retrained), any other is dropped"
    )
    assert str(record) not in set(frame["record"]) and 12.3 not in set(frame["auroc"])
    tables = every_table(frame, paper)
    assert not any("12.3" in md for md in tables.values())
    # a runs.csv written before the edit (12.3 in it): the comparisons refuse that run instead of pairing it
    stale = runs.copy()
    stale.loc[(stale["record"] == str(record)) & (stale["score"] == "knn"), "auroc"] = 12.3
    assert "the record 12.30" in compared(stale).loc[("simclr", "knn"), "reason"]
    assert compared(stale).loc[("simclr", "ssd"), "reason"] == ""  # the file's other column agrees


def test_a_record_without_scores_still_aggregates_and_rounding_passes(tmp_path: Path):
    from con2.aggregate.collect import collect_valid_runs

    write_runs(tmp_path)
    (run_dir(tmp_path, "con2", 0) / "scores.csv").unlink()  # older records, external ones: not checked
    record = run_dir(tmp_path, "simclr", 0) / "record.json"
    rec = json.loads(record.read_text())
    rec["metrics"]["auroc"] = {k: round(v, 1) for k, v in rec["metrics"]["auroc"].items()}  # rounded: agrees
    record.write_text(json.dumps(rec))
    frame, skipped = collect_valid_runs(records_of(tmp_path))
    assert skipped == [] and len(set(frame["record"])) == 6


@pytest.mark.slow
def test_editing_a_scores_csv_reruns_the_tables_that_read_it(tiny_run: Path, tmp_path: Path) -> None:
    """The session's run of the test profile (tests/conftest.py: CON2 and SimCLR on digits' class 0 among its
    runs, the comparisons table); then one scores.csv edited: the dry run schedules the aggregation and the
    table again, nothing else."""
    wd = clone(tiny_run, tmp_path / "wd")
    target = "results/tables/comparisons_digits.md"
    assert pd.read_csv(wd / "results/evaluation/skipped.csv").empty  # real runs' records agree with their scores
    assert pd.read_csv(wd / "results/tables/comparisons_digits.csv")["p"].notna().all()  # every pair compared
    clean = snakemake(wd, "-n", target, "--configfile", TEST_CONFIG)
    assert "Nothing to be done" in clean.stdout + clean.stderr, clean.stdout[-2000:]
    scores = wd / "results/runs/digits/0/simclr/default/seed0/scores.csv"
    df = pd.read_csv(scores)
    df.loc[df.index[:20], "ssd"] = np.nan
    df.to_csv(scores, index=False)
    res = snakemake(wd, "-n", target, "--configfile", TEST_CONFIG)
    assert res.returncode == 0, res.stderr[-3000:]
    assert job_stats(res.stdout + res.stderr) == Counter({"aggregate": 1, "table_comparisons": 1})


# ----------------------------------------------------------------------------- item 7: a linked folder
def md5s(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_the_fix_for_a_record_reached_through_a_link_removes_the_link_not_the_run(tmp_path: Path):
    from con2.aggregate.collect import collect_valid_runs

    write_runs(tmp_path)
    runs_root = tmp_path / "results" / "runs"
    real = run_dir(tmp_path, "con2", 0)
    method = real.parents[1]
    (method / "flip").symlink_to("invert")  # results/runs/breastmnist/1/con2/flip -> invert
    before = md5s(real)
    linked = method / "flip" / "seed0" / "record.json"
    frame, skipped = collect_valid_runs([str(real / "record.json"), str(linked)], runs_root=runs_root)
    assert [s.record for s in skipped] == [str(linked)] and str(real / "record.json") in set(frame["record"])
    assert skipped[0].fix == (
        f"remove the link itself (rm {method / 'flip'}): a link, not a run; its target and the run there are left "
        "as they are"
    )
    command = re.search(r"\((rm|mv) ([^)]*)\)", skipped[0].fix)
    assert command is not None
    subprocess.run(command.group(0)[1:-1], shell=True, cwd=tmp_path, check=True)  # the fix, followed
    assert md5s(real) == before and not (method / "flip").exists()
    assert collect_valid_runs([str(real / "record.json")], runs_root=runs_root)[1] == []


def test_a_linked_path_with_spaces_is_quoted(tmp_path: Path):
    from con2.aggregate.collect import skip

    target = tmp_path / "a b" / "runs" / "digits" / "0" / "con2" / "invert" / "seed0"
    target.mkdir(parents=True)
    (target.parent.parent / "fl ip").symlink_to("invert")
    fix = skip(str(target.parent.parent / "fl ip" / "seed0" / "record.json"), "x", "y").fix
    assert f"(rm '{target.parent.parent / 'fl ip'}')" in fix


# ----------------------------------------------------------------------------- item 15: all-tied scores
def test_all_tied_scores_have_no_delong_interval():
    from con2.maths import stats
    from con2.maths.metrics import auroc, auroc_intervals

    y = np.r_[np.ones(5), np.zeros(7)].astype(int)
    tied = np.full(12, 0.3)
    # the definition: every (anomaly, normal) pair ties and counts 1/2, so the AUROC is 1/2 and every
    # structural component is 1/2: DeLong's variance is 0, which measures nothing here
    comp = stats.delong_components(tied[y == 1], tied[y == 0])
    assert comp.auc[0] == 0.5 and (comp.v10 == 0.5).all() and (comp.v01 == 0.5).all()
    assert comp.covariance()[0, 0] == 0.0
    ci = stats.auroc_interval(y, tied)
    assert ci.auc == 0.5 and all(math.isnan(v) for v in (ci.se, ci.lo, ci.hi)) and "undefined" in ci.reason
    assert auroc(y, tied) == 50.0 and auroc_intervals(y, {"nnd": tied}) == {"nnd": {"lo": None, "hi": None, "se": None}}
    # a perfect separation keeps its (degenerate) zero-width interval at 1
    sep = stats.auroc_interval(y, y.astype(float))
    assert (sep.lo, sep.hi) == (1.0, 1.0) and sep.reason == ""


def test_a_linked_runs_root_is_never_the_link_to_remove(tmp_path: Path):
    from con2.aggregate.collect import link_on_path

    store = tmp_path / "store" / "digits" / "0"
    store.mkdir(parents=True)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "runs").symlink_to(tmp_path / "store")  # runs kept on another disk
    shallow = tmp_path / "results" / "runs" / "digits" / "0" / "record.json"
    assert link_on_path(shallow, tmp_path / "results" / "runs") is None
