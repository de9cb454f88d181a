"""The CIFAR-10 length study on the GPU (issue 56): every method's learning curve to 128 epochs through the workflow.

What a user runs, in a scratch copy of the workflow (``gpu_workflow.copy_workflow``'s files, kept between calls on
the same machine so that a second call resumes), with the device set to CUDA and several runs sharing the GPU:

    python -m snakemake --cores 16 studies results/figures/length_curve_cifar10.png \\
        --configfile workflow/config/default.yaml workflow/config/cifar10.yaml length_gpu.yaml \\
        --config data_dir=<data> only_datasets=cifar10 device=cuda threads=2 download=false checkpoint_seconds=30 \\
        --resources gpu=4 --scheduler greedy --rerun-incomplete --keep-going

``length_gpu.yaml`` (written into the scratch copy) sets ``resources: {gpu: 1}``: every training job then holds
one of ``--resources gpu=K`` slots, so K runs train at once on the one GPU (the profiles' default, ``gpu: 0``,
would let ``--cores / threads`` jobs start). K = 4 by default (``--slots``): a run's step at width 16 and 32 px
is bound by the host's kernel launches, not the GPU, so packed runs gain more than the 224 px runs measured on an
H100 (1.39x for 2, 1.64x for 4, 1.84x for 8); but a run's checkpoint dies with the machine, and at those
measured factors 8 runs at once would finish none within a session's ~650 s, 4 at once their first four
(benchmarks/README.md, the length study's prediction).

With ``only_datasets=cifar10`` the target ``studies`` trains the 14 runs of ``length_cifar10`` (CIFAR-10
airplane and automobile, seed 0: the floor, CON2 ``length128``, ``flip_length128`` and
``content_only_length128``, SimCLR ``length128``, CSI ``length128`` and ``authors_length128``) and writes
``length_curve`` and ``length_claims`` (the other scoped tables are rebuilt from the records on disk, here none);
the figure ``length_curve_cifar10`` is named as a target of its own.

The carried ``<data-dir>/cifar10.tar.xz`` is unpacked first when the folder is not there
(``gpu_runs.unpack_cifar``). Snakemake runs under ``--budget-s`` (counted from this script's start): at
``budget - --stop-s`` it gets SIGTERM, which the workflow's handler forwards to its ``con2 train`` jobs (each
stops with its last checkpoint kept, written every ``checkpoint_seconds``); whatever is still alive ``--stop-s``
later is killed with its process group. The same command again (a later call on the same machine) resumes every
unfinished run from its checkpoint and keeps the finished ones.

One JSON line per event on stdout and appended to ``--jsonl``: ``length_start`` (the command, the slots, the
runs finished before), ``data`` (the archive unpacked), ``length_run`` (each run as its record appears: its
AUROCs, wall and fit seconds, device), then ``length_done`` (Snakemake exited 0), ``length_paused`` (stopped
at the budget: the runs left, each with its log's last line) or ``length_failed`` (with the end of Snakemake's
log); ``length_skipped`` when there is nothing to run with (no Snakemake, no CIFAR-10, too little time). Every
finished run's small files (``record.json``, ``curve.csv``, ``scores.csv``, ``config.yaml``; not
``checkpoint.pt``) with its log and its resolved config (``results/configs/``), and the length tables and figure,
are packed into ``--archive`` (default
``$OUT/length_study.tar.gz``) under their ``results/...`` paths: the device tool brings back 8 files at most,
no more than 2 folders down, so one archive, not a tree. ``tar -xzf length_study.tar.gz -C
benchmarks/measured/length_study`` puts them where the session commits them; a later session's call finds
them there (``--seed-from``) and keeps those runs instead of training them again (``length_start`` lists them
in ``seeded_from_earlier_session``).

``--tiny`` rehearses the part on the CPU: the scratch copy's CIFAR-10 overlay is cut to the floor and CON2
``length128`` on airplane, 16 px, width 8, 2 epochs, the curve at epoch 1, no test-time views
(``tests/project/test_gpu_length_study.py``; benchmarks/README.md gives the time).

    python benchmarks/gpu_length_study.py --data-dir shared/data --budget-s 400          # gpu_call.sh
    python benchmarks/gpu_length_study.py --data-dir ../shared/data --tiny --device cpu --cores 2 --slots 2 \\
        --threads 1 --budget-s 900 --work /tmp/length_rehearsal --archive /tmp/length_rehearsal.tar.gz
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import yaml
from gpu_runs import unpack_cifar
from gpu_workflow import ROOT, TAIL_LINES, resolve_device, smoke_env, snakemake_version

PROFILES = ("workflow/config/default.yaml", "workflow/config/cifar10.yaml")
OVERLAY = "length_gpu.yaml"
TARGETS = ("studies", "results/figures/length_curve_cifar10.png")
RUN_FILES = ("record.json", "curve.csv", "scores.csv", "config.yaml")  # never checkpoint.pt (MBs, no use here)
REPORT_FILES = (
    "results/tables/length_curve.md",
    "results/tables/length_curve.csv",
    "results/tables/length_claims.md",
    "results/tables/length_claims.csv",
    "results/figures/length_curve_cifar10.png",
    "results/figures/length_curve_cifar10.pdf",
)
MIN_BUDGET_S = 120.0  # less: the part is skipped (start-up, data preparation and the stop need about a minute)
POLL_S = 5.0

#: --tiny: the study's runs cut to two on one class at sizes a CPU trains in a minute
#: (curve_views None: a curve point scores the run's one identity view, as its final scoring does; the overlay's
#: 2 views cost 3 times as much, 47 s of the CON2 run's 87 s on a loaded 2-core Xeon)
TINY_RUN: dict[str, Any] = {
    "image_size": 16,
    "width": 8,
    "epochs": 2,
    "tta": 0,
    "csi_views": 0,
    "curve_views": None,
    "score_at": [],
}
TINY_VARIANT = {"epochs": 2, "score_at": [1]}
TINY_EXPERIMENT = {
    "datasets": ["cifar10"],
    "normal_classes": ["airplane"],
    "methods": {"floor_pixels": ["floor"], "con2": ["length128"]},
    "seeds": [0],
}


def refresh_workflow(work: Path) -> None:
    """The workflow's files copied into ``work``, over an earlier copy: its ``results/`` and ``.snakemake/`` stay
    (a second call on the machine resumes from them)."""
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "Snakefile", work / "Snakefile")
    for folder in ("workflow", "profiles"):
        shutil.copytree(ROOT / folder, work / folder, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)


def make_tiny(work: Path) -> None:
    """Cut the scratch copy's CIFAR-10 overlay to the rehearsal's two tiny runs (the checkout's file is untouched)."""
    path = work / PROFILES[1]
    cfg = yaml.safe_load(path.read_text())
    cfg["datasets"]["cifar10"]["run"].update(TINY_RUN)
    for name in ("length128", "flip_length128", "content_only_length128", "authors_length128"):
        cfg["variants"][name].update(TINY_VARIANT)
    cfg["experiments"]["length_cifar10"] = dict(TINY_EXPERIMENT)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


# where the session commits the study's finished runs (benchmarks/README.md): a later call keeps them
SEED_FROM = ROOT / "benchmarks" / "measured" / "length_study"


def seed_runs(work: Path, source: Path) -> list[str]:
    """Finished runs of an earlier session (``source``: an archive unpacked, ``benchmarks/measured/length_study``)
    copied into the scratch copy where it has none, each with its resolved config file dated before its record:
    the workflow then keeps them (a run without its config file, or with a newer one, is trained again; a config
    of another hash than the profile's gives a new file, so a stale run retrains). The run keys seeded."""
    seeded = []
    for record in sorted((source / "results" / "runs").glob("**/record.json")):
        key = str(record.parent.relative_to(source / "results" / "runs"))
        configs = sorted((source / "results" / "configs").glob(f"{key}.*.yaml"))
        if not configs or (work / "results" / "runs" / key).exists():
            continue
        shutil.copytree(record.parent, work / "results" / "runs" / key)
        for config in configs:
            to = work / config.relative_to(source)
            to.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(config, to)
            before = (work / "results" / "runs" / key / "record.json").stat().st_mtime - 3600
            os.utime(to, (before, before))
        seeded.append(key)
    return seeded


def snakemake_command(
    data_dir: Path, device: str, cores: int, slots: int, threads: int, checkpoint_s: int
) -> list[str]:
    """The Snakemake command line (run from the scratch copy)."""
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), *TARGETS, "--configfile", *PROFILES, OVERLAY]
    cmd += ["--config", f"data_dir={data_dir}", "only_datasets=cifar10", f"device={device}", f"threads={threads}"]
    cmd += ["download=false", f"checkpoint_seconds={checkpoint_s}", "--resources", f"gpu={slots}"]
    return [*cmd, "--scheduler", "greedy", "--rerun-incomplete", "--keep-going"]


