"""Issue 56: the device call's CIFAR-10 length study through the workflow (benchmarks/gpu_length_study.py and its
place in benchmarks/gpu_call.sh). No GPU needed: the command, the scratch copy's tiny overlay, what comes back
(the archive of finished runs' small files) and the skips are checked here; slow: the rehearsal on the CPU,
stopped as the call's hard timeout stops it and resumed by the same command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import yaml
from test_gpu_cifar import env_with_root
from test_gpu_packing import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(ROOT / "benchmarks" / "gpu_length_study.py")
CON2_RUN = "cifar10/airplane/con2/length128/seed0"
FLOOR_RUN = "cifar10/airplane/floor_pixels/floor/seed0"


def lines_of(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines() if x.startswith("{")]


def test_the_command_trains_the_study_with_runs_sharing_the_gpu(tmp_path: Path) -> None:
    ls = load_benchmark("gpu_length_study")
    cmd = ls.snakemake_command(Path("/data"), "cuda", cores=16, slots=4, threads=2, checkpoint_s=30)
    assert cmd[:3] == [sys.executable, "-m", "snakemake"]
    assert cmd[cmd.index("--cores") + 1] == "16"
    assert "studies" in cmd and "results/figures/length_curve_cifar10.png" in cmd
    files = cmd[cmd.index("--configfile") + 1 : cmd.index("--config")]
    assert files == ["workflow/config/default.yaml", "workflow/config/cifar10.yaml", ls.OVERLAY]
    config = cmd[cmd.index("--config") + 1 : cmd.index("--resources")]
    assert config == [
        "data_dir=/data",
        "only_datasets=cifar10",
        "device=cuda",
        "threads=2",
        "download=false",
        "checkpoint_seconds=30",
    ]
    assert cmd[cmd.index("--resources") + 1] == "gpu=4" and "--rerun-incomplete" in cmd and "greedy" in cmd
    # the plan the real profile gives: the 14 runs of length_cifar10, not the BreastMNIST study
    profile = yaml.safe_load((ROOT / "workflow/config/cifar10.yaml").read_text())
    study = profile["experiments"]["length_cifar10"]
    assert study["normal_classes"] == ["airplane", "automobile"]
    assert sum(len(v) for v in study["methods"].values()) == 7
    assert "length_cifar10" in profile["report"]["scopes"]["length_curve"]


def test_the_scratch_copy_is_kept_and_only_its_overlay_is_cut_to_the_rehearsal(tmp_path: Path) -> None:
    ls = load_benchmark("gpu_length_study")
    work = tmp_path / "w"
    checkout = (ROOT / "workflow/config/cifar10.yaml").read_bytes()
    ls.refresh_workflow(work)
    (work / "results" / "runs").mkdir(parents=True)
    (work / "results" / "runs" / "kept.txt").write_text("an earlier call's run")
    ls.refresh_workflow(work)  # a second call on the machine: the results stay
    assert (work / "results" / "runs" / "kept.txt").is_file() and (work / "Snakefile").is_file()
    ls.make_tiny(work)
    tiny = yaml.safe_load((work / "workflow/config/cifar10.yaml").read_text())
    assert tiny["experiments"]["length_cifar10"]["methods"] == {"floor_pixels": ["floor"], "con2": ["length128"]}
    assert tiny["experiments"]["length_cifar10"]["normal_classes"] == ["airplane"]
    assert tiny["variants"]["length128"]["epochs"] == 2 and tiny["datasets"]["cifar10"]["run"]["image_size"] == 16
    assert tiny["variants"]["flip_length128"]["params"] == {"contexts": ["flip"]}  # merged, not replaced
    assert (ROOT / "workflow/config/cifar10.yaml").read_bytes() == checkout


def fake_run(work: Path, key: str, finished: bool) -> None:
    run = work / "results" / "runs" / key
    run.mkdir(parents=True)
    (run / "checkpoint.pt").write_bytes(b"\0" * 64)
    (run / "features.npz").write_bytes(b"\0" * 64)
    log = work / "results" / "logs" / "train" / f"{key}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("epoch 1/128 ...\nepoch 2/128 loss 1.0\ncon2: interrupted; rerun the same command\n")
    if finished:
        record = {
            "method": "con2",
            "variant": "length128",
            "normal_class": key.split("/")[1],
            "epochs": 128,
            "device": "cuda",
            "gpu": "NVIDIA H100 80GB HBM3",
            "metrics": {"auroc": {"nnd": 81.123, "lh": 70.0, "nnd@content/matched": 60.0}},
            "timing": {"wall_seconds": 300.04, "fit_seconds": 250.0, "sessions": 2},
        }
        (run / "record.json").write_text(json.dumps(record))
        for name in ("curve.csv", "scores.csv", "config.yaml"):
            (run / name).write_text(name)
        config = work / "results" / "configs" / f"{key}.0123456789abcdef.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("method: con2")


def test_what_comes_back_is_one_archive_of_the_finished_runs_small_files(tmp_path: Path) -> None:
    """The device brings back 8 files, 2 folders down: the finished runs' record, curve, scores and config (and
    their logs), the tables and the figure under their results/ paths in one archive; no checkpoint, no
    features, nothing of an unfinished run, which is listed with its log's last line."""
    ls = load_benchmark("gpu_length_study")
    work = tmp_path / "w"
    fake_run(work, "cifar10/airplane/con2/length128/seed0", finished=True)
    fake_run(work, "cifar10/automobile/con2/length128/seed0", finished=False)
    (work / "results" / "tables").mkdir(parents=True)
    (work / "results" / "tables" / "length_curve.md").write_text("|")
    packed = ls.pack(work, tmp_path / "OUT" / "length_study.tar.gz")
    with tarfile.open(tmp_path / "OUT" / "length_study.tar.gz") as tar:
        names = sorted(tar.getnames())
    done = "results/runs/cifar10/airplane/con2/length128/seed0"
    assert names == sorted(
        [f"{done}/{f}" for f in ("record.json", "curve.csv", "scores.csv", "config.yaml")]
        + ["results/logs/train/cifar10/airplane/con2/length128/seed0.log", "results/tables/length_curve.md"]
        + ["results/configs/cifar10/airplane/con2/length128/seed0.0123456789abcdef.yaml"]
    )
    assert packed["files"] == 7 and packed["bytes"] > 0 and not (tmp_path / "OUT" / "length_study.tar.gz.tmp").exists()
    line = ls.run_line("cifar10/airplane/con2/length128/seed0", work / done / "record.json")
    assert line["event"] == "length_run" and line["auroc"] == {"nnd": 81.12, "lh": 70.0}  # headline scores only
    assert (line["device"], line["wall_seconds"], line["fit_seconds"], line["sessions"]) == ("cuda", 300.0, 250.0, 2)
    assert ls.unfinished_runs(work) == [
        {
            "run": "cifar10/automobile/con2/length128/seed0",
            "checkpoint": True,
            "log": "epoch 2/128 loss 1.0",
        }  # the epoch reached
    ]


