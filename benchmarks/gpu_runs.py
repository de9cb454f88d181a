"""One call's runs for ``gpu_fidelity.py``: the plans' items, the budget, one run trained under the pause
rule and the alarm (alone, or as one packed worker), a packing measurement, and their JSON lines.

See ``gpu_fidelity.py`` for the plans and the rules, ``gpu_predictions.py`` for what they predict.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_predictions import (
    CIFAR,
    EVAL_COMPILE_SECONDS,
    GPU_SLOWDOWN,
    PAUSE_SLACK_SECONDS,
    SETTINGS,
    dataset_of,
    must_pause,
    score_seconds,
)


@dataclass(frozen=True)
class Item:
    """One thing a plan does: a training run (``k == 0``) or one packing measurement of ``k`` runs."""

    part: str  # the part: a, b, c, d (the length and readings plans: a, b / readings)
    label: str  # a SETTINGS label, or "packing k=K"
    seed: int = 0
    curve: bool = True  # score the learning curve (the paper's epochs 64 ... 2048, scaled to --epochs)
    k: int = 0  # packing: runs sharing the GPU
    # runs to the budget: starts once its first curve point fits (even under --finish-only) and trains until the
    # pause rule stops it; its result is the epoch it reached and its curve points (part e: 2048 CIFAR-10 epochs
    # fit no call)
    to_budget: bool = False

    @property
    def name(self) -> str:
        """The run directory's (and the record's) name."""
        if self.k:
            return f"packing_k{self.k}"
        return self.label.replace(" ", "_").replace(",", "").replace("/", "-").replace("+", "") + f"_seed{self.seed}"


PACKING_KS = (1, 2, 4, 8)


def plan_items(plan: str, packing_ks: tuple[int, ...] = PACKING_KS) -> list[Item]:
    """The plan's items in the order they run (its priority order)."""
    if plan == "length":
        return [Item("a", "as printed"), Item("a", "content only"), Item("b", "SimCLR + kNN")]
    if plan == "readings":
        seed0 = [Item("readings", label, 0, curve=False) for label in SETTINGS if "64 px" not in label]
        again = ("as printed", "content only", "SimCLR + kNN", "context weight 0.1, alpha constant")
        return seed0 + [Item("readings", label, 1, curve=False) for label in again]
    if plan == "all":
        return [
            *plan_items("length"),
            Item("e", CIFAR, to_budget=True),  # issue 44: after the BreastMNIST pair, before the 64 px pair
            *(
                Item("c", f"{m}, 64 px {d}", curve=False)
                for m in ("as printed", "SimCLR + kNN")
                for d in ("native", "upsampled")
            ),
            *(Item("d", f"packing k={k}", k=k) for k in packing_ks),
        ]
    raise ValueError(f"unknown plan {plan!r}")


PLANS = ("all", "length", "readings")
EPOCHS = {"all": 2048, "length": 2048, "readings": 128}
PAPER_CURVE = (64, 128, 256, 512, 1024, 2048)  # the curve's epochs at the paper's 2048 (scaled to --epochs)
PAPER = ["image_size=224", "data_size=28", "width=64", "batch_size=64", "tta=40", "center_crop=0.875"]
TINY = ["image_size=16", "data_size=28", "width=8", "batch_size=128", "tta=4", "csi_views=2", "device=cpu"]
# --tiny keeps its own sizes: a setting's override of these keys is dropped (the data it reads is kept)
TINY_KEEPS = ("image_size", "width", "batch_size", "tta", "csi_views")
# --tiny on CIFAR-10: every scoring encodes 15,000 images (38 s with the identity view alone on this project's
# loaded 2-core CPU, one thread), so no test-time views and one thread (beside other work: benchmarks/README.md)
TINY_CIFAR = ["tta=0", "csi_views=0", "threads=1"]
PACKED_PART = "a"  # the part whose two runs train at once
WORKER_GRACE_SECONDS = 10.0  # a packed worker still alive this long after the budget is killed


class Paused(Exception):
    """The budget was spent: the run stopped right after a checkpoint and resumes on the next call."""


class OutOfTime(Paused):
    """The budget ran out mid-epoch (the alarm, the backstop of the pause rule): the run stopped where it
    was and resumes from its last checkpoint (checkpoints and curve points are written atomically)."""


