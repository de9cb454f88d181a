"""What ``gpu_fidelity.py`` predicts and how it budgets: the settings, their predicted seconds on an
H200 and an H100, the packed pair of part (a), and the start and pause rules.

Predictions, not results. The H200 rates are measured (``benchmarks/measured/h200_2026-11-26_*``):
16.5 s of fit per 128 epochs of CON2 at 224 px without compile (10.9 s for SimCLR), +30% throughput
with ``compile`` (3900 vs 3011 images/s, ``..._call1_gpu_check_compile.jsonl``), 18 s to compile the
training graph (17.8 s measured), ~30 s to compile the scoring graphs (a guess from a CPU check),
2.8 s per full scoring (1.8 s measured for the 40 fixed views, ~1 s more for CSI's; SimCLR 1.5 s),
6 s of start-up. On one H200:

    (a) CON2 as printed, 224 px: 16 x 16.5 / 1.3 = 203 s fit + 18 + 30 compile + 7 x 2.8 scorings + 6  = 277 s
        content only: the same                                                                         = 277 s
        both packed (two processes at once): 48 + 6 overlap, 2 x (203 + 19.6) GPU s / 1.0             = 499 s
    (b) SimCLR + kNN, 224 px:    16 x 10.9 / 1.3 = 134 s fit + 48 + 7 x 1.5 + 6                        = 199 s
    (c) CON2, 64 px (x2):        16 x 16.5 x 1.251 / 1.3 = 254 s fit + 48 + 1 x 2.8 x 1.251 + 6        = 312 s each
        SimCLR, 64 px (x2):      16 x 10.9 x 1.251 / 1.3 = 168 s fit + 48 + 1 x 1.5 x 1.251 + 6        = 224 s each
    (d) packing, k = 1, 2, 4, 8: 15 s start-up + k x (6144 images / 2979 images/s + 0.56 s scoring)
                                 = 18 + 20 + 25 + 36                                                    =  99 s

**One H100 run has been measured** (2026-11-27, ``benchmarks/measured/h100_2026-11-27_*``): CON2 as
printed, 2048 epochs, predicted 373 s, took 364.4 s (335.0 s fit at 2348 images/s with compile, 22.9 s
of curve scorings, 2.3 s final scoring). Its rates stay the H200's GPU seconds (fit and
scoring) times ``GPU_SLOWDOWN["H100"]`` = 4.8 / 3.35 = 1.433, the ratio of the two cards' memory
bandwidth (H200 4.8 TB/s HBM3e, H100 SXM 3.35 TB/s HBM3; both have the same 989 bf16 dense
TFLOP/s). That is an assumption, and a conservative one: the 224 px step reaches 128 TFLOP/s, 13%
of the peak, so it is bound by memory or by small kernels, not by compute; a step bound by memory
alone would be 1.43x slower on the H100, one bound by kernel launches no slower. Start-up and
compilation are CPU work, the same on both. An H100 PCIe (2.0 TB/s) would be slower still; any GPU
that is neither is given the H100's rates.

**The packed pair** (part (a): CON2 as printed and content only as two processes started together
on one GPU, ``gpu_fidelity.py``'s default): their CPU work (start-up, compilation) overlaps, their
GPU work (fit, scorings) is shared by time-slicing at an aggregate throughput of
``PACKING_FACTOR`` times one run's, so the pair takes max(CPU s) + (GPU s of both) / factor. The
factor assumed without a measurement is **1.0**, the conservative bound (two runs sharing the GPU
train no faster in aggregate than one; the optimistic bound, 2.0, makes the pair as long as its
longer run). A part (d) measurement of k = 1 and 2 on the same kind of card committed to
``benchmarks/measured/`` replaces it (:func:`measured_packing_factor`), and a later call on that
card reuses those lines instead of measuring again (:func:`measured_packing`). On one H100
(2026-11-27) k = 1, 2, 4, 8 runs of 16 epochs without compile trained 1072, 1495, 1763 and 1976
images/s in aggregate, 3.3 GB of GPU memory each: factor 1.39 for two, an upper bound on the steady
gain, since those short runs are mostly CUDA warm-up (one full compiled run alone: 2348 images/s).

    part (a) on one H200: packed 499 s (fits one 540 s call; one after another: 553 s, it does not)
    part (a) on one H100: packed 6 + 48 + 2 x (291 + 28) = 692 s: does not fit 540 s; CON2 as printed
                          alone 373 s fits, so a finish-only call runs it alone (content only: 373 s more)

The 64 px step (c) is predicted from FLOPs: the encoder's forward and backward per view
(``torch.utils.flop_counter`` on the CPU, ResNet18 width 64) is 10.645 GFLOP at 224 px with the
standard stem and 13.316 GFLOP at 64 px with the CIFAR stem (3x3 stride 1, no max-pool: 64 x 64
maps in the first stage against 56 x 56), 1.251x; both steps hold 256 views (N = 64), the encoder is
~85% of a step, so the 64 px step is predicted at 1.251x the measured 224 px step, with the same +30%
from compile (the 32 px step gained +15%: with that gain a 64 px CON2 run would take 287 s of fit).
The 32 px count (3.329 GFLOP per view) matches the measured 32 px step (6832 GFLOP / 2048 views), so
64 px = 4x 32 px exactly. The packing start-up (15 s for k processes importing torch and opening CUDA
contexts) is a guess, and k runs are predicted no faster together than one alone (an upper bound).

**Part (e), CIFAR-10 at the paper's configuration** (issue 44, point 5: CON2 as printed, normal class
airplane, 32 px, ResNet18 width 64 with the CIFAR stem, N = 512, 2048 epochs, 40 test-time views, the
learning curve on the run's own test views at epochs 64 ... 2048; no CSI-view reading: ``csi_views=0``). Its step
is the one ``gpu_check.py`` measured on one H200 (32 px, width 64, N = 512: **16,660 images/s, 19,216
with compile**, ``..._call1_gpu_check*.jsonl``), assumed to hold in ``fit`` as the 224 px step did
(2979 in fit against 3011). 5000 training images make 9 steps of 512 per epoch (the last, partial
batch is dropped): 4608 images, 4 views each. One scoring encodes 10,000 test and 5,000 training images
x 40 views; its rate is the measured 224 px one (1.8 s for BreastMNIST's 555 images x 40 views: 12,333
views/s) scaled by the encoder's FLOPs per view (10.645 / 3.329 GFLOP: 39,440 views/s at 32 px), an
ASSUMPTION (small images at batch 256 may be launch-bound: then slower; the 32 px training step ran
at 222 TFLOP/s against 128 at 224 px: then faster). Compilation: 31.3 s measured for the 32 px
training step, plus the ~30 s guessed for the scoring graphs. Data: unpacking the carried archive
(18.6 MB of JPEGs) and preparing 60,000 images, 6.3 s + 37.7 s measured on this project's loaded
2-core CPU (45 s assumed on the GPU machine's CPU). On one H200:

    (e) fit 2048 x 4608 / 19,216 = 491 s + 7 scorings x 600,000 views / 39,440 = 7 x 15.2 s
        + 31.3 + 30 compile + 45 data + 6 start-up                                                  = 710 s
    on one H100 (the assumed 1.433 on the GPU seconds): 704 + 7 x 21.8 + 112                         = 969 s
    the first curve point (epoch 64) after 143 s (H200) / 156 s (H100); within 540 s it reaches epoch
    ~1466 (H200) / ~991 (H100), within 200 s epoch ~238 / ~128

Neither fits one 540 s call, and the H100's exceeds a whole 15-minute session. So part (e) runs TO THE
BUDGET (``Item.to_budget``): it starts when its first curve point (epoch 64) is predicted to fit, even
under ``--finish-only``, trains the 2048-epoch schedule (cosine over 2048 epochs: its curve points are
readings of the paper's run at those epochs, not runs of that length) until the pause rule stops it,
and reports the epoch it reached and the curve points scored (:func:`epoch_within` predicts that
epoch). A later call on the same machine resumes it from its checkpoint; a later session starts it
again from epoch 0 (a 142 MB checkpoint cannot come back through $OUT). The one H100 run measured so
far fitted 15% slower than the 1.433 assumption predicts (335 s against 291 s at 224 px, compilation
included), so the H100's part (e) may be that much longer.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

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
# Part (e), issue 44: CIFAR-10 at the paper's configuration, one class (airplane, the first by index, as the
# CPU overlay's learning curve), CON2 as printed (the invert context: the project's default and the CPU
# curve's, so the GPU extends that curve; the paper's best on CIFAR-10 is flip, 95.3 against 94.6); no resize
# or crop at 32 px, N = 512, the paper's 40 test-time views, no CSI-view reading (not part of CON2's
# configuration; 20 more views per image on 15,000 images). The plan's base sets width 64.
CIFAR = "CIFAR-10 airplane, as printed"
SETTINGS[CIFAR] = [
    "dataset=cifar10",
    "normal_class=airplane",
    "image_size=32",
    "data_size=32",  # the files' own size (also under --tiny, which trains at 16 px)
    "center_crop=1.0",
    "batch_size=512",
    "tta=40",
    "csi_views=0",
]

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
# Part (e), CIFAR-10 (see the module's docstring). Measured on one H200 (gpu_check.py, 32 px, width 64, N = 512):
# training images/s (4 views each) without and with compile, and the first compiled step's seconds.
CIFAR_STEP_IMAGES_PER_S = {False: 16660.2, True: 19216.1}
CIFAR_COMPILE_SECONDS = 31.3
CIFAR_TRAIN_IMAGES, CIFAR_BATCH, CIFAR_SCORED_IMAGES, CIFAR_VIEWS = 5000, 512, 15000, 40
# Scoring: views/s at 224 px measured (1.8 s for the 40 fixed views of BreastMNIST's 156 test + 399 training
# images), scaled to another size by the encoder's FLOPs per view (an assumption).
SCORE_VIEWS_PER_S_224 = 555 * 40 / 1.8
# Unpacking the carried archive and preparing the 60,000 images: 6.3 s + 37.7 s on this project's loaded
# 2-core CPU (2026-11-28); assumed no slower on the GPU machine's CPU.
CIFAR_DATA_SECONDS = 45.0
PAUSE_SLACK_SECONDS = 2.0  # a checkpoint's write (0.3 s measured) and the pause's own lines
RESERVE_SECONDS = 15.0  # what a partial start must leave besides its overheads (the budget check's margin)

# GPU seconds (fit, scoring) relative to the H200's measured ones. The H100's is ASSUMED, not measured: the
# memory bandwidth ratio, H200 4.8 TB/s / H100 SXM 3.35 TB/s (the same 989 bf16 dense TFLOP/s).
GPU_SLOWDOWN = {"H200": 1.0, "H100": 4.8 / 3.35}
RATES_BASIS = {
    "H200": "measured on one H200 (benchmarks/measured/h200_2026-11-26_*)",
    "H100": (
        "assumed: the H200's GPU seconds x 4.8 / 3.35 (H200 / H100 SXM memory bandwidth, TB/s); checked once"
        " (2026-11-27): CON2 as printed, 2048 epochs, predicted 373 s, took 364 s"
    ),
}
# Aggregate GPU throughput of two packed runs relative to one: ASSUMED 1.0 (no gain, the conservative bound)
# until part (d) measures it (measured_packing_factor).
PACKING_FACTOR = 1.0
PACKING_BASIS = "assumed 1.0: two packed runs train no faster in aggregate than one (conservative; not measured)"


@dataclass(frozen=True)
class Cost:
    """A run's predicted seconds: ``gpu`` (fit and scorings: shared when packed) and ``cpu`` (start-up and
    compilation: overlapped when packed)."""

    gpu: float
    cpu: float

    @property
    def total(self) -> float:
        return self.gpu + self.cpu


def gpu_kind(device_name: str) -> str:
    """The rates a device gets: ``H200`` for an H200 and for the CPU (a rehearsal prints the H200's
    predictions), ``H100`` for an H100 and any other GPU (the slower of the two)."""
    name = device_name.upper()
    if "H200" in name or name == "CPU":
        return "H200"
    return "H100"


def dataset_of(label: str) -> str:
    """The dataset a setting trains on (BreastMNIST unless it sets ``dataset``)."""
    named = [o.split("=", 1)[1] for o in SETTINGS[label] if o.startswith("dataset=")]
    return named[-1] if named else "breastmnist"


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


def fit_seconds(label: str, epochs: float, compile: bool) -> float:
    """The H200's seconds of fit for ``epochs`` epochs: BreastMNIST from its measured 224 px fit (scaled by
    FLOPs to another size), CIFAR-10 from the measured 32 px, N = 512 step."""
    if dataset_of(label) == "cifar10":
        images = (CIFAR_TRAIN_IMAGES // CIFAR_BATCH) * CIFAR_BATCH  # the partial batch is dropped
        return epochs * images / CIFAR_STEP_IMAGES_PER_S[compile]
    speedup = COMPILE_SPEEDUP if compile else 1.0
    return FIT_PER_128[method_of(label)] * step_factor(label) * epochs / 128 / speedup


def score_seconds(label: str) -> float:
    """The H200's seconds of one full scoring (every test-time view, every reading)."""
    if dataset_of(label) == "cifar10":
        views_per_s = SCORE_VIEWS_PER_S_224 * GFLOP_PER_VIEW[224] / GFLOP_PER_VIEW[size_of(label)]
        return CIFAR_SCORED_IMAGES * CIFAR_VIEWS / views_per_s
    return SCORE_SECONDS[method_of(label)] * step_factor(label)


