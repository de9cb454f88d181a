"""Faults during the workflow: a Ctrl-C after a checkpoint, a kill and a Ctrl-C while the tables are
written (fault points, con2.faults: never a race with the clock), a second invocation beside the
first. Each ends with the same command finishing as an uninterrupted run would.

Every test works in a temporary copy of the workflow (tests/workflow_helpers.py); the tiny profile
runs once per session (the ``tiny_run`` fixture, tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from workflow_helpers import (
    SNAKEMAKE,
    TEST_CONFIG,
    clone,
    copy_workflow,
    finished,
    incomplete_outputs,
    records,
    snakemake,
    start,
    tree,
    two_profiles,
    workflow_env,
)

pytestmark = pytest.mark.slow

if shutil.which("snakemake") is None and subprocess.run([*SNAKEMAKE, "--version"], capture_output=True).returncode:
    pytest.skip("snakemake is not installed (pip install -e '.[workflow]')", allow_module_level=True)


def test_killed_run_resumes_with_the_same_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C right after the checkpoint of epoch 1 (a fault point, con2.faults: no race with the
    clock) stops Snakemake and the trainer, leaving that checkpoint and no record; the same command
    resumes from it."""
    wd = copy_workflow(tmp_path)
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["run"].update(epochs=3, width=8)
    cfg.update(checkpoint_every=1, checkpoint_seconds=0)  # a checkpoint every epoch, however fast
    cfg["datasets"]["digits"]["normal_classes"] = ["0"]
    cfg["experiments"] = {"main": {"datasets": ["digits"], "methods": {"con2": ["invert"]}}}
    (wd / "resume.yaml").write_text(yaml.safe_dump(cfg))
    cmd = [*SNAKEMAKE, "--cores", "1", "runs", "--configfile", "resume.yaml"]
    run_dir = wd / "results/runs/digits/0/con2/invert/seed0"
    with monkeypatch.context() as m:  # the interrupted command's environment only (Snakemake passes it on)
        m.setenv("CON2_FAULT", "after_checkpoint:epoch=1:signal=SIGINT")  # Ctrl-C to the process group
        proc = start(wd, cmd)
    try:
        assert proc.wait(timeout=600) != 0  # Snakemake and the trainer stop, the lock is released
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (run_dir / "checkpoint.pt").exists() and not (run_dir / "record.json").exists()
    res = subprocess.run(cmd, cwd=wd, capture_output=True, text=True, timeout=600, env=workflow_env(wd))
    assert res.returncode == 0, res.stderr[-3000:]
    assert (run_dir / "record.json").exists()
    record = json.loads((run_dir / "record.json").read_text())
    assert record["resumed_from_epoch"] == 1, "the restarted run did not start from the checkpoint of epoch 1"
    assert record["epochs"] == 3


def test_a_second_invocation_never_changes_the_runs_of_the_first(tmp_path: Path) -> None:
    """Issue 16, case 4: a second `snakemake` in the same directory, started while the first holds
    its lock, is refused before it writes anything (it used to rewrite every results/configs file
    first, and the first invocation then trained its runs with the second's settings)."""
    wd = copy_workflow(tmp_path / "wd")
    one, two = two_profiles(wd)
    first = subprocess.Popen(
        [*SNAKEMAKE, "--cores", "1", "runs", "--configfile", one],
        cwd=wd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=workflow_env(wd),
    )
    try:
        deadline = time.time() + 240
        locks = wd / ".snakemake" / "locks"
        while not (locks.is_dir() and any(locks.iterdir())):  # the first holds its lock: jobs start now
            assert first.poll() is None and time.time() < deadline, "the first invocation never locked"
            time.sleep(0.05)
        configs_before = tree(wd / "results" / "configs") if (wd / "results" / "configs").is_dir() else {}
        second = snakemake(wd, "--cores", "1", "runs", "--configfile", two)
        out, _ = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode != 0 and "LockException" in second.stderr, second.stderr[-2000:]
    after = tree(wd / "results" / "configs")
    assert set(configs_before) <= set(after) and all(".yaml" in k for k in after)
    assert first.returncode == 0, out[-3000:]
    recs = {p: json.loads((wd / p).read_text()) for p in records(wd)}
    assert len(recs) == 2 and all(r["epochs"] == 1 and r["config"]["epochs"] == 1 for r in recs.values()), recs
    for p, r in recs.items():  # each record's config is its profile's: the file its hash names holds it
        key = p.removeprefix("results/runs/").removesuffix("/record.json")
        assert yaml.safe_load((wd / f"results/configs/{key}.{r['config_hash']}.yaml").read_text())["epochs"] == 1
    # the other profile, once the first is done: its own settings retrain both runs
    res = snakemake(wd, "--cores", "2", "runs", "--configfile", two)
    assert res.returncode == 0, res.stderr[-3000:]
    assert {json.loads((wd / p).read_text())["epochs"] for p in records(wd)} == {2}