def finished_runs(work: Path) -> dict[str, Path]:
    """{run key (its folder under results/runs/): record path} of every run with a record."""
    runs = work / "results" / "runs"
    return {str(p.parent.relative_to(runs)): p for p in sorted(runs.glob("**/record.json"))}


def unfinished_runs(work: Path) -> list[dict[str, Any]]:
    """Runs with a checkpoint or a log but no record: each with its log's last epoch line (else its last line)."""
    runs, logs = work / "results" / "runs", work / "results" / "logs" / "train"
    keys = {str(p.parent.relative_to(runs)) for p in runs.glob("**/checkpoint.pt")}
    keys |= {str(p.relative_to(logs))[: -len(".log")] for p in logs.glob("**/*.log")}
    out = []
    for key in sorted(keys):
        if (runs / key / "record.json").is_file():
            continue
        log = logs / f"{key}.log"
        text = log.read_text(errors="replace").strip().splitlines() if log.is_file() else []
        last = [x for x in text if x.startswith("epoch ")][-1:] or text[-1:]  # the epoch reached, else the end
        out.append(
            {"run": key, "checkpoint": (runs / key / "checkpoint.pt").is_file(), "log": last[0][:200] if last else None}
        )
    return out


def run_line(key: str, record_path: Path) -> dict[str, Any]:
    """A ``length_run`` line from a run's record: its headline AUROCs (every score of the run, no views), times."""
    line: dict[str, Any] = {"event": "length_run", "run": key}
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError) as e:
        return {**line, "unreadable": str(e)[:200]}
    auroc = ((record.get("metrics") or {}).get("auroc")) or {}
    timing = record.get("timing") or {}
    line["auroc"] = {k: round(float(v), 2) for k, v in auroc.items() if "@" not in k and v is not None}
    for key in ("method", "variant", "normal_class", "epochs", "device", "gpu"):
        line[key] = record.get(key)
    for key in ("wall_seconds", "fit_seconds", "curve_seconds", "score_seconds"):
        if timing.get(key) is not None:
            line[key] = round(float(timing[key]), 1)
    line["sessions"] = timing.get("sessions")
    return line