def arm_alarm(seconds: float) -> Callable[[], None]:
    """Raise :class:`OutOfTime` in the main thread after ``seconds`` (once); returns the disarm function."""
    state = {"armed": True}

    def ring(signum: int, frame: Any) -> None:
        if state["armed"]:
            state["armed"] = False
            raise OutOfTime(None)

    def disarm() -> None:
        state["armed"] = False
        signal.setitimer(signal.ITIMER_REAL, 0)

    signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.01))
    return disarm


def curve_epochs(epochs: int) -> list[int]:
    """The paper's curve epochs (64 ... 2048) scaled to ``epochs``: 2048 -> 64, 128, ..., 2048; 2 -> 1, 2."""
    return sorted({max(1, round(e * epochs / 2048)) for e in PAPER_CURVE})


def emitter(path: Path | None) -> Callable[[dict[str, Any]], None]:
    """Print a JSON line and append it to ``path`` (flushed: a killed call keeps what it printed); ``None``:
    print only (a packed worker: its parent relays its lines)."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)

    def emit(line: dict[str, Any]) -> None:
        text = json.dumps(line)
        print(text, flush=True)
        if path is not None:
            with path.open("a") as f:
                f.write(text + "\n")

    return emit


def records_validated() -> bool:
    """Whether run records can be validated here; where jsonschema is missing, write and read them
    unvalidated (con2.run.records validates with jsonschema; the GPU image lacks it)."""
    try:
        import jsonschema  # noqa: F401
    except ModuleNotFoundError:
        import con2.run.records

        con2.run.records.validate_record = lambda record, source="<record>": None
        return False
    return True


def environment(plan: str, compile: bool, validated: bool) -> dict[str, Any]:
    import torch

    cuda = torch.cuda.is_available()
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5)
        commit_id = commit.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit_id = None
    return {
        "event": "environment",
        "plan": plan,
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "compile": compile,
        "records_validated": validated,
        "git_commit": commit_id,
    }


def run_line(label: str, record: dict[str, Any], wall: float | None) -> dict[str, Any]:
    auroc = record["metrics"]["auroc"]
    main = next(c for c in ("nnd", "knn", *auroc) if c in auroc)
    curve = (record.get("curve") or {}).get("points", [])
    return {
        "event": "run",
        "setting": label,
        "dataset": record.get("dataset") or (record.get("config") or {}).get("dataset"),
        "seed": record["seed"],
        "epochs": record["epochs"],
        "image_size": (record.get("config") or {}).get("image_size"),
        "data_size": (record.get("config") or {}).get("data_size"),
        "main": main,
        "auroc": auroc,
        "silhouette": record["metrics"].get("silhouette"),
        "curve": [{"epoch": p["epoch"], main: round(p["auroc"][main], 2)} for p in curve],
        "curve_readings": {str(p["epoch"]): p["auroc"] for p in curve},
        "fit_seconds": round(record["timing"]["fit_seconds"], 1),
        "curve_seconds": round(record["timing"].get("curve_seconds") or 0.0, 1),
        "score_seconds": round(record["timing"]["score_seconds"], 1),
        "wall_seconds": round(record["timing"]["wall_seconds"], 1) if wall is None else round(wall, 1),
        "resumed_from_epoch": record.get("resumed_from_epoch"),
        "device": record["device"],
    }


MACHINE_KEYS = {"data_dir", "device", "progress", "checkpoint_seconds", "checkpoint_every", "threads", "compile"}


def same_run(record: dict[str, Any], config: dict[str, Any]) -> bool:
    """Whether a record was written by this config (the keys that change results; not paths or the device)."""
    theirs = {k: v for k, v in (record.get("config") or {}).items() if k not in MACHINE_KEYS}
    return theirs == {k: v for k, v in config.items() if k not in MACHINE_KEYS}


def keep_record(run_dir: Path, dest: Path | None) -> None:
    """Copy a finished run's record and curve to ``dest`` (under $OUT: small files that come back)."""
    if dest is None:
        return
    from con2.run.rundir import CURVE, RECORD

    dest.mkdir(parents=True, exist_ok=True)
    for name in (RECORD, CURVE):
        if (run_dir / name).is_file():
            shutil.copyfile(run_dir / name, dest / name)


