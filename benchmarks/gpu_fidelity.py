"""The GPU fidelity check: everything issue 24 asks of one GPU, resumable over several calls.

Three plans, one JSON line per event (units in the key: ``_s`` seconds, AUROC in %), on stdout and
appended to ``--jsonl`` (default ``$OUT/gpu_fidelity_<plan>.jsonl`` when ``$OUT`` is set, else
``<--out>/gpu_fidelity_<plan>.jsonl``), each line written (and flushed) as it happens:

``--plan all`` (the default; issue 24, point 4), in priority order:

  (a) BreastMNIST at the paper's input size and length (28 px MedMNIST data resampled to 224 px by
      the views, the standard ResNet18 stem, width 64, N = 64, AdamW 1e-3 / wd 1e-3, cosine over
      2048 epochs, 40 test-time views, the appendix's centre crop, ``compile: true``), seed 0, CON2
      as printed and content only, each with the learning curve scored on the full test-time plan
      after epochs 64, 128, 256, 512, 1024 and 2048 (the last point is the final score);
  (b) SimCLR + kNN, the same, with its curve;
  (c) the native-resolution pair at 64 px (``image_size=64``, the CIFAR stem), 2048 epochs, no curve:
      CON2 as printed and SimCLR + kNN, each from the official 64 px file (``data_size=64``,
      ``medmnist/breastmnist_64.npz``) and from the 28 px file upsampled (``data_size=28``);
  (d) the GPU packing measurement: ``gpu_packing.py --ks k`` for k = 1, 2, 4, 8 (k runs of 16
      epochs at 224 px sharing the GPU; aggregate images/s), one subprocess per k.

``--plan length`` is (a) and (b) alone (issue 17); ``--plan readings`` the readings the CPU fidelity
table could not decide, at 128 epochs, every setting on seed 0 and a second seed of four (issue 8;
its lines are in ``benchmarks/measured/h200_2026-11-26_*``).

Before anything runs, a ``prediction`` line per item (its predicted seconds, whether it is done, to
run or resumes from a checkpoint, the cumulative time) and a ``plan`` line (the total and the
total per part). Then per item: ``start``, ``point`` (a curve point as it is scored), ``run`` (final
AUROC of every reading, the curve, timings, the prediction beside the measured wall time) or
``packing``; ``paused``, ``skipped`` (with its predicted time and what was left), ``done``.

Budget (``--budget-s``, default 540 s, counted from the script's start: one call within the
device's 10-minute command limit). An item starts only when its predicted time fits what is left;
the first unfinished run (all runs before it finished) may also start when it does not fit but the
call leaves room for its fixed costs, two checkpoint intervals and 15 s of training (it will
pause; ``--finish-only`` forbids that, for a session's last call). Each checkpoint (every
``--checkpoint-s`` = 20 s) checks whether the next one, with any curve scoring or the final scoring
before it, could end after the budget, from the epoch and scoring times measured in this call; if
so the run stops there with a ``paused`` line and every item after it is listed ``skipped`` with
its prediction. Should a run still be busy 2 s before the budget ends (slower than measured, a
compilation or scoring longer than reserved), an alarm stops it where it is (``"how": "alarm"``);
it resumes from its last checkpoint, which the engine writes atomically, as it keeps the curve
points. A packing measurement is killed with its workers at the same point. The same command
again resumes: finished runs are read back from their records (in the run directories under
``--out``, or in ``--records``, default
``benchmarks/measured/records_<plan>``, if their config matches), a paused run resumes from its
checkpoint and keeps its curve points, finished packing measurements are reused. Records of runs
finished in this call are copied to ``$OUT/records_<plan>/``: committed to
``benchmarks/measured/records_<plan>/`` they let a later session skip those runs (checkpoints,
142 MB each, do not leave the machine: a paused run resumes only on the same machine).

Predicted wall time on one H200 (``predicted_seconds``; predictions, not results) from the
measured 16.5 s of fit per 128 epochs of CON2 at 224 px without compile (10.9 s for SimCLR;
``benchmarks/measured/h200_2026-11-26_call2_*``), +30% throughput with ``compile`` (3900 vs 3011
images/s, ``..._call1_gpu_check_compile.jsonl``), 18 s to compile the training graph (17.8 s
measured), ~30 s to compile the scoring graphs (a guess from a CPU check), 2.8 s per full scoring
(1.8 s measured for the 40 fixed views, ~1 s more for CSI's; SimCLR 1.5 s), 6 s of start-up:

    (a) CON2 as printed, 224 px: 16 x 16.5 / 1.3 = 203 s fit + 18 + 30 compile + 7 x 2.8 scorings + 6  = 277 s
        content only: the same                                                                         = 277 s
    (b) SimCLR + kNN, 224 px:    16 x 10.9 / 1.3 = 134 s fit + 48 + 7 x 1.5 + 6                        = 199 s
    (c) CON2, 64 px (x2):        16 x 16.5 x 1.251 / 1.3 = 254 s fit + 48 + 1 x 2.8 x 1.251 + 6        = 312 s each
        SimCLR, 64 px (x2):      16 x 10.9 x 1.251 / 1.3 = 168 s fit + 48 + 1 x 1.5 x 1.251 + 6        = 224 s each
    (d) packing, k = 1, 2, 4, 8: 15 s start-up + k x (6144 images / 2979 images/s + 0.56 s scoring)
                                 = 18 + 20 + 25 + 36                                                    =  99 s
    all: a 553 + b 199 + c 1070 + d 99 = 1922 s, about 32 minutes: four calls of 540 s at least.

The 64 px step (c) is predicted from FLOPs: the encoder's forward and backward per view
(``torch.utils.flop_counter`` on the CPU, ResNet18 width 64) is 10.645 GFLOP at 224 px with the
standard stem and 13.316 GFLOP at 64 px with the CIFAR stem (3x3 stride 1, no max-pool: 64 x 64
maps in the first stage against 56 x 56), 1.251x; both steps hold 256 views (N = 64), the encoder
is ~85% of a step, so the 64 px step is predicted at 1.251x the measured 224 px step, with the same
+30% from compile (the 32 px step gained +15%: with that gain a 64 px CON2 run would take 287 s of
fit). The 32 px count (3.329 GFLOP per view) matches the measured 32 px step (6832 GFLOP / 2048
views), so 64 px = 4x 32 px exactly. Measured at 32 px, N = 512, the GPU reached 222 TFLOP/s against
128 at 224 px, N = 64, so the 64 px prediction, at the 224 px efficiency, is more likely high than
low. The packing start-up (15 s for k processes importing torch and opening CUDA contexts) is a
guess, and k runs are predicted no faster together than one alone (an upper bound).

In one 15-minute slot (1-2 minutes of start): call 1 (540 s) runs CON2 as printed (~277 s) and most
of content only (it starts with ~256 s left and pauses); call 2, right after on the same warm
machine (the device releases it after 30 s idle), with ``BUDGET_S`` = what is left less ~60 s
(about 200 s) and ``--finish-only``: the rest of content only (~100 s: ~40 s of fit, recompiling,
two scorings), then whatever fits of (d) (99 s in all; SimCLR's 199 s does not fit). (b) and (c),
~1270 s, need two or three more calls in later slots.

    bash benchmarks/gpu_call.sh                                                 # the device call (see there)
    PYTHONPATH=. python benchmarks/gpu_fidelity.py --data-dir shared/data       # the same plan, directly
    PYTHONPATH=. python benchmarks/gpu_fidelity.py --data-dir shared/data --plan length
    PYTHONPATH=. python benchmarks/gpu_fidelity.py --data-dir ../shared/data --tiny   # CPU rehearsal

Runs from a checkout without installing anything: it imports only the standard library, torch
and the project's training and scoring paths (no kornia). Where jsonschema is missing (the GPU
image), run records are written and read back without schema validation (the environment line
says ``records_validated: false``; the workflow validates them when it reads them).
``--tiny`` rehearses a plan on the CPU (16 px, width 8, 2 epochs, the curve at epochs 1 and 2, no
compile; part c reads the same 64 and 28 px files but trains at 16 px; part d runs
``gpu_packing.py --tiny``); the predictions it prints are still the H200's for the tiny epochs.
"""

