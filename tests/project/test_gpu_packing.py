"""benchmarks/gpu_packing.py rehearsed on the CPU (tiny runs, k = 1 and 2), and the local packing
mechanism it measures: `--resources gpu=k` lets k training jobs that ask for the GPU run at once."""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from workflow_helpers import TEST_CONFIG, copy_workflow, snakemake

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_gpu_packing_rehearsal(shared_data: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_packing.py"), "--data-dir", str(shared_data), "--tiny"]
        + ["--ks", "1", "2"],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    lines = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    assert [line["check"] for line in lines] == ["environment", "packing", "packing", "done"]
    one, two = lines[1], lines[2]
    assert (one["k"], two["k"]) == (1, 2) and "error" not in one and "error" not in two
    assert len(one["per_run_images_per_s"]) == 1 and len(two["per_run_images_per_s"]) == 2
    assert one["aggregate_images_per_s"] > 0 and two["aggregate_images_per_s"] > 0
    # same config and seed on the CPU: every packed run scores what the single run scored
    assert all(math.isclose(x, one["auroc"][0], abs_tol=1e-9) for x in two["auroc"])
    assert two["max_abs_auroc_diff"] < 1e-9


def test_aggregate_counts_every_image_over_the_whole_span() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import gpu_packing
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    runs = [{"start": 10.0, "end": 14.0, "images": 400}, {"start": 11.0, "end": 20.0, "images": 500}]
    assert gpu_packing.aggregate(runs) == 900 / 10.0


def most_at_once(console: str, rule: str = "train") -> int:
    """The most jobs of ``rule`` running at once, from Snakemake's log (start and finish lines in order)."""
    running: set[str] = set()
    most = 0
    for line in console.splitlines():
        if m := re.match(rf"Job (\d+): {rule} ", line):
            running.add(m.group(1))
            most = max(most, len(running))
        elif m := re.match(rf"Finished jobid: (\d+) \(Rule: {rule}\)", line):
            running.discard(m.group(1))
    return most


@pytest.mark.slow
def test_gpu_resource_packs_k_training_jobs(tmp_path: Path) -> None:
    """Three training jobs that each ask for the GPU, 3 cores, `--resources gpu=2`: two at a time."""
    wd = copy_workflow(tmp_path)
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["resources"]["gpu"] = 1  # every training job asks for the GPU (the device stays the CPU)
    cfg["experiments"] = {
        "main": {
            "datasets": ["digits"],
            "normal_classes": ["0", "1"],
            "methods": {"con2": ["invert"], "simclr": ["default"]},
        }
    }
    (wd / "packed.yaml").write_text(yaml.safe_dump(cfg))
    res = snakemake(wd, "runs", "--cores", "3", "--resources", "gpu=2", "--configfile", "packed.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    console = res.stdout + res.stderr
    assert len(re.findall(r"Finished jobid: \d+ \(Rule: train\)", console)) == 4
    assert most_at_once(console) == 2, "the gpu resource did not hold training to 2 at a time"


def load_benchmark(name: str):
    """A module of benchmarks/ (they import each other by name, as when run as scripts)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def fidelity_call(shared_data: Path, tmp_path: Path, *args: str) -> list[dict]:
    """``gpu_fidelity.py --tiny`` on part (a) alone (the length plan without SimCLR), lines from stdout;
    the same lines must be in $OUT's jsonl."""
    out = tmp_path / "OUT"
    env = {**os.environ, "OUT": str(out), "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, str(ROOT / "benchmarks" / "gpu_fidelity.py"), "--data-dir", str(shared_data), "--tiny"]
    cmd += ["--plan", "length", "--only", "as printed", "content only", "--checkpoint-s", "0", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    written = [json.loads(line) for line in (out / "gpu_fidelity_length.jsonl").read_text().splitlines()]
    assert written[-len(lines) :] == lines
    return lines


@pytest.mark.slow
def test_gpu_fidelity_part_a_packed_rehearsal(shared_data: Path, tmp_path: Path) -> None:
    """Issue 33, point 3, on the CPU: part (a) trains CON2 as printed and content only AT ONCE as two
    worker processes; both records come back under $OUT; before running, the plan prints its prediction
    for an H100 and an H200 with the rates and packing factor assumed; a budget too small for the packed
    pair (but not for CON2 as printed) starts CON2 as printed alone, nothing packed."""
    lines = fidelity_call(shared_data, tmp_path, "--out", str(tmp_path / "gf"), "--budget-s", "600")
    events = [x["event"] for x in lines]
    kinds = {x["gpu"]: x for x in lines if x["event"] == "gpu_prediction"}
    assert sorted(kinds) == ["H100", "H200"] and events.index("gpu_prediction") < events.index("packed")
    h100, h200 = kinds["H100"], kinds["H200"]
    assert "assumed" in h100["rates"] and "4.8 / 3.35" in h100["rates"] and "measured" in h200["rates"]
    assert h100["gpu_slowdown_vs_h200"] == pytest.approx(4.8 / 3.35, abs=1e-3) and h200["gpu_slowdown_vs_h200"] == 1
    gp = load_benchmark("gpu_predictions")
    for name, kind in kinds.items():  # assumed 1.0 until part (d)'s lines for that card are committed
        factor, basis = gp.measured_packing_factor(ROOT / "benchmarks" / "measured", name)
        assert kind["packing_factor"] == round(factor, 3) and kind["packing_basis"] == basis
        assert kind["predicted_s_per_part"]["a"] > 0
        if basis == gp.PACKING_BASIS:  # 1.0: the GPU work adds up, the CPU work (start-up) overlaps
            assert kind["packing_factor"] == 1.0 and kind["a_packed_s"] < kind["a_one_after_another_s"]
    assert h200["detected"] and not h100["detected"]  # the CPU gets the H200's rates
    assert h200["a_starts"] == ["as printed (packed)", "content only (packed)"]

    starts = [x for x in lines if x["event"] == "start"]
    ends = [x for x in lines if x["event"] == "run"]
    assert sorted(x["setting"] for x in starts) == sorted(x["setting"] for x in ends) == ["as printed", "content only"]
    assert all(x["packed"] for x in starts + ends) and len({x["pid"] for x in starts}) == 2  # two processes
    assert {x["pid"] for x in starts} == {x["pid"] for x in ends} != {os.getpid()}
    # at once: each started before the other ended (the parent's order of lines and the workers' clocks)
    assert max(events.index("start"), len(events) - 1 - events[::-1].index("start")) < events.index("run")
    assert max(x["wall_clock"] for x in starts) < min(x["wall_clock"] for x in ends)
    for end in ends:  # each record came back under $OUT, the run's own
        record = json.loads(
            (
                tmp_path / "OUT" / "records_length" / f"{end['setting'].replace(' ', '_')}_seed0" / "record.json"
            ).read_text()
        )
        assert record["metrics"]["auroc"]["nnd"] == pytest.approx(end["auroc"]["nnd"]) and record["epochs"] == 2
    assert set(lines[-1]["summary"]) == {"as printed seed0", "content only seed0"}

    # 512 tiny epochs at the H200's rate: CON2 as printed ~92 s, the packed pair ~177 s; a 150 s finish-only
    # call starts CON2 as printed alone (stopped after epoch 1 to keep the rehearsal short), never the pair (at the
    # assumed factor 1.0, given: a committed measurement must not change this rehearsal)
    small = fidelity_call(
        shared_data,
        tmp_path,
        "--out",
        str(tmp_path / "small"),
        "--epochs",
        "512",
        "--budget-s",
        "150",
        "--finish-only",
        "--pause-at",
        "1",
        "--packing-factor",
        "1.0",
    )
    h200 = next(x for x in small if x["event"] == "gpu_prediction" and x["gpu"] == "H200")
    assert h200["a_packed_s"] > 150 >= next(x for x in small if x["event"] == "prediction")["predicted_s"]
    assert h200["a_starts"] == ["as printed"]
    assert "packed" not in [x["event"] for x in small]
    started = [x for x in small if x["event"] == "start"]
    assert [x["setting"] for x in started] == ["as printed"] and "pid" not in started[0]
    assert [x["setting"] for x in small if x["event"] == "skipped"] == ["content only"]


def test_part_a_packs_only_a_pair_that_fits() -> None:
    """The packed pair's prediction (CPU work overlapped, GPU work shared at the packing factor) and the
    start rule: packed when it fits, else what fits one after the other, CON2 as printed first."""
    gp = load_benchmark("gpu_predictions")
    gf = load_benchmark("gpu_fidelity")
    a, c = gp.Cost(gpu=200.0, cpu=50.0), gp.Cost(gpu=220.0, cpu=40.0)
    assert gp.packed_seconds([a, c], 1.0) == 50 + 420  # conservative: no faster than one after another's GPU work
    assert gp.packed_seconds([a, c], 2.0) == 50 + 210  # perfect sharing: as long as the longer run, about
    assert gf.pack_now([a, c], 470.0, 1.0, True) and not gf.pack_now([a, c], 469.0, 1.0, True)
    assert not gf.pack_now([a, c], 1e9, 1.0, False) and not gf.pack_now([a], 1e9, 1.0, True)  # --no-pack; one left
    printed, content = gf.Item("a", "as printed"), gf.Item("a", "content only")
    pending = [(printed, a), (content, c)]
    assert gf.part_a_starts(pending, 470.0, 1.0, True) == ["as printed (packed)", "content only (packed)"]
    assert gf.part_a_starts(pending, 469.0, 1.0, True) == ["as printed"]  # 250 s fits, 250 + 260 does not
    assert gf.part_a_starts(pending, 249.0, 1.0, True) == []
    # the real plan: the H200 packs part (a) in one 540 s call; at the H100's assumed rates it does not
    h200 = [gp.run_cost(label, 2048, 6, True, 0, "H200") for label in ("as printed", "content only")]
    h100 = [gp.run_cost(label, 2048, 6, True, 0, "H100") for label in ("as printed", "content only")]
    assert sum(c.total for c in h200) > 540 >= gp.packed_seconds(h200, gp.PACKING_FACTOR)
    assert gp.packed_seconds(h100, gp.PACKING_FACTOR) > 540 >= h100[0].total
    assert h100[0].cpu == h200[0].cpu and h100[0].gpu == pytest.approx(h200[0].gpu * 4.8 / 3.35)
    assert [gp.gpu_kind(n) for n in ("NVIDIA H200", "NVIDIA H100 80GB HBM3", "cpu", "NVIDIA A100")] == [
        "H200",
        "H100",
        "H200",
        "H100",
    ]


def test_a_committed_packing_measurement_replaces_the_assumed_factor(tmp_path: Path) -> None:
    gp = load_benchmark("gpu_predictions")
    assert gp.measured_packing_factor(tmp_path, "H100") == (1.0, gp.PACKING_BASIS)
    device = {"environment": {"device": "NVIDIA H100 80GB HBM3"}}
    lines = [
        {"event": "packing", "k": 1, "aggregate_images_per_s": 3000.0, **device},
        {"event": "packing", "k": 2, "aggregate_images_per_s": 4500.0, **device},
    ]
    (tmp_path / "h100_x_gpu_fidelity.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    factor, basis = gp.measured_packing_factor(tmp_path, "H100")
    assert factor == 1.5 and "h100_x_gpu_fidelity.jsonl" in basis
    assert gp.measured_packing_factor(tmp_path, "H200") == (1.0, gp.PACKING_BASIS)  # another card's: not used


def test_gpu_fidelity_refuses_a_packing_factor_of_zero() -> None:
    """A factor divides the pair's GPU seconds: 0 or below is refused before anything is imported or run."""
    script = str(ROOT / "benchmarks" / "gpu_fidelity.py")
    res = subprocess.run(
        [sys.executable, script, "--data-dir", "none", "--packing-factor", "0"], capture_output=True, text=True
    )
    assert res.returncode == 2 and "--packing-factor must be above 0 (got 0.0)" in res.stderr


def test_a_gpu_call_reuses_what_benchmarks_measured_holds(shared_data: Path, tmp_path: Path) -> None:
    """Issue 33: what a device call measured and a session committed (part (d)'s lines on an H100 and
    CON2 as printed's record, 2026-11-27) is reused by the next call on that card, not trained again:
    its device time goes to the runs still missing."""
    gp = load_benchmark("gpu_predictions")
    committed = gp.measured_packing(ROOT / "benchmarks" / "measured", "H100")
    assert sorted(committed) == [1, 2, 4, 8]
    cmd = [sys.executable, str(ROOT / "benchmarks" / "gpu_fidelity.py"), "--data-dir", str(shared_data)]
    cmd += ["--gpu", "H100", "--budget-s", "1", "--finish-only", "--out", str(tmp_path / "gf")]
    cmd += ["--jsonl", str(tmp_path / "lines.jsonl")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    status = {x["setting"]: x["status"] for x in lines if x["event"] == "prediction"}
    assert status["as printed"] == "done" and status["content only"] == "to run"
    assert all(status[f"packing k={k}"] == "done" for k in (1, 2, 4, 8))
    reused = [x for x in lines if x.get("reused")]
    assert {x["setting"] for x in reused} == {"as printed"} | {f"packing k={k}" for k in (1, 2, 4, 8)}
    assert not [x for x in lines if x["event"] == "start"]
    h100 = next(x for x in lines if x["event"] == "gpu_prediction" and x["gpu"] == "H100")
    assert h100["packing_factor"] == pytest.approx(1494.738 / 1071.872, abs=1e-3) and "warm-up" in h100["packing_basis"]