def cpu_seconds(label: str, compile: bool) -> float:
    """What a run spends off the GPU, the same on every card: start-up, compilation, data preparation."""
    cifar = dataset_of(label) == "cifar10"
    compiling = ((CIFAR_COMPILE_SECONDS if cifar else COMPILE_SECONDS) + EVAL_COMPILE_SECONDS) if compile else 0.0
    return STARTUP_SECONDS + compiling + (CIFAR_DATA_SECONDS if cifar else 0.0)


def run_cost(label: str, epochs: int, n_points: int, compile: bool, from_epoch: int = 0, kind: str = "H200") -> Cost:
    """A run's predicted seconds on one ``kind`` of GPU: ``epochs - from_epoch`` epochs of fit, ``n_points``
    curve scorings and the final one (GPU, scaled by ``GPU_SLOWDOWN``); compilation, data and start-up (CPU)."""
    fit = fit_seconds(label, epochs - from_epoch, compile)
    return Cost(GPU_SLOWDOWN[kind] * (fit + (n_points + 1) * score_seconds(label)), cpu_seconds(label, compile))


def cost_to_epoch(
    label: str, end: int, epochs: int, curve: list[int], compile: bool, from_epoch: int = 0, kind: str = "H200"
) -> float:
    """Seconds from a run's start (or its checkpoint at ``from_epoch``) until epoch ``end`` of its ``epochs``
    is trained and scored: its CPU work, the fit, the curve points on the way and, at the last epoch, the final
    scoring."""
    scorings = sum(from_epoch < e <= end for e in curve) + (end >= epochs)
    gpu = fit_seconds(label, end - from_epoch, compile) + scorings * score_seconds(label)
    return cpu_seconds(label, compile) + GPU_SLOWDOWN[kind] * gpu


