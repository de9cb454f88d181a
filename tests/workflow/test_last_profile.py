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
    run = ["snakemake", "--cores", "2", "all"]
    assert recalled_profile(["snakemake", "--report", "r.html"], path) == path
    assert recalled_profile(run, path) is None  # only a report reads it: `all` keeps the default profile
    assert recalled_profile(["snakemake", "--report", "r.html"], tmp_path / "none.yaml") is None
    remember_profile({"seeds": [0]}, [], {}, path)  # the default profile: no file named
    assert given_as(path) == "(the default profile)"


def test_a_report_of_files_never_built_is_one_line_naming_the_profile_to_give(tmp_path: Path) -> None:
    built = tmp_path / "a.html"
    built.write_text("x")
    assert report_missing([str(built)], None) is None
    line = report_missing([str(built), str(tmp_path / "b.html"), str(tmp_path / "c.png")], None)
    assert line is not None and "\n" not in line
    assert line.startswith(
        f"snakemake --report: {tmp_path / 'b.html'} (and 1 more of this profile's report files) does not exist"
    )
    assert "this report is of the default profile" in line and "--configfile workflow/config/<profile>.yaml" in line