def checkpoint_epoch(run_dir: Path) -> int:
    """The epoch of a paused run's checkpoint, from the note the pause left (0: none)."""
    try:
        return int(json.loads((run_dir / PAUSE_NOTE).read_text())["epoch"])
    except (OSError, ValueError, KeyError):
        return 0


PAUSE_NOTE = "paused.json"
# the carried CIFAR-10 image folder: benchmarks/gpu_carry.py packs ../shared/data/cifar10/ into
# shared/data/cifar10.tar.xz (18.6 MB, the folder 55 MB in 60,000 files), which travels with the checkout
CIFAR_ARCHIVE = "cifar10.tar.xz"


def cifar_present(data_dir: Path) -> bool:
    """Whether CIFAR-10 is on disk in a form con2 looks for: ``cifar10/`` (the image folder, or the pickles
    under it) or ``cifar-10-batches-py/``."""
    return (data_dir / "cifar10").is_dir() or (data_dir / "cifar-10-batches-py").is_dir()


def unpack_cifar(data_dir: Path) -> dict[str, Any] | None:
    """Unpack ``data_dir/cifar10.tar.xz`` (the carried image folder) into ``data_dir/cifar10/`` when CIFAR-10 is
    not on disk yet (with the system's tar where it has one: 3x faster than Python's here): a ``data`` line with
    its seconds, or None when there was nothing to do.

    Raises:
        ValueError: the archive is unreadable or holds anything but ``cifar10/`` (one line naming it).
    """
    archive = data_dir / CIFAR_ARCHIVE
    if cifar_present(data_dir) or not archive.is_file():
        return None
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=data_dir, prefix=".cifar10-unpack-") as tmp:
        try:
            if shutil.which("tar") and shutil.which("xz"):
                subprocess.run(["tar", "-xJf", str(archive), "-C", tmp], check=True, capture_output=True, text=True)
            else:
                with tarfile.open(archive, "r:xz") as tar:
                    tar.extractall(tmp, filter="data")
        except (OSError, tarfile.TarError, subprocess.CalledProcessError) as e:
            detail = "; ".join(str(getattr(e, "stderr", None) or e).strip().splitlines())[:200]
            fix = "pack it again with benchmarks/gpu_carry.py"
            raise ValueError(f"{archive} could not be unpacked ({detail}); {fix}") from e
        found = sorted(os.listdir(tmp))
        if found != ["cifar10"]:
            fix = "pack it with benchmarks/gpu_carry.py"
            raise ValueError(f"{archive} unpacks to {found[:5]}, not cifar10/ alone: {fix}")
        files = sum(len(names) for _, _, names in os.walk(Path(tmp) / "cifar10"))
        os.replace(Path(tmp) / "cifar10", data_dir / "cifar10")  # whole or not at all
    return {
        "event": "data",
        "dataset": "cifar10",
        "unpacked": str(archive),
        "to": str(data_dir / "cifar10"),
        "files": files,
        "seconds": round(time.perf_counter() - t0, 1),
    }


class Budget:
    """Seconds left of this call's budget, counted from the script's start (imports included)."""

    def __init__(self, seconds: float, start: float) -> None:
        self.seconds, self.start = seconds, start  # start: the script's time.perf_counter() at its first line

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        return self.seconds - self.elapsed()