def test_an_earlier_sessions_runs_are_seeded_with_their_config_dated_before_the_record(tmp_path: Path) -> None:
    """The archive unpacked under benchmarks/measured/length_study: a later session's scratch copy gets each
    finished run with its config file older than its record (so the workflow keeps the run), never one it
    already has, never a run without its config file (which the workflow would train again anyway)."""
    ls = load_benchmark("gpu_length_study")
    fake_run(tmp_path / "w", CON2_RUN, finished=True)
    fake_run(tmp_path / "w", FLOOR_RUN, finished=True)
    for config in (tmp_path / "w" / "results" / "configs").glob(f"{FLOOR_RUN}.*.yaml"):
        config.unlink()
    ls.pack(tmp_path / "w", tmp_path / "a.tar.gz")
    source = tmp_path / "measured"
    with tarfile.open(tmp_path / "a.tar.gz") as tar:
        tar.extractall(source, filter="data")
    work = tmp_path / "later"
    assert ls.seed_runs(work, source) == [CON2_RUN]
    record = work / "results" / "runs" / CON2_RUN / "record.json"
    (config,) = (work / "results" / "configs").glob(f"{CON2_RUN}.*.yaml")
    assert config.stat().st_mtime < record.stat().st_mtime and (record.parent / "scores.csv").is_file()
    assert not (work / "results" / "runs" / FLOOR_RUN).exists()
    assert ls.seed_runs(work, source) == []  # already there: kept as it is


