"""`con2 methods` lists the workflow's rule-based methods beside the registered ones, and an
external run's record carries the display label its rule gives (issue 19, point 8)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from con2.cli.main import main
from con2.run.external import write_external_run
from con2.run.records import RecordError

ROOT = Path(__file__).resolve().parents[2]
PIXEL_NN = ROOT / "baselines/examples/pixel_nn.smk"


def test_methods_lists_the_rule_files_of_a_workflow_and_those_named(tmp_path: Path, capsys) -> None:
    methods = tmp_path / "workflow/rules/methods"
    methods.mkdir(parents=True)
    (tmp_path / "Snakefile").write_text("# a checkout\n")
    (methods / "toy.smk").write_text("# Toy: scores by a coin.\n\nrule toy:\n    output: 'x'\n")
    (methods / "bare.smk").write_text("rule bare:\n    output: 'y'\n")
    assert main(["methods", "--workflow", str(tmp_path), "--rules", str(PIXEL_NN)]) == 0
    out = capsys.readouterr().out.splitlines()
    i = out.index("toy: Toy: scores by a coin.")
    assert min(n for n, line in enumerate(out) if line.startswith("con2: ")) < i  # the registered ones first
    assert (
        out[i + 1]
        == f"  rule file: {methods / 'toy.smk'} (trained by its own rule; a profile adds it with extra_methods)"
    )
    assert "bare: (rule-based method)" in out
    assert "pixel_nn: Pixel NN: raw-pixel nearest neighbour, an external program wrapped by a Snakemake rule." in out
    assert main(["methods", "--json", "--workflow", str(tmp_path)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["toy"] == {"description": "Toy: scores by a coin.", "rule_file": str(methods / "toy.smk")}
    assert "scores" in listed["simclr"] and "pixel_nn" not in listed


def test_methods_says_where_it_looked_when_there_is_none(tmp_path: Path, capsys) -> None:
    (tmp_path / "Snakefile").write_text("# a checkout\n")
    assert main(["methods", "--workflow", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"rule-based methods: none in {tmp_path / 'workflow/rules/methods'}/ (list a rule file with --rules FILE)"
    )
    assert main(["methods", "--rules", str(tmp_path / "nope.smk")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"con2: error: --rules: no such rule file: {tmp_path / 'nope.smk'}. Fix: pass the path of a Snakemake rule "
        "file (workflow/rules/methods/*.smk, or a profile's extra_rules)"
    )


def test_an_external_runs_label_reaches_its_record(tmp_path: Path) -> None:
    kw = dict(dataset="digits", normal_class="0", method="pixel_nn", seed=0, labels=np.array([0, 1]), n_train=3)
    record = write_external_run(
        tmp_path / "a", scores={"nnd": np.array([0.1, 0.9])}, label="Pixel NN", score_labels={"nnd": "NND"}, **kw
    )
    assert record["method_card"] == {"label": "Pixel NN", "score_labels": {"nnd": "NND"}}
    assert "method_card" not in write_external_run(tmp_path / "b", scores={"nnd": np.array([0.1, 0.9])}, **kw)
    with pytest.raises(RecordError, match="--score-label names no score column: knn; scores: nnd"):
        write_external_run(tmp_path / "c", scores={"nnd": np.array([0.1, 0.9])}, score_labels={"knn": "kNN"}, **kw)


def test_a_rule_file_s_name_and_comment_reach_the_terminal_escaped(tmp_path: Path, capsys) -> None:
    """Issue 47, item 9: the rule's first comment and the file name were printed raw (a retitled, cleared
    terminal, a forged line); item 13: a text file that defines no rule (/etc/passwd) was listed as a method."""
    hostile = tmp_path / "evil\x1b]0;TITLE\x07.smk"
    hostile.write_text("# Evil \x1b[2J\u202e: clears the screen\nrule evil:\n    output: 'x'\n")
    assert main(["methods", "--workflow", str(ROOT), "--rules", str(hostile)]) == 0
    out = capsys.readouterr().out
    assert not any(ch in out for ch in "\x1b\x07\u202e"), out
    assert "Evil \\x1b[2J\\u202e: clears the screen" in out and "evil\\x1b]0;TITLE\\x07.smk" in out

    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n# a comment\n")
    assert main(["methods", "--rules", str(passwd)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "defines no Snakemake rule" in err and "Fix: pass a Snakemake rule file" in err


@pytest.mark.parametrize(
    ("workflow", "what"),
    [
        ("/dev/zero", "is not a folder"),
        ("nowhere", "does not exist"),
        ("empty", "is a folder without a Snakefile, so no checkout of con2-bench"),
        ("file", "is not a folder"),
    ],
)
def test_a_workflow_that_is_no_checkout_is_refused(tmp_path: Path, capsys, workflow: str, what: str) -> None:
    """Issue 57, item 6: ``con2 methods --workflow /dev/zero`` listed nothing and exited 0."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("rule x:\n")
    given = workflow if workflow.startswith("/") else str(tmp_path / workflow)
    assert main(["methods", "--workflow", given]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"con2: error: --workflow {given} {what}. Fix: pass the root"), err
    assert main(["methods", "--workflow", str(ROOT), "--json"]) == 0  # the checkout itself: its rule files
    listed = json.loads(capsys.readouterr().out)
    assert {Path(f).stem for f in (ROOT / "workflow/rules/methods").glob("*.smk")} <= set(listed)
