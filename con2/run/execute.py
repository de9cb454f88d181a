"""The steps of one run, in order: data -> method -> training -> scores -> metrics -> record.

Called by :func:`con2.run.runner.run`, which owns the run directory (its lock and what it already
holds) and decides whether there is work to do; this module does the work. It checks everything
knowable before training first: the data (both classes in the test split), the batch size against
the training set, the method and its encoder, and the size of the scoring pass
(:func:`check_scoring_work`: a typo in ``tta``, ``eval_batch_size`` or ``nn_chunk`` must not run
for hours). Re-scoring a trained model (``train=False``, ``con2 evaluate``) loads its weights
before anything is written, and writes nothing until the scores exist.
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
from con2.data.manifest import data_source, pixels_digest
from con2.data.rundata import check_batch_size, load_run_data
from con2.errors import ConfigError
from con2.methods import Method, build_method, get_spec
from con2.methods.scoring import ScoringProgress, scoring_progress
from con2.run.curve import LearningCurve
from con2.run.records import build_record
from con2.run.rundir import CHECKPOINT, CONFIG, FEATURES, RECORD, SCORES, VALIDATION, RunDir
from con2.text import shell_command
from con2.training.checkpoints import check_trained_config, copy_checkpoint, load_checkpoint
from con2.training.device import select_device
from con2.training.engine import TrainSettings, fit, planned_steps

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
    "execute",
    "scoring_work",
    "to_tensor",
    "train_settings",
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
    return TrainSettings(
        epochs=cfg.epochs,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        weight_decay=cfg.weight_decay,
        betas=cfg.betas,
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


def execute(
    cfg: RunConfig,
    rd: RunDir,
    on_epoch_end: Callable[[int], None] | None = None,
    train: bool = True,
    weights: str | Path | None = None,
) -> dict[str, Any]:
    """Train (or resume) and evaluate one run in ``rd``, whose lock the caller holds; return its record.

    With ``train=False`` (``con2 evaluate``) the weights come from the checkpoint ``weights``
    (default: the run directory's own) and are loaded before anything is written; the run
    directory then receives a copy of that checkpoint, ``config.yaml``, the scores and the record
    only once scoring is done, so a model that does not fit ``cfg`` leaves nothing there.

    Raises:
        RunDirError: a corrupt checkpoint.
        ConfigError: a batch larger than the training set; an invalid method or encoder setting; a
            scoring pass beyond :func:`check_scoring_work`'s bounds; weights that do not fit the model.
        DataError: missing or damaged data, or a test split without both classes.
        OSError: a write failed (disk full, read-only); nothing partial is left.
    """
    t_wall = time.perf_counter()
    # a new run or a re-scoring checks the prepared cache's sha256 (milliseconds); a resumed one trusts it
    data = load_run_data(cfg, verify=not (train and rd.checkpoint.is_file()))
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = select_device(cfg.device)
    torch.manual_seed(cfg.seed)  # model initialisation
    method = build_method(cfg)
    trains = method.trains()  # a method with every weight frozen (a floor) is scored untrained: no loop, no batch
    if train and trains:
        check_batch_size(cfg, len(data.train), data.normal_class)
    n_views = len(method.test_plan())
    n_val = 0 if data.val is None else len(data.val)
    batches, _ = check_scoring_work(cfg, n_views, len(data.train), len(data.test) + n_val)
    if cfg.progress:  # the size of the scoring pass, up front
        val_text = f" + {n_val} validation" if n_val else ""
        print(
            f"scoring will encode {n_views} view(s) x ({len(data.train)} + {len(data.test)}{val_text}) images in "
            f"{batches:,} batches of {cfg.eval_batch_size}",
            flush=True,
        )

    train_images, test_images = to_tensor(data.train), to_tensor(data.test)
    val_images = to_tensor(data.val) if data.val is not None and len(data.val) else None
    source = rd.checkpoint if train or weights is None else Path(weights)
    state = None  # the checkpoint a resume continues or a re-scoring loads: it fixes what prepare decided
    trained_on = data_identity(data.manifest, data.train, data.test)
    if not train:
        state = _read_trained(source, device)
    elif source.is_file():  # a resume: only on the images the checkpoint trained on
        state = load_checkpoint(source, "cpu")
        check_same_data(state, trained_on, source, cfg)
    prepare_method(method, train_images, state, source)
    curve, rescored = None, None
    if train:
        rd.write_config(cfg)
        settings = train_settings(cfg) if trains else dataclasses.replace(train_settings(cfg), max_steps=0)
        if cfg.score_at:  # the learning curve: scored after those epochs, before their checkpoints
            final = planned_steps(len(train_images), settings)[2]
            curve = LearningCurve(
                cfg, method, train_images, test_images, data.test_labels, device, rd, final, rd.checkpoint.is_file()
            )
        fixed = {**method.fixed_state(), DATA_KEY: trained_on}  # every checkpoint names the images it trained on
        with out_of_memory_refused(cfg, "training"):
            result = fit(method, train_images, settings, device, rd.checkpoint, on_epoch_end, curve, fixed)
        fit_seconds, ips, curve_seconds = result.fit_seconds, result.images_per_second, result.hook_seconds
        sessions: dict[str, Any] = {"resumed": result.resumed_from_epoch > 0, "sessions": result.sessions}
        training = {
            "epochs": result.epochs,
            "steps": result.steps,
            "resumed_from_epoch": result.resumed_from_epoch,
            "precision": result.precision,
        }
    else:
        assert state is not None  # read above, before prepare
        method.to(device)
        _load_trained(method, state, source, source.parent / CONFIG, cfg)
        fit_seconds, ips, curve_seconds, sessions = 0.0, None, 0.0, {}
        training = {"epochs": 0, "steps": 0, "resumed_from_epoch": None}  # this command trained nothing
        rescored = checkpoint_progress(state, planned_steps(len(train_images), train_settings(cfg))[2])

    t_score = time.perf_counter()
    with scoring_progress(scoring_printer() if cfg.progress else None), out_of_memory_refused(cfg, "scoring"):
        out = method.score(train_images, test_images, device, val_images)
    score_seconds = time.perf_counter() - t_score

    if not train:
        if source.resolve() != rd.checkpoint.resolve():
            copy_checkpoint(source, rd.checkpoint)
        rd.write_config(cfg)
    files = {
        SCORES: rd.write_scores(data.test_labels, out.scores),
        VALIDATION: rd.write_validation_scores(out.validation),
    }
    if out.arrays:
        rd.write_features(out.arrays)
    manifest = data.manifest or {}
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
        batch_size=min(cfg.batch_size, len(data.train)) if trains else None,
        timing={
            "fit_seconds": fit_seconds,
            "score_seconds": score_seconds,
            "wall_seconds": time.perf_counter() - t_wall,
            "images_per_second": ips,
            **({"curve_seconds": curve_seconds} if curve is not None else {}),
            **sessions,
        },
        extras=out.extras,
        scoring=out.scoring or None,
        method_card=get_spec(cfg.method).card(method.params),
        training=training,
        device=str(device),
        peak_memory_mb=_peak_memory_mb(device),
        curve=curve.record() if curve is not None else None,
        validation=out.validation if val_images is not None else None,
        val_sha256=manifest.get("val_pixels_sha256"),
        data_source=data_source(manifest),
        rescored=rescored,
        files_sha256={name: sha for name, sha in files.items() if sha is not None},
    )
    rd.write_record(record)
    return record