def test_a_kill_then_a_ctrl_c_during_the_tables_and_the_same_command_finishes_as_uninterrupted(
    tiny_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two faults while the tables are built (fault points in the table job, con2.faults: never a race with
    the clock), then the same command finishes with the outputs of an uninterrupted run, byte for byte.

    Issue 10: Snakemake and its job killed with SIGKILL while the tables and their aggregation are built (a
    table job started); the same command, after ``--unlock``, goes on. Issue 16, case 8: Ctrl-C while a table is
    half-written (its CSV on disk, its job not yet finished) used to make the same command stop with
    IncompleteFilesException; the workflow profile Snakemake loads by itself (profiles/default:
    rerun-incomplete) lets it finish. One copy of the session's run takes both, one after the other: the
    interrupted commands redo only what they left unfinished, and one full rebuild of the tables ends it."""
    wd = clone(tiny_run, tmp_path / "wd")
    outputs = sorted(
        p.relative_to(tiny_run)
        for d in ("results/tables", "results/figures", "results/evaluation")
        for p in (tiny_run / d).iterdir()
    )
    shutil.rmtree(wd / "results/tables")
    (wd / "results/evaluation/runs.csv").unlink()
    cmd = [*SNAKEMAKE, "--cores", "1", "all", "--configfile", TEST_CONFIG]

    def interrupted(fault: str) -> subprocess.Popen:
        """The command, started with ``fault`` in its environment only (Snakemake passes it on), once it ended."""
        with monkeypatch.context() as m:
            m.setenv("CON2_FAULT", fault)
            proc = start(wd, cmd)
        try:
            proc.wait(timeout=600)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        return proc

    killed = interrupted("table_build:signal=SIGKILL")  # the first table job kills its process group
    assert killed.returncode == -signal.SIGKILL, "Snakemake was not killed in a table job"
    assert any(n.startswith("results/tables/") for n in incomplete_outputs(wd)), incomplete_outputs(wd)
    if (wd / ".snakemake/locks").is_dir() and any((wd / ".snakemake/locks").iterdir()):  # the killed one's lock
        assert snakemake(wd, "--unlock", "--configfile", TEST_CONFIG).returncode == 0

    ctrl_c = interrupted("table_csv_written:signal=SIGINT")  # Ctrl-C with the first table's CSV written
    assert ctrl_c.returncode != 0
    half = [n for n in incomplete_outputs(wd) if n.startswith("results/tables/")]
    assert any(n.endswith(".csv") and (wd / n).is_file() for n in half), half  # the CSV on disk
    assert any(n.endswith(".md") and not (wd / n).exists() for n in half), half  # the rest not yet

    res = snakemake(wd, *cmd[3:])
    assert res.returncode == 0, res.stderr[-3000:]
    assert "IncompleteFilesException" not in res.stderr
    assert finished(res.stdout + res.stderr)["train"] == 0
    for rel in outputs:
        assert (wd / rel).read_bytes() == (tiny_run / rel).read_bytes(), rel