def test_too_little_time_or_no_snakemake_skips_the_part_with_a_line(tmp_path: Path) -> None:
    base = [sys.executable, SCRIPT, "--data-dir", str(tmp_path / "data"), "--work", str(tmp_path / "w")]
    base += ["--jsonl", str(tmp_path / "lines.jsonl"), "--archive", str(tmp_path / "a.tar.gz"), "--device", "cpu"]
    for extra, why in (
        (["--budget-s", "100"], "under the 120 s the part needs"),
        (["--budget-s", "300", "--block", "snakemake"], "snakemake is not importable here"),
    ):
        res = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=300, env=env_with_root())
        assert res.returncode == 0, res.stderr[-2000:]
        (line,) = lines_of(res.stdout)
        assert line["event"] == "length_skipped" and why in line["reason"]
    assert [x["event"] for x in lines_of((tmp_path / "lines.jsonl").read_text())] == ["length_skipped"] * 2
    assert not (tmp_path / "a.tar.gz").exists()


def test_no_cifar_in_the_data_folder_skips_the_part_naming_the_fix(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    cmd = [sys.executable, SCRIPT, "--data-dir", str(tmp_path / "data"), "--work", str(tmp_path / "w")]
    cmd += ["--archive", str(tmp_path / "a.tar.gz"), "--device", "cpu", "--budget-s", "300"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env_with_root())
    assert res.returncode == 0, res.stderr[-2000:]
    (line,) = lines_of(res.stdout)
    assert line["event"] == "length_skipped" and "no CIFAR-10 in" in line["reason"] and "gpu_carry.py" in line["reason"]


def test_gpu_call_gives_the_length_study_its_budget_and_skips_it_when_short() -> None:
    """gpu_call.sh runs the length study after the smoke and before gpu_fidelity.py, with what is left less the
    plan's reserve, capped by LENGTH_S, skipped with a line under 120 s, and not at all with LENGTH=0."""
    text = (ROOT / "benchmarks" / "gpu_call.sh").read_text()
    body = text[text.index("set -u") :]
    smoke, length, plan = (body.index(s) for s in ("gpu_workflow.py", "gpu_length_study.py", "gpu_fidelity.py"))
    assert smoke < length < plan
    assert "LENGTH_T=$((BUDGET_S - SECONDS - LENGTH_RESERVE_S))" in body and '"$LENGTH_T" -lt 120' in body
    assert '--jsonl "$JSONL" --archive "$OUT/length_study.tar.gz"' in body
    assert 'if [ "$LENGTH" = 1 ]; then' in body


@pytest.mark.slow
def test_gpu_call_without_budget_says_the_length_study_is_skipped(tmp_path: Path, shared_data: Path) -> None:
    out = tmp_path / "OUT"
    env = {**env_with_root(), "OUT": str(out), "BUDGET_S": "0", "SMOKE": "0", "WHEELS": str(tmp_path / "none")}
    cmd = ["bash", str(ROOT / "benchmarks" / "gpu_call.sh"), "--data-dir", str(shared_data)]
    cmd += ["--out", str(tmp_path / "gf"), "--records", str(tmp_path / "none")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    lines = [json.loads(x) for x in (out / "gpu_fidelity_all.jsonl").read_text().splitlines()]
    assert lines[0]["event"] == "length_skipped" and "120 s" in lines[0]["reason"]
    assert [x["event"] for x in lines[1:3]] == ["environment", "gpu_prediction"]
    assert "length study: skipped" in (out / "environment.txt").read_text()
    env["LENGTH"] = "0"
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert res.returncode == 0 and "length study: not run (LENGTH=0)" in res.stdout


def trainers_of(work: Path) -> list[str]:
    """Processes still running anything of the rehearsal's scratch copy."""
    ps = subprocess.run(["ps", "-ww", "-A", "-o", "args="], capture_output=True, text=True).stdout
    return [x for x in ps.splitlines() if str(work) in x and "ps -ww" not in x]


@pytest.mark.slow
def test_rehearsal_stopped_by_the_hard_timeout_resumes_with_the_same_command(tmp_path: Path, shared_data: Path) -> None:
    """The part on the CPU at --tiny sizes (the floor and CON2 length128 on airplane, 2 epochs at 16 px) through
    the real workflow, one slot: SIGTERM (what the call's hard `timeout` sends) once CON2 has its first checkpoint
    stops Snakemake and its job, the run keeps its checkpoint, nothing is left running; the same command resumes
    it, the floor before or after it (one gpu slot: never both at once), writes the tables and the figure, and packs
    both runs' small files."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "cifar10").symlink_to(shared_data / "cifar10")
    work, archive = tmp_path / "w", tmp_path / "OUT" / "length_study.tar.gz"
    cmd = [sys.executable, SCRIPT, "--data-dir", str(data), "--tiny", "--device", "cpu", "--cores", "2"]
    cmd += ["--slots", "1", "--threads", "1", "--checkpoint-s", "0", "--budget-s", "1500", "--work", str(work)]
    cmd += ["--jsonl", str(tmp_path / "lines.jsonl"), "--archive", str(archive)]
    cmd += ["--block", "kornia", "medmnist", "kaggle", "pulp"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_with_root())
    checkpoint = work / "results" / "runs" / CON2_RUN / "checkpoint.pt"
    t0 = time.monotonic()
    while not checkpoint.exists() and proc.poll() is None and time.monotonic() - t0 < 1200:
        time.sleep(1)
    assert checkpoint.exists(), "no checkpoint within 20 minutes"
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr[-3000:]
    first = lines_of(stdout)
    paused = first[-1]
    assert paused["event"] == "length_paused" and paused["how"].startswith("interrupted"), paused
    assert CON2_RUN in [x["run"] for x in paused["unfinished"] if x["checkpoint"]]
    assert checkpoint.exists() and not trainers_of(work)
    with tarfile.open(archive) as tar:  # what finished by then (perhaps nothing), never a checkpoint
        assert not [n for n in tar.getnames() if n.endswith("checkpoint.pt")]

    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1500, env=env_with_root())
    assert res.returncode == 0, res.stderr[-3000:]
    second = lines_of(res.stdout)
    assert second[0]["event"] == "length_start" and second[-1]["event"] == "length_done", second[-1]
    runs = {x["run"]: x for x in second if x["event"] == "length_run"}
    assert set(runs) == {CON2_RUN, FLOOR_RUN} and {x["device"] for x in runs.values()} == {"cpu"}
    assert runs[CON2_RUN]["sessions"] == 2 and 0 <= runs[CON2_RUN]["auroc"]["nnd"] <= 100  # resumed once
    records = {k: json.loads((work / "results" / "runs" / k / "record.json").read_text()) for k in runs}
    assert records[CON2_RUN]["resumed_from_epoch"] >= 1

    from datetime import datetime

    con2_end = datetime.fromisoformat(records[CON2_RUN]["created"]).timestamp()
    con2_start = con2_end - records[CON2_RUN]["timing"]["wall_seconds"]  # its last session's start
    floor_end = datetime.fromisoformat(records[FLOOR_RUN]["created"]).timestamp()
    floor_start = floor_end - records[FLOOR_RUN]["timing"]["wall_seconds"]
    # one slot: never both at once (the floor starts first since issue 58: eta.job_priority; either order holds)
    assert floor_end <= con2_start + 2 or floor_start >= con2_end - 2, (floor_start, floor_end, con2_start, con2_end)
    done = second[-1]
    assert done["finished"] == 2 and done["new_this_call"] >= 1
    assert {"results/tables/length_curve.md", "results/figures/length_curve_cifar10.png"} <= set(done["report_files"])
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    for key in (CON2_RUN, FLOOR_RUN):
        assert f"results/runs/{key}/record.json" in names and f"results/runs/{key}/scores.csv" in names
    assert f"results/runs/{CON2_RUN}/curve.csv" in names and "results/tables/length_claims.md" in names
    assert not [n for n in names if n.endswith(("checkpoint.pt", "features.npz"))]
    assert os.path.getsize(archive) < 16 * 2**20  # one file back from $OUT: at most 16 MiB