def run_packing(
    item: Item, args: argparse.Namespace, budget: Budget, store: Path, emit: Callable[[dict[str, Any]], None]
) -> bool:
    """One packing measurement (``gpu_packing.py --ks k`` as a subprocess, killed with its workers if it
    would outrun the budget); its line is kept in ``store`` so a later call reuses it. True if measured."""
    state = store / f"{item.name}.json"
    script = Path(__file__).with_name("gpu_packing.py")
    cmd = [sys.executable, str(script), "--data-dir", args.data_dir, "--ks", str(item.k)]
    cmd += ["--tiny"] if args.tiny else []
    timeout = budget.left() - PAUSE_SLACK_SECONDS
    t_run = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=max(timeout, 0.1))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the packing run and its workers (its own session)
        proc.communicate()
        emit(
            {
                "event": "stopped",
                "part": item.part,
                "setting": item.label,
                "elapsed_s": round(time.perf_counter() - t_run, 1),
                "reason": "the budget ran out before it finished; the next call measures it again",
            }
        )
        return False
    lines = [json.loads(x) for x in stdout.splitlines() if x.startswith("{")]
    found = [x for x in lines if x.get("check") == "packing"]
    wall = round(time.perf_counter() - t_run, 1)
    if proc.returncode or not found:
        emit({"event": "packing", "part": item.part, "k": item.k, "error": f"exit {proc.returncode}: {stderr[-500:]}"})
        return False
    line = {"event": "packing", "part": item.part, "setting": item.label, **found[0], "wall_seconds": wall}
    line.pop("check", None)
    line["environment"] = next((x for x in lines if x.get("check") == "environment"), None)
    store.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps(line))
    emit(line)
    return True


def skipped_line(it: Item, predicted_s: float, left_s: float, **reason: str) -> dict[str, Any]:
    """An item's ``skipped`` line: what it would take and what was left (the next call reads it)."""
    line = {"event": "skipped", "part": it.part, "setting": it.label, "seed": it.seed}
    return {**line, "predicted_s": round(predicted_s), "left_s": round(left_s), **reason}


@dataclass
class Call:
    """What every run of this call (or of one packed worker) shares."""

    args: argparse.Namespace
    budget: Budget
    emit: Callable[[dict[str, Any]], None]
    epochs: int
    compile: bool
    out: Path  # the plan's run directories
    kept: Path | None  # where finished runs' records go ($OUT/records_<plan>)
    base: list[str]  # every run's overrides
    kind: str  # the rates assumed: H100 or H200
    curve_all: list[int] = field(default_factory=list)

    def config(self, it: Item) -> Any:
        """The run's config: the plan's base, its curve, its seed and its setting's overrides."""
        from con2.config import load_config  # lazy: imported after the budget's clock starts, as torch

        tiny_kept = tuple(f"{key}=" for key in TINY_KEEPS) if self.args.tiny else ()
        settings = [o for o in SETTINGS[it.label] if not (tiny_kept and o.startswith(tiny_kept))]
        curve = [f"score_at={json.dumps(self.curve_all)}", "curve_views=null"] if it.curve else []
        tiny = TINY_CIFAR if self.args.tiny and dataset_of(it.label) == "cifar10" else []
        return load_config(None, [*self.base, *curve, f"seed={it.seed}", *settings, *tiny])


