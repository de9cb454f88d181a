"""What the Snakefile does before its rules and its first job (con2/workflow/startup.py), without a Snakemake
launch: the launches that show it end to end are tests/workflow/test_hostile_inputs.py (a profile bomb and a
bad key through ``snakemake``), tests/workflow/test_last_profile.py (``--report``) and the kill tests."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from snakemake.exceptions import WorkflowError

from con2.workflow import startup
from con2.workflow.console import GridProgress
from con2.workflow.last_profile import LAST_PROFILE

ROOT = Path(__file__).resolve().parents[2]
TEST_PROFILE = ROOT / "workflow" / "config" / "test.yaml"
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
DEFAULT = "workflow/config/default.yaml"


def test_profile_to_read_is_the_given_one_else_the_last_run_for_every_command_else_the_default(
    tmp_path, monkeypatch, capsys
):
    """Issue 58, item 4: a command without --configfile (a run, a dry run, a table rebuild, a report) uses the
    folder's last profile and says so; with none remembered, the default profile."""
    monkeypatch.chdir(tmp_path)
    assert startup.profile_to_read({"experiments": {}}, ["snakemake", "--report"], DEFAULT) == (None, None)
    default = (DEFAULT, None)
    assert startup.profile_to_read({}, ["snakemake", "all"], DEFAULT) == default
    assert startup.profile_to_read({}, ["snakemake", "--report", "r.html"], DEFAULT) == default  # none remembered yet
    assert capsys.readouterr().err == ""  # the default profile, as before: nothing said
    LAST_PROFILE.parent.mkdir()
    LAST_PROFILE.write_text("# x\n# Given as: --configfile workflow/config/test.yaml\nexperiments: {}\n")
    for argv, who in (
        (["snakemake", "--cores", "2", "results/tables/table1_medical.md"], "con2 workflow"),
        (["snakemake", "-n"], "con2 workflow"),
        (["snakemake", "--report=r.html"], "con2 report"),
    ):
        config: dict[str, Any] = {"data_dir": "given"}  # a --config value, merged over the file as Snakemake merges
        assert startup.profile_to_read(config, argv, DEFAULT, tmp_path, config) == (None, LAST_PROFILE)
        assert config == {"experiments": {}, "data_dir": "given"}  # read here, as data: never a configfile (57/1)
        said = capsys.readouterr().err.splitlines()
        assert said == [
            f"{who}: the profile of the last run here, --configfile workflow/config/test.yaml "
            "(results/last_profile.yaml): no --configfile was given (name one to use another profile)"
        ]
    # an overlay given alone (no experiments: docs/methods.md's my.yaml) extends the default profile, as documented
    overlay = startup.profile_to_read({"extra_methods": ["x"]}, ["snakemake", "-n"], DEFAULT, tmp_path, {}, ["my.yaml"])
    assert overlay == default and capsys.readouterr().err == ""


def test_check_profile_sets_data_dir_and_flags_and_fills_the_schema_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("CON2_DATA_DIR", str(tmp_path / "elsewhere"))
    config: dict[str, Any] = yaml.safe_load(TEST_PROFILE.read_text())
    config.pop("data_dir", None)
    config |= {"strict": "True", "download": "false"}
    config.pop("threads", None)
    startup.check_profile(config, SCHEMA)
    assert config["data_dir"] == str(tmp_path / "elsewhere")
    assert config["strict"] is True and config["download"] is False
    assert config["threads"] == 1  # Snakemake's validate filled in the schema's default


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"unknown_key": 1}, "invalid workflow config: the profile's top level: Additional properties"),
        ({"seeds": ["x"]}, "invalid workflow config: seeds.0: "),
        (
            {
                "experiments": yaml.safe_load(
                    "\n".join(
                        ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
                        + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 7)]
                    )
                )
            },
            "invalid workflow config: the profile expands to more than 100,000 values",
        ),
    ],
)
def test_check_profile_refuses_in_one_line_naming_the_key(change, message):
    config = {**yaml.safe_load(TEST_PROFILE.read_text()), **change}
    with pytest.raises(WorkflowError) as caught:
        startup.check_profile(config, SCHEMA)
    text = str(caught.value)
    assert text.startswith(message) and "\n" not in text, text[:500]


