"""The GPU fidelity check: everything issue 24 asks of one GPU, sized to the device time a session has.

Three plans, one JSON line per event (units in the key: ``_s`` seconds, AUROC in %), on stdout and
appended to ``--jsonl`` (default ``$OUT/gpu_fidelity_<plan>.jsonl`` when ``$OUT`` is set, else
``<--out>/gpu_fidelity_<plan>.jsonl``), each line written (and flushed) as it happens:

``--plan all`` (the default; issue 24, point 4; issue 33, point 3), in priority order:

  (a) BreastMNIST at the paper's input size and length (28 px MedMNIST data resampled to 224 px by
      the views, the standard ResNet18 stem, width 64, N = 64, AdamW 1e-3 / wd 1e-3, cosine over
      2048 epochs, 40 test-time views, the appendix's centre crop, ``compile: true``), seed 0, CON2
      as printed and content only, each with the learning curve scored on the run's own test views
      after epochs 64, 128, 256, 512, 1024 and 2048 (the last point is the final score). The two
      train AT ONCE, packed on the one GPU as two worker processes (this script with ``--worker``,
      released together by a barrier; their lines relayed here, tagged ``packed``, ``pid`` and
      ``wall_clock``) when the packed pair is predicted to fit what is left; else one after the
      other, CON2 as printed first, each started by the rules below (``--no-pack``: always so);
  (b) SimCLR + kNN, the same, with its curve;
  (e) CIFAR-10 at the paper's configuration (issue 44, point 5): CON2 as printed, normal class airplane,
      32 px, width 64 (CIFAR stem), N = 512, 2048 epochs, 40 test-time views, the curve at epochs 64 ...
      2048; 2048 epochs fit no call (710 s predicted on an H200, 969 s on an H100), so it runs TO THE
      BUDGET: it starts when its next curve point fits what is left (under ``--finish-only`` too), after
      unpacking ``<data-dir>/cifar10.tar.xz`` when the folder is not there (``gpu_carry.py`` packs it),
      and its ``paused`` line says the epoch it reached (``reached_epoch``, ``of_epochs``,
      ``curve_scored``); nothing after it starts in that call;
  (c) the native-resolution pair at 64 px (``image_size=64``, the CIFAR stem), 2048 epochs, no curve:
      CON2 as printed and SimCLR + kNN, each from the official 64 px file (``data_size=64``,
      ``medmnist/breastmnist_64.npz``) and from the 28 px file upsampled (``data_size=28``);
  (d) the GPU packing measurement: ``gpu_packing.py --ks k`` for k = 1, 2, 4, 8 (k runs of 16
      epochs at 224 px sharing the GPU; aggregate images/s), one subprocess per k.

``--plan length`` is (a) and (b) alone (issue 17; (a) packed the same way); ``--plan readings`` the
readings the CPU fidelity table could not decide, at 128 epochs, every setting on seed 0 and a second
seed of four (issue 8; its lines are in ``benchmarks/measured/h200_2026-11-26_*``).

Before anything runs: a ``gpu_prediction`` line for an H100 and one for an H200 (each part's
predicted seconds, part (a) packed and one after the other, what a call of this budget would start
and its ``call_outline`` in order, with the epoch part (e) would reach, the rates and the packing
factor assumed and their basis: ``gpu_predictions.py``, where every rate and prediction is derived;
``--predict-only`` stops there), then, for the GPU detected (``torch.cuda.get_device_name``; ``--gpu``
overrides; the CPU gets the H200's), a ``prediction`` line per item (its predicted seconds alone,
whether it is done, to run or resumes from a checkpoint, the cumulative time) and a ``plan`` line.
Then per item: ``start``, ``point`` (a curve point as it is scored), ``run`` (final AUROC of every
reading, the curve, timings, the prediction beside the measured wall time) or ``packing``;
``paused``, ``skipped`` (with its predicted time and what was left), ``done``.

Budget (``--budget-s``, default 540 s, counted from the script's start: one call within the
device's 10-minute command limit). The packed pair starts only when its prediction fits what is
left (never as a run that will pause). Any other run starts only when its predicted time fits; the
first unfinished run (all runs before it finished) may also start when it does not fit but the
call leaves room for its fixed costs, two checkpoint intervals and 15 s of training (it will
pause; ``--finish-only`` forbids that, for a session's last call: a paused run's checkpoint dies
with the machine). Each checkpoint (every ``--checkpoint-s`` = 20 s; in a packed worker too) checks
whether the next one, with any curve scoring or the final scoring before it, could end after the
budget, from the epoch and scoring times measured in this call; if so the run stops there with a
``paused`` line and every item after it is listed ``skipped`` with its prediction. Should a run
still be busy 2 s before the budget ends, an alarm stops it where it is (``"how": "alarm"``); it
resumes from its last checkpoint, which the engine writes atomically, as it keeps the curve points.
A packing measurement, or a packed worker that outlives the budget by 10 s, is killed with its
children. The same command again resumes: finished runs are read back from their records (in the
run directories under ``--out``, or in ``--records``, default ``benchmarks/measured/records_<plan>``,
if their config matches), a paused run resumes from its checkpoint and keeps its curve points,
finished packing measurements are reused. Records of runs finished in this call are copied to
``$OUT/records_<plan>/``: committed to ``benchmarks/measured/records_<plan>/`` they let a later
session skip those runs, as committed part (d) lines on the same kind of card skip part (d)
(checkpoints, 142 MB each, do not leave the machine).

One 15-minute device session (``gpu_call.sh``, finish-only by default): the machine's start takes
~0.5-4 minutes, then one 540 s call, which begins with the workflow smoke (``gpu_workflow.py``, at most
90 s) and gives this script what is left. On an H200 the packed pair of part (a) is
predicted at 499 s (one after the other: 553 s) and runs in that call. On an H100 (rates ASSUMED from
the H200's: 1.43x its GPU seconds) the pair was predicted at ~692 s at the assumed packing factor 1.0,
so the first H100 call (2026-11-27) ran CON2 as printed alone (predicted 373 s, took 364 s) and part
d's packing measurement; both are committed in ``benchmarks/measured/`` and reused, so the next call
starts with content only (~373 s on an H100, 277 s on an H200); with the smoke before it, what is left
(~97 s on an H100, ~193 s on an H200) goes to part (e) when its first curve point fits (H200: to about
epoch 210). A second call, if the session has time left, gets ``BUDGET_S`` = what is left less ~60 s,
starts only what finishes and resumes part (e) from its checkpoint. Without ``--finish-only`` the first
unfinished run may start to pause, for a later call on the same machine to resume.

    bash benchmarks/gpu_call.sh                                                 # the device call (see there)
    PYTHONPATH=. python benchmarks/gpu_fidelity.py --data-dir shared/data       # the same plan, directly
    PYTHONPATH=. python benchmarks/gpu_fidelity.py --data-dir shared/data --plan length
    PYTHONPATH=. python benchmarks/gpu_fidelity.py --data-dir ../shared/data --tiny   # CPU rehearsal

Runs from a checkout without installing anything: it imports only the standard library, torch
and the project's training and scoring paths (no kornia). Where jsonschema is missing (the GPU
image), run records are written and read back without schema validation (the environment line
says ``records_validated: false``; the workflow validates them when it reads them).
``--tiny`` rehearses a plan on the CPU (16 px, width 8, 2 epochs, the curve at epochs 1 and 2, no
compile; part a packed as on the GPU; part c reads the same 64 and 28 px files but trains at 16 px;
part e reads CIFAR-10's 32 px files at 16 px, width 8, N = 128, no test-time views, one thread;
part d runs ``gpu_packing.py --tiny``); the predictions it prints are the GPUs' for the tiny epochs.
"""

