"""The GPU check of issue 11, one command: training throughput at two settings and one paper-config run.

Prints one JSON line per check (and one for the environment first):

1. ``throughput`` at 224 px, ResNet18 width 64, N = 64 (256 views per step), digits data;
2. ``throughput`` at 32 px, width 64, N = 512 (2048 views per step), digits data;
   both from ``benchmarks/throughput.py`` (ours = fit's step; plain = per-image torchvision with
   ``--workers`` DataLoader workers), images/s, ratio, TFLOP/s and the card's peak;
3. ``breastmnist_con2``: one complete CON2 run in the paper's BreastMNIST configuration (2048
   epochs, 224 px, width 64, N = 64, 40 test-time views, checkpoints every 16 epochs as in
   ``workflow/config/paper.yaml``), with its wall, fit and scoring seconds and its AUROCs. The
   BreastMNIST images are the 224 px MedMNIST+ file when ``--data-dir`` holds it, else the 28 px
   file resampled to 224 by the views (``data_size`` in the line says which).

The whole check keeps to ``--budget-s`` seconds of wall time (default 450): the run's length is
predicted from check 1 (the same step), and when the 2048 epochs would not fit in what is left,
the run is cut to the steps that fit (``complete: false``, with the predicted full fit time).

Runs from a checkout without installing anything and without kornia or jsonschema (the training
and scoring paths need neither), from the repository root::

    PYTHONPATH=. python benchmarks/gpu_check.py --data-dir shared/data             # on the GPU machine
    PYTHONPATH=. python benchmarks/gpu_check.py --data-dir ../shared/data --tiny   # CPU rehearsal, seconds
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import torch
from throughput import load_images, measure

from con2.config import make_config
from con2.data import DataError, OneClassData, load_one_class
from con2.maths.metrics import auroc
from con2.methods import build_method
from con2.run.execute import train_settings
from con2.training.device import select_device
from con2.training.engine import fit

# (name, config overrides, timed steps per round): the two throughput settings
THROUGHPUT = (
    ("224px_w64_N64", {"image_size": 224, "width": 64, "batch_size": 64}, 15),
    ("32px_w64_N512", {"image_size": 32, "width": 64, "batch_size": 512}, 10),
)
PAPER_BREASTMNIST = {
    "dataset": "breastmnist",
    "method": "con2",
    "epochs": 2048,
    "image_size": 224,
    "width": 64,
    "batch_size": 64,
    "tta": 40,
    "center_crop": 0.875,  # the appendix's resize 256 / centre-crop 224 (the paper profile's BreastMNIST)
    "checkpoint_every": 16,
    "progress": False,
    "seed": 0,
}
TINY = {"image_size": 16, "width": 8, "batch_size": 8}
TINY_RUN = {"epochs": 1, "image_size": 16, "width": 8, "batch_size": 32, "tta": 2, "checkpoint_every": 1}


def emit(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)


def environment(device: torch.device) -> dict[str, Any]:
    return {
        "check": "environment",
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
    }


def throughput_check(
    name: str, overrides: dict[str, Any], steps: int, a: argparse.Namespace, device: torch.device
) -> dict[str, Any]:
    cfg = make_config({"dataset": "digits", "device": str(device), **overrides, **(TINY if a.tiny else {})})
    images = load_images(cfg, 28)
    r = measure(
        cfg,
        images,
        device,
        steps=1 if a.tiny else steps,
        warmup=1 if a.tiny else 3,
        repeats=1 if a.tiny else 3,
        workers=0 if a.tiny else a.workers,
        compile_model=a.compile,
    )
    return {"check": "throughput", "setting": name, **r}


def steps_that_fit(total_steps: int, steps_per_second: float, seconds: float) -> int | None:
    """``None`` when ``total_steps`` fit into ``seconds``; else 90% of the steps that do (at least 1)."""
    if total_steps / steps_per_second <= seconds:
        return None
    return max(1, int(0.9 * seconds * steps_per_second))


def breastmnist_data(cfg_values: dict[str, Any], data_dir: str) -> tuple[OneClassData, int]:
    """The file at the training size if present, else the 28 px one (resampled by the views): ``(data, data_size)``."""
    size = cfg_values["image_size"]
    try:
        return load_one_class("breastmnist", data_dir, size=size), size
    except DataError:  # missing, or a size MedMNIST does not come in
        return load_one_class("breastmnist", data_dir, size=28), 28


def run_check(
    a: argparse.Namespace, device: torch.device, seconds_left: float, step_rate: float | None
) -> dict[str, Any]:
    """One CON2 run as ``con2.run.runner.run`` trains and scores it (without the record, which needs jsonschema)."""
    t_wall = time.perf_counter()
    values = {**PAPER_BREASTMNIST, "data_dir": a.data_dir, "device": str(device), "compile": a.compile}
    if a.tiny:
        values.update(TINY_RUN)
    data, data_size = breastmnist_data(values, a.data_dir)
    cfg = make_config({**values, "data_size": data_size})
    total_steps = cfg.epochs * max(1, len(data.train) // cfg.batch_size)
    predicted = total_steps / step_rate if step_rate else None
    max_steps = steps_that_fit(total_steps, step_rate, seconds_left - a.score_allowance_s) if step_rate else None
    torch.manual_seed(cfg.seed)
    method = build_method(cfg)
    to_nchw = lambda x: torch.from_numpy(x.transpose(0, 3, 1, 2).copy())  # noqa: E731
    train, test = to_nchw(data.train), to_nchw(data.test)
    settings = dataclasses.replace(train_settings(cfg), max_steps=max_steps)  # fit's settings, cut to the budget
    with tempfile.TemporaryDirectory() as tmp:
        result = fit(method, train, settings, device, Path(tmp) / "checkpoint.pt")
    t_score = time.perf_counter()
    out = method.score(train, test, device)
    score_seconds = time.perf_counter() - t_score
    return {
        "check": "breastmnist_con2",
        "complete": max_steps is None,
        "epochs": result.epochs,
        "steps": result.steps,
        "paper_steps": total_steps,
        "image_size": cfg.image_size,
        "data_size": data_size,
        "width": cfg.width,
        "batch_size": cfg.batch_size,
        "tta": cfg.tta,
        "compile": cfg.compile,
        "wall_seconds": time.perf_counter() - t_wall,
        "fit_seconds": result.fit_seconds,
        "score_seconds": score_seconds,
        "images_per_second": result.images_per_second,
        "predicted_full_fit_seconds": predicted,
        "auroc": {k: auroc(data.test_labels, v) for k, v in out.scores.items()},
        **out.extras,
        "last_terms": result.last_terms,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", required=True, help="folder holding medmnist/breastmnist.npz (or breastmnist_224.npz)")
    p.add_argument("--tiny", action="store_true", help="rehearsal: tiny sizes on the CPU, finishes in seconds")
    p.add_argument("--device", default=None, help="default: cuda (cpu with --tiny)")
    p.add_argument("--budget-s", type=float, default=450.0, help="wall-clock budget of the whole check")
    p.add_argument("--score-allowance-s", type=float, default=45.0, help="seconds kept for the run's scoring")
    p.add_argument("--workers", type=int, default=8, help="DataLoader workers of the per-image pipeline")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (config key compile=true)")
    p.add_argument("--skip-run", action="store_true", help="throughput only")
    a = p.parse_args()
    t0 = time.perf_counter()
    if a.tiny:
        torch.set_num_threads(1)  # tiny tensors: one thread is faster than two fighting on a shared CPU
    device = select_device(a.device or ("cpu" if a.tiny else "cuda"))
    emit(environment(device))
    step_rate = None
    for name, overrides, steps in THROUGHPUT:
        try:
            line = throughput_check(name, overrides, steps, a, device)
            if name.startswith("224"):  # the run's own step: its steps per second predict the run
                step_rate = line["ours_images_per_s"] / line["batch_size"]
            emit(line)
        except Exception as exc:  # report and go on: one failure must not cost the other checks
            emit(
                {
                    "check": "throughput",
                    "setting": name,
                    "error": f"{type(exc).__name__}: {exc}",
                    "traceback": traceback.format_exc(),
                }
            )
    if not a.skip_run:
        try:
            left = a.budget_s - (time.perf_counter() - t0)
            emit(run_check(a, device, left, step_rate))
        except Exception as exc:
            emit(
                {
                    "check": "breastmnist_con2",
                    "error": f"{type(exc).__name__}: {exc}",
                    "traceback": traceback.format_exc(),
                }
            )
    emit({"check": "done", "total_seconds": time.perf_counter() - t0})


if __name__ == "__main__":
    main()