from __future__ import annotations

import time

T_START = time.perf_counter()  # the budget counts from here: imports and start-up are spent time too

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

# (setting, overrides): one changed reading each, against the default (the printed objective with
# the appendix's resize 256 / centre-crop 224).
SETTINGS: dict[str, list[str]] = {
    "as printed": [],
    "content only": ["params.loss=content_only"],
    "SimCLR + kNN": ["method=simclr"],
    "alpha constant": ["params.alpha_schedule=constant"],
    "context weight 0.1, alpha constant": ["params.context_weight=0.1", "params.alpha_schedule=constant"],
    "tau context 1.0": ["params.context_temperature=1.0"],
    "tau context 0.1": ["params.context_temperature=0.1"],
    "context flip": ["params.contexts=[flip]"],
    "no centre crop": ["center_crop=1.0"],
    "content only, no centre crop": ["params.loss=content_only", "center_crop=1.0"],  # issue 8's 78.6 setting
    # the native-resolution pair at 64 px (CIFAR stem): the official 64 px file against the 28 px file upsampled
    "as printed, 64 px native": ["image_size=64", "data_size=64"],
    "as printed, 64 px upsampled": ["image_size=64", "data_size=28"],
    "SimCLR + kNN, 64 px native": ["method=simclr", "image_size=64", "data_size=64"],
    "SimCLR + kNN, 64 px upsampled": ["method=simclr", "image_size=64", "data_size=28"],
}