from __future__ import annotations

import time

T_START = time.perf_counter()  # the budget counts from here: imports and start-up are spent time too

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import queue  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from gpu_predictions import (  # noqa: E402
    GPU_SLOWDOWN,
    RATES_BASIS,
    Cost,
    dataset_of,
    epoch_within,
    first_point_seconds,
    fixed_seconds,
    gpu_kind,
    measured_packing,
    measured_packing_factor,
    packed_seconds,
    predicted_packing_seconds,
    run_cost,
    start_decision,
)
from gpu_runs import (  # noqa: E402
    CIFAR_ARCHIVE,
    EPOCHS,
    PACKED_PART,
    PACKING_KS,
    PAPER,
    PLANS,
    TINY,
    WORKER_GRACE_SECONDS,
    Budget,
    Call,
    Item,
    checkpoint_epoch,
    cifar_present,
    curve_epochs,
    emitter,
    environment,
    plan_items,
    records_validated,
    run_line,
    run_packing,
    same_run,
    skipped_line,
    train_item,
    unpack_cifar,
)


def worker_command(call: Call, it: Item, predicted_s: float, barrier: Path) -> list[str]:
    """The command of one packed worker: this script, this call's settings, the run, what is left of the budget."""
    a = call.args
    cmd = [sys.executable, str(Path(__file__).resolve()), "--data-dir", a.data_dir, "--plan", a.plan, "--out", a.out]
    cmd += ["--epochs", str(call.epochs), "--checkpoint-s", str(a.checkpoint_s), "--gpu", call.kind]
    cmd += ["--budget-s", f"{max(call.budget.left() - 1.0, 0.0):.2f}", "--barrier", str(barrier)]
    cmd += ["--worker", it.label, "--worker-seed", str(it.seed), "--worker-predicted", f"{predicted_s:.1f}"]
    cmd += ["--no-compile"] * a.no_compile + ["--tiny"] * a.tiny
    return cmd + (["--pause-at", str(a.pause_at)] if a.pause_at is not None else [])


