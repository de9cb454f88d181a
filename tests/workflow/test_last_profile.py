"""The profile `snakemake --report` reports (con2/workflow/last_profile.py, issue 46, point 1): the last
run's, written at its start and read back whole; a report of files never built is one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from con2.workflow.last_profile import given_as, recalled_profile, remember_profile, report_missing, report_mode

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["snakemake", "--report", "results/report.html"], True),
        (["snakemake", "--report=results/report.html", "--configfile", "x.yaml"], True),
        (["snakemake", "--cores", "2", "all"], False),
        (["snakemake", "--report-stylesheet", "s.css", "all"], False),
    ],
)
def test_report_mode_is_read_from_the_command_line(argv: list[str], expected: bool) -> None:
    assert report_mode(argv) is expected


def test_the_last_runs_profile_is_read_back_whole_and_says_how_it_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    profile = yaml.safe_load((ROOT / "workflow/config/test.yaml").read_text())
    merged = {**profile, "data_dir": "../shared/data", "strict": False}
    configfile = tmp_path / "workflow/config/test.yaml"  # Snakemake gives them absolute: shown relative
    path = tmp_path / "results/last_profile.yaml"
    remember_profile(merged, [configfile], {"data_dir": "../shared/data"}, path)
    assert yaml.safe_load(path.read_text()) == merged  # the comment lines are YAML comments
    assert given_as(path) == "--configfile workflow/config/test.yaml --config data_dir=../shared/data"
    assert recalled_profile(path) == path  # every command without --configfile reads it (issue 58, item 4)
    assert recalled_profile(tmp_path / "none.yaml") is None  # none written: the default profile
    remember_profile({"seeds": [0]}, [], {}, path)  # the default profile: no file named
    assert given_as(path) == "(the default profile)"


def test_a_report_of_files_never_built_is_one_line_naming_the_profile_to_give(tmp_path: Path) -> None:
    built = tmp_path / "a.html"
    built.write_text("x")
    assert report_missing([str(built)], None) is None
    # one file built: a partial grid's report (con2.workflow.startup.prepare_report), not this line
    assert report_missing([str(built), str(tmp_path / "b.html"), str(tmp_path / "c.png")], None) is None
    line = report_missing([str(tmp_path / "b.html"), str(tmp_path / "c.png")], None)
    assert line is not None and "\n" not in line
    assert line.startswith(
        f"snakemake --report: {tmp_path / 'b.html'} (and 1 more of this profile's report files) does not exist"
    )
    assert "this report is of the default profile" in line and "--configfile workflow/config/<profile>.yaml" in line


# ------------------------------------------------------------------ issue 57, item 1: a results folder runs nothing
YTE = "__use_yte__: true\ndevice: ?__import__('os').system('touch PWNED') or 'cpu'\n"


def test_the_last_profile_is_read_as_data_and_refused_where_it_would_run_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A YTE template, a rule file outside the checkout or inside the results folder, a file too large to
    parse: each refused in one line naming the file and the fix; a profile of plain data reads back."""
    from con2.errors import ConfigError
    from con2.workflow.last_profile import read_last_profile

    checkout, results = tmp_path / "checkout", tmp_path / "checkout" / "results"
    results.mkdir(parents=True)
    monkeypatch.chdir(checkout)  # a relative rule file is where the workflow reads it: from the working folder
    path = results / "last_profile.yaml"
    path.write_text("# Given as: (the default profile)\nseeds: [0]\nextra_rules: [baselines/examples/pixel_nn.smk]\n")
    assert read_last_profile(path, checkout) == {"seeds": [0], "extra_rules": ["baselines/examples/pixel_nn.smk"]}
    cases = {
        YTE: "sets __use_yte__: a YTE template runs Python",
        f"extra_rules: [{tmp_path / 'evil.smk'}]\n": f"names the rule file {tmp_path / 'evil.smk'} in extra_rules",
        f"extra_rules: [{results / 'evil.smk'}]\n": "or inside the results folder",
        "extra_rules: [../evil.smk]\n": "outside this checkout",
        "x: " + "a" * 1_100_000 + "\n": "is larger than 1,000,000 bytes",
        "- a list\n": "must hold a mapping",
    }
    for text, needle in cases.items():
        path.write_text(text)
        with pytest.raises(ConfigError) as caught:
            read_last_profile(path, checkout)
        line = str(caught.value)
        assert needle in line and str(path) in line and "\n" not in line, line
        assert "Fix: delete" in line and "--configfile workflow/config/<profile>.yaml" in line


@pytest.mark.parametrize("vector", ["yte", "extra_rules", "both"])
def test_a_report_of_a_hostile_results_folder_runs_and_includes_nothing(tmp_path: Path, vector: str) -> None:
    """`snakemake --report r.html` (no --configfile) in a folder whose results/last_profile.yaml is a YTE template
    that would touch a file and/or names an absolute rule file that would write one when included: no file
    appears, nothing is included, and the refusal is one line naming the file and the fix."""
    from workflow_helpers import copy_workflow, snakemake

    wd = copy_workflow(tmp_path / "wd")
    evil = tmp_path / "evil.smk"
    evil.write_text(
        f"open({str(tmp_path / 'INCLUDED')!r}, 'w').close()\n\n"
        f"rule evil:\n    output: {str(tmp_path / 'RULE_RAN')!r}\n    shell: 'touch {{output}}'\n"
    )
    profile = yaml.safe_load((ROOT / "workflow/config/test.yaml").read_text())
    text = "# Given as: --configfile workflow/config/test.yaml\n" + yaml.safe_dump(profile, sort_keys=False)
    if vector in ("yte", "both"):
        text += YTE
    if vector in ("extra_rules", "both"):
        text = text.replace("extra_rules: []\n", "") + f"extra_rules: [{evil}]\n"
    (wd / "results").mkdir()
    (wd / "results/last_profile.yaml").write_text(text)
    res = snakemake(wd, "--report", "r.html", timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    for planted in ("PWNED", "INCLUDED", "RULE_RAN", "r.html"):
        assert not list(tmp_path.rglob(planted)), (planted, out[-3000:])
    lines = [ln for ln in out.splitlines() if "snakemake --report: the last run's profile" in ln]
    assert len(lines) == 1 and "Traceback" not in out, out[-3000:]
    assert "results/last_profile.yaml" in lines[0] and "Fix: delete results/last_profile.yaml" in lines[0]
    assert ("__use_yte__" if vector != "extra_rules" else "extra_rules") in lines[0], lines[0]