@dataclass(frozen=True)
class Item:
    """One thing a plan does: a training run (``k == 0``) or one packing measurement of ``k`` runs."""

    part: str  # the part: a, b, c, d (the length and readings plans: a, b / readings)
    label: str  # a SETTINGS label, or "packing k=K"
    seed: int = 0
    curve: bool = True  # score the learning curve (the paper's epochs 64 ... 2048, scaled to --epochs)
    k: int = 0  # packing: runs sharing the GPU

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
# Measured on one H200 (benchmarks/README.md): fit seconds per 128 epochs at 224 px, N = 64, without compile.
FIT_PER_128 = {"con2": 16.5, "simclr": 10.9}
SCORE_SECONDS = {"con2": 2.8, "simclr": 1.5}  # one full scoring at 224 px (40 fixed views + CSI's 10 per context)
COMPILE_SPEEDUP, COMPILE_SECONDS, EVAL_COMPILE_SECONDS, STARTUP_SECONDS = 1.3, 18.0, 30.0, 6.0
# Encoder forward + backward per view, GFLOP (torch.utils.flop_counter on the CPU, ResNet18 width 64): the
# standard stem at 224 px; the CIFAR stem (3x3 stride 1, no max-pool) up to 64 px, so 64 px costs 4x 32 px.
# The 32 and 224 px values match the measured steps' counts (6832 GFLOP / 2048 views, 2726 / 256).
GFLOP_PER_VIEW = {224: 10.645, 64: 13.316, 32: 3.329}
# Packing (gpu_packing.py): each run 16 epochs = 96 steps of 64 images, not compiled; k runs predicted no
# faster together than one alone (2979 images/s measured in fit), plus start-up (k processes importing torch,
# CUDA contexts, data; a guess) and scoring with 8 test-time views per run.
PACKING_IMAGES, FIT_IMAGES_PER_S, PACKING_STARTUP_SECONDS = 96 * 64, 768 * 64 / 16.5, 15.0
PAUSE_SLACK_SECONDS = 2.0  # a checkpoint's write (0.3 s measured) and the pause's own lines
RESERVE_SECONDS = 15.0  # what a partial start must leave besides its overheads (the budget check's margin)


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


