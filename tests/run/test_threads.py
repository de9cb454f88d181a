"""A run's ``threads`` holds every CPU thread pool of its process, not only torch's (issue 60).

NumPy, SciPy and scikit-learn compute through a BLAS (OpenBLAS here) whose pool starts with a thread per core;
where runs share the cores (Snakemake's jobs, the GPU scripts' packed workers) those threads spin instead of
computing. Each probe runs in its own process: the settings are process-wide.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import TINY

# Every pool starts at 2 threads whatever the machine's cores, so the probe can fail on a 1-core box too.
TWO = {"OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}

PROBE = """
import json, sys
import numpy, torch
from threadpoolctl import threadpool_info

def pools():
    return {"torch": torch.get_num_threads(), **{p["internal_api"] + " " + p["prefix"]: p["num_threads"]
                                                 for p in threadpool_info()}}

before = pools()
from con2.config import make_config
from con2.run.execute import load
load(make_config(json.loads(sys.argv[1])), verify=False, training=True)
print(json.dumps({"before": before, "after": pools()}))
"""


def probe(threads: int) -> dict[str, dict[str, int]]:
    env = {**os.environ, **TWO}
    cfg = json.dumps({**TINY, "threads": threads})
    out = subprocess.run([sys.executable, "-c", PROBE, cfg], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.splitlines()[-1])


def test_a_runs_threads_limit_torch_and_the_blas_numpy_calls() -> None:
    seen = probe(threads=1)
    assert any("blas" in name for name in seen["before"]), seen  # NumPy's BLAS is loaded and seen
    assert set(seen["before"].values()) == {2}, seen  # the probe's starting point: two threads everywhere
    assert set(seen["after"]) == set(seen["before"]) and set(seen["after"].values()) == {1}, seen


def test_cpu_threads_holds_both_pools_within_its_block_and_restores_them() -> None:
    """What the context measurement runs under (con2.methods.contexts.measure_contexts)."""
    import numpy  # noqa: F401  (its BLAS loaded, so threadpoolctl sees it)
    import torch
    from threadpoolctl import threadpool_info, threadpool_limits

    from con2.training.device import cpu_threads

    def pools() -> set[int]:
        return {torch.get_num_threads(), *(p["num_threads"] for p in threadpool_info())}

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        with threadpool_limits(2):
            assert pools() == {2}
            with cpu_threads(1):
                assert pools() == {1}
            assert pools() == {2}
    finally:
        torch.set_num_threads(before)
