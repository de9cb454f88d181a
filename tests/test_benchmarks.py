"""The benchmark scripts that a GPU lease depends on: the GPU check rehearsed on the CPU."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Runs the script as the GPU image would: kornia and jsonschema cannot be imported.
WITHOUT_KORNIA_JSONSCHEMA = """
import runpy, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("kornia", "jsonschema"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: the GPU image lacks it)", name=name)
sys.meta_path.insert(0, Block())
sys.argv = sys.argv[1:]
sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0])
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def load_script(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


@pytest.mark.slow
def test_gpu_check_rehearsal_without_kornia_or_jsonschema(shared_data):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            WITHOUT_KORNIA_JSONSCHEMA,
            str(ROOT / "benchmarks" / "gpu_check.py"),
            "--data-dir",
            str(shared_data),
            "--tiny",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    lines = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    assert [line["check"] for line in lines] == ["environment", "throughput", "throughput", "breastmnist_con2", "done"]
    assert not [line for line in lines if "error" in line], [line.get("traceback") for line in lines]
    for t in lines[1:3]:
        assert t["ours_images_per_s"] > 0 and t["plain_images_per_s"] > 0 and t["ratio"] > 0
        assert t["gflop_per_step"] > 0 and t["peak_bf16_tflops"] is None  # CPU: peak unknown
    run = lines[3]
    assert run["complete"] and run["steps"] == run["paper_steps"] > 0 and run["data_size"] == 28
    assert {k for k in run["auroc"] if "@" not in k} == {"nnd", "lh"}  # headline readings (others: score@reading)
    assert all(0 <= v <= 100 for v in run["auroc"].values())


def test_gpu_check_cuts_a_run_that_would_not_fit():
    gpu_check = load_script("gpu_check")
    assert gpu_check.steps_that_fit(12288, steps_per_second=100.0, seconds=400.0) is None  # 123 s: fits
    assert gpu_check.steps_that_fit(12288, steps_per_second=10.0, seconds=400.0) == 3600  # 1229 s: cut to 90% of 4000
    assert gpu_check.steps_that_fit(12288, steps_per_second=10.0, seconds=-5.0) == 1


def test_peak_table_matches_specific_names_first():
    throughput = load_script("throughput")
    names = [name for name, _ in throughput.PEAK_BF16_TFLOPS]
    for i, name in enumerate(names):  # no earlier entry is contained in a later, more specific one
        assert not any(earlier in name for earlier in names[:i]), name


@pytest.mark.slow
def test_gpu_fidelity_rehearsal_runs_its_plan_pauses_and_resumes(shared_data, tmp_path):
    """The length plan on the CPU at tiny sizes, as the GPU image runs it (no kornia, no jsonschema):
    a run paused after epoch 1 (as when the budget is spent) resumes on the next call, keeps its
    curve point and ends with a full-plan curve whose last point is the final score; JSON lines
    on stdout and in $OUT; a budget of 0 starts nothing and says so for every run of a plan."""
    out = tmp_path / "OUT"
    env = {**os.environ, "OUT": str(out), "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    script = str(ROOT / "benchmarks" / "gpu_fidelity.py")
    base = [sys.executable, "-c", WITHOUT_KORNIA_JSONSCHEMA, script, "--data-dir", str(shared_data), "--tiny"]
    base += ["--out", str(tmp_path / "gf"), "--checkpoint-s", "0"]

    def call(*args):
        res = subprocess.run([*base, *args], capture_output=True, text=True, timeout=900, env=env, cwd=ROOT)
        assert res.returncode == 0, res.stderr[-3000:]
        return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]

    first = call("--only", "as printed", "--pause-at", "1")
    assert [x["event"] for x in first] == ["environment", "start", "point", "paused", "done"]
    assert first[2]["epoch"] == 1 and first[3]["epoch"] == 1 and first[-1]["summary"] == {}
    second = call("--only", "as printed")
    assert [x["event"] for x in second] == ["environment", "start", "point", "run", "done"]
    assert second[1]["resuming"] and second[2]["epoch"] == 2
    run = second[3]
    assert run["resumed_from_epoch"] == 1 and [c["epoch"] for c in run["curve"]] == [1, 2]
    assert run["curve_readings"]["1"] == first[2]["auroc"]  # the point scored before the pause, kept
    assert run["curve_readings"]["2"] == pytest.approx(run["auroc"])  # full plan: the last point is the final score
    assert {"nnd", "nnd@encoder/original", "nnd@content/matched", "nnd@encoder/matched/csi"} <= set(run["auroc"])
    assert second[-1]["summary"] == {"as printed seed0": round(run["auroc"]["nnd"], 1)}
    written = [json.loads(line) for line in (out / "gpu_fidelity_length.jsonl").read_text().splitlines()]
    assert written == first + second  # every line also in $OUT

    gpu_fidelity = load_script("gpu_fidelity")
    assert gpu_fidelity.curve_epochs(2048) == [64, 128, 256, 512, 1024, 2048] and gpu_fidelity.curve_epochs(2) == [1, 2]
    nothing = call("--budget-s", "0")
    assert nothing[1]["event"] == "run" and nothing[1]["reused"]  # a finished run is read back, never retrained
    assert [(x["setting"], x["seed"]) for x in nothing if x["event"] == "skipped"] == gpu_fidelity.PLANS["length"][1:]
    readings = call("--plan", "readings", "--budget-s", "0")
    assert [(x["setting"], x["seed"]) for x in readings if x["event"] == "skipped"] == gpu_fidelity.PLANS["readings"]


def test_gpu_fidelity_predicts_the_length_plan_from_the_measured_rate():
    gpu_fidelity = load_script("gpu_fidelity")
    con2 = gpu_fidelity.predicted_seconds("as printed", 2048, 6, compile=True)
    simclr = gpu_fidelity.predicted_seconds("SimCLR + kNN", 2048, 6, compile=True)
    assert 16 * 16.5 / 1.3 < con2 < 300 and 16 * 10.9 / 1.3 < simclr < 210  # the docstring's ~280 s and ~200 s
    assert gpu_fidelity.predicted_seconds("as printed", 2048, 6, compile=False) > con2