def epoch_within(
    label: str, seconds: float, epochs: int, curve: list[int], compile: bool, from_epoch: int = 0, kind: str = "H200"
) -> int:
    """The last epoch a run predicted by :func:`cost_to_epoch` reaches within ``seconds`` (``from_epoch``: not
    even its start-up fits)."""
    lo, hi = from_epoch, epochs
    while lo < hi:  # the cost only grows with the epoch
        mid = (lo + hi + 1) // 2
        if cost_to_epoch(label, mid, epochs, curve, compile, from_epoch, kind) <= seconds:
            lo = mid
        else:
            hi = mid - 1
    return lo


def first_point_seconds(
    label: str, epochs: int, curve: list[int], compile: bool, from_epoch: int = 0, kind: str = "H200"
) -> float:
    """Seconds until a run's next curve point (or its end) is scored: what a to-the-budget run needs to be
    worth starting."""
    first = min([e for e in curve if e > from_epoch] or [epochs])
    return cost_to_epoch(label, first, epochs, curve, compile, from_epoch, kind)


def predicted_seconds(
    label: str, epochs: int, n_points: int, compile: bool, from_epoch: int = 0, kind: str = "H200"
) -> float:
    """A run's predicted wall time alone on one ``kind`` of GPU (:func:`run_cost`)."""
    return run_cost(label, epochs, n_points, compile, from_epoch, kind).total


