"""benchmarks/gpu_packing.py rehearsed on the CPU (tiny runs, k = 1 and 2), and the local packing
mechanism it measures: `--resources gpu=k` lets k training jobs that ask for the GPU run at once."""

from __future__ import annotations

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

ROOT = Path(__file__).resolve().parents[1]


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