def method_of(label: str) -> str:
    return "simclr" if "method=simclr" in SETTINGS[label] else "con2"


def size_of(label: str) -> int:
    """The input size of a setting (224 px unless it sets ``image_size``)."""
    sizes = [int(o.split("=")[1]) for o in SETTINGS[label] if o.startswith("image_size=")]
    return sizes[-1] if sizes else 224


def step_factor(label: str) -> float:
    """A step's time relative to the measured 224 px step: the ratio of the encoder's FLOPs per view
    (the same 256 views per step of N = 64; the encoder is ~85% of a step)."""
    return GFLOP_PER_VIEW[size_of(label)] / GFLOP_PER_VIEW[224]


def predicted_seconds(label: str, epochs: int, n_points: int, compile: bool, from_epoch: int = 0) -> float:
    """A run's predicted wall time on one H200 from the measured fit rate (see the module docstring):
    ``epochs - from_epoch`` epochs of fit, compilation, ``n_points`` curve scorings and the final one."""
    method, factor = method_of(label), step_factor(label)
    fit = FIT_PER_128[method] * factor * (epochs - from_epoch) / 128 / (COMPILE_SPEEDUP if compile else 1.0)
    compiling = COMPILE_SECONDS + EVAL_COMPILE_SECONDS if compile else 0.0
    return fit + compiling + (n_points + 1) * SCORE_SECONDS[method] * factor + STARTUP_SECONDS


def predicted_packing_seconds(k: int, tiny: bool = False) -> float:
    """One packing measurement of ``k`` runs on one H200 (see ``PACKING_IMAGES``); tiny: its CPU rehearsal's
    size is not predicted, the same number is used."""
    return PACKING_STARTUP_SECONDS + k * (PACKING_IMAGES / FIT_IMAGES_PER_S + 0.2 * SCORE_SECONDS["con2"])


def fixed_seconds(label: str, compile: bool) -> float:
    """What a run spends whatever its length: start-up, compilation and one scoring."""
    compiling = COMPILE_SECONDS + EVAL_COMPILE_SECONDS if compile else 0.0
    return STARTUP_SECONDS + compiling + SCORE_SECONDS[method_of(label)] * step_factor(label)


def start_decision(predicted: float, left: float, fixed: float, checkpoint_s: float, partial_ok: bool) -> str:
    """``start`` when the whole run is predicted to fit; ``partial`` when it does not but may start and pause
    (it is the first unfinished run and the call leaves room for its fixed costs, two checkpoint intervals
    and ``RESERVE_SECONDS`` of training); else ``skip``."""
    if predicted <= left:
        return "start"
    if partial_ok and left >= fixed + 2 * checkpoint_s + RESERVE_SECONDS:
        return "partial"
    return "skip"


def must_pause(
    elapsed: float,
    budget: float,
    epoch: int,
    epochs: int,
    epoch_s: float,
    score_s: float,
    checkpoint_s: float,
    curve: list[int],
) -> bool:
    """Whether to pause at the checkpoint just written after ``epoch``: the next checkpoint comes at the
    latest ``checkpoint_s`` and one epoch later (with any curve scoring or the final scoring on the way),
    so pause now if that could end after ``budget``. Never pauses after the last epoch."""
    if epoch >= epochs:
        return False
    horizon = min(epochs, epoch + math.ceil(checkpoint_s / max(epoch_s, 1e-6)) + 2)
    scorings = sum(epoch < e <= horizon for e in curve) + (horizon >= epochs)  # the final one, counted apart
    reserve = (horizon - epoch) * epoch_s + scorings * score_s + PAUSE_SLACK_SECONDS
    return elapsed + reserve > budget