def packed_seconds(costs: list[Cost], factor: float = PACKING_FACTOR) -> float:
    """Runs started together on one GPU: their CPU work overlaps, their GPU work is shared at ``factor``
    times one run's throughput (1.0: as long as one after another, less the overlapped CPU work)."""
    return max(c.cpu for c in costs) + sum(c.gpu for c in costs) / factor


def measured_packing(folder: Path, kind: str) -> dict[int, tuple[dict, str]]:
    """The part (d) ``packing`` lines measured on this ``kind`` of card in ``folder``'s ``*.jsonl`` files, by k:
    the last line of each k and the file it came from (a later call reuses them instead of measuring again)."""
    found: dict[int, tuple[dict, str]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        for text in path.read_text(errors="replace").splitlines():
            try:
                line = json.loads(text)
            except json.JSONDecodeError:
                continue
            if not isinstance(line, dict) or line.get("event") != "packing" or not line.get("aggregate_images_per_s"):
                continue
            if kind in str((line.get("environment") or {}).get("device", "")).upper():
                found[int(line["k"])] = (line, str(path))
    return found


def measured_packing_factor(folder: Path, kind: str) -> tuple[float, str]:
    """The packing factor and its basis: aggregate images/s of k = 2 over k = 1 from a part (d) measurement
    on this kind of card in ``folder`` (:func:`measured_packing`), else the assumption. The measurement's runs
    are 16 epochs without compile, so CUDA warm-up is part of each (on the H100, 2026-11-27: k = 1 trained at
    1105 images/s against 2348 in a full compiled run): the factor says how much of that overlaps, an upper
    bound on the steady gain."""
    lines = measured_packing(folder, kind)
    if 1 in lines and 2 in lines:
        (one, _), (two, path) = lines[1], lines[2]
        ratio = float(two["aggregate_images_per_s"]) / float(one["aggregate_images_per_s"])
        where = f"{Path(path).name} (16-epoch runs, warm-up included)"
        return ratio, f"measured: k = 2 / k = 1 aggregate images/s in {where}"
    return PACKING_FACTOR, PACKING_BASIS


def predicted_packing_seconds(k: int, kind: str = "H200") -> float:
    """One packing measurement of ``k`` runs on one ``kind`` of GPU (see ``PACKING_IMAGES``)."""
    gpu = k * (PACKING_IMAGES / FIT_IMAGES_PER_S + 0.2 * SCORE_SECONDS["con2"])
    return PACKING_STARTUP_SECONDS + GPU_SLOWDOWN[kind] * gpu


def fixed_seconds(label: str, compile: bool, kind: str = "H200") -> float:
    """What a run spends whatever its length: start-up, compilation, data and one scoring."""
    return cpu_seconds(label, compile) + GPU_SLOWDOWN[kind] * score_seconds(label)


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
