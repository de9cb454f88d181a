"""The workflow on the GPU (issue 44, point 5): the test profile through Snakemake with the device set to CUDA.

No user-facing GPU path through the workflow had run: every device call so far trained through
``gpu_fidelity.py``, which calls the engine directly. This runs what a user runs, in a copy of the
workflow (Snakefile, ``workflow/``, ``profiles/``) in a scratch folder:

    python -m snakemake --cores N all --configfile workflow/config/test.yaml --config device=cuda \\
        --scheduler greedy

(digits only, 16 px, width 8, one epoch: every training job is ``con2 train`` on the GPU, then the
tables and the report), under a time limit (``--timeout``, 90 s: the test profile took 70-79 s on this
project's 2-core CPUs; the GPU machine has 16 cores). It prints one JSON line, ``workflow_smoke``: the
exit code, the seconds, the training records the workflow wrote with the device each ran on (``cuda``
expected), the tables written, and on failure the end of Snakemake's log. The line also goes to
``--jsonl`` and to ``--state``: a later call on the same machine finds it there and does not run the
smoke again.

What the GPU image lacks: snakemake and jsonschema (carried as wheels, ``benchmarks/gpu_carry.py``;
without snakemake the smoke says so in its line and is skipped), the ``con2`` command (the package is
not installed there: a shim ``con2`` that runs ``python -m con2`` from this checkout is put first on
PATH), and PuLP, Snakemake's ILP scheduler's solver (16 MB, not carried: ``--scheduler greedy``).
``--block`` makes modules unimportable in every process of the run (the CPU rehearsal blocks what the
GPU image lacks: kornia, medmnist, kaggle, pulp). ``--profile`` (rehearsal only; default the test profile)
runs another profile file, copied into the scratch folder: tests/project/test_gpu_cifar.py gives it the
test profile cut to one run per method, so that its CPU rehearsal does not train the whole test profile
again (the session's ``tiny_run`` fixture does that already).

    python benchmarks/gpu_workflow.py --device cuda                    # on the GPU machine (gpu_call.sh)
    python benchmarks/gpu_workflow.py --device cpu --block kornia medmnist kaggle pulp   # rehearsal here
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROFILE = "workflow/config/test.yaml"
TAIL_LINES = 15

BLOCKER = '''"""benchmarks/gpu_workflow.py --block: these modules cannot be imported (as on the GPU image)."""
import sys

BLOCKED = {blocked!r}


class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked: the GPU image lacks it)", name=name)


sys.meta_path.insert(0, _Block())
'''


def snakemake_version(env: dict[str, str]) -> str | None:
    """Snakemake's version as this interpreter imports it, or None when it cannot."""
    try:
        res = subprocess.run(
            [sys.executable, "-m", "snakemake", "--version"], capture_output=True, text=True, timeout=60, env=env
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip().splitlines()[-1] if res.returncode == 0 and res.stdout.strip() else None


def copy_workflow(work: Path) -> None:
    """A fresh copy of the workflow in ``work`` (its results and .snakemake/ stay there)."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    shutil.copy2(ROOT / "Snakefile", work / "Snakefile")
    for folder in ("workflow", "profiles"):
        shutil.copytree(ROOT / folder, work / folder, ignore=shutil.ignore_patterns("__pycache__"))


def smoke_env(work: Path, blocked: list[str]) -> dict[str, str]:
    """The run's environment: ``con2`` on PATH as a shim for this interpreter and checkout, this checkout first
    on PYTHONPATH, a private data cache, and (``blocked``) a sitecustomize that blocks modules."""
    bin_dir, site = work / ".bin", work / ".site"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "con2"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m con2 "$@"\n')
    shim.chmod(0o755)
    paths = [str(ROOT)]
    if blocked:
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=sorted(blocked)))
        paths.insert(0, str(site))
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([*paths, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]),
        PATH=os.pathsep.join([str(bin_dir), env.get("PATH", "")]),
        CON2_CACHE_DIR=str(work / ".con2-cache"),
        PYTHONWARNINGS="ignore",
    )
    return env


def summarise(work: Path) -> dict[str, Any]:
    """What the workflow wrote: its training records (how many, the devices they ran on, their methods) and
    its tables."""
    devices: Counter[str] = Counter()
    methods: Counter[str] = Counter()
    unreadable = 0
    records = sorted((work / "results").glob("runs/**/record.json"))
    for path in records:
        try:
            record = json.loads(path.read_text())
            devices[str(record.get("device"))] += 1
            methods[str((record.get("config") or {}).get("method"))] += 1
        except (OSError, ValueError):
            unreadable += 1
    tables = sorted(p.name for p in (work / "results" / "tables").glob("*") if p.is_file())
    return {
        "records": len(records),
        "record_devices": dict(devices),
        "record_methods": dict(methods),
        "unreadable_records": unreadable,
        "tables": len(tables),
    }


def on_device(device: str, summary: dict[str, Any]) -> bool:
    """Whether every record says it ran on ``device`` (``cuda`` matches ``cuda`` and ``cuda:N``)."""
    found = summary["record_devices"]
    return bool(found) and all(str(d).split(":")[0] == device.split(":")[0] for d in found)


def resolve_device(device: str) -> tuple[str, str | None]:
    """``auto``: cuda when torch sees a GPU, else cpu with a note saying so."""
    if device != "auto":
        return device, None
    import torch

    if torch.cuda.is_available():
        return "cuda", None
    return "cpu", "no GPU here: the smoke runs on the CPU (a rehearsal of the device call)"


def emit(line: dict[str, Any], jsonl: Path | None, state: Path | None) -> None:
    text = json.dumps(line)
    print(text, flush=True)
    if jsonl is not None:
        jsonl.parent.mkdir(parents=True, exist_ok=True)
        with jsonl.open("a") as f:
            f.write(text + "\n")
    if state is not None:
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(text + "\n")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="auto", help="cuda, cpu or auto (cuda when torch sees a GPU)")
    p.add_argument("--cores", type=int, default=min(16, os.cpu_count() or 1), help="Snakemake's --cores")
    p.add_argument("--timeout", type=float, default=90.0, help="seconds before Snakemake is stopped")
    p.add_argument("--work", default="/tmp/con2_workflow_smoke", help="scratch folder for the workflow's copy")
    p.add_argument("--jsonl", help="also append the line here (gpu_call.sh: the plan's jsonl under $OUT)")
    p.add_argument("--state", help="also write the line here; when it exists, the smoke is not run again")
    p.add_argument("--block", nargs="*", default=[], help="modules to make unimportable (a rehearsal)")
    p.add_argument(
        "--profile",
        help=f"a profile file to run instead of {PROFILE} (a rehearsal: copied into the scratch folder)",
    )
    args = p.parse_args()
    if args.timeout <= 0 or args.cores < 1:
        p.error(f"--timeout must be above 0 and --cores at least 1 (got {args.timeout}, {args.cores})")
    jsonl = Path(args.jsonl) if args.jsonl else None
    state = Path(args.state) if args.state else None
    if state is not None and state.is_file():
        earlier = json.loads(state.read_text())
        emit({**earlier, "reused": True, "from": str(state)}, jsonl, None)
        return 0
    t0 = time.perf_counter()
    work = Path(args.work)
    copy_workflow(work)
    profile = PROFILE
    if args.profile:  # the rehearsal's own profile, beside the copy's (relative: the command line stays short)
        profile = Path(args.profile).name
        shutil.copy2(args.profile, work / profile)
    env = smoke_env(work, args.block)
    line: dict[str, Any] = {"event": "workflow_smoke", "profile": profile}
    version = snakemake_version(env)
    if version is None:
        why = (
            "snakemake is not importable here: carry its wheels (python benchmarks/gpu_carry.py here, then"
            " run(..., carry=['build/gpu_wheels']))"
        )
        emit({**line, "skipped": why, "seconds": round(time.perf_counter() - t0, 1)}, jsonl, None)
        return 0
    device, note = resolve_device(args.device)
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(args.cores), "all", "--configfile", profile]
    cmd += ["--config", f"device={device}", "--scheduler", "greedy"]
    line |= {"snakemake": version, "device": device, "cores": args.cores, "command": " ".join(cmd[1:])}
    line |= {"note": note} if note else {}
    log = work / "snakemake.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc: int | None = proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # Snakemake and its jobs (its own session)
            proc.wait()
            rc = None
    summary = summarise(work)
    line |= {"rc": rc, "timed_out": rc is None, "seconds": round(time.perf_counter() - t0, 1), **summary}
    line["on_device"] = on_device(device, summary)
    line["ok"] = rc == 0 and line["on_device"] and summary["tables"] > 0
    if not line["ok"]:
        line["log_tail"] = log.read_text(errors="replace").splitlines()[-TAIL_LINES:]
    emit(line, jsonl, state if line["ok"] else None)
    return 0 if line["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