def emitter(path: Path) -> Callable[[dict[str, Any]], None]:
    """Print a JSON line and append it to ``path`` (flushed: a killed call keeps what it printed)."""
    path.parent.mkdir(parents=True, exist_ok=True)

    def emit(line: dict[str, Any]) -> None:
        text = json.dumps(line)
        print(text, flush=True)
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
        "seed": record["seed"],
        "epochs": record["epochs"],
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


class Budget:
    """Seconds left of this call's budget, counted from the script's start (imports included)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def elapsed(self) -> float:
        return time.perf_counter() - T_START

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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--plan", choices=PLANS, default="all")
    p.add_argument("--out", default="results/gpu_fidelity", help="run directories (kept between calls)")
    p.add_argument("--jsonl", help="where the lines are appended (default: $OUT or --out)")
    p.add_argument("--records", help="finished runs' records to reuse (default: benchmarks/measured/records_<plan>)")
    p.add_argument("--epochs", type=int, help="default: 2048 (all, length), 128 (readings); --tiny: 2")
    p.add_argument("--seed-offset", type=int, default=0, help="added to every seed of the plan")
    p.add_argument("--budget-s", type=float, default=540.0, help="seconds this call may use (see the docstring)")
    p.add_argument("--checkpoint-s", type=float, default=20.0, help="seconds between checkpoints (the pause points)")
    p.add_argument("--finish-only", action="store_true", help="start only runs predicted to finish in this call")
    p.add_argument("--packing-ks", type=int, nargs="+", default=list(PACKING_KS), help="part d: runs per GPU")
    p.add_argument("--no-compile", action="store_true", help="train without torch.compile")
    p.add_argument("--only", nargs="*", help="run only these settings (by label)")
    p.add_argument("--seeds", nargs="*", type=int, help="run only the plan's runs of these seeds")
    p.add_argument("--tiny", action="store_true", help="a CPU rehearsal in seconds: 16 px, width 8, no compile")
    p.add_argument(
        "--pause-at", type=int, help="rehearse a pause: stop after this epoch's checkpoint as if out of budget"
    )
    args = p.parse_args()
    budget = Budget(args.budget_s)

    import torch

    from con2.config import load_config
    from con2.run.records import read_record
    from con2.run.rundir import CHECKPOINT, RECORD, RunDir
    from con2.run.runner import run

    compile = not (args.no_compile or args.tiny)
    epochs = args.epochs or (2 if args.tiny else EPOCHS[args.plan])
    out = Path(args.out) / args.plan
    env_out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    jsonl = Path(args.jsonl) if args.jsonl else (env_out or out) / f"gpu_fidelity_{args.plan}.jsonl"
    kept = env_out / f"records_{args.plan}" if env_out else None
    records = Path(args.records) if args.records else Path("benchmarks/measured") / f"records_{args.plan}"
    emit = emitter(jsonl)
    if compile:  # several runs x train/eval graphs x batch shapes: keep dynamo from falling back to eager
        for key in ("cache_size_limit", "recompile_limit"):
            if hasattr(torch._dynamo.config, key):
                setattr(torch._dynamo.config, key, 64)
    curve_all = curve_epochs(epochs)
    base = [
        "dataset=breastmnist",
        f"data_dir={args.data_dir}",
        f"epochs={epochs}",
        "progress=false",
        f"checkpoint_seconds={args.checkpoint_s}",
        f"compile={str(compile).lower()}",
        *(TINY if args.tiny else PAPER),
    ]
    emit(environment(args.plan, compile, records_validated()))

    # the seed offset applied once: every seed below (run directories, configs, lines) is the run's own
    offset = [
        it if it.k else replace(it, seed=it.seed + args.seed_offset)
        for it in plan_items(args.plan, tuple(args.packing_ks))
    ]
    items = [
        it
        for it in offset
        if not ((args.only and it.label not in args.only) or (args.seeds and not it.k and it.seed not in args.seeds))
    ]

    def config_of(it: Item) -> Any:
        settings = [o for o in SETTINGS[it.label] if not (args.tiny and o.startswith("image_size="))]
        curve = [f"score_at={json.dumps(curve_all)}", "curve_views=null"] if it.curve else []
        return load_config(None, [*base, *curve, f"seed={it.seed}", *settings])

    # What is done already, what a paused run has left, and every item's predicted time: printed first.
    finished: dict[Item, tuple[dict[str, Any], str]] = {}
    from_epoch: dict[Item, int] = {}
    predicted: dict[Item, float] = {}
    for it in items:
        if it.k:
            state = out / "packing" / f"{it.name}.json"
            if state.is_file():
                finished[it] = (json.loads(state.read_text()), str(state))
            predicted[it] = predicted_packing_seconds(it.k)
            continue
        rd = out / it.name
        cfg = config_of(it).to_dict()
        for source in (rd / RECORD, records / it.name / RECORD):
            if source.is_file():
                record = read_record(source)
                if same_run(record, cfg):
                    finished[it] = (record, str(source))
                    break
        from_epoch[it] = checkpoint_epoch(rd) if (rd / CHECKPOINT).is_file() else 0
        points = [e for e in curve_all if e > from_epoch[it]] if it.curve else []
        predicted[it] = predicted_seconds(it.label, epochs, len(points), compile, from_epoch[it])
    cumulative = 0.0
    for it in items:
        status = (
            "done" if it in finished else (f"resumes from epoch {from_epoch[it]}" if from_epoch.get(it) else "to run")
        )
        cumulative += 0.0 if it in finished else predicted[it]
        emit(
            {
                "event": "prediction",
                "part": it.part,
                "setting": it.label,
                "seed": it.seed,
                "predicted_s": round(predicted[it]),
                "status": status,
                "cumulative_s": round(cumulative),
            }
        )
    parts: dict[str, float] = {}
    for it in items:
        parts[it.part] = parts.get(it.part, 0.0) + (0.0 if it in finished else predicted[it])
    emit(
        {
            "event": "plan",
            "plan": args.plan,
            "epochs": epochs,
            "predicted_s": round(cumulative),
            "predicted_s_per_part": {k: round(v) for k, v in parts.items()},
            "budget_s": args.budget_s,
            "items": len(items),
            "basis": "predictions for one H200 (seconds), from the measured 224 px fit rate: see the module docstring",
        }
    )

    done: list[tuple[Item, dict[str, Any]]] = []
    paused = False
    for i, it in enumerate(items):
        seed = it.seed
        if it in finished:
            record, source = finished[it]
            if it.k:
                emit({**record, "reused": True})
            else:
                emit({**run_line(it.label, record, None), "part": it.part, "reused": True, "source": source})
                done.append((it, record))
            continue
        left = budget.left()

        if paused:
            emit(skipped_line(it, predicted[it], left, reason="paused: the budget is spent"))
            continue
        if it.k:
            if predicted[it] > left:
                emit(skipped_line(it, predicted[it], left))
                continue
            emit({"event": "start", "part": it.part, "setting": it.label, "predicted_s": round(predicted[it])})
            run_packing(it, args, budget, out / "packing", emit)
            continue
        head = all(x in finished or any(x is y for y, _ in done) for x in items[:i] if not x.k)
        decision = start_decision(
            predicted[it], left, fixed_seconds(it.label, compile), args.checkpoint_s, head and not args.finish_only
        )
        if decision == "skip":
            emit(skipped_line(it, predicted[it], left))
            continue
        rd = RunDir(out / it.name)
        resuming = (rd.path / CHECKPOINT).is_file()
        emit(
            {
                "event": "start",
                "part": it.part,
                "setting": it.label,
                "seed": seed,
                "predicted_s": round(predicted[it]),
                "left_s": round(left),
                "resuming": resuming,
                "expect_pause": decision == "partial",
            }
        )
        if compile:
            torch._dynamo.reset()  # each run compiles its own model (predicted so); no stale graphs or guards
        curve = curve_all if it.curve else []
        t_run = time.perf_counter()
        # a checkpoint left by an earlier call is not a fresh one: only one this call writes is a pause point
        mtime0 = rd.checkpoint.stat().st_mtime_ns if rd.checkpoint.is_file() else None
        seen: dict[str, Any] = {"mtime": mtime0, "last": t_run, "epoch_s": [], "score_s": None}
        # the first scoring of a process compiles the eval graphs; until a scoring is measured, reserve that
        seen["first_score_s"] = SCORE_SECONDS[method_of(it.label)] * step_factor(it.label)
        seen["first_score_s"] += EVAL_COMPILE_SECONDS if compile else 0.0
        seen["from_epoch"] = from_epoch[it] if (rd.path / CHECKPOINT).is_file() else 0
        seen["checkpoint_epoch"] = seen["from_epoch"]

        def on_epoch_end(
            epoch: int, it: Item = it, rd: RunDir = rd, t_run: float = t_run, seen=seen, curve=curve
        ) -> None:
            now = time.perf_counter()
            interval, seen["last"] = now - seen["last"], now
            if epoch in curve:
                row = next((q for q in rd.read_curve() if q["epoch"] == epoch), None)
                if row is not None:
                    main = next(c for c in ("nnd", "knn", *row["auroc"]) if c in row["auroc"])
                    emit(
                        {
                            "event": "point",
                            "part": it.part,
                            "setting": it.label,
                            "epoch": epoch,
                            main: round(row["auroc"][main], 2),
                            "auroc": row["auroc"],
                            "silhouette": row["extras"].get("silhouette"),
                            "elapsed_s": round(time.perf_counter() - t_run, 1),
                        }
                    )
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
            late = must_pause(
                budget.elapsed(), budget.seconds, epoch, epochs, per_epoch, score_s, args.checkpoint_s, curve
            )
            if late or epoch == args.pause_at:
                raise Paused(epoch)

        disarm = arm_alarm(budget.left() - PAUSE_SLACK_SECONDS)  # the backstop: its lines before the budget
        try:
            record = run(config_of(it), rd.path, on_epoch_end)
            disarm()
        except Paused as stop:
            disarm()
            # the pause rule stops at the checkpoint it just wrote; the alarm wherever it was: the last checkpoint
            epoch = stop.args[0] if stop.args[0] is not None else seen["checkpoint_epoch"]
            if epoch:
                (rd.path / PAUSE_NOTE).write_text(json.dumps({"epoch": epoch}))
            emit(
                {
                    "event": "paused",
                    "part": it.part,
                    "setting": it.label,
                    "seed": seed,
                    "epoch": epoch,
                    "elapsed_s": round(time.perf_counter() - t_run, 1),
                    "call_elapsed_s": round(budget.elapsed(), 1),
                    "how": "at a checkpoint"
                    if stop.args[0] is not None
                    else "alarm at the budget: from the last checkpoint",
                    "resume": "run the same command again: the run resumes from this checkpoint",
                }
            )
            paused = True
            continue
        finally:
            disarm()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        wall = time.perf_counter() - t_run
        emit({**run_line(it.label, record, wall), "part": it.part, "predicted_s": round(predicted[it])})
        keep_record(rd.path, kept / it.name if kept else None)
        done.append((it, record))
    summary = {
        f"{it.label} seed{r['seed']}": round(r["metrics"]["auroc"][run_line(it.label, r, 0)["main"]], 1)
        for it, r in done
    }
    emit({"event": "done", "summary": summary, "total_seconds": round(budget.elapsed(), 1), "jsonl": str(jsonl)})


if __name__ == "__main__":
    main()