def relay(stream: Any, index: int, lines: queue.Queue[tuple[int, str | None]]) -> None:
    """Put every line of a worker's stdout on ``lines``, then ``None`` at its end."""
    for text in stream:
        lines.put((index, text.rstrip("\n")))
    lines.put((index, None))


def run_pair(call: Call, pair: list[Item], predicted: dict[Item, float]) -> dict[Item, tuple[str, Any]]:
    """Train ``pair`` at once on the one GPU: a worker process per run (this script with ``--worker``),
    released together by a barrier once all are ready, their lines relayed through ``call.emit`` in the
    order they come. Per run: ("run", its record), ("paused", None) or ("failed", None)."""
    from con2.run.records import read_record  # lazy: the script's clock starts before its imports
    from con2.run.rundir import RECORD

    call.out.mkdir(parents=True, exist_ok=True)
    lines: queue.Queue[tuple[int, str | None]] = queue.Queue()
    results: dict[Item, tuple[str, Any]] = {it: ("failed", None) for it in pair}
    with tempfile.TemporaryDirectory(dir=call.out) as tmp:
        barrier = Path(tmp)
        procs = [
            subprocess.Popen(
                worker_command(call, it, predicted[it], barrier),
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            for it in pair
        ]
        for i, proc in enumerate(procs):
            threading.Thread(target=relay, args=(proc.stdout, i, lines), daemon=True).start()
        streams, released, killed = len(procs), False, False
        while streams:
            if not released and (
                len(list(barrier.glob("ready.*"))) == len(procs) or any(p.poll() is not None for p in procs)
            ):
                (barrier / "go").touch()
                released = True
            if not killed and call.budget.left() < -WORKER_GRACE_SECONDS:
                for proc in procs:
                    if proc.poll() is None:
                        os.killpg(proc.pid, signal.SIGKILL)  # the worker and its compile workers
                killed = True
            try:
                i, text = lines.get(timeout=0.05)
            except queue.Empty:
                continue
            if text is None:
                streams -= 1
                continue
            try:
                line = json.loads(text)
            except json.JSONDecodeError:
                print(text, file=sys.stderr, flush=True)
                continue
            call.emit(line)
            if line.get("event") == "run":
                results[pair[i]] = ("run", read_record(call.out / pair[i].name / RECORD))
            elif line.get("event") == "paused":
                results[pair[i]] = ("paused", None)
        codes = [proc.wait() for proc in procs]
    for it, code in zip(pair, codes):
        if code or results[it][0] == "failed":
            error = f"packed worker exit code {code}" + (" (killed past the budget)" if killed else "")
            call.emit({"event": "error", "part": it.part, "setting": it.label, "seed": it.seed, "error": error})
    return results


def worker_main(call: Call) -> None:
    """One packed worker: ready at the barrier, trained when the parent releases it (``--worker``)."""
    from con2.run.rundir import CHECKPOINT  # lazy: the script's clock starts before its imports

    a = call.args
    it = replace(next(x for x in plan_items(a.plan) if x.label == a.worker), seed=a.worker_seed)
    rd = call.out / it.name
    from_epoch = checkpoint_epoch(rd) if (rd / CHECKPOINT).is_file() else 0
    barrier = Path(a.barrier)
    (barrier / f"ready.{os.getpid()}").touch()
    while not (barrier / "go").exists():
        if call.budget.left() <= 0:
            sys.exit("the budget ran out before the packed workers were released")
        time.sleep(0.01)
    train_item(call, it, a.worker_predicted, from_epoch, False, packed=True, pid=os.getpid())


def run_to_budget(call: Call, it: Item, predicted_s: float, from_epoch: int) -> tuple[str, Any]:
    """Part (e)'s run, which runs to the budget: skipped when its data is missing or its first curve point does
    not fit what is left; else its data unpacked if carried as an archive, then trained until it ends or the pause
    rule stops it (its ``paused`` line says which epoch it reached). ("run", its record), ("paused", None),
    ("skipped", None) or ("failed", None)."""
    data_dir = Path(call.args.data_dir)
    if dataset_of(it.label) == "cifar10" and not cifar_present(data_dir) and not (data_dir / CIFAR_ARCHIVE).is_file():
        why = f"no CIFAR-10 in {data_dir} (neither cifar10/ nor {CIFAR_ARCHIVE}): pack it with benchmarks/gpu_carry.py"
        call.emit(skipped_line(it, predicted_s, call.budget.left(), reason=why))
        return "skipped", None
    curve = call.curve_all if it.curve else []
    need = first_point_seconds(it.label, call.epochs, curve, call.compile, from_epoch, call.kind)
    left = call.budget.left()
    if need > left:
        first = min([e for e in curve if e > from_epoch] or [call.epochs])
        why = f"its next curve point (epoch {first}) is predicted to need {need:.0f} s"
        call.emit(skipped_line(it, predicted_s, left, reason=why))
        return "skipped", None
    if dataset_of(it.label) == "cifar10":
        try:
            line = unpack_cifar(data_dir)
        except ValueError as e:
            call.emit({"event": "error", "part": it.part, "setting": it.label, "error": str(e)})
            return "failed", None
        if line is not None:
            call.emit({**line, "part": it.part})
    left = call.budget.left()
    reached = epoch_within(it.label, left, call.epochs, curve, call.compile, from_epoch, call.kind)
    call.emit(
        {
            "event": "to_budget",
            "part": it.part,
            "setting": it.label,
            "left_s": round(left),
            "predicted_s": round(predicted_s),
            "predicted_epoch": reached,
            "of_epochs": call.epochs,
        }
    )
    record = train_item(call, it, predicted_s, from_epoch, predicted_s > left)
    return ("paused", None) if record is None else ("run", record)


def item_cost(call: Call, it: Item, kind: str, from_epoch: int) -> Cost:
    """An item's predicted seconds on one ``kind`` of GPU."""
    if it.k:
        return Cost(predicted_packing_seconds(it.k, kind), 0.0)
    points = [e for e in call.curve_all if e > from_epoch] if it.curve else []
    return run_cost(it.label, call.epochs, len(points), call.compile, from_epoch, kind)


def pack_now(pending: list[Cost], left: float, factor: float, pack: bool) -> bool:
    """Whether part (a)'s unfinished runs start packed: two of them, packing on, and the packed pair
    predicted to fit what is left (never a pair that will pause)."""
    return pack and len(pending) == 2 and packed_seconds(pending, factor) <= left


def part_a_starts(pending: list[tuple[Item, Cost]], budget: float, factor: float, pack: bool) -> list[str]:
    """What a call of ``budget`` seconds starts of part (a) (finish-only): both packed, or one after the
    other those whose predictions fit, CON2 as printed first."""
    if pack_now([c for _, c in pending], budget, factor, pack):
        return [f"{it.label} (packed)" for it, _ in pending]
    started: list[str] = []
    t = 0.0
    for it, cost in pending:
        if t + cost.total <= budget:
            started, t = [*started, it.label], t + cost.total
    return started


def call_outline(
    call: Call, items: list[Item], kind: str, todo: dict[Item, int], costs: dict[Item, Cost], factor: float
) -> list[str]:
    """What a finish-only call of this budget does on one ``kind`` of GPU, in the plan's order, by the
    predictions: part (a) packed or one after the other, every other run started when it fits, a
    to-the-budget run (part e) with the epoch it is predicted to reach; nothing after that run."""
    left, lines, done = float(call.args.budget_s), [], set()
    pending = [(it, costs[it]) for it in items if it.part == PACKED_PART and it in costs and not it.k]
    if pack_now([c for _, c in pending], left, factor, not call.args.no_pack):
        pair_s = packed_seconds([c for _, c in pending], factor)
        lines.append(f"{' + '.join(it.label for it, _ in pending)}: packed, {pair_s:.0f} s")
        left, done = left - pair_s, {it for it, _ in pending}
    for it in items:
        if it not in costs or it in done:
            continue
        total = costs[it].total
        if it.to_budget:
            curve = call.curve_all if it.curve else []
            need = first_point_seconds(it.label, call.epochs, curve, call.compile, todo[it], kind)
            if need > left:
                lines.append(f"{it.label}: skipped (its first curve point needs {need:.0f} s, {left:.0f} s left)")
                continue
            if total <= left:
                lines.append(f"{it.label}: {total:.0f} s, all {call.epochs} epochs")
                left -= total
                continue
            reached = epoch_within(it.label, left, call.epochs, curve, call.compile, todo[it], kind)
            lines.append(f"{it.label}: to epoch ~{reached} of {call.epochs} in {left:.0f} s (all: {total:.0f} s)")
            break  # it runs to the budget: nothing after it starts
        if total <= left:
            lines.append(f"{it.label}: {total:.0f} s")
            left -= total
        else:
            lines.append(f"{it.label}: skipped ({total:.0f} s, {left:.0f} s left)")
    return lines


def gpu_prediction_line(
    call: Call, items: list[Item], kind: str, todo: dict[Item, int], factor: float, basis: str
) -> dict[str, Any]:
    """One ``gpu_prediction`` line: the plan on one ``kind`` of GPU, its rates and packing factor assumed."""
    costs = {it: item_cost(call, it, kind, from_epoch) for it, from_epoch in todo.items()}
    parts: dict[str, float] = {}
    for it in items:
        parts[it.part] = parts.get(it.part, 0.0) + (costs[it].total if it in costs else 0.0)
    pending = [(it, costs[it]) for it in items if it.part == PACKED_PART and it in costs and not it.k]
    packed = packed_seconds([c for _, c in pending], factor) if pending else 0.0
    budget = call.args.budget_s
    return {
        "event": "gpu_prediction",
        "gpu": kind,
        "detected": kind == call.kind,
        "rates": RATES_BASIS[kind],
        "gpu_slowdown_vs_h200": round(GPU_SLOWDOWN[kind], 3),
        "packing_factor": round(factor, 3),
        "packing_basis": basis,
        "predicted_s_per_part": {k: round(v) for k, v in parts.items()},
        "predicted_s": round(sum(parts.values())),
        "a_packed_s": round(packed),
        "a_one_after_another_s": round(sum(c.total for _, c in pending)),
        "budget_s": budget,
        "a_starts": part_a_starts(pending, budget, factor, not call.args.no_pack),
        "call_outline": call_outline(call, items, kind, todo, costs, factor),
    }


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
    p.add_argument("--no-pack", action="store_true", help="part a one run after the other, never packed")
    p.add_argument("--gpu", choices=("H100", "H200"), help="the rates to assume (default: the GPU detected)")
    p.add_argument("--packing-factor", type=float, help="default: measured in benchmarks/measured, else 1.0")
    p.add_argument("--only", nargs="*", help="run only these settings (by label)")
    p.add_argument("--seeds", nargs="*", type=int, help="run only the plan's runs of these seeds")
    p.add_argument("--tiny", action="store_true", help="a CPU rehearsal in seconds: 16 px, width 8, no compile")
    p.add_argument(
        "--predict-only", action="store_true", help="print the predictions for this budget and stop (nothing runs)"
    )
    p.add_argument(
        "--pause-at", type=int, help="rehearse a pause: stop after this epoch's checkpoint as if out of budget"
    )
    for hidden in ("--worker", "--barrier"):  # a packed worker (run_pair starts it)
        p.add_argument(hidden, help=argparse.SUPPRESS)
    p.add_argument("--worker-seed", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--worker-predicted", type=float, default=0.0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.packing_factor is not None and args.packing_factor <= 0:
        p.error(f"--packing-factor must be above 0 (got {args.packing_factor}): 1.0 is no gain from packing")
    budget = Budget(args.budget_s, T_START)

    import torch

    from con2.run.records import read_record
    from con2.run.rundir import CHECKPOINT, RECORD

    compile = not (args.no_compile or args.tiny)
    epochs = args.epochs or (2 if args.tiny else EPOCHS[args.plan])
    out = Path(args.out) / args.plan
    env_out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    jsonl = Path(args.jsonl) if args.jsonl else (env_out or out) / f"gpu_fidelity_{args.plan}.jsonl"
    kept = env_out / f"records_{args.plan}" if env_out else None
    records = Path(args.records) if args.records else Path("benchmarks/measured") / f"records_{args.plan}"
    emit = emitter(None if args.worker else jsonl)
    if compile:  # several runs x train/eval graphs x batch shapes: keep dynamo from falling back to eager
        for key in ("cache_size_limit", "recompile_limit"):
            if hasattr(torch._dynamo.config, key):
                setattr(torch._dynamo.config, key, 64)
    base = [
        "dataset=breastmnist",
        f"data_dir={args.data_dir}",
        f"epochs={epochs}",
        "progress=false",
        f"checkpoint_seconds={args.checkpoint_s}",
        f"compile={str(compile).lower()}",
        *(TINY if args.tiny else PAPER),
    ]
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    kind = args.gpu or gpu_kind(device)
    call = Call(args, budget, emit, epochs, compile, out, kept, base, kind, curve_epochs(epochs))
    validated = records_validated()
    if args.worker:
        worker_main(call)
        return
    emit({**environment(args.plan, compile, validated), "rates_for": kind})

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

    # What is done already, what a paused run has left, and every item's predicted time: printed first.
    finished: dict[Item, tuple[dict[str, Any], str]] = {}
    from_epoch: dict[Item, int] = {}
    # part (d) measured on this kind of card and committed to benchmarks/measured/: not measured again
    committed = {} if args.tiny else measured_packing(Path(__file__).resolve().parent / "measured", kind)
    for it in items:
        if it.k:
            state = out / "packing" / f"{it.name}.json"
            if state.is_file():
                finished[it] = (json.loads(state.read_text()), str(state))
            elif it.k in committed:
                finished[it] = committed[it.k]
            continue
        rd = out / it.name
        cfg = call.config(it).to_dict()
        for source in (rd / RECORD, records / it.name / RECORD):
            if source.is_file():
                record = read_record(source)
                if same_run(record, cfg):
                    finished[it] = (record, str(source))
                    break
        from_epoch[it] = checkpoint_epoch(rd) if (rd / CHECKPOINT).is_file() else 0
    todo = {it: from_epoch.get(it, 0) for it in items if it not in finished}
    for gpu in ("H100", "H200"):
        factor, basis = measured_packing_factor(Path(__file__).resolve().parent / "measured", gpu)
        if args.packing_factor is not None:
            factor, basis = args.packing_factor, f"given: --packing-factor {args.packing_factor}"
        emit(gpu_prediction_line(call, items, gpu, todo, factor, basis))
        if gpu == kind:
            packing_factor = factor
    cost = {it: item_cost(call, it, kind, from_epoch.get(it, 0)) for it in items}
    predicted = {it: c.total for it, c in cost.items()}
    cumulative = 0.0
    for it in items:
        status = (
            "done" if it in finished else (f"resumes from epoch {from_epoch[it]}" if from_epoch.get(it) else "to run")
        )
        cumulative += 0.0 if it in finished else predicted[it]
        line = {"event": "prediction", "part": it.part, "setting": it.label, "seed": it.seed}
        line |= {"to_budget": True} if it.to_budget else {}
        emit({**line, "predicted_s": round(predicted[it]), "status": status, "cumulative_s": round(cumulative)})
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
            "gpu": kind,
            "basis": f"one {kind}, seconds, each run alone: {RATES_BASIS[kind]}; see gpu_predictions.py",
        }
    )

    if args.predict_only:
        emit({"event": "done", "summary": {}, "total_seconds": round(budget.elapsed(), 1), "jsonl": str(jsonl)})
        return
    done: list[tuple[Item, dict[str, Any]]] = []
    handled: set[Item] = set()  # trained packed
    paused = False
    for i, it in enumerate(items):
        if it in finished:
            record, source = finished[it]
            if it.k:
                emit({**record, "reused": True})
            else:
                emit({**run_line(it.label, record, None), "part": it.part, "reused": True, "source": source})
                done.append((it, record))
            continue
        if it in handled:
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
        if it.to_budget:
            status, record = run_to_budget(call, it, predicted[it], from_epoch[it])
            paused = paused or status == "paused"
            if record is not None:
                done.append((it, record))
            continue
        pair = (
            [x for x in items if x.part == PACKED_PART and not x.k and x not in finished]
            if it.part == PACKED_PART
            else []
        )
        if pack_now([cost[x] for x in pair], left, packing_factor, not args.no_pack):
            pair_s = packed_seconds([cost[x] for x in pair], packing_factor)
            emit(
                {
                    "event": "packed",
                    "settings": [x.label for x in pair],
                    "predicted_s": round(pair_s),
                    "left_s": round(left),
                }
            )
            for x, (status, record) in run_pair(call, pair, predicted).items():
                handled.add(x)
                paused = paused or status == "paused"
                if status == "run":
                    done.append((x, record))
            continue
        head = all(x in finished or any(x is y for y, _ in done) for x in items[:i] if not x.k)
        fixed = fixed_seconds(it.label, compile, kind)
        decision = start_decision(predicted[it], left, fixed, args.checkpoint_s, head and not args.finish_only)
        if decision == "skip":
            emit(skipped_line(it, predicted[it], left))
            continue
        record = train_item(call, it, predicted[it], from_epoch[it], decision == "partial")
        if record is None:
            paused = True
            continue
        done.append((it, record))
    summary = {
        f"{it.label} seed{r['seed']}": round(r["metrics"]["auroc"][run_line(it.label, r, 0)["main"]], 1)
        for it, r in done
    }
    emit({"event": "done", "summary": summary, "total_seconds": round(budget.elapsed(), 1), "jsonl": str(jsonl)})


if __name__ == "__main__":
    main()
