"""The SLURM profile against a real SLURM controller: tools/slurm-local's one-node cluster.

The test profile (workflow/config/test.yaml, plus one longer run and a checkpoint every epoch) runs
with the documented cluster command (docs/workflow.md), `snakemake --workflow-profile workflow/profiles/slurm
--configfile ... --default-resources slurm_partition=debug`, and must give every training run its
own SLURM job, the records of a local run of the same profile (AUROCs and config hashes), and
survive a job cancelled half-way (`scancel`): retried, resumed from its checkpoint, same numbers.
If the cluster cannot be started (`tools/slurm-local` needs root and Debian's apt), the test fails
with the reason: a SLURM profile that never met a controller is what this test exists to prevent.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from workflow_helpers import ROOT, SNAKEMAKE, TEST_CONFIG, copy_workflow, snakemake, workflow_env

pytestmark = pytest.mark.slow

PARTITION = "debug"  # tools/slurm-local's one partition
LONG = "long"  # the run that is cancelled half-way
PROFILE = "slurm_test.yaml"


@pytest.fixture(scope="module")
def cluster() -> str:
    """Starts (or finds running) the one-node cluster; fails with the script's reason otherwise."""
    res = subprocess.run([str(ROOT / "tools" / "slurm-local")], capture_output=True, text=True, timeout=900)
    if res.returncode != 0:
        pytest.fail(f"the local SLURM cluster did not start: {(res.stderr or res.stdout).strip()}")
    return res.stdout.strip()


def write_profile(wd: Path) -> str:
    """The test profile with one longer run (time to cancel it after a checkpoint) and a checkpoint
    every epoch (`checkpoint_seconds: 0`, a runtime key: no config hash changes)."""
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["checkpoint_seconds"] = 0
    # 12 epochs (~0.4 s each quiet: one step of the 119 images): after its first checkpoint the run has 11 epochs and
    # its scoring (~3 s quiet) left, where the cancel takes a poll (0.2 s) and two SLURM commands (30 epochs trained
    # 36 more epochs across the local run and the retried job, for no check)
    cfg["variants"][LONG] = {"params": {"contexts": ["invert"]}, "epochs": 12}
    cfg["experiments"][LONG] = {"datasets": ["digits"], "normal_classes": ["0"], "methods": {"con2": [LONG]}}
    (wd / PROFILE).write_text(yaml.safe_dump(cfg))
    return PROFILE


def readme_command(profile: str, partition: str, data_dir: str) -> list[str]:
    """The documented SLURM command (docs/workflow.md, "On SLURM"), with this test's profile file, partition and
    data folder in place of the paper profile, `gpu` and `/shared/data`: nothing else may differ."""
    readme = (ROOT / "docs" / "workflow.md").read_text()
    section = readme[readme.index("## On SLURM") :]
    block = section[section.index("```bash") + len("```bash") : section.index("```", section.index("```bash") + 7)]
    text = block.replace("\\\n", " ")
    line = next(ln for ln in text.splitlines() if ln.startswith("snakemake --workflow-profile workflow/profiles/slurm"))
    words = shlex.split(line.split("#")[0])
    assert words.count("--configfile") == 1 and sum(w.startswith("slurm_partition=") for w in words) == 1, line
    out = []
    for prev, word in zip(["", *words], words):
        if prev == "--configfile":
            word = profile
        elif word.startswith("slurm_partition="):
            word = f"slurm_partition={partition}"
        elif word.startswith("data_dir="):
            word = f"data_dir={data_dir}"
        out.append(word)
    return [*SNAKEMAKE, *out[1:]]


def records(wd: Path) -> dict[str, dict]:
    """run key (dataset/class/method/variant/seedN) -> its record."""
    root = wd / "results" / "runs"
    return {str(p.parent.relative_to(root)): json.loads(p.read_text()) for p in root.rglob("record.json")}


def slurm_jobs(console: str) -> list[dict]:
    """The SLURM jobs this workflow submitted (the plugin prints "... submitted with SLURM jobid N"),
    as the controller lists them: id, comment (`rule_train_wildcards_<dataset>_<class>_<method>_
    <variant>_<seed>`) and state."""
    ids = re.findall(r"submitted with SLURM jobid (\d+)", console)
    out = subprocess.run(
        ["squeue", "--states=all", "-h", "-o", "%i|%k|%T"], capture_output=True, text=True, check=True
    ).stdout
    rows = {r[0]: r for r in (line.split("|") for line in out.splitlines() if line.strip())}
    missing = [i for i in ids if i not in rows]
    assert not missing, f"jobs {missing} are not in the controller's list (squeue --states=all)"
    return [{"id": i, "comment": rows[i][1], "state": rows[i][2]} for i in ids]


