"""Where the time of one training step goes: torch.profiler over ``con2.training.engine.train_step``.

The step is set up exactly as ``benchmarks/throughput.py`` (and ``fit``) sets it up. The engine
labels ``forward`` (contexts, views, encoder, heads, loss), ``backward`` and ``optimizer``; the
views label themselves ``views`` (inside ``forward``). Host synchronisations are counted as the
ops that copy a device value to the host (``aten::item`` / ``aten::_local_scalar_dense`` /
``aten::is_nonzero``) and, on CUDA, the runtime's synchronise calls. Prints a Markdown table of
milliseconds per step (CPU time of each labelled range; on CUDA also the kernels' device time).
Example::

    python benchmarks/profile_step.py --dataset breastmnist --data-dir ../shared/data --width 16 --threads 1
"""

from __future__ import annotations

import time
from typing import Any

import torch
from throughput import build_ours, config_for, load_images, parser, sync
from torch.profiler import ProfilerActivity, profile, record_function

from con2.methods.base import Method
from con2.training.device import select_device

REGIONS = ("forward", "views", "encoder forward", "backward", "optimizer")
LABELS = {"views": "  views (in forward)", "encoder forward": "  encoder (in forward)"}


def label_encoder(method: Method) -> None:
    """Wrap the encoder's forward in a profiler range (this script only; the engine does not know encoders)."""
    forward = method.encoder.forward

    def labelled(*args: Any, **kwargs: Any) -> Any:
        with record_function("encoder forward"):
            return forward(*args, **kwargs)

    method.encoder.forward = labelled


SYNC_OPS = ("aten::_local_scalar_dense",)  # what .item(), bool() and float() of a tensor end in
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")


def main() -> None:
    p = parser()
    p.description = __doc__.split("\n")[0]
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    cfg = config_for(a)
    device = select_device(cfg.device)
    ours = build_ours(cfg, load_images(cfg, a.data_size), device, a.compile)
    label_encoder(ours.method)
    ours.run(max(2, a.warmup))
    sync(device)
    t0 = time.perf_counter()
    ours.run(a.steps)
    sync(device)
    plain_ms = (time.perf_counter() - t0) / a.steps * 1e3  # the profiler's own overhead is not in this one
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    t0 = time.perf_counter()
    with profile(activities=activities) as prof:
        ours.run(a.steps)
        sync(device)
    wall = (time.perf_counter() - t0) / a.steps * 1e3
    events = {e.key: e for e in prof.key_averages()}
    per = lambda v: v / a.steps / 1e3  # noqa: E731  (microseconds in total -> milliseconds per step)
    print(
        f"device={device} threads={torch.get_num_threads()} dataset={cfg.dataset} size={cfg.image_size} "
        f"width={cfg.width} N={cfg.batch_size} autocast_bf16={ours.autocast} compile={a.compile} steps={a.steps}"
    )
    cuda = device.type == "cuda"
    print("\n| part | CPU ms/step | " + ("device ms/step | " if cuda else "") + "share of step |")
    print("|---|---:|" + ("---:|" if cuda else "") + "---:|")
    rows: dict[str, tuple[float, float]] = {
        name: (per(events[name].cpu_time_total), per(events[name].device_time_total)) if name in events else (0.0, 0.0)
        for name in REGIONS
    }
    cpu_rest, dev_rest = (rows["forward"][i] - rows["views"][i] - rows["encoder forward"][i] for i in range(2))
    rest = (cpu_rest, dev_rest)
    rows = {
        **{k: rows[k] for k in REGIONS[:3]},
        "  heads, loss, contexts (rest of forward)": rest,
        **{k: rows[k] for k in REGIONS[3:]},
    }
    for name, (cpu, dev) in rows.items():
        print(
            f"| {LABELS.get(name, name)} | {cpu:.1f} | "
            + (f"{dev:.1f} | " if cuda else "")
            + f"{100 * cpu / wall:.0f}% |"
        )
    print(f"| whole step (wall clock) | {wall:.1f} | " + ("| " if cuda else "") + "100% |")
    print(f"\nthe same steps without the profiler: {plain_ms:.1f} ms/step (the shares above are the profiled ones)")
    syncs = sum(events[k].count for k in SYNC_OPS if k in events) / a.steps
    calls = sum(events[k].count for k in SYNC_CALLS if k in events) / a.steps
    print(f"\nhost synchronisations per step: {syncs:g} device-to-host reads, {calls:g} CUDA synchronise/memcpy calls")
    print("\nlargest ops by self CPU time:")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


if __name__ == "__main__":
    main()