def pack(work: Path, archive: Path) -> dict[str, Any]:
    """Every finished run's small files with its log, and the length tables and figure, into ``archive`` under
    their ``results/...`` paths (written whole: a temporary file, then renamed)."""
    names: list[str] = []
    for key in finished_runs(work):
        names += [f"results/runs/{key}/{f}" for f in RUN_FILES if (work / "results" / "runs" / key / f).is_file()]
        names += [str(c.relative_to(work)) for c in sorted((work / "results" / "configs").glob(f"{key}.*.yaml"))]
        names += [f"results/logs/train/{key}.log"] if (work / "results/logs/train" / f"{key}.log").is_file() else []
    names += [f for f in REPORT_FILES if (work / f).is_file()]
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(archive.name + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for name in names:
            tar.add(work / name, arcname=name)
    os.replace(tmp, archive)
    return {"archive": str(archive), "files": len(names), "bytes": archive.stat().st_size}


class Lines:
    """JSON lines to stdout and appended to a file."""

    def __init__(self, jsonl: Path | None) -> None:
        self.jsonl = jsonl

    def __call__(self, line: dict[str, Any]) -> None:
        text = json.dumps(line)
        print(text, flush=True)
        if self.jsonl is not None:
            self.jsonl.parent.mkdir(parents=True, exist_ok=True)
            with self.jsonl.open("a") as f:
                f.write(text + "\n")


def interrupt(signum: int, frame: Any) -> None:
    """SIGTERM (the call's hard ``timeout``) as Ctrl-C: the workflow is stopped as at the budget."""
    raise KeyboardInterrupt


def stop(proc: subprocess.Popen[bytes], grace: float) -> str:
    """SIGTERM to Snakemake's pid (the workflow forwards it to its jobs, which keep their checkpoints), then
    SIGKILL to its process group if anything is left ``grace`` seconds later. How it ended."""
    if proc.poll() is not None:
        return "exited"
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
        how = "sigterm"
    except subprocess.TimeoutExpired:
        how = "sigkill"
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # its jobs too (their own session: nothing may outlive the call)
    except ProcessLookupError:
        pass
    proc.wait()
    return how


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", default="shared/data", help="the carried data (cifar10.tar.xz or cifar10/)")
    p.add_argument("--budget-s", type=float, default=400.0, help="seconds for this script, from its start")
    p.add_argument("--stop-s", type=float, default=30.0, help="seconds between SIGTERM and SIGKILL")
    p.add_argument("--device", default="auto", help="cuda, cpu or auto (cuda when torch sees a GPU)")
    p.add_argument("--cores", type=int, default=min(16, os.cpu_count() or 1), help="Snakemake's --cores")
    p.add_argument("--slots", type=int, default=4, help="runs sharing the GPU at once (--resources gpu=K)")
    p.add_argument("--threads", type=int, default=2, help="torch threads per training job")
    p.add_argument("--checkpoint-s", type=int, default=30, help="checkpoint_seconds of every run")
    p.add_argument("--work", default="/tmp/con2_length_study", help="scratch copy of the workflow (kept)")
    p.add_argument("--jsonl", help="also append the lines here (gpu_call.sh: the call's jsonl under $OUT)")
    p.add_argument("--archive", help="the finished runs' files (default: $OUT/length_study.tar.gz)")
    p.add_argument(
        "--seed-from",
        help="an earlier session's finished runs (the archive unpacked) to keep instead of training again "
        f"(default: {SEED_FROM.relative_to(ROOT)}; none with --tiny, whose tiny runs are of another config)",
    )
    p.add_argument("--block", nargs="*", default=[], help="modules to make unimportable (a rehearsal)")
    p.add_argument("--tiny", action="store_true", help="the CPU rehearsal: two tiny runs")
    p.add_argument("--dry-run", action="store_true", help="print the start line and stop (nothing runs)")
    return p


def main(argv: list[str] | None = None) -> int:
    t0 = time.perf_counter()
    p = parser()
    args = p.parse_args(argv)
    if args.cores < 1 or args.slots < 1 or args.threads < 1 or args.checkpoint_s < 0:
        p.error("--cores, --slots and --threads must be at least 1, --checkpoint-s at least 0")
    out = os.environ.get("OUT")
    archive = (
        Path(args.archive) if args.archive else (Path(out) if out else Path("results/gpu_call")) / "length_study.tar.gz"
    )
    emit = Lines(Path(args.jsonl) if args.jsonl else None)
    work, data_dir = Path(args.work).resolve(), Path(args.data_dir).resolve()
    elapsed = lambda: time.perf_counter() - t0  # noqa: E731
    base = {"event": "length_skipped", "budget_s": args.budget_s}
    if args.budget_s < MIN_BUDGET_S:
        emit({**base, "reason": f"{args.budget_s:.0f} s left, under the {MIN_BUDGET_S:.0f} s the part needs to start"})
        return 0
    refresh_workflow(work)
    if args.tiny:
        make_tiny(work)
    (work / OVERLAY).write_text(
        "# gpu_length_study.py: every training job holds one of --resources gpu=K\nresources: {gpu: 1}\n"
    )
    env = smoke_env(work, args.block)
    device, note = resolve_device(args.device)
    cmd = snakemake_command(data_dir, device, args.cores, args.slots, args.threads, args.checkpoint_s)
    source = Path(args.seed_from) if args.seed_from else (None if args.tiny else SEED_FROM)
    seeded = seed_runs(work, source) if not args.dry_run and source is not None and source.is_dir() else []
    before = finished_runs(work)
    start: dict[str, Any] = {"event": "length_start", "command": " ".join(cmd[1:]), "work": str(work), "device": device}
    start |= {"slots": args.slots, "threads": args.threads, "budget_s": args.budget_s, "tiny": args.tiny}
    start |= {"finished_before": sorted(before), "seeded_from_earlier_session": seeded}
    start |= {"note": note} if note else {}
    if args.dry_run:
        emit(start)
        return 0
    version = snakemake_version(env)
    if version is None:
        emit({**base, "reason": "snakemake is not importable here: carry its wheels (python benchmarks/gpu_carry.py)"})
        return 0
    try:
        data = unpack_cifar(data_dir)
    except ValueError as e:
        emit({**base, "reason": str(e)})
        return 0
    if data is not None:
        emit(data)
    if not ((data_dir / "cifar10").is_dir() or (data_dir / "cifar-10-batches-py").is_dir()):
        emit({**base, "reason": f"no CIFAR-10 in {data_dir} (run benchmarks/gpu_carry.py before the session)"})
        return 0
    emit({**start, "snakemake": version, "seconds": round(elapsed(), 1)})
    for key, path in before.items():  # an earlier call's runs: their lines again, so each call's lines say all
        emit({**run_line(key, path), "earlier_call": True})
    seen = set(before)
    log = work / "snakemake.log"
    deadline = args.budget_s - args.stop_s - 10.0  # 10 s: the stop's lines and the archive
    how = None  # why Snakemake was stopped (None: it exited by itself)
    with log.open("a") as log_file:
        proc = subprocess.Popen(
            cmd, cwd=work, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
        previous = signal.signal(signal.SIGTERM, interrupt)
        try:
            while proc.poll() is None and elapsed() < deadline:
                time.sleep(min(POLL_S, max(0.1, deadline - elapsed())))
                for key, path in finished_runs(work).items():
                    if key not in seen:
                        seen.add(key)
                        emit({**run_line(key, path), "at_s": round(elapsed(), 1)})
            if proc.poll() is None:
                how = "budget"
        except KeyboardInterrupt:  # the call's hard timeout (or Ctrl-C): stopped as at the budget
            how = "interrupted"
        finally:
            if proc.poll() is None:
                how = f"{how or 'interrupted'}: {stop(proc, args.stop_s)}"
            signal.signal(signal.SIGTERM, previous)
    rc = proc.returncode
    for key, path in finished_runs(work).items():
        if key not in seen:
            emit({**run_line(key, path), "at_s": round(elapsed(), 1)})
    packed = pack(work, archive)
    finished = sorted(finished_runs(work))
    end: dict[str, Any] = {"rc": rc, "seconds": round(elapsed(), 1), "finished": len(finished), **packed}
    end["new_this_call"] = len(set(finished) - set(before))
    end["report_files"] = [f for f in REPORT_FILES if (work / f).is_file()]
    if how is not None:
        left = unfinished_runs(work)
        emit({"event": "length_paused", "how": how, **end, "unfinished": left, "resume": "the same command again"})
        return 0
    if rc == 0:
        emit({"event": "length_done", **end})
        return 0
    tail = log.read_text(errors="replace").splitlines()[-TAIL_LINES:]
    emit({"event": "length_failed", **end, "unfinished": unfinished_runs(work), "log_tail": tail})
    return 1


if __name__ == "__main__":
    sys.exit(main())