def completion_log() -> dict[str, str]:
    """Job id -> state from the job completion log (`sacct -c`: jobcomp/filetxt, no database)."""
    out = subprocess.run(
        ["sacct", "-c", "-n", "--parsable2", "-o", "jobid,state"], capture_output=True, text=True, check=True
    ).stdout
    return dict(line.split("|")[:2] for line in out.splitlines() if "|" in line)


def comment(key: str) -> str:
    dataset, cls, method, variant, seed = key.split("/")
    return f"rule_train_wildcards_{dataset}_{cls}_{method}_{variant}_{seed.removeprefix('seed')}"


def cancel_when_checkpointed(wd: Path, proc: subprocess.Popen, timeout: float = 600) -> str:
    """Waits until the long run has a checkpoint, then `scancel`s its SLURM job; returns the job id."""
    run_dir = wd / "results" / "runs" / "digits" / "0" / "con2" / LONG / "seed0"
    deadline = time.time() + timeout
    while not (run_dir / "checkpoint.pt").exists():
        assert proc.poll() is None, "the workflow ended before the long run wrote a checkpoint"
        assert time.time() < deadline, "the long run never wrote a checkpoint"
        time.sleep(0.2)
    target = comment(f"digits/0/con2/{LONG}/seed0")
    out = subprocess.run(["squeue", "-h", "-o", "%i|%k"], capture_output=True, text=True, check=True).stdout
    ids = [line.split("|")[0] for line in out.splitlines() if line.endswith("|" + target)]
    assert len(ids) == 1, f"the long run's SLURM job is not in the queue: {out}"
    subprocess.run(["scancel", ids[0]], check=True)
    return ids[0]


def test_the_test_profile_on_slurm_matches_a_local_run_and_survives_scancel(
    cluster: str, tiny_run: Path, tmp_path: Path
) -> None:
    # The reference: the same profile run locally: the session's run of the test profile (tests/conftest.py;
    # `checkpoint_seconds` is a runtime key, in no config hash) and the long run, trained here.
    local = copy_workflow(tmp_path / "local")
    profile = write_profile(local)
    long_record = f"results/runs/digits/0/con2/{LONG}/seed0/record.json"
    res = snakemake(local, "--cores", "2", long_record, "--configfile", profile, "--config", "data_dir=data")
    assert res.returncode == 0, res.stderr[-3000:]
    expected = {**records(tiny_run), **records(local)}
    assert len(expected) == 8, sorted(expected)

    # The documented cluster command (docs/workflow.md), with the test profile and this cluster's partition.
    wd = copy_workflow(tmp_path / "slurm")
    shutil.copy2(local / profile, wd / profile)
    cmd = readme_command(profile, PARTITION, "data")
    with open(wd / "console.txt", "w") as console:
        proc = subprocess.Popen(cmd, cwd=wd, stdout=console, stderr=subprocess.STDOUT, env=workflow_env(wd))
        try:
            cancelled = cancel_when_checkpointed(wd, proc)
            assert proc.wait(timeout=1500) == 0, (wd / "console.txt").read_text()[-5000:]
        finally:
            if proc.poll() is None:
                proc.kill()
    console = (wd / "console.txt").read_text()

    # Every training run was a SLURM job that completed (the cancelled one: a second job).
    jobs = slurm_jobs(console)
    done = {j["comment"] for j in jobs if j["state"] == "COMPLETED"}
    assert set(expected) == set(records(wd)), "the SLURM run trained other runs than the local one"
    for key in expected:
        assert comment(key) in done, f"{key} was not a completed SLURM job: {jobs}"
    assert "rule_score_runtime" in done  # the one other rule that runs on the cluster
    assert {j["comment"] for j in jobs} <= {comment(k) for k in expected} | {"rule_score_runtime"}, (
        "a local rule (data, evaluation, tables) was submitted to SLURM"
    )
    by_id = {j["id"]: j for j in jobs}
    assert by_id[cancelled]["state"] == "CANCELLED"
    assert [j for j in jobs if j["comment"] == comment(f"digits/0/con2/{LONG}/seed0")][-1]["state"] == "COMPLETED"
    finished = completion_log()  # the job completion log agrees with the controller
    assert {i: finished.get(i) for i in by_id} == {i: j["state"] for i, j in by_id.items()}

    # The cancelled run resumed from its checkpoint, and every record equals the local run's.
    got = records(wd)
    assert got[f"digits/0/con2/{LONG}/seed0"]["resumed_from_epoch"] > 0, "the retried job started from epoch 0"
    assert "Trying to restart job" in console
    for key, rec in expected.items():
        assert got[key]["config_hash"] == rec["config_hash"], key
        assert got[key]["metrics"]["auroc"] == rec["metrics"]["auroc"], key
    assert (wd / "results" / "tables" / "nnd_vs_lh.md").is_file()  # the local rules ran on the submit host
