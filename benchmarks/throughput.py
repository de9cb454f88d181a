"""Training throughput: the CON2 step as ``con2.training.engine.fit`` runs it, against a per-image torchvision pipeline.

Both sides train the same CON2 model (encoder + two heads, same loss) on the same images:

* ours: ``con2.training.engine.train_step``, the function ``fit`` calls, with ``fit``'s model preparation
  and optimiser (channels-last, bfloat16 autocast on CUDA, fused AdamW on CUDA, optional
  ``torch.compile``): the uint8 training set lives on the device, each step gathers its batch
  there, and the contexts and the batched views (``con2.transforms.views``) run on the whole batch;
* plain: a ``Dataset`` whose ``__getitem__`` applies a torchvision ``transforms.v2`` pipeline to one
  image at a time (context, then two random views), batched by a ``DataLoader`` (the usual
  SimCLR reference-code layout), float32, default memory format, plain AdamW.

The two are timed alternately in one process (``--repeats`` rounds of ``--steps`` steps each,
after ``--warmup`` untimed steps per round), so a noisy shared machine slows both alike; the
medians are printed. Images per second count original images (N per step; each step encodes 4N
views for CON2's two contexts). TFLOP/s come from ``torch.utils.flop_counter`` on one step
(convolutions and matrix products, forward and backward; 2 FLOPs per multiply-add) beside the
device's dense bf16 peak where known. Example::

    python benchmarks/throughput.py --dataset breastmnist --data-dir ../shared/data --width 16 --steps 6
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
import torchvision.transforms.v2 as T

from con2.config import RunConfig, make_config
from con2.data import load_one_class
from con2.maths.losses import alpha_schedule, batch_labels, content_loss, context_loss
from con2.methods import build_method
from con2.methods.base import Method
from con2.methods.con2_method import Con2
from con2.run.provenance import cpu_model
from con2.training.device import autocast_enabled, select_device
from con2.training.engine import TrainSettings, compile_submodules, make_optimizer, prepare_model, train_step
from con2.transforms.augment import contexts_for

# Dense (no sparsity) bf16 tensor-core peaks in TFLOP/s from the vendors' data sheets; the first
# name contained in torch.cuda.get_device_name() wins, so specific names come first.
PEAK_BF16_TFLOPS: tuple[tuple[str, float], ...] = (
    ("H200 NVL", 835.0),
    ("H200", 989.0),
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.0),
    ("H100", 989.0),
    ("A100", 312.0),
    ("L40S", 362.0),
    ("L4", 121.0),
    ("RTX 4090", 165.0),
)


def peak_tflops(device: torch.device) -> tuple[str, float | None]:
    """``(device name, dense bf16 peak or None)``; a CPU is named by its model (``AMD EPYC``, as
    records name it: the workflow's ETA finds its row in ``con2/resources/throughput.csv`` by it),
    its peak is not tabulated."""
    if device.type != "cuda":
        return cpu_model(), None
    name = torch.cuda.get_device_name(device)
    return name, next((peak for key, peak in PEAK_BF16_TFLOPS if key in name), None)


def uint8_nchw(images: np.ndarray) -> torch.Tensor:
    """uint8 ``[N, H, W, C]`` -> ``[N, C, H, W]`` (as ``con2.run.execute.to_tensor``; that import needs jsonschema)."""
    return torch.from_numpy(np.array(images, copy=True).transpose(0, 3, 1, 2).copy())


class PerImageViews(torch.utils.data.Dataset):
    """Per-image pipeline: returns ``[2, K, 3, S, S]`` (two views of each of K contexts) per image."""

    def __init__(self, images: torch.Tensor, size: int, context_names: list[str]) -> None:
        self.images = images
        self.contexts = contexts_for(context_names)
        self.view = T.Compose(
            [
                T.RandomResizedCrop(size, scale=(0.2, 1.0), antialias=True),
                T.RandomHorizontalFlip(),
                T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
                T.RandomGrayscale(p=0.2),
                T.ToDtype(torch.float32, scale=True),
                T.Normalize([0.5] * 3, [0.5] * 3),
            ]
        )

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> torch.Tensor:
        x = self.images[i : i + 1]
        x = x.expand(-1, 3, -1, -1) if x.shape[1] == 1 else x
        ctx = [fn(x)[0] for fn in self.contexts]
        return torch.stack([torch.stack([self.view(c) for c in ctx]) for _ in range(2)])


def plain_loss(method: Con2, views: torch.Tensor) -> torch.Tensor:
    """CON2's loss on a plain batch ``[N, 2, K, 3, S, S]`` (laid out view, context, image like ours)."""
    n, _, k = views.shape[:3]
    device = next(method.parameters()).device
    x = views.permute(1, 2, 0, 3, 4, 5).reshape(2 * k * n, *views.shape[3:]).to(device)
    h = method.encoder(x)
    ctx, sample = batch_labels(n, k, 2, device=h.device)
    tau = method.params.temperature
    return context_loss(method.context_head(h), ctx, tau) + alpha_schedule(0.5) * content_loss(
        method.content_head(h), sample, tau
    )


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class Ours:
    """Our step, set up exactly as ``fit`` sets it up."""

    method: Method
    resident: torch.Tensor
    optimizer: torch.optim.Optimizer
    scheduler: Any
    autocast: bool
    batch: int
    step: int = 0

    def run(self, steps: int) -> None:
        for _ in range(steps):
            idx = torch.randint(0, len(self.resident), (self.batch,), device=self.resident.device)
            train_step(self.method, self.resident[idx], 0.5, self.optimizer, self.scheduler, self.autocast)
            self.step += 1


def build_ours(cfg: RunConfig, images: torch.Tensor, device: torch.device, compile_model: bool) -> Ours:
    torch.manual_seed(0)
    method = build_method(cfg)
    settings = TrainSettings(epochs=1, batch_size=cfg.batch_size, amp=cfg.amp, channels_last=cfg.channels_last)
    prepare_model(method, settings, device)
    optimizer, scheduler = make_optimizer(method, settings, device, total_steps=10**6)
    if compile_model:
        compile_submodules(method)
    method.train()
    return Ours(method, images.to(device), optimizer, scheduler, autocast_enabled(device, cfg.amp), cfg.batch_size)


@dataclass
class Plain:
    """The per-image reference: Dataset + DataLoader, float32, default memory format."""

    method: Con2
    dataset: PerImageViews
    optimizer: torch.optim.Optimizer
    batch: int
    workers: int

    def loader(self, steps: int) -> torch.utils.data.DataLoader:
        sampler = torch.utils.data.RandomSampler(self.dataset, replacement=True, num_samples=self.batch * steps)
        return torch.utils.data.DataLoader(
            self.dataset, batch_size=self.batch, sampler=sampler, num_workers=self.workers, drop_last=True
        )

    def run_timed(self, warmup: int, steps: int, device: torch.device) -> float:
        """Run ``warmup + steps`` steps through a fresh loader; return the seconds of the last ``steps``."""
        t0 = 0.0
        for s, views in enumerate(self.loader(warmup + steps)):
            if s == warmup:
                sync(device)
                t0 = time.perf_counter()
            loss = plain_loss(self.method, views)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        sync(device)
        return time.perf_counter() - t0


def build_plain(cfg: RunConfig, images: torch.Tensor, device: torch.device, workers: int) -> Plain:
    torch.manual_seed(0)
    method = cast(Con2, build_method(cfg)).to(device).train()  # the benchmark's config is CON2's
    optimizer = torch.optim.AdamW(method.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    return Plain(
        method, PerImageViews(images, cfg.image_size, method.context_names), optimizer, cfg.batch_size, workers
    )


def step_flops(ours: Ours) -> int:
    """Forward + backward FLOPs of one of our steps (runs one step)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        ours.run(1)
    return int(counter.get_total_flops())


def time_ours(ours: Ours, warmup: int, steps: int, device: torch.device) -> float:
    ours.run(warmup)
    sync(device)
    t0 = time.perf_counter()
    ours.run(steps)
    sync(device)
    return time.perf_counter() - t0


def measure(
    cfg: RunConfig,
    images: torch.Tensor,
    device: torch.device,
    steps: int,
    warmup: int,
    repeats: int,
    workers: int = 0,
    compile_model: bool = False,
    plain: bool = True,
) -> dict[str, Any]:
    """Images per second of ours and plain, alternating ``repeats`` rounds; medians and every round."""
    ours = build_ours(cfg, images, device, compile_model)
    t_first = time.perf_counter()
    ours.run(1)  # the first step compiles (compile=true) and lets cuDNN choose its kernels
    sync(device)
    first_seconds = time.perf_counter() - t_first
    flops = step_flops(ours) if not compile_model else None
    ref = build_plain(cfg, images, device, workers) if plain else None
    rates: dict[str, list[float]] = {"ours": [], "plain": []}
    for _ in range(repeats):
        rates["ours"].append(cfg.batch_size * steps / time_ours(ours, warmup, steps, device))
        if ref is not None:
            rates["plain"].append(cfg.batch_size * steps / ref.run_timed(warmup, steps, device))
    name, peak = peak_tflops(device)
    ours_ips = statistics.median(rates["ours"])
    plain_ips = statistics.median(rates["plain"]) if rates["plain"] else None
    tflops = flops * ours_ips / cfg.batch_size / 1e12 if flops else None
    if device.type != "cuda":  # the CPU row's details, what its speed depends on (no comma: a CSV cell)
        name += f" ({torch.get_num_threads()} thread(s); {'bf16 autocast' if ours.autocast else 'fp32'})"
    return {
        "check": "throughput",  # as gpu_check.py's lines: con2.grid.cost_tables.rates_from_jsonl reads both
        "device": name,
        "threads": torch.get_num_threads(),
        "dataset": cfg.dataset,
        "image_size": cfg.image_size,
        "width": cfg.width,
        "batch_size": cfg.batch_size,
        "views_per_step": 4 * cfg.batch_size,
        "autocast_bf16": ours.autocast,
        "channels_last": cfg.channels_last,
        "compile": compile_model,
        "steps": steps,
        "repeats": repeats,
        "workers": workers,
        "ours_images_per_s": ours_ips,
        "plain_images_per_s": plain_ips,
        "ratio": ours_ips / plain_ips if plain_ips else None,
        "ours_rounds": rates["ours"],
        "plain_rounds": rates["plain"],
        "first_step_seconds": first_seconds,
        "gflop_per_step": flops / 1e9 if flops else None,
        "tflops": tflops,
        "peak_bf16_tflops": peak,
    }


def report(r: dict[str, Any]) -> str:
    """Human-readable lines of a :func:`measure` result."""
    rounds = lambda xs: ", ".join(f"{x:.1f}" for x in xs)  # noqa: E731
    lines = [
        f"device={r['device']} threads={r['threads']} dataset={r['dataset']} size={r['image_size']} width={r['width']} "
        f"N={r['batch_size']} ({r['views_per_step']} views/step) steps={r['steps']} x {r['repeats']} rounds "
        f"autocast_bf16={r['autocast_bf16']} compile={r['compile']}",
        f"ours  (fit's step, batched views): {r['ours_images_per_s']:8.1f} images/s  (rounds: "
        f"{rounds(r['ours_rounds'])}); "
        f"first step {r['first_step_seconds']:.1f} s (compilation, kernel choice)",
    ]
    if r["plain_images_per_s"]:
        lines += [
            f"plain (per-image torchvision)    : {r['plain_images_per_s']:8.1f} images/s  (rounds: "
            f"{rounds(r['plain_rounds'])})",
            f"ratio ours/plain: {r['ratio']:.2f}x",
        ]
    if r["tflops"] is not None:
        peak = f"{r['peak_bf16_tflops']:.0f} TFLOP/s dense bf16 peak" if r["peak_bf16_tflops"] else "peak unknown"
        share = f" ({100 * r['tflops'] / r['peak_bf16_tflops']:.1f}% of peak)" if r["peak_bf16_tflops"] else ""
        lines.append(f"achieved: {r['tflops']:.3f} TFLOP/s ({r['gflop_per_step']:.1f} GFLOP/step) vs {peak}{share}")
    return "\n".join(lines)


def config_for(a: argparse.Namespace) -> RunConfig:
    return make_config(
        {
            "dataset": a.dataset,
            "data_dir": a.data_dir,
            "image_size": a.image_size,
            "width": a.width,
            "batch_size": a.batch_size,
            "device": a.device,
            "amp": not a.no_amp,
        }
    )


def load_images(cfg: RunConfig, data_size: int) -> torch.Tensor:
    return uint8_nchw(load_one_class(cfg.dataset, cfg.data_dir, size=data_size).train)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default="digits")
    p.add_argument("--data-dir", default="data")
    p.add_argument("--image-size", type=int, default=28)
    p.add_argument("--data-size", type=int, default=28, help="stored resolution the views resample from")
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=5, help="timed steps per round and side")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps before each round")
    p.add_argument("--repeats", type=int, default=3, help="alternating rounds; medians are reported")
    p.add_argument("--workers", type=int, default=0, help="DataLoader workers for the plain pipeline")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--compile", action="store_true", help="torch.compile our model (config key compile=true)")
    p.add_argument("--no-amp", action="store_true", help="float32 on CUDA too (config key amp=false)")
    p.add_argument("--no-plain", action="store_true", help="time ours only")
    p.add_argument("--json", action="store_true", help="print one JSON line instead of text")
    return p


def main() -> None:
    a = parser().parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    cfg = config_for(a)
    device = select_device(cfg.device)
    r = measure(
        cfg, load_images(cfg, a.data_size), device, a.steps, a.warmup, a.repeats, a.workers, a.compile, not a.no_plain
    )
    print(json.dumps(r) if a.json else report(r))


if __name__ == "__main__":
    main()
