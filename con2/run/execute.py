"""The steps of one run, in order: data -> method -> training -> scores -> metrics -> record.

Called by :func:`con2.run.runner.run`, which owns the run directory (its lock and what it already
holds) and decides whether there is work to do; this module does the work. It checks everything
knowable before training first: the data (both classes in the test split), the batch size against
the training set, the method and its encoder, and the size of the scoring pass
(:func:`check_scoring_work`: a typo in ``tta``, ``eval_batch_size`` or ``nn_chunk`` must not run
for hours). One function per job: :func:`train` (or resume) and :func:`rescore` (``con2 evaluate``: a
trained model scored again, its weights loaded before anything is written, nothing written until the
scores exist), both loading the run through :func:`load` and ending in :func:`score` and :func:`write_run`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import resource
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from con2.config import RUNTIME_KEYS, RunConfig
from con2.data.base import OneClassData
from con2.data.manifest import data_source, pixels_digest
from con2.data.rundata import check_batch_size, load_run_data
from con2.errors import ConfigError
from con2.methods import Method, build_method, get_spec
from con2.methods.scoring import MethodScores, ScoringProgress, scoring_progress
from con2.run.curve import LearningCurve
from con2.run.records import build_record
from con2.run.rundir import CHECKPOINT, CONFIG, FEATURES, RECORD, SCORES, VALIDATION, RunDir
from con2.text import shell_command
from con2.training.checkpoints import check_trained_config, copy_checkpoint, load_checkpoint
from con2.training.device import select_device, use_cpu_threads
from con2.training.engine import TrainSettings, fit
from con2.training.steps import step_counts

__all__ = [
    "CHECKPOINT",
    "CONFIG",
    "DATA_KEY",
    "FEATURES",
    "MAX_NN_BLOCKS",
    "MAX_SCORING_BATCHES",
    "RECORD",
    "SCORES",
    "check_same_data",
    "check_scoring_work",
    "data_identity",
    "load",
    "rescore",
    "score",
    "scoring_work",
    "to_tensor",
    "train",
    "train_settings",
    "write_run",
]

# Bounds on one scoring pass (docs/troubleshooting.md, "Failure and recovery"): encoder batches over all views of
# the training and test images, and [nn_chunk, nn_chunk] blocks of the nearest-neighbour search
# per reading. On the 2-core CPU a batch of one 32 px image takes milliseconds and a block of the
# search ~30 us (nn_chunk=1), so either bound is tens of minutes of overhead; beyond it a run stops
# before training, naming the value that would fit.
MAX_SCORING_BATCHES = 200_000
MAX_NN_BLOCKS = 10_000_000


def _peak_memory_mb(device: torch.device) -> float:
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    mb = rss_kb / 1024 if sys.platform != "darwin" else rss_kb / 2**20
    if device.type == "cuda":
        mb = max(mb, torch.cuda.max_memory_allocated(device) / 2**20)
    return float(mb)


SCORING_EVERY_S = 30.0  # at most one scoring progress line this often


def scoring_printer(every_s: float = SCORING_EVERY_S) -> ScoringProgress:
    """A sign of life for a long scoring: ``scoring: 12 of 41 passes, about 3.2 min left`` at most every
    ``every_s`` seconds (never for a scoring done within that time), the time left from the pace so far."""
    start = time.perf_counter()
    last = start

    def report(done: int, total: int) -> None:
        nonlocal last
        now = time.perf_counter()
        if now - last < every_s or done >= total:
            return
        last = now
        left = (now - start) / done * (total - done)
        print(f"scoring: {done} of {total} passes, about {left / 60:.1f} min left", flush=True)

    return report


def to_tensor(images: np.ndarray) -> torch.Tensor:
    """uint8 ``[N, H, W, C]`` -> uint8 ``[N, C, H, W]`` (CPU, contiguous)."""
    return torch.from_numpy(np.array(images, copy=True).transpose(0, 3, 1, 2).copy())


def train_settings(cfg: RunConfig) -> TrainSettings:
    """The engine's settings of ``cfg``: its budget, optimiser, schedule and runtime keys, and its hash and
    stored configuration (a checkpoint of another configuration is refused)."""
    return TrainSettings(
        epochs=cfg.epochs,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        weight_decay=cfg.weight_decay,
        betas=cfg.betas,
        optimizer=cfg.optimizer,
        momentum=cfg.momentum,
        trust_coefficient=cfg.trust_coefficient,
        warmup=cfg.warmup,
        warmup_factor=cfg.warmup_factor,
        drop_last=cfg.drop_last,
        max_steps=cfg.max_steps,
        seed=cfg.seed,
        amp=cfg.amp,
        channels_last=cfg.channels_last,
        checkpoint_every=cfg.checkpoint_every,
        checkpoint_seconds=cfg.checkpoint_seconds,
        progress=cfg.progress,
        fingerprint=cfg.config_hash(),
        config=json.dumps({k: v for k, v in cfg.to_dict().items() if k not in RUNTIME_KEYS}, sort_keys=True),
        compile=cfg.compile,
    )


def scoring_work(n_views: int, n_train: int, n_test: int, batch: int, chunk: int) -> tuple[int, int]:
    """``(encoder batches, nearest-neighbour blocks)`` of one scoring pass: every view encodes the
    ``n_train`` training and ``n_test`` test images ``batch`` at a time, and searches ``[chunk, chunk]``
    blocks of test x training features (per reading)."""
    batches = n_views * (math.ceil(n_train / batch) + math.ceil(n_test / batch))
    blocks = n_views * math.ceil(n_test / chunk) * math.ceil(n_train / chunk)
    return batches, blocks


def check_scoring_work(cfg: RunConfig, n_views: int, n_train: int, n_test: int) -> tuple[int, int]:
    """:func:`scoring_work` of ``cfg``; a pass beyond :data:`MAX_SCORING_BATCHES` or :data:`MAX_NN_BLOCKS`
    raises ``ConfigError`` naming the smallest ``eval_batch_size`` / ``nn_chunk`` (a power of two) that fits.

    A batch (or block) as large as the whole set gives ``2 * n_views`` batches (``n_views`` blocks),
    which :data:`con2.config.MAX_TTA` keeps far below both bounds, so a value that fits always exists.
    """
    batches, blocks = scoring_work(n_views, n_train, n_test, cfg.eval_batch_size, cfg.nn_chunk)
    what = f"{n_views} test-time view(s) x ({n_train} training + {n_test} test images)"
    powers = [2**k for k in range(25)]
    if batches > MAX_SCORING_BATCHES:
        fits = next(b for b in powers if scoring_work(n_views, n_train, n_test, b, 1)[0] <= MAX_SCORING_BATCHES)
        fewer = f", or fewer views (tta={cfg.tta}; the paper's is 40)" if cfg.tta > 40 else ""
        raise ConfigError(
            f"config key 'eval_batch_size': scoring {what} in batches of {cfg.eval_batch_size} is {batches:,} "
            f"encoder batches, beyond the bound of {MAX_SCORING_BATCHES:,} (hours of per-batch overhead). "
            f"Fix: --set eval_batch_size={fits} or more{fewer}"
        )
    if blocks > MAX_NN_BLOCKS:
        fits = next(c for c in powers if scoring_work(n_views, n_train, n_test, 1, c)[1] <= MAX_NN_BLOCKS)
        raise ConfigError(
            f"config key 'nn_chunk': the nearest-neighbour search of {what} in blocks of {cfg.nn_chunk} rows is "
            f"{blocks:,} blocks per reading, beyond the bound of {MAX_NN_BLOCKS:,} (hours of per-block overhead). "
            f"Fix: --set nn_chunk={fits} or more (it bounds memory: nn_chunk^2 floats; the default is 4096)"
        )
    return batches, blocks


_NO_MEMORY = ("out of memory", "not enough memory", "can't allocate memory", "cannot allocate memory")


@contextmanager
def out_of_memory_refused(cfg: RunConfig, stage: str) -> Iterator[None]:
    """Turn running out of memory during ``stage`` (the allocator's error: each bound on ``image_size``, ``width``
    and ``batch_size`` holds, but together they need more than the machine has) into one line naming those keys
    and the fix. The last checkpoint is kept (written atomically); a smaller batch is another configuration,
    so the fix names ``--force`` or another run directory.

    Raises:
        ConfigError: in place of ``torch.OutOfMemoryError`` or an allocator's ``RuntimeError``.
    """
    try:
        yield
    except (torch.OutOfMemoryError, RuntimeError, MemoryError) as exc:
        text = str(exc).strip()
        if not isinstance(exc, (torch.OutOfMemoryError, MemoryError)) and not any(
            m in text.lower() for m in _NO_MEMORY
        ):
            raise
        first = text.splitlines()[0][:200] if text else type(exc).__name__
        keys = f"image_size={cfg.image_size}, width={cfg.width}, batch_size={cfg.batch_size}"
        more = f", eval_batch_size={cfg.eval_batch_size}" if stage == "scoring" else ""
        raise ConfigError(
            f"{stage} ran out of memory on {cfg.device} ({first}): {keys}{more} together need more than this machine "
            f"has. Fix: lower batch_size{' or eval_batch_size' if more else ''} (or image_size, width) and rerun with "
            f"--force or into another --run-dir"
        ) from None


def _read_trained(checkpoint: Path, device: torch.device) -> dict[str, Any]:
    """The checkpoint a re-scoring loads (read once, before anything is written).

    Raises:
        FileNotFoundError: no checkpoint; RunDirError: a corrupt one (the message names the fix).
    """
    if not checkpoint.is_file():
        raise FileNotFoundError(f"no checkpoint at {checkpoint}; run `con2 train` for that run directory first")
    fix = (
        f"retrain that run (`{shell_command('con2', 'train', '--run-dir', checkpoint.parent, '--force')}` with its "
        f"configuration), or restore {checkpoint.name} from a backup"
    )
    return load_checkpoint(checkpoint, device, fix=fix)


def prepare_method(method: Method, train_images: torch.Tensor, state: dict[str, Any] | None, checkpoint: Path) -> None:
    """:meth:`Method.prepare` after restoring what the checkpoint ``state`` (of a resume or a re-scoring; None for a
    new run) kept of the method's decisions (:meth:`Method.restore_fixed_state`: CON2 (Best)'s context), so
    those are made once, before training, and never again on other data. A checkpoint of an older con2 that
    kept none of them: decided again, with a note naming what."""
    if state is not None:
        method.restore_fixed_state(state)
    method.prepare(train_images)
    lacking = [key for key in method.fixed_keys if state is not None and key not in state]
    if lacking:
        fixed = method.fixed_state()
        decided = "; ".join(f"{key}: {json.loads(fixed[key]).get('context', fixed[key])}" for key in lacking)
        print(
            f"note: checkpoint {checkpoint} predates con2 keeping {', '.join(lacking)}; decided again from this "
            f"run's training images ({decided})",
            flush=True,
        )


# The checkpoint entry naming the images a run trained on: the split's sha256 (con2.data.manifest, over its ids,
# labels and pixels), so a resume on other images (another data_dir, a changed copy) is refused.
DATA_KEY = "data_sha256"


def data_identity(manifest: Mapping[str, Any] | None, train: np.ndarray, test: np.ndarray) -> str:
    """The identity of a run's images: its split manifest's ``split_sha256`` (ids, labels and pixels of the
    training and test images), else the sha256 of those pixels (:func:`con2.data.manifest.pixels_digest`)."""
    split = (manifest or {}).get("split_sha256")
    return str(split) if split else pixels_digest(train, test)


def check_same_data(state: Mapping[str, Any], trained_on: str, checkpoint: Path, cfg: RunConfig) -> None:
    """Refuse to resume a checkpoint trained on other images than ``trained_on`` (:func:`data_identity`): the
    rest of the run would train on a second dataset, with what the first one decided (CON2 (Best)'s context),
    and its record would name only the second. A checkpoint of an older con2 names no images: a note says so.

    Raises:
        ConfigError: naming both identities and the two ways on (the old data, or a fresh start).
    """
    kept = state.get(DATA_KEY)
    if kept is None:
        print(
            f"note: checkpoint {checkpoint} predates con2 naming the images it trained on; resuming it on "
            f"{cfg.dataset} in {cfg.data_dir or 'the default data folder'} unchecked",
            flush=True,
        )
        return
    if kept == trained_on:
        return
    retrain = shell_command("con2", "train", "--run-dir", checkpoint.parent, "--force")
    raise ConfigError(
        f"checkpoint {checkpoint} was trained on other images of {cfg.dataset} (split sha256 {str(kept)[:16]}) than "
        f"data_dir {cfg.data_dir or '(default)'} holds now ({trained_on[:16]}): resuming would train one run on two "
        f"datasets. Fix: point data_dir back at the copy it trained on, or start afresh on this one (`{retrain}` "
        f"with its configuration; the checkpoint is replaced)"
    )


def checkpoint_progress(state: Mapping[str, Any], planned_epochs: int) -> dict[str, Any] | None:
    """What a re-scored checkpoint ``state`` had trained (the record's ``rescored``): its epoch and step, the
    ``planned_epochs`` of its configuration, and ``unfinished`` when it had not reached them (a run killed, or
    still training when its checkpoint was copied); ``None`` for a checkpoint that names no epoch (another
    program's)."""
    epoch, step = state.get("epoch"), state.get("step")
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0:
        return None
    step = int(step) if isinstance(step, int) and step >= 0 else 0
    return {
        "checkpoint_epoch": epoch,
        "checkpoint_step": step,
        "planned_epochs": int(planned_epochs),
        "unfinished": epoch < planned_epochs,
    }


def _load_trained(method: Method, state: dict[str, Any], checkpoint: Path, config: Path, cfg: RunConfig) -> None:
    """Load a trained model's weights (the checkpoint ``state`` read from ``checkpoint``) for re-scoring; a
    checkpoint trained with another configuration than ``cfg`` (:func:`con2.training.checkpoints.check_trained_config`)
    or that does not fit the configured model (another width, encoder or method) stops with one line naming both files.

    Raises:
        ConfigError: another configuration, or weights that do not fit ``method``.
    """
    try:
        method.load_state_dict(state["model"])
    except (RuntimeError, KeyError, TypeError) as exc:
        lines = [line.strip().rstrip(".") for line in str(exc).splitlines() if line.strip()]
        reason = "; ".join(lines[1:3] or lines[:1])[:400]
        raise ConfigError(
            f"checkpoint {checkpoint} does not fit the model {config} describes ({reason}). Fix: evaluate it with "
            f"the config.yaml that trained it (`con2 evaluate --set` changes only how a model is scored), or retrain"
        ) from None
    # weights that fit may still be another variant's (flip for invert): the checkpoint names its configuration
    scoring_params = tuple(getattr(get_spec(cfg.method), "scoring_params", ()))
    note = check_trained_config(state, checkpoint, cfg, config, scoring_params)
    if note:
        print(note, flush=True)


@dataclasses.dataclass
class Loaded:
    """What both jobs check and load before any training or scoring: the run's data (as uint8 tensors
    ``[n, C, H, W]``), its device and method, whether the method trains at all, and the identity of its
    images (:func:`data_identity`). ``started``: ``time.perf_counter()`` when the job began."""

    data: OneClassData
    device: torch.device
    method: Method
    trains: bool
    train_images: torch.Tensor
    test_images: torch.Tensor
    val_images: torch.Tensor | None
    trained_on: str
    started: float


@dataclasses.dataclass(frozen=True)
class Trained:
    """What the record says of how the scored model came to be: ``training`` (epochs, steps, resumed from,
    precision), the fit's seconds and pace, the learning curve's seconds and readings (``None``: no curve),
    the training sessions, and for a re-scoring what its checkpoint had trained (``rescored``)."""

    training: dict[str, Any]
    fit_seconds: float = 0.0
    images_per_second: float | None = None
    curve_seconds: float | None = None
    curve: dict[str, Any] | None = None
    sessions: dict[str, Any] = dataclasses.field(default_factory=dict)
    rescored: dict[str, Any] | None = None


def load(cfg: RunConfig, verify: bool, training: bool) -> Loaded:
    """Load the run's data (``verify``: check the prepared cache's sha256, milliseconds), build its method and
    check everything knowable before the first step: the batch size against the training set (``training``, for
    a method that trains) and the size of the scoring pass (:func:`check_scoring_work`), announced up front."""
    started = time.perf_counter()
    data = load_run_data(cfg, verify=verify)
    if cfg.threads:
        use_cpu_threads(cfg.threads)
    device = select_device(cfg.device)
    torch.manual_seed(cfg.seed)  # model initialisation
    method = build_method(cfg)
    trains = method.trains()  # a method with every weight frozen (a floor) is scored untrained: no loop, no batch
    if training and trains:
        check_batch_size(cfg, len(data.train), data.normal_class)
    n_views = method.encoded_views()
    n_val = 0 if data.val is None else len(data.val)
    batches, _ = check_scoring_work(cfg, n_views, len(data.train), len(data.test) + n_val)
    if cfg.progress:  # the size of the scoring pass, up front
        val_text = f" + {n_val} validation" if n_val else ""
        print(
            f"scoring will encode {n_views} view(s) x ({len(data.train)} + {len(data.test)}{val_text}) images in "
            f"{batches:,} batches of {cfg.eval_batch_size}",
            flush=True,
        )
    val_images = to_tensor(data.val) if data.val is not None and len(data.val) else None
    trained_on = data_identity(data.manifest, data.train, data.test)
    return Loaded(
        data, device, method, trains, to_tensor(data.train), to_tensor(data.test), val_images, trained_on, started
    )


def train(cfg: RunConfig, rd: RunDir, on_epoch_end: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Train (or resume from ``rd``'s checkpoint) and score one run in ``rd``, whose lock the caller holds;
    write its scores and record and return the record.

    Raises:
        RunDirError: a corrupt checkpoint.
        ConfigError: a batch larger than the training set; an invalid method or encoder setting; a scoring pass
            beyond :func:`check_scoring_work`'s bounds; a checkpoint trained on other images (:func:`check_same_data`).
        DataError: missing or damaged data, or a test split without both classes.
        OSError: a write failed (disk full, read-only); nothing partial is left.
    """
    resuming = rd.checkpoint.is_file()
    job = load(cfg, verify=not resuming, training=True)  # a resumed run trusts the cache it trained on
    state = None  # the checkpoint a resume continues: it fixes what prepare decided
    if resuming:  # only on the images the checkpoint trained on
        state = load_checkpoint(rd.checkpoint, "cpu")
        check_same_data(state, job.trained_on, rd.checkpoint, cfg)
    prepare_method(job.method, job.train_images, state, rd.checkpoint)
    rd.write_config(cfg)
    settings = train_settings(cfg) if job.trains else dataclasses.replace(train_settings(cfg), max_steps=0)
    curve = None
    if cfg.score_at:  # the learning curve: scored after those epochs, before their checkpoints
        final = step_counts(len(job.train_images), settings)[2]
        curve = LearningCurve(
            cfg, job.method, job.train_images, job.test_images, job.data.test_labels, job.device, rd, final, resuming
        )
    fixed = {**job.method.fixed_state(), DATA_KEY: job.trained_on}  # every checkpoint names the images it trained on
    with out_of_memory_refused(cfg, "training"):
        result = fit(job.method, job.train_images, settings, job.device, rd.checkpoint, on_epoch_end, curve, fixed)
    trained = Trained(
        training={
            "epochs": result.epochs,
            "steps": result.steps,
            "resumed_from_epoch": result.resumed_from_epoch,
            "precision": result.precision,
        },
        fit_seconds=result.fit_seconds,
        images_per_second=result.images_per_second,
        curve_seconds=result.hook_seconds if curve is not None else None,
        curve=curve.record() if curve is not None else None,
        sessions={"resumed": result.resumed_from_epoch > 0, "sessions": result.sessions},
    )
    out, score_seconds = score(cfg, job)
    return write_run(cfg, rd, job, out, score_seconds, trained)


def rescore(cfg: RunConfig, rd: RunDir, weights: str | Path | None = None) -> dict[str, Any]:
    """Score the trained checkpoint ``weights`` (default: ``rd``'s own) under ``cfg`` without training
    (``con2 evaluate``), in ``rd``, whose lock the caller holds; return the record. The checkpoint is read and
    loaded before anything is written; ``rd`` receives a copy of it, ``config.yaml``, the scores and the record
    only once scoring is done, so a model that does not fit ``cfg`` leaves nothing there.

    Raises:
        FileNotFoundError: no checkpoint. RunDirError: a corrupt one.
        ConfigError: an invalid method or encoder setting; a scoring pass beyond :func:`check_scoring_work`'s
            bounds; weights that do not fit the model.
        DataError: missing or damaged data, or a test split without both classes.
        OSError: a write failed (disk full, read-only); nothing partial is left.
    """
    job = load(cfg, verify=True, training=False)
    source = rd.checkpoint if weights is None else Path(weights)
    state = _read_trained(source, job.device)  # it fixes what prepare decided
    prepare_method(job.method, job.train_images, state, source)
    job.method.to(job.device)
    _load_trained(job.method, state, source, source.parent / CONFIG, cfg)
    planned = step_counts(len(job.train_images), train_settings(cfg))[2]
    trained = Trained(
        training={"epochs": 0, "steps": 0, "resumed_from_epoch": None},  # this command trained nothing
        rescored=checkpoint_progress(state, planned),
    )
    out, score_seconds = score(cfg, job)
    if source.resolve() != rd.checkpoint.resolve():
        copy_checkpoint(source, rd.checkpoint)
    rd.write_config(cfg)
    return write_run(cfg, rd, job, out, score_seconds, trained)


def score(cfg: RunConfig, job: Loaded) -> tuple[MethodScores, float]:
    """The method's scores of the test (and validation) images against the training images, and the seconds
    they took (a progress line every few seconds with ``cfg.progress``)."""
    started = time.perf_counter()
    with scoring_progress(scoring_printer() if cfg.progress else None), out_of_memory_refused(cfg, "scoring"):
        out = job.method.score(job.train_images, job.test_images, job.device, job.val_images)
    return out, time.perf_counter() - started


def write_run(
    cfg: RunConfig, rd: RunDir, job: Loaded, out: MethodScores, score_seconds: float, trained: Trained
) -> dict[str, Any]:
    """Write the run's scores (test and validation), its features when the method keeps some, and last its
    record (each file atomically, the record naming their sha256); return the record."""
    data = job.data
    files = {
        SCORES: rd.write_scores(data.test_labels, out.scores),
        VALIDATION: rd.write_validation_scores(out.validation),
    }
    if out.arrays:
        rd.write_features(out.arrays)
    manifest = data.manifest or {}
    curve_timing = {"curve_seconds": trained.curve_seconds} if trained.curve_seconds is not None else {}
    record = build_record(
        dataset=cfg.dataset,
        normal_class=data.normal_class,
        method=cfg.method,
        variant=cfg.variant,
        seed=cfg.seed,
        labels=data.test_labels,
        scores=out.scores,
        n_train=len(data.train),
        config=cfg.to_dict(),
        config_hash=cfg.config_hash(),
        split_seed=cfg.split_seed,
        split_sha256=manifest.get("split_sha256"),
        batch_size=min(cfg.batch_size, len(data.train)) if job.trains else None,
        timing={
            "fit_seconds": trained.fit_seconds,
            "score_seconds": score_seconds,
            "wall_seconds": time.perf_counter() - job.started,
            "images_per_second": trained.images_per_second,
            **curve_timing,
            **trained.sessions,
        },
        extras=out.extras,
        scoring=out.scoring or None,
        method_card=get_spec(cfg.method).card(job.method.params),
        training=trained.training,
        device=str(job.device),
        peak_memory_mb=_peak_memory_mb(job.device),
        curve=trained.curve,
        validation=out.validation if job.val_images is not None else None,
        val_sha256=manifest.get("val_pixels_sha256"),
        data_source=data_source(manifest),
        rescored=trained.rescored,
        files_sha256={name: sha for name, sha in files.items() if sha is not None},
        test_kinds=manifest.get("test_kinds"),  # anomaly kinds of a declared mvtec tree: per-kind AUROC columns
    )
    rd.write_record(record)
    return record
