"""A tiny ``con2 train`` run's speed alone and next to other CPU work, per thread setting (issue 36, point 12).

The run (BreastMNIST 28 px resampled to 16 px, ResNet18 width 8, 3 epochs, 2 test-time views)::

    con2 train --set dataset=breastmnist data_dir=DATA image_size=16 data_size=28 width=8 epochs=3 tta=2 device=cpu

is timed under four settings, alternated in rounds so that a drifting load hits each alike:

- ``spin``: torch's default threads (one per core), libgomp's default spin before an idle thread
  sleeps (``GOMP_SPINCOUNT=300000``): what ``con2`` did before;
- ``short spin``: the same threads with the environment ``con2`` sets now (``GOMP_SPINCOUNT=10000``);
- ``passive``: idle threads sleep at once (``OMP_WAIT_POLICY=PASSIVE``);
- ``threads=1``: one torch thread (what the workflow's jobs use: ``threads: 1`` in the profile).

and under three loads: ``alone``, ``loops`` (two busy single-thread Python loops) and ``suite`` (a
command, by default a part of the test suite, restarted whenever it ends). Prints one JSON line per run
(training images/s from the record, fit and wall seconds, the 1-minute load average) and a median table.
Stop every other job first for ``alone``; the loads it starts itself are stopped when it ends::

    python benchmarks/threads_under_load.py --data-dir ../shared/data --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SETTINGS: dict[str, tuple[dict[str, str], list[str]]] = {
    "spin": ({"GOMP_SPINCOUNT": "300000"}, []),  # libgomp's default: what con2 did before
    "short spin": ({}, []),  # con2's default now (con2.cli sets GOMP_SPINCOUNT=10000)
    "passive": ({"OMP_WAIT_POLICY": "PASSIVE"}, []),  # idle threads sleep at once
    "threads=1": ({}, ["threads=1"]),  # one torch thread: what the workflow's jobs use
}
BUSY_LOOP = "while True:\n    pass\n"
DEFAULT_SUITE = (
    f"{sys.executable} -m pytest -q -p no:cacheprovider -m 'not slow' "
    "tests/maths/test_losses.py tests/maths/test_scores.py tests/training/test_engine.py"
)


def run_once(data_dir: str, setting: str, work: Path) -> dict[str, float]:
    """Train the tiny run once under ``setting``; its images/s (from the record) and seconds."""
    env_extra, sets = SETTINGS[setting]
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}  # a clean slate
    env.update(env_extra)
    run_dir = work / f"run_{time.monotonic_ns()}"
    cmd = [
        "con2", "train", "--set", "dataset=breastmnist", f"data_dir={data_dir}", "image_size=16",
        "data_size=28", "width=8", "epochs=3", "tta=2", "device=cpu", "progress=false", *sets,
        "--run-dir", str(run_dir),
    ]  # fmt: skip
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    timing = json.loads((run_dir / "record.json").read_text())["timing"]
    return {"images_per_second": timing["images_per_second"], "fit_s": timing["fit_seconds"], "wall_s": wall}


@contextmanager
def load(kind: str, suite: str) -> Iterator[None]:
    """Start the competing work of ``kind`` (alone, loops, suite) for the block's duration."""
    procs: list[subprocess.Popen[bytes]] = []

    def start_suite() -> subprocess.Popen[bytes]:
        loop = f"while true; do {suite}; done"  # restarted whenever it ends, until stopped
        return subprocess.Popen(["bash", "-c", loop], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)  # fmt: skip

    if kind == "loops":
        procs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP], start_new_session=True) for _ in range(2)]
    elif kind == "suite":
        procs = [start_suite()]
    time.sleep(3 if procs else 0)  # let the load start
    try:
        yield
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
            p.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", required=True, help="where breastmnist.npz lies (data_dir of the config)")
    p.add_argument("--rounds", type=int, default=2, help="runs per setting and load, alternated")
    p.add_argument("--loads", default="alone,loops,suite", help="comma list of alone, loops, suite")
    p.add_argument("--settings", default=",".join(SETTINGS), help=f"comma list of {', '.join(SETTINGS)}")
    p.add_argument("--suite", default=DEFAULT_SUITE, help="the command run as the 'suite' load (restarted)")
    a = p.parse_args()
    settings = a.settings.split(",")
    results: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="threads_under_load_") as tmp:
        for kind in a.loads.split(","):
            with load(kind, a.suite):
                for r in range(a.rounds):
                    for setting in settings:
                        m = run_once(a.data_dir, setting, Path(tmp))
                        results.setdefault((kind, setting), []).append(m["images_per_second"])
                        line = {"load": kind, "setting": setting, "round": r, **m, "loadavg_1min": os.getloadavg()[0]}
                        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in line.items()}),
                              flush=True)  # fmt: skip
    print("\n| load | " + " | ".join(settings) + " |")
    print("|---|" + "---:|" * len(settings))
    for kind in a.loads.split(","):
        cells = [f"{statistics.median(results[(kind, s)]):.0f}" for s in settings]
        print(f"| {kind} | " + " | ".join(cells) + " |  (median training images/s)")


if __name__ == "__main__":
    main()