def test_prepare_report_lists_what_is_not_built_and_refuses_only_a_report_of_nothing(tmp_path, monkeypatch, capsys):
    """Issue 58, item 2: a report of a partial grid shows what is built and lists the rest (the landing text
    reads them from the config), one line on stderr; only a report with nothing built stops, in one line."""
    monkeypatch.chdir(tmp_path)
    built = tmp_path / "built.html"
    built.write_text("x")
    config: dict[str, Any] = {}
    assert startup.prepare_report(config, ["snakemake", "all"], ["never/built.html"], None) == []  # not a report
    assert config == {} and capsys.readouterr().err == ""
    assert startup.prepare_report(config, ["snakemake", "--report", "r.html"], [str(built)], None) == []
    assert config == {startup.UNBUILT_KEY: []} and capsys.readouterr().err == ""  # every file there: nothing said
    files = [str(built), "never/b.png", "never/a.html"]
    assert startup.prepare_report(config, ["snakemake", "--report", "r.html"], files, None) == [
        "never/a.html",
        "never/b.png",
    ]
    assert config[startup.UNBUILT_KEY] == ["never/a.html", "never/b.png"]
    assert capsys.readouterr().err.splitlines() == [
        "con2 report: 2 of the 3 report files of the default profile are not built yet (never/a.html and 1 more): "
        "the report shows the 1 that are and lists the others on its first page; `snakemake --cores 2 all` with "
        "the same profile builds them"
    ]
    whole = startup.prepare_report({}, ["snakemake", "--report", "r.html"], files, None, lambda f: f != str(built))
    assert whole == [str(built)]  # `built` decides (the Session's: every output of the artefact's job on disk)
    with pytest.raises(
        WorkflowError, match=r"never/a.html \(and 1 more.*does not exist: this report is of the default"
    ):
        startup.prepare_report({}, ["snakemake", "--report", "r.html"], ["never/a.html", "never/b.png"], None)


class Progress:
    """What on_start reads of con2.workflow.progress.ProgressLine: its line and the job-start times."""

    def __init__(self, line: str | Exception) -> None:
        self.value, self.job_started = line, {}

    def line(self) -> str | None:
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("con2 grid: 0 of 4 runs, about 3 min left", "con2 grid: 0 of 4 runs, about 3 min left"),
        (KeyError("sizes"), "con2 grid: no ETA (KeyError: 'sizes')"),
    ],
)
def test_on_start_stops_jobs_on_signals_remembers_the_profile_and_prints_the_eta(
    tmp_path, monkeypatch, caplog, line, said
):
    monkeypatch.chdir(tmp_path)
    calls: list[str] = []
    monkeypatch.setattr(startup, "terminate_jobs_on_sigterm", lambda: calls.append("sigterm"))
    monkeypatch.setattr(startup, "terminate_jobs_on_sigint", lambda: calls.append("sigint"))
    monkeypatch.setattr(startup, "start_heartbeat", lambda logger: calls.append("heartbeat"))
    logger = logging.getLogger("test_startup")
    with caplog.at_level(logging.INFO, logger="test_startup"):
        startup.on_start(logger, {"seeds": [0]}, ["workflow/config/test.yaml"], {"device": "cpu"}, Progress(line))
    assert calls[:3] == ["sigterm", "sigint", "heartbeat"]
    assert "# Given as: --configfile workflow/config/test.yaml --config device=cpu" in LAST_PROFILE.read_text()
    # a run without --configfile, of the profile recalled from that file: how that one was given, kept
    recalled = tmp_path / "recalled.yaml"
    LAST_PROFILE.rename(recalled)
    with caplog.at_level(logging.INFO, logger="test_startup"):
        startup.on_start(logger, {"seeds": [0]}, [], {"threads": 2}, Progress(line), recalled)
    given = "# Given as: --configfile workflow/config/test.yaml --config device=cpu threads=2"
    assert given in LAST_PROFILE.read_text()
    assert [f for f in logger.filters if isinstance(f, GridProgress)][0].last == said
    assert said in caplog.text
    for f in list(logger.filters):
        logger.removeFilter(f)


def test_on_start_warns_but_goes_on_when_results_cannot_be_written(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").write_text("a file where the folder should be")
    for name in ("terminate_jobs_on_sigterm", "terminate_jobs_on_sigint", "start_heartbeat"):
        monkeypatch.setattr(startup, name, lambda *a: None)
    logger = logging.getLogger("test_startup_unwritable")
    with caplog.at_level(logging.WARNING, logger="test_startup_unwritable"):
        startup.on_start(logger, {}, [], {}, Progress(None))
    assert "con2 report: results/last_profile.yaml not written" in caplog.text
    for f in list(logger.filters):
        logger.removeFilter(f)
