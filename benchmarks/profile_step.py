"""Where the time of one training step goes: torch.profiler over ``con2.engine.train_step``.

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

import torch
from torch.profiler import ProfilerActivity, profile

from throughput import build_ours, config_for, load_images, parser, sync

from con2.engine import select_device

REGIONS = ("forward", "views", "backward", "optimizer")
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
    ours.run(max(2, a.warmup))
    sync(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    t0 = time.perf_counter()
    with profile(activities=activities) as prof:
        ours.run(a.steps)
        sync(device)
    wall = (time.perf_counter() - t0) / a.steps * 1e3
    events = {e.key: e for e in prof.key_averages()}
    per = lambda v: v / a.steps / 1e3  # noqa: E731  (microseconds in total -> milliseconds per step)
    print(f"device={device} threads={torch.get_num_threads()} dataset={cfg.dataset} size={cfg.image_size} "
          f"width={cfg.width} N={cfg.batch_size} autocast_bf16={ours.autocast} compile={a.compile} steps={a.steps}")
    print(f"\n| part | CPU ms/step | device ms/step | share of step |\n|---|---:|---:|---:|")
    for name in REGIONS:
        e = events.get(name)
        cpu, dev = (per(e.cpu_time_total), per(e.device_time_total)) if e else (0.0, 0.0)
        label = "views (inside forward)" if name == "views" else name
        print(f"| {label} | {cpu:.1f} | {dev:.1f} | {100 * cpu / wall:.0f}% |")
    print(f"| whole step (wall clock, profiled) | {wall:.1f} | | 100% |")
    syncs = sum(events[k].count for k in SYNC_OPS if k in events) / a.steps
    calls = sum(events[k].count for k in SYNC_CALLS if k in events) / a.steps
    print(f"\nhost synchronisations per step: {syncs:g} device-to-host reads, {calls:g} CUDA synchronise/memcpy calls")
    print("\nlargest ops by self CPU time:")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


if __name__ == "__main__":
    main()
