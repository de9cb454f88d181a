"""The workflow before any job: the profile checked and expanded (dry runs of the paper and default
profiles), and every bad profile (unknown key, bad value, hostile name, a class the dataset lacks)
stopped naming the key, with nothing written. The bad profiles are asked of the typed layer
(:func:`profile_error`: the checks a launch makes before its first rule, about 0.3 s each instead of a
launch's 11 s); one launch shows a real run stopping on that line, and the hostile names are launched
because only a launch shows that no file appears.

Every test works in a temporary copy of the workflow (tests/workflow_helpers.py); the tiny profile
runs once per session (the ``tiny_run`` fixture, tests/conftest.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from workflow_helpers import (
    ROOT,
    SNAKEMAKE,
    TEST_CONFIG,
    copy_workflow,
    expected_paper_train_jobs,
    job_stats,
    profile_error,
    snakemake,
    tree,
)

pytestmark = pytest.mark.slow

if shutil.which("snakemake") is None and subprocess.run([*SNAKEMAKE, "--version"], capture_output=True).returncode:
    pytest.skip("snakemake is not installed (pip install -e '.[workflow]')", allow_module_level=True)


def test_paper_dry_run_builds_the_whole_grid(tmp_path: Path) -> None:
    from con2.data import normal_classes
    from con2.grid.experiments import data_targets, expand_grid
    from con2.report.artefacts import FIGURES, TABLES

    wd = copy_workflow(tmp_path)
    res = snakemake(wd, "-n", "--configfile", "workflow/config/paper.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    stats = job_stats(res.stdout + res.stderr)
    cfg = yaml.safe_load((wd / "workflow/config/paper.yaml").read_text())
    assert cfg["strict"] is True  # the paper profile fails on a missing dataset: its DAG is known up front
    runs = expand_grid(cfg, normal_classes)
    n_train = expected_paper_train_jobs(cfg)
    # 70 (dataset, class) x 4 methods x 3 seeds + contexts 630 (flip, equalize, best) + loss 36 + k 108 + I-JEPA-AD 18
    # + the fidelity study's 39 more + the floor's 70 (one seed per class, nothing trained)
    assert n_train == 1671 + 70 == len(runs)
    studies = [e for exps in cfg["report"]["scopes"].values() for e in exps]
    n_all = expected_paper_train_jobs(cfg, skip=tuple(studies))  # `all` leaves the studies' own runs out
    assert n_all == 1671 + 70 - 39
    assert stats["train"] == n_all
    assert stats["prepare_data"] == len(data_targets(runs)) == 11
    report = cfg["report"]
    expected = {
        "aggregate": 1,
        "score_runtime": 1,
        "all": 1,
        "data_status": 1,  # results/data/status.json: the tables that say why a dataset has no runs read it
        **{f"table_{t}": len(a.stems(report)) for t, a in TABLES.items()},
        **{f"figure_{f}": len(a.stems(report)) for f, a in FIGURES.items()},
        # the studies' tables, from their records on disk (none here): `all` keeps them in step, trains none of them
        "aggregate_scope": len(report["scopes"]),
    }
    assert expected["table_per_class"] == expected["figure_per_class"] == len(report["per_class"]) >= 1
    for rule, count in expected.items():
        assert stats[rule] == count, (rule, stats)
    assert stats["run_config"] == n_all  # one resolved config per run, written by its own job
    assert sum(stats.values()) == 2 * n_all + 11 + sum(expected.values())
    assert not (wd / "results").exists()  # a dry run writes nothing


def test_default_profile_checks_every_dataset_and_restricts_datasets(tmp_path: Path) -> None:
    wd = copy_workflow(tmp_path)
    res = snakemake(wd, "-n", "--config", "data_dir=no_such_dir")
    assert res.returncode == 0, res.stderr[-3000:]
    stats = job_stats(res.stdout + res.stderr)
    # every dataset is checked: breastmnist at 28 and 64 px (the native-resolution study's file),
    # pneumoniamnist and digits; the runs of data on disk at the start (the embedded digits) are
    # scheduled at once, the others (nothing under no_such_dir) once the check (a checkpoint) has run
    assert stats["prepare_data"] == 4 and stats["data_status"] == 1
    trained = re.findall(r"^Job \d+: train (\w+)/", res.stdout + res.stderr, re.M)
    assert stats["train"] == len(trained) > 0 and set(trained) == {"digits"}, trained
    assert "checkpoint jobs" in res.stdout + res.stderr
    only = snakemake(wd, "-n", "--config", "data_dir=no_such_dir", "only_datasets=digits")
    assert only.returncode == 0 and job_stats(only.stdout + only.stderr)["prepare_data"] == 1


def edited_profile(edit: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    cfg = yaml.safe_load((ROOT / TEST_CONFIG).read_text())
    edit(cfg)
    return cfg


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (lambda c: c["run"].update(epoch=3), "epoch"),  # unknown RunConfig key (con2.config)
        (lambda c: c["run"].update(tta=3), "tta"),  # invalid value (con2.config)
        (lambda c: c.update(seed=[0]), "seed"),  # unknown top-level key (JSON schema)
        (lambda c: c.update(device="gpu"), "device"),  # schema pattern
        (lambda c: c["variants"].update(k3={"params": {"n_contexts": 3}, "tta": 4}), "tta"),  # 4 views over 3 contexts
    ],
)
def test_invalid_config_fails_before_any_job_naming_the_key(tmp_path: Path, monkeypatch, edit, key: str) -> None:
    monkeypatch.chdir(tmp_path)
    line = profile_error(edited_profile(edit))
    assert line.startswith("invalid workflow config: ") and any(n in line for n in (f"'{key}'", f"config: {key}: ")), (
        line
    )
    assert not list(tmp_path.iterdir())  # nothing written


def test_an_invalid_profile_stops_the_launch_before_any_job_naming_the_key(tmp_path: Path) -> None:
    """The launch behind :func:`profile_error`: a real run (not a dry one) stops with the key named, no job run."""
    wd = copy_workflow(tmp_path)
    (wd / "bad.yaml").write_text(yaml.safe_dump(edited_profile(lambda c: c["run"].update(epoch=3))))
    res = snakemake(wd, "--cores", "1", "--configfile", "bad.yaml")
    assert res.returncode != 0
    assert "invalid workflow config: " in res.stderr and "'epoch'" in res.stderr, res.stderr[-2000:]
    assert "Job stats" not in res.stdout + res.stderr
    assert not (wd / "results").exists()  # nothing ran


def test_invalid_method_param_fails_before_training(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    line = profile_error(
        edited_profile(lambda c: c["variants"].update(flip={"params": {"contexts": ["flip"], "temprature": 0.1}}))
    )
    assert "temprature" in line and "variant 'flip'" in line, line
    assert not list(tmp_path.iterdir())  # no config was written


@pytest.mark.parametrize("hostile", ["0||touch PWNED;#", "../../../../outside/TRAVERSAL"])
def test_hostile_profile_values_stop_before_any_job_and_write_nothing(tmp_path: Path, hostile: str) -> None:
    """Issue 16, cases 1-2: a normal class that is a shell command or a path out of the working
    directory stops a real run (`snakemake -n` reads the profile the same way) before any job, naming the key
    and the rule; no file appears, in the working directory or above it (Snakemake's own .snakemake/ aside)."""
    wd = copy_workflow(tmp_path / "a" / "b" / "wd")
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["datasets"]["digits"]["normal_classes"] = [hostile]
    (wd / "hostile.yaml").write_text(yaml.safe_dump(cfg))
    before = tree(tmp_path, skip=(".snakemake", ".offline", ".home"))
    res = snakemake(wd, "--cores", "1", "--configfile", "hostile.yaml")  # a real run: `-n` stops at the same check
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-2000:]
    assert f"{hostile!r} does not match '^[A-Za-z0-9][A-Za-z0-9_+-]{{0,99}}$'" in out, out[-2000:]
    assert "invalid workflow config: datasets.digits.normal_classes.0: " in out, out  # the key, dotted
    assert "Job stats" not in out
    assert tree(tmp_path, skip=(".snakemake", ".offline", ".home")) == before
    assert not list(tmp_path.rglob("PWNED")) and not list(tmp_path.rglob("TRAVERSAL"))


