"""Snakemake script of rule score_runtime: time S_NND and S_LH on synthetic features.

Two sweeps, as in the paper's appendix: the training-set size n (one batch of test images scored)
and the number of scored batches at a fixed n. Each measurement covers ``views`` test-time views:
per view, LH fits its Gaussian (mean, covariance, Cholesky) once and NND keeps the n training
features; then every batch is scored. Seconds are the median over ``repeats``; memory is what the
score keeps between batches (NND: views x n x d float32, LH: views x (d x d + d) float64). The
functions timed are the ones the runs use (:mod:`con2.maths.scores`).
"""

import statistics
import sys
import time
from pathlib import Path

snakemake = globals()["snakemake"]  # injected by Snakemake's script directive
sys.path.insert(0, str(snakemake.scriptdir))
from _log import logged  # noqa: E402


def main() -> None:
    import pandas as pd
    import torch

    from con2.maths.scores import fit_gaussian, lh_scores, nnd_scores

    s = dict(snakemake.params.settings or {})
    dim, views, batch = int(s.get("dim", 512)), int(s.get("views", 40)), int(s.get("batch_size", 128))
    n_grid = [int(n) for n in s.get("n_train", [1, 10, 100, 1000, 10000, 100000])]
    b_grid = [int(b) for b in s.get("n_batches", [1, 10, 100, 1000])]
    n_fixed, repeats, ridge = (
        int(s.get("batches_n_train", 10000)),
        int(s.get("repeats", 3)),
        float(s.get("lh_ridge", 1e-2)),
    )
    name = str(snakemake.config.get("device", "auto"))
    device = torch.device(
        "cuda" if name == "auto" and torch.cuda.is_available() else ("cpu" if name == "auto" else name)
    )
    torch.set_num_threads(max(1, int(snakemake.threads)))
    gen = torch.Generator(device="cpu").manual_seed(0)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def measure(score: str, n: int, n_batches: int) -> float:
        train = torch.randn(n, dim, generator=gen).to(device)
        test = torch.randn(batch, dim, generator=gen).to(device)
        nnd_scores(test, train)  # warm-up (allocator, kernels) outside the timing
        lh_scores(test, fit_gaussian(train, ridge))
        times = []
        for _ in range(repeats):
            sync()
            t0 = time.perf_counter()
            for _v in range(views):
                if score == "lh":
                    model = fit_gaussian(train, ridge)
                    for _b in range(n_batches):
                        lh_scores(test, model)
                else:
                    for _b in range(n_batches):
                        nnd_scores(test, train)
            sync()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def memory_mb(score: str, n: int) -> float:
        per_view = n * dim * 4 if score == "nnd" else (dim * dim + dim) * 8
        return views * per_view / 2**20

    rows = []
    for score in ("nnd", "lh"):
        for n in n_grid:
            rows.append(
                {
                    "score": score,
                    "sweep": "n_train",
                    "n_train": n,
                    "n_batches": 1,
                    "seconds": measure(score, n, 1),
                    "memory_mb": memory_mb(score, n),
                }
            )
            print(rows[-1], flush=True)
        for b in b_grid:
            rows.append(
                {
                    "score": score,
                    "sweep": "n_batches",
                    "n_train": n_fixed,
                    "n_batches": b,
                    "seconds": measure(score, n_fixed, b),
                    "memory_mb": memory_mb(score, n_fixed),
                }
            )
            print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    df["dim"], df["views"], df["batch_size"], df["batches_n_train"] = dim, views, batch, n_fixed
    df["repeats"], df["device"] = repeats, str(device)
    Path(snakemake.output.csv).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(snakemake.output.csv, index=False)


with logged(snakemake):
    main()
