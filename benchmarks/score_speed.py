"""Scoring speed and memory: S_NND and S_LH of synthetic features, one test-time view at a time.

Per view, fresh Gaussian features ``train [n, d]`` and ``test [M, d]`` are drawn on the device
(untimed), then ``con2.maths.scores.view_scores``' two parts are timed separately: S_NND (blocked
nearest-neighbour search, ``--chunk`` rows per block) and S_LH (fit the Gaussian, score the test
set). Prints seconds per view (median) and for all views, the peak resident memory of the process
(and the CUDA allocator's peak on a GPU) next to the size of one view's features, so the memory
the scoring adds is visible. The paper-scale case (the default) is 10k test x 100k train x 40
views at d = 512::

    python benchmarks/score_speed.py                       # 10k x 100k x 40 views
    python benchmarks/score_speed.py --n-test 156 --n-train 399   # BreastMNIST's sizes
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time

import torch

from con2.maths.scores import fit_gaussian, lh_scores, nnd_scores
from con2.training.device import select_device, use_cpu_threads


def peak_rss_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 2**20 if sys.platform == "darwin" else kb / 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n-test", type=int, default=10_000)
    p.add_argument("--n-train", type=int, default=100_000)
    p.add_argument("--views", type=int, default=40)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--chunk", type=int, default=4096, help="rows per block (config key nn_chunk)")
    p.add_argument("--ridge", type=float, default=1e-2)
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=None)
    a = p.parse_args()
    if a.threads:
        use_cpu_threads(a.threads)
    device = select_device(a.device)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    gen = torch.Generator(device=device).manual_seed(0)
    features_mb = (a.n_train + a.n_test) * a.dim * 4 / 2**20
    rss_start = peak_rss_mb()
    times: dict[str, list[float]] = {"nnd": [], "lh": []}
    t_all = time.perf_counter()
    for v in range(a.views):
        train = torch.randn(a.n_train, a.dim, generator=gen, device=device)
        test = torch.randn(a.n_test, a.dim, generator=gen, device=device)
        sync()
        t0 = time.perf_counter()
        nnd = nnd_scores(test, train, a.chunk)
        sync()
        t1 = time.perf_counter()
        lh = lh_scores(test, fit_gaussian(train, a.ridge, 4 * a.chunk), 4 * a.chunk)
        sync()
        t2 = time.perf_counter()
        times["nnd"].append(t1 - t0)
        times["lh"].append(t2 - t1)
        assert nnd.shape == lh.shape == (a.n_test,) and bool(torch.isfinite(nnd).all() and torch.isfinite(lh).all())
        print(f"view {v + 1}/{a.views}: S_NND {t1 - t0:.2f} s, S_LH {t2 - t1:.2f} s", file=sys.stderr, flush=True)
        del train, test
    result = {
        "device": str(device),
        "threads": torch.get_num_threads(),
        "n_test": a.n_test,
        "n_train": a.n_train,
        "views": a.views,
        "dim": a.dim,
        "chunk": a.chunk,
        "nnd_seconds_per_view": statistics.median(times["nnd"]),
        "lh_seconds_per_view": statistics.median(times["lh"]),
        "nnd_seconds_total": sum(times["nnd"]),
        "lh_seconds_total": sum(times["lh"]),
        "wall_seconds_with_feature_generation": time.perf_counter() - t_all,
        "one_view_features_mb": features_mb,
        "peak_rss_mb_before": rss_start,
        "peak_rss_mb": peak_rss_mb(),
        "cuda_peak_allocated_mb": torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
