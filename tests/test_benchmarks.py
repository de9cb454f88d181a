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
def test_gpu_fidelity_rehearsal_runs_its_plan_within_the_budget(shared_data, tmp_path):
    """Two settings of the plan on the CPU at tiny sizes: one JSON line each with every reading,
    then a zero budget that starts nothing and says so for every run of the plan."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    base = [sys.executable, str(ROOT / "benchmarks" / "gpu_fidelity.py"), "--data-dir", str(shared_data), "--tiny"]
    base += ["--out", str(tmp_path / "gf")]

    def call(*args):
        res = subprocess.run([*base, *args], capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
        assert res.returncode == 0, res.stderr[-3000:]
        return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]

    lines = call("--seeds", "0", "--only", "as printed", "SimCLR + kNN")
    runs, summary = lines[:-1], lines[-1]["summary"]
    assert [(x["setting"], x["seed"], x["main"]) for x in runs] == [
        ("as printed", 0, "nnd"),
        ("SimCLR + kNN", 0, "knn"),
    ]
    assert {"nnd", "nnd@encoder/original", "nnd@content/matched", "lh@context/original"} <= set(runs[0]["auroc"])
    assert summary == {
        "as printed seed0": round(runs[0]["auroc"]["nnd"], 1),
        "SimCLR + kNN seed0": round(runs[1]["auroc"]["knn"], 1),
    }

    gpu_fidelity = load_script("gpu_fidelity")
    skipped = call("--budget-s", "0")[:-1]
    assert [(x["skipped"], x["seed"]) for x in skipped] == list(gpu_fidelity.PLAN)
