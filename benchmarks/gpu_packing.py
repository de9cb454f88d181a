"""Several training runs on one GPU: aggregate images/s for k = 1, 2, 4, 8 BreastMNIST-sized runs.

One training run of the paper's BreastMNIST setting (224 px, ResNet18 width 64, N = 64: 256 views
per step) keeps an H200 about 13% busy. This measures what k such runs get when they share one
GPU as k processes started together (what `snakemake --resources gpu=k` does with the local
profile): for each k, k worker processes each load the data and build the model, wait at a
barrier, then train the same short CON2 run (the engine's ``fit``, as ``con2 train`` does) and
score it. Per k it prints one JSON line:

- ``aggregate_images_per_s``: the images all k runs trained, divided by the time from the first
  run's start to the last run's end (the barrier releases them together);
- ``per_run_images_per_s``, ``fit_seconds``, ``peak_memory_mb`` of each run;
- ``auroc``: each run's S_NND AUROC, and ``max_abs_auroc_diff``: the largest difference from the
  k = 1 run (every run has the same config and seed, so sharing the GPU must not change it; on
  the CPU it is 0, on a GPU only non-deterministic kernels can move it).

No MPS is set up: the processes time-slice the GPU as the CUDA driver schedules them.

    PYTHONPATH=. python benchmarks/gpu_packing.py --data-dir shared/data             # on the GPU machine
    PYTHONPATH=. python benchmarks/gpu_packing.py --data-dir ../shared/data --tiny   # CPU rehearsal, seconds
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The short BreastMNIST run every worker trains (the paper's setting but 16 epochs: 96 steps of 64)
RUN = {
    "dataset": "breastmnist",
    "method": "con2",
    "epochs": 16,
    "image_size": 224,
    "width": 64,
    "batch_size": 64,
    "tta": 8,
    "center_crop": 0.875,
    "checkpoint_every": 16,
    "progress": False,
    "seed": 0,
}
TINY_RUN = {"epochs": 2, "image_size": 16, "width": 8, "batch_size": 32, "tta": 2, "checkpoint_every": 1}


def emit(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)


def aggregate(runs: list[dict[str, Any]]) -> float:
    """Images of all runs over the span from the first start to the last end (wall clock, seconds)."""
    span = max(r["end"] for r in runs) - min(r["start"] for r in runs)
    return sum(r["images"] for r in runs) / span


def worker(a: argparse.Namespace) -> None:
    """One run: load, build, wait at the barrier, fit, score; its numbers as JSON to ``a.out``."""
    import torch
    from gpu_check import breastmnist_data

    from con2.config import make_config
    from con2.maths.metrics import auroc
    from con2.methods import build_method
    from con2.run.execute import train_settings
    from con2.training.device import select_device, use_cpu_threads
    from con2.training.engine import fit

    use_cpu_threads(a.threads)
    device = select_device(a.device)
    values = {**RUN, **(TINY_RUN if a.tiny else {}), "data_dir": a.data_dir, "device": str(device)}
    data, data_size = breastmnist_data(values, a.data_dir)
    cfg = make_config({**values, "data_size": data_size})
    torch.manual_seed(cfg.seed)
    method = build_method(cfg)
    to_nchw = lambda x: torch.from_numpy(x.transpose(0, 3, 1, 2).copy())  # noqa: E731
    train, test = to_nchw(data.train), to_nchw(data.test)
    barrier = Path(a.barrier)
    (barrier / f"ready.{os.getpid()}").touch()
    while not (barrier / "go").exists():
        time.sleep(0.01)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.time()
        result = fit(method, train, train_settings(cfg), device, Path(tmp) / "checkpoint.pt")
        end = time.time()
    scores = method.score(train, test, device).scores
    line = {
        "start": start,
        "end": end,
        "images": result.steps * cfg.batch_size,
        "images_per_s": result.images_per_second,
        "fit_seconds": result.fit_seconds,
        "auroc": {k: auroc(data.test_labels, v) for k, v in scores.items() if "@" not in k},
        "peak_memory_mb": torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None,
    }
    Path(a.out).write_text(json.dumps(line))


def packed(k: int, a: argparse.Namespace, timeout: float) -> list[dict[str, Any]]:
    """Starts k workers, releases them together once all are ready, returns their lines."""
    with tempfile.TemporaryDirectory() as tmp:
        barrier = Path(tmp)
        outs = [barrier / f"run{i}.json" for i in range(k)]
        threads = 1 if a.tiny else max(1, a.cpus // k)  # tiny tensors: one thread beats two fighting
        args = ["--data-dir", a.data_dir, "--device", a.device, "--threads", str(threads)]
        args += ["--tiny"] if a.tiny else []
        procs = [
            subprocess.Popen([sys.executable, __file__, "--worker", "--barrier", tmp, "--out", str(o), *args])
            for o in outs
        ]
        try:
            deadline = time.time() + timeout
            while len(list(barrier.glob("ready.*"))) < k:
                failed = [p.returncode for p in procs if p.poll() not in (None, 0)]
                if failed or time.time() > deadline:
                    raise RuntimeError(f"k={k}: a worker failed or never got ready (exit codes {failed})")
                time.sleep(0.05)
            (barrier / "go").touch()
            codes = [p.wait(timeout=timeout) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        if any(codes):
            raise RuntimeError(f"k={k}: worker exit codes {codes}")
        return [json.loads(o.read_text()) for o in outs]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", required=True, help="folder holding medmnist/breastmnist.npz")
    p.add_argument("--ks", type=int, nargs="+", default=[1, 2, 4, 8], help="runs sharing the device")
    p.add_argument("--tiny", action="store_true", help="rehearsal: tiny sizes on the CPU, finishes in seconds")
    p.add_argument("--device", default=None, help="default: cuda (cpu with --tiny)")
    p.add_argument("--cpus", type=int, default=os.cpu_count() or 1, help="CPU threads shared by the k workers")
    p.add_argument("--timeout-s", type=float, default=600.0, help="per k: start-up and each worker's run")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--barrier", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    a = p.parse_args()
    a.device = a.device or ("cpu" if a.tiny else "cuda")
    if a.worker:
        worker(a)
        return
    import torch

    emit(
        {
            "check": "environment",
            "device": torch.cuda.get_device_name(0) if a.device.startswith("cuda") else "cpu",
            "torch": torch.__version__,
            "cpus": a.cpus,
            "run": {**RUN, **(TINY_RUN if a.tiny else {})},
        }
    )
    t0 = time.perf_counter()
    reference = None
    for k in a.ks:
        try:
            runs = packed(k, a, a.timeout_s)
        except Exception as exc:  # report and go on to the next k
            emit({"check": "packing", "k": k, "error": f"{type(exc).__name__}: {exc}"})
            continue
        nnd = [r["auroc"]["nnd"] for r in runs]
        reference = nnd[0] if reference is None and k == 1 else reference
        emit(
            {
                "check": "packing",
                "k": k,
                "aggregate_images_per_s": aggregate(runs),
                "per_run_images_per_s": [r["images_per_s"] for r in runs],
                "fit_seconds": [r["fit_seconds"] for r in runs],
                "peak_memory_mb": [r["peak_memory_mb"] for r in runs],
                "auroc": nnd,
                "max_abs_auroc_diff": None if reference is None else max(abs(x - reference) for x in nnd),
            }
        )
    emit({"check": "done", "total_seconds": time.perf_counter() - t0})


if __name__ == "__main__":
    main()