def train_item(call: Call, it: Item, predicted_s: float, from_epoch: int, partial: bool, **tags: Any) -> Any:
    """Train one run under the pause rule and the alarm: its ``start``, ``point``, ``run`` or ``paused``
    lines (each with ``tags`` and, when tagged, the wall clock); its record if it finished, else None."""
    import torch  # lazy: the script's clock starts before its imports

    from con2.run.rundir import CHECKPOINT, RunDir
    from con2.run.runner import run

    args, budget, epochs = call.args, call.budget, call.epochs

    def emit(line: dict[str, Any]) -> None:
        call.emit({**line, **tags, "wall_clock": round(time.time(), 3)} if tags else line)

    rd = RunDir(call.out / it.name)
    resuming, left = (rd.path / CHECKPOINT).is_file(), budget.left()
    start = {"event": "start", "part": it.part, "setting": it.label, "seed": it.seed, "predicted_s": round(predicted_s)}
    emit({**start, "left_s": round(left), "resuming": resuming, "expect_pause": partial})
    if call.compile:
        torch._dynamo.reset()  # each run compiles its own model (predicted so); no stale graphs or guards
    curve = call.curve_all if it.curve else []
    t_run = time.perf_counter()
    # a checkpoint left by an earlier call is not a fresh one: only one this call writes is a pause point
    mtime0 = rd.checkpoint.stat().st_mtime_ns if rd.checkpoint.is_file() else None
    seen: dict[str, Any] = {"mtime": mtime0, "last": t_run, "epoch_s": [], "score_s": None}
    # the first scoring of a process compiles the eval graphs; until a scoring is measured, reserve that
    seen["first_score_s"] = GPU_SLOWDOWN[call.kind] * score_seconds(it.label)
    seen["first_score_s"] += EVAL_COMPILE_SECONDS if call.compile else 0.0
    seen["from_epoch"] = seen["checkpoint_epoch"] = from_epoch if resuming else 0

    def on_epoch_end(epoch: int) -> None:
        now = time.perf_counter()
        interval, seen["last"] = now - seen["last"], now
        if epoch in curve:
            row = next((q for q in rd.read_curve() if q["epoch"] == epoch), None)
            if row is not None:
                main = next(c for c in ("nnd", "knn", *row["auroc"]) if c in row["auroc"])
                point = {"event": "point", "part": it.part, "setting": it.label, "epoch": epoch}
                point |= {main: round(row["auroc"][main], 2), "auroc": row["auroc"]}
                silhouette, elapsed = row["extras"].get("silhouette"), round(time.perf_counter() - t_run, 1)
                emit({**point, "silhouette": silhouette, "elapsed_s": elapsed})
            if seen["epoch_s"]:  # a scoring's measured time (its epoch's interval less an epoch)
                seen["score_s"] = max(seen["score_s"] or 0.0, interval - max(seen["epoch_s"]))
        elif seen.get("warm"):  # the first epoch of a process compiles: not an epoch's time
            seen["epoch_s"] = [*seen["epoch_s"][-7:], interval]
        seen["warm"] = True
        mtime = rd.checkpoint.stat().st_mtime_ns if rd.checkpoint.is_file() else None
        fresh, seen["mtime"] = mtime != seen["mtime"], mtime
        if fresh:
            seen["checkpoint_epoch"] = epoch
        if not fresh or epoch >= epochs:
            return
        if seen["epoch_s"]:
            per_epoch = max(seen["epoch_s"])
        else:  # no epoch timed yet: this process's time per epoch so far, compilation included
            per_epoch = (now - t_run) / max(epoch - seen["from_epoch"], 1)
        score_s = seen["first_score_s"] if seen["score_s"] is None else seen["score_s"]
        late = must_pause(budget.elapsed(), budget.seconds, epoch, epochs, per_epoch, score_s, args.checkpoint_s, curve)
        if late or epoch == args.pause_at:
            raise Paused(epoch)

    disarm = arm_alarm(budget.left() - PAUSE_SLACK_SECONDS)  # the backstop: its lines before the budget
    try:
        record = run(call.config(it), rd.path, on_epoch_end)
        disarm()
    except Paused as stop:
        disarm()
        # the pause rule stops at the checkpoint it just wrote; the alarm wherever it was: the last checkpoint
        epoch = stop.args[0] if stop.args[0] is not None else seen["checkpoint_epoch"]
        if epoch:
            (rd.path / PAUSE_NOTE).write_text(json.dumps({"epoch": epoch}))
        how = "at a checkpoint" if stop.args[0] is not None else "alarm at the budget: from the last checkpoint"
        paused = {"event": "paused", "part": it.part, "setting": it.label, "seed": it.seed, "epoch": epoch}
        reached = {}
        if it.to_budget:  # its result: how far the schedule got and the readings on the way
            scored = sorted(q["epoch"] for q in rd.read_curve() if q["epoch"] <= epoch)
            reached = {
                "reached_epoch": epoch,
                "of_epochs": epochs,
                "curve_scored": scored,
                "note": f"epoch {epoch} of a {epochs}-epoch schedule (cosine over {epochs} epochs): a reading part"
                " way, not a run of that length; its checkpoint stays on this machine (a later session starts again"
                " from epoch 0)",
            }
        emit(
            {
                **paused,
                **reached,
                "elapsed_s": round(time.perf_counter() - t_run, 1),
                "call_elapsed_s": round(budget.elapsed(), 1),
                "how": how,
                "resume": "run the same command again: the run resumes from this checkpoint",
            }
        )
        return None
    finally:
        disarm()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    wall = time.perf_counter() - t_run
    emit({**run_line(it.label, record, wall), "part": it.part, "predicted_s": round(predicted_s)})
    keep_record(rd.path, call.kept / it.name if call.kept else None)
    return record