def test_the_baseline_example_quotes_what_it_passes_to_the_shell(tmp_path: Path) -> None:
    """Issue 16, case 1: `--config 'data_dir=/x;touch PWNED;#'` reaches pixel_nn.smk's shell
    command as one quoted argument, shown so by `-n -p` and never run as a command."""
    wd = tmp_path / "wd"
    wd.mkdir()
    target = "results/runs/digits/0/pixel_nn/default/seed0/record.json"
    smk = ["-s", str(ROOT / "baselines/examples/pixel_nn.smk"), "--config", "data_dir=/x;touch PWNED;#"]
    dry = snakemake(wd, "-n", "-p", *smk, "--", target)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "--data-dir '/x;touch PWNED;#' --dataset digits" in dry.stdout + dry.stderr
    real = snakemake(wd, "--cores", "1", *smk, "--", target)
    assert not list(tmp_path.rglob("PWNED")), real.stdout[-2000:] + real.stderr[-2000:]
    for rule_file in [ROOT / "baselines/examples/pixel_nn.smk", *(ROOT / "workflow/rules").glob("*.smk")]:
        text = rule_file.read_text()
        shells = re.findall(r"shell:\n((?:\s+\"[^\n]*\"\n)+)", text)
        for field in re.findall(r"\{((?:input|output|log|params|wildcards)[^}]*)\}", "".join(shells)):
            assert field.endswith(":q"), (rule_file.name, field)


def test_a_class_the_dataset_lacks_fails_before_any_job_naming_the_key(tmp_path: Path, monkeypatch) -> None:
    """Issue 16, case 15: digits has classes 0-9; the console used to show only "Error in rule train"."""
    monkeypatch.chdir(tmp_path)
    line = profile_error(edited_profile(lambda c: c["datasets"]["digits"].update(normal_classes=["0", "11"])))
    assert "datasets.digits.normal_classes: digits: unknown normal class '11'; classes: 0, 1, 2" in line, line
    assert not list(tmp_path.iterdir())
