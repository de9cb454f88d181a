"""The run directory: its files, its one writer, its writes, its record, and the data a run sees.

Layout of a run directory::

    config.yaml      the resolved configuration (written before training starts)
    checkpoint.pt    weights + optimiser state (the resume point; tensors and plain values only)
    scores.csv       per-sample test scores (index, label, one column per score)
    features.npz     identity-view representations per split and context (float16)
    curve.csv        the learning curve (``score_at``): one row per scored epoch, AUROC per column
    record.json      the one-run record, written last: present = run complete
    .lock            held while a process writes here (removed when it stops)

Everything here is the single place for: the file names; the lock (one writer per run directory:
a second writer stops at once naming the holder; a lock left by a killed process never blocks,
since the operating system drops an ``flock`` with its process; a lock or run file that is a link
is refused, never followed); atomic writes of every file
(unique temporary names, removed on failure: :mod:`con2.atomic`); what a directory already holds
and whether it belongs to a given config (:meth:`RunDir.plan`); the record of a run, built by
:func:`build_record` for registered methods and external programs alike; and the data of a run,
:func:`load_run_data`, which every method and external baseline uses, so all of them score the
same test images for the same (dataset, normal class, split seed) whatever the training seed.

Heavy modules (torch, numpy, pandas, the data layer) are imported inside the functions that need
them: the command line answers "already complete" without loading torch.
"""

from __future__ import annotations

import datetime as _dt
import errno
import functools
import io
import json
import os
import platform
import socket
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from con2.atomic import atomic_path, clean_partials, remove, write_bytes_atomic, write_text_atomic
from con2.config import RUNTIME_KEYS, RunConfig, load_config
from con2.errors import ConfigError, RunDirError, read_failure
from con2.records import SCHEMA_VERSION, RecordError, read_record, write_record

if TYPE_CHECKING:
    import numpy as np
    import torch

    from con2.data import OneClassData

RECORD, CHECKPOINT, SCORES, FEATURES, CONFIG, LOCK = (
    "record.json",
    "checkpoint.pt",
    "scores.csv",
    "features.npz",
    "config.yaml",
    ".lock",
)
CURVE = "curve.csv"
# The files a run directory holds (besides its lock): what `con2 evaluate --out` refuses to write over.
RUN_FILES = (RECORD, CHECKPOINT, SCORES, FEATURES, CONFIG, CURVE)

# What a command does with a run directory (see RunDir.plan).
TRAIN, COMPLETE, REPLACE = "train", "complete", "replace"


# --------------------------------------------------------------------------- data


# The fewest normal and anomalous test images a run scores: below it an AUROC is noise (each of n anomalies
# moves it by up to 100/n points; one anomaly gave 95.6) that the tables would show beside real numbers.
MIN_TEST_PER_CLASS = 5


def check_test_split(data: OneClassData, minimum: int = MIN_TEST_PER_CLASS) -> None:
    """Refuse a test split with fewer than ``minimum`` anomalous or normal images (one line naming the fix).

    Raises:
        DataError: naming both counts and the fix.
    """
    from con2.errors import DataError

    n_anomalous, n_normal = data.n_anomalous, data.n_normal_test
    if n_anomalous >= minimum and n_normal >= minimum:
        return
    few = min(n_anomalous, n_normal)
    raise DataError(
        f"{data.name}: the test split of normal class {data.normal_class} holds "
        f"{n_anomalous} anomalous and {n_normal} normal image(s); an AUROC over fewer than {minimum} of either is "
        f"noise (each image moves it by up to {100 / max(few, 1):.0f} points), not a benchmark number. Fix: add test "
        f"images to that copy of {data.name} (at least {minimum} of each kind), or choose another normal class "
        f"(--set normal_class=...)"
    )


def load_run_data(cfg: RunConfig, verify: bool = False) -> OneClassData:
    """The one-class split a run trains and scores on: ``cfg``'s dataset, normal class, split seed
    (``split_seed``, never the training ``seed``) and prepared size (``data_size``, else ``image_size``),
    centre-cropped by ``center_crop`` (:mod:`con2.preprocess`) when below 1.

    Every registered method (through :func:`con2.runner.run`) and every external baseline
    (``baselines/external.py``, ``baselines/examples/``) loads its data here.

    ``verify``: recompute the prepared cache's sha256 (a new run, or a re-scoring: about 0.4 ms for
    BreastMNIST at 28 px, 2 ms at 64 px); a cache that disagrees with its manifest is prepared again.
    Otherwise (a resumed run) only a changed size or mtime of the cache is noticed.

    Raises:
        DataError: missing or damaged data, an unknown class, or a test split with fewer than
            :data:`MIN_TEST_PER_CLASS` normal or anomalous images.
    """
    from con2.data import load_one_class

    data = load_one_class(
        cfg.dataset,
        cfg.data_dir,
        cfg.normal_class,
        seed=cfg.split_seed,
        size=cfg.data_size or cfg.image_size,
        verify=verify,
    )
    check_test_split(data)
    if cfg.center_crop < 1:  # the paper's resize 256 / centre-crop 224, at the stored size
        import dataclasses

        from con2.preprocess import center_crop_array

        data = dataclasses.replace(
            data,
            train=center_crop_array(data.train, cfg.center_crop),
            test=center_crop_array(data.test, cfg.center_crop),
        )
    return data


def check_batch_size(cfg: RunConfig, n_train: int, normal_class: str | None = None) -> None:
    """Refuse a batch larger than the training set (it would silently become the whole set).

    ``normal_class``: the class the data loader resolved (``cfg.normal_class`` may be ``None``, the default).
    """
    if cfg.batch_size > n_train:
        normal = normal_class if normal_class is not None else cfg.normal_class
        raise ConfigError(
            f"config key 'batch_size': {cfg.batch_size} is larger than the training set of {cfg.dataset} "
            f"(normal class {normal if normal is not None else 'default'}: {n_train} images). "
            f"Fix: --set batch_size={n_train} or smaller"
        )


# --------------------------------------------------------------------------- the lock


_HELD: dict[str, list[int]] = {}  # lock path -> [fd, depth]: re-entrant within one process


def _holder_text(fd: int) -> str:
    for _ in range(20):  # a new holder writes its details right after taking the lock
        os.lseek(fd, 0, os.SEEK_SET)
        raw = os.read(fd, 4096)
        if raw:
            try:
                h = json.loads(raw)
                return f"pid {h['pid']} on host {h['host']}, started {h['started']} (`{h['command']}`)"
            except (ValueError, KeyError, TypeError):
                break
        time.sleep(0.05)
    return "a process that did not say who it is"


def link_refusal(path: Path) -> RunDirError:
    """The one-line refusal of a run file that is a symbolic link (names its target, which stays untouched)."""
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return RunDirError(
        f"{path} is a symbolic link (to {target}); a run directory holds its own files, and con2 neither writes "
        f"nor reads them through a link (a write would land in {target}, a read take another run's file). Fix: "
        f"remove the link (`rm {path}`), or replace it with a copy of the file it points to, then rerun; {target} "
        f"is untouched"
    )


def _open_lock(path: Path) -> int:
    """Open the lock file for writing without following a link (``O_NOFOLLOW``): a ``.lock`` that is a
    symbolic link, a hard link to another file or not a regular file is refused, and never written.

    Raises:
        RunDirError: ``path`` is a link or not a regular file (the message names the fix).
    """
    import stat

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if path.is_symlink():  # ELOOP (Linux), EMLINK (FreeBSD), EFTYPE (NetBSD)
            raise link_refusal(path) from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):
            raise _not_a_lock(path, "not a regular file") from None
        raise
    st = os.fstat(fd)
    problem = "not a regular file" if not stat.S_ISREG(st.st_mode) else "hard-linked to another file"
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:  # writing it would write that other file
        os.close(fd)
        raise _not_a_lock(path, problem)
    return fd


def _not_a_lock(path: Path, problem: str) -> RunDirError:
    return RunDirError(
        f"{path} is {problem}; con2 writes its lock there and will not write into another file. Fix: remove it "
        f"(`rm -r {path}`; a hard link's other names keep the data) and rerun"
    )


def _acquire(path: Path) -> int:
    """Open and ``flock`` ``path`` without waiting; ``RunDirError`` naming the holder if it is taken,
    or refusing a ``path`` that is a link (see :func:`_open_lock`)."""
    import fcntl

    while True:
        fd = _open_lock(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder_text(fd)
            os.close(fd)
            raise RunDirError(
                f"run directory {path.parent} is in use by another writer: {holder}. Fix: wait for it to finish "
                f"(or stop it), then rerun this command: it resumes from the last checkpoint. Two writers in one "
                f"run directory would do the work twice"
            ) from None
        except OSError:
            os.close(fd)
            raise
        try:  # a holder that was releasing may have unlinked the file we opened: then take the new one
            if os.fstat(fd).st_ino == os.lstat(path).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    key = os.path.realpath(path)
    if key in _HELD:
        _HELD[key][1] += 1
        try:
            yield
        finally:
            _HELD[key][1] -= 1
        return
    fd = _acquire(path)
    _HELD[key] = [fd, 1]
    try:
        details = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "command": " ".join(sys.argv)[:300],
        }
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(details).encode())
        yield
    finally:
        del _HELD[key]
        try:
            os.unlink(path)  # while still holding it; a waiter that opened it retries (see _acquire)
        except OSError:
            pass
        os.close(fd)


# --------------------------------------------------------------------------- the directory


@dataclass(frozen=True)
class Stored:
    """What a run directory already holds.

    Attributes:
        source: the file the configuration was read from (``record.json`` or ``config.yaml``).
        config: that configuration (a mapping of RunConfig keys; empty if unreadable).
        config_hash: its hash (``None`` if unreadable).
        complete: a record exists.
        problem: why the configuration could not be read (empty if it could).
    """

    source: Path
    config: dict[str, Any]
    config_hash: str | None
    complete: bool
    problem: str = ""


def config_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``["lr: 0.001 -> 0.01", "params.temperature: 0.5 -> 0.2", ...]`` over the keys that change results."""

    def flat(d: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in d.items() if k not in RUNTIME_KEYS and k != "params"}
        out.update({f"params.{k}": v for k, v in (d.get("params") or {}).items()})
        return out

    a, b = flat(old), flat(new)
    missing = "(unset)"
    return [f"{k}: {a.get(k, missing)} -> {b.get(k, missing)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


class RunDir:
    """One run directory (see the module docstring): paths, lock, state and writes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    record = property(lambda self: self.path / RECORD)
    checkpoint = property(lambda self: self.path / CHECKPOINT)
    scores = property(lambda self: self.path / SCORES)
    features = property(lambda self: self.path / FEATURES)
    config = property(lambda self: self.path / CONFIG)
    curve = property(lambda self: self.path / CURVE)

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Be the one writer of this directory (created if missing; removed again if left empty).

        Leftover temporaries of a killed writer are removed once the lock is held.

        Raises:
            RunDirError: another process holds it (the message names its pid, host and start time); the lock
                is a link or not a regular file, or a run file is a symbolic link (:meth:`check_links`).
            OSError: the directory or its lock file cannot be created (read-only, full).
        """
        created = not self.path.exists()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            blocker = next((p for p in (self.path, *self.path.parents) if p.exists() and not p.is_dir()), self.path)
            where = "is a file" if blocker == self.path else f"cannot be created: {blocker} is a file"
            raise RunDirError(
                f"run directory {self.path} {where}, not a folder. Fix: pass another --run-dir, or move {blocker} "
                f"out of the way"
            ) from None
        try:
            with _locked(self.path / LOCK):
                self.check_links()
                clean_partials(self.path)
                yield
        finally:
            if created and self.path.is_dir() and not any(self.path.iterdir()):
                self.path.rmdir()

    def check_links(self) -> None:
        """Refuse a run file (:data:`RUN_FILES`) that is a symbolic link: con2 would read another run's
        file as this one's, and its target is no file of this directory (atomic writes replace the
        link, never the target, but a run must not start from, or be judged by, a file elsewhere).

        Raises:
            RunDirError: naming the link, its target and the fix.
        """
        for name in RUN_FILES:
            if (self.path / name).is_symlink():
                raise link_refusal(self.path / name)

    def holds_run_files(self) -> list[str]:
        """The :data:`RUN_FILES` present here (links included), in that order."""
        return [name for name in RUN_FILES if os.path.lexists(self.path / name)]

    def stored(self) -> Stored | None:
        """The configuration this directory's record, or else its checkpoint, belongs to (``None``: nothing).

        A checkpoint without ``config.yaml`` is not judged here; its own fingerprint is checked when
        training resumes from it.

        Raises:
            RunDirError: an unreadable record, or a run file that is a symbolic link (:meth:`check_links`).
        """
        self.check_links()
        if self.record.is_file():
            try:
                r = read_record(self.record)
            except RecordError as exc:  # read_record names a binary, non-JSON or invalid file
                raise RunDirError(
                    f"{exc}. Fix: rerun with --force to retrain this run (it replaces the record), or restore the file"
                ) from None
            return Stored(self.record, dict(r["config"]), r["config_hash"], True)
        if self.checkpoint.is_file() and self.config.is_file():
            try:
                cfg = load_config(self.config)
            except ConfigError as exc:  # the message's own fix does not apply here: plan() gives one
                return Stored(self.config, {}, None, False, problem=str(exc).split(". Fix: ")[0])
            return Stored(self.config, cfg.to_dict(), cfg.config_hash(), False)
        return None

    def plan(self, cfg: RunConfig, *, force: bool = False, replace_stale: bool = False) -> str:
        """What training ``cfg`` here means: ``TRAIN`` (fresh or resume), ``COMPLETE`` (a record of this
        very config exists) or ``REPLACE`` (``replace_stale``: what is here belongs to another config).

        Raises:
            ConfigError: the directory holds a run or checkpoint of another config (the message lists
                the differing keys), unless ``force`` or ``replace_stale``.
        """
        if force:
            return TRAIN
        stored = self.stored()
        if stored is None:
            return TRAIN
        if stored.config_hash == cfg.config_hash():
            return COMPLETE if stored.complete else TRAIN
        if replace_stale:
            return REPLACE
        raise ConfigError(
            f"{self.path} holds {'a finished run' if stored.complete else 'a checkpoint'} of another configuration: "
            f"{self.describe_change(stored, cfg)}. Fix: rerun with --force to retrain here with this configuration "
            f"(or --replace-stale: the same, only when the configuration differs), or use another --run-dir"
        )

    def describe_change(self, stored: Stored, cfg: RunConfig) -> str:
        """One line: which file holds which hash, and the differing keys."""
        if stored.problem:
            return f"its {stored.source.name} cannot be read ({stored.problem})"
        diff = config_diff(stored.config, cfg.to_dict()) if stored.config else ["(unreadable)"]
        return (
            f"{stored.source.name} has config hash {stored.config_hash}, this command {cfg.config_hash()}; "
            f"differing keys: {'; '.join(diff) or '(none besides the hash)'}"
        )

    def discard(self) -> None:
        """Remove the record, the checkpoint and the learning curve (call it holding the lock)."""
        for p in (self.record, self.checkpoint, self.curve):
            remove(p)

    # ---- writes (all atomic)

    def write_config(self, cfg: RunConfig) -> None:
        import yaml

        write_text_atomic(self.config, yaml.safe_dump(cfg.to_dict(), sort_keys=False))

    def write_scores(self, labels: np.ndarray, scores: Mapping[str, np.ndarray]) -> None:
        """``scores.csv``: index, label, one column per score (``[M]`` each)."""
        import numpy as np
        import pandas as pd

        table = pd.DataFrame(
            {"index": np.arange(len(labels)), "label": labels, **{k: np.asarray(v) for k, v in scores.items()}}
        )
        write_text_atomic(self.scores, table.to_csv(index=False))

    def write_features(self, arrays: Mapping[str, np.ndarray]) -> None:
        """``features.npz`` (compressed)."""
        import numpy as np

        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        write_bytes_atomic(self.features, buffer.getbuffer())

    def write_curve(self, points: list[Mapping[str, Any]]) -> None:
        """``curve.csv``: one row per point ``{"epoch", "seconds", "auroc": {column: %}, "extras": {...}}``,
        columns ``epoch, seconds, auroc[<column>]..., <extra>...``."""
        import pandas as pd

        rows = [
            {
                "epoch": p["epoch"],
                "seconds": p["seconds"],
                **{f"auroc[{k}]": v for k, v in p["auroc"].items()},
                **p.get("extras", {}),
            }
            for p in sorted(points, key=lambda p: p["epoch"])
        ]
        write_text_atomic(self.curve, pd.DataFrame(rows).to_csv(index=False))

    def read_curve(self) -> list[dict[str, Any]]:
        """The points of ``curve.csv`` (``[]`` without one), as :meth:`write_curve` takes them."""
        import pandas as pd

        if not self.curve.is_file():
            return []
        table = pd.read_csv(self.curve)
        points = []
        for row in table.to_dict("records"):
            auroc = {k[len("auroc[") : -1]: float(v) for k, v in row.items() if k.startswith("auroc[")}
            extras = {
                k: float(v) for k, v in row.items() if k not in ("epoch", "seconds") and not k.startswith("auroc[")
            }
            points.append(
                {"epoch": int(row["epoch"]), "seconds": float(row["seconds"]), "auroc": auroc, "extras": extras}
            )
        return points

    def write_record(self, record: dict[str, Any]) -> None:
        """``record.json``, validated; write it last: its presence marks the run complete."""
        write_record(record, self.record)


def copy_checkpoint(src: Path, dst: Path) -> None:
    """Copy a checkpoint file atomically (``con2 evaluate --out``)."""
    import shutil

    if not src.is_file():
        raise FileNotFoundError(f"no checkpoint at {src}; run `con2 train` for this run directory first")
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


# --------------------------------------------------------------------------- checkpoints


def save_checkpoint(state: Mapping[str, Any], path: Path) -> None:
    """Write a checkpoint (tensors and plain values only) atomically; a full disk leaves the old one."""
    import torch

    buffer = io.BytesIO()
    torch.save(dict(state), buffer)
    write_bytes_atomic(path, buffer.getbuffer())


def load_checkpoint(path: Path, device: torch.device | str = "cpu", fix: str | None = None) -> dict[str, Any]:
    """Read a checkpoint with ``weights_only=True`` (no code runs from the file).

    ``fix``: what the message of a corrupt file advises (default: ``con2 train``'s ``--force``).

    Raises:
        FileNotFoundError: no file; RunDirError: a truncated or corrupt file (names it and the fix).
    """
    import pickle

    import torch

    if not Path(path).is_file():
        raise FileNotFoundError(f"no checkpoint at {path}; run `con2 train` for this run directory first")
    try:
        state = torch.load(path, map_location=device, weights_only=True)
        if not isinstance(state, dict) or "model" not in state:
            raise ValueError("not a con2 checkpoint (no 'model' entry)")
    except (RuntimeError, ValueError, EOFError, pickle.UnpicklingError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno is not None:  # the file system refused the read
            raise RunDirError(read_failure(exc)) from exc
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        fix = fix or (
            "rerun with --force to retrain this run from scratch (it deletes the checkpoint), or restore the file "
            "from a backup"
        )
        raise RunDirError(f"checkpoint {path} is truncated or corrupt ({reason}). Fix: {fix}") from exc
    return state


def check_trained_config(
    state: Mapping[str, Any],
    checkpoint: Path,
    cfg: RunConfig,
    config_file: Path,
    scoring_params: tuple[str, ...] = (),
) -> str | None:
    """Refuse re-scoring (``con2 evaluate``) a checkpoint trained with another model than ``cfg`` describes,
    as ``con2 train`` refuses to resume one: weights of another variant often fit the model, and the record
    would name the wrong run.

    A checkpoint stores its training configuration (``config``, JSON; since issue 25) beside its config hash
    (``fingerprint``): every key but the runtime, scoring (:data:`con2.config.SCORING_KEYS`) and
    ``scoring_params`` ones must equal ``cfg``'s. An older checkpoint holds the hash only: it must equal that of
    ``config_file`` (the run's ``config.yaml``, before ``--set``). One without either is evaluated as before.

    Returns:
        ``None`` when checked, else a one-line note on what could not be checked.

    Raises:
        ConfigError: another configuration (the message lists the differing keys, or both hashes).
    """
    from con2.config import SCORING_KEYS

    fix = (
        f"evaluate the run directory that trained it (its config.yaml and {checkpoint.name} belong together; "
        f"a folder written by `con2 evaluate --out` is re-scored from its source run), or retrain "
        f"(`con2 train --run-dir {checkpoint.parent} --force` with the configuration of {config_file.name})"
    )
    trained = state.get("config")
    try:
        old = json.loads(trained) if isinstance(trained, str) else None
    except ValueError:
        old = None
    if isinstance(old, dict):
        skip = {*SCORING_KEYS, *(f"params.{p}" for p in scoring_params)}
        diff = [line for line in config_diff(old, cfg.to_dict()) if line.split(": ", 1)[0] not in skip]
        if diff:
            raise ConfigError(
                f"checkpoint {checkpoint} was trained with another configuration than {config_file} describes: "
                f"differing keys: {'; '.join(diff)}. Fix: {fix}"
            )
        return None
    fingerprint = state.get("fingerprint")
    if not isinstance(fingerprint, str) or not fingerprint:
        return (
            f"note: checkpoint {checkpoint} carries no config hash (an older con2 or another program wrote it): "
            f"only that its weights fit the model {config_file} describes is checked"
        )
    stored = load_config(config_file).config_hash() if config_file.is_file() else None
    if fingerprint in (stored, cfg.config_hash()):
        return None
    raise ConfigError(
        f"checkpoint {checkpoint} has config hash {fingerprint}, {config_file} {stored} (another configuration; "
        f"the checkpoint predates con2 storing the keys it was trained with). Fix: {fix}"
    )


# --------------------------------------------------------------------------- the record


def _versions() -> dict[str, str]:
    import importlib.metadata as md
    import platform

    out = {"python": platform.python_version()}
    for pkg in ("torch", "torchvision", "kornia", "timm", "numpy", "scikit-learn", "con2-bench"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def _git_commit() -> str | None:
    import subprocess

    try:
        res = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5
        )
        return res.stdout.strip() or None if res.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def hash_config(config: Mapping[str, Any]) -> str:
    """16 hex digits of sha256 over a config's JSON (external runs; RunConfig has its own hash)."""
    import hashlib

    return hashlib.sha256(json.dumps(dict(config), sort_keys=True, default=str).encode()).hexdigest()[:16]


@functools.cache
def cpu_model() -> str:
    """The CPU's model name (``AMD EPYC 7B13``): ``model name`` of ``/proc/cpuinfo`` on Linux, else
    what :mod:`platform` says (``arm``, ``x86_64``, ...). Stored in every record: the same config and
    seed give identical numbers on the same kind of CPU only (bf16 autocast runs where the CPU has
    native bf16, and kernels differ between instruction sets)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "cpu model") and value.strip():
                    return " ".join(value.split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def build_record(
    *,
    dataset: str,
    normal_class: str,
    method: str,
    variant: str,
    seed: int,
    labels: np.ndarray,
    scores: Mapping[str, np.ndarray],
    n_train: int,
    config: Mapping[str, Any],
    config_hash: str | None = None,
    split_seed: int | None = None,
    split_sha256: str | None = None,
    batch_size: int | None = None,
    timing: Mapping[str, float | None] | None = None,
    extras: Mapping[str, Any] | None = None,
    scoring: Mapping[str, Any] | None = None,
    method_card: Mapping[str, Any] | None = None,
    training: Mapping[str, Any] | None = None,
    device: str = "external",
    peak_memory_mb: float | None = None,
    curve: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The one-run record (schema: :data:`con2.records.RECORD_SCHEMA`) of any run, ours or external.

    Args:
        labels: ``[M]`` test labels, 1 = anomaly, 0 = normal.
        scores: score name -> ``[M]`` per-sample scores, higher = more anomalous (one AUROC each).
        n_train: normal training images used.
        config: the run's settings (stored); ``config_hash`` defaults to :func:`hash_config` of it.
        split_seed, split_sha256: the split (``split_sha256`` from the data manifest: equal values
            mean the same train and test ids).
        batch_size: the effective batch size (images per optimiser step), if the run trained.
        timing: ``fit_seconds``, ``score_seconds``, ``wall_seconds`` (missing ones are 0),
            ``images_per_second``.
        extras: further metrics (e.g. ``silhouette``), stored beside ``auroc``.
        scoring: per score, which reading is its headline (JSON-serialisable; method-defined).
        method_card: the method spec's card of this run (labels, paper rows, tags).
        training: ``epochs``, ``steps``, ``resumed_from_epoch``, ``precision`` (``float32`` or
            ``bfloat16-autocast``: CPUs with native bf16 train in bf16 under ``amp``, others in fp32).
        curve: the learning curve (:mod:`con2.curve`): ``{"views", "points": [{"epoch", "seconds",
            "auroc": {column: %}, "extras"}]}``.

    Raises:
        RecordError: no scores, a score of another length than ``labels``, or labels of one class.
    """
    import numpy as np

    from con2.metrics import auroc, auroc_intervals

    labels = np.asarray(labels).astype(np.int64)
    where = f"run {dataset}/{normal_class}/{method}/{variant}/seed{seed}"
    if not scores:
        raise RecordError(f"{where}: no score columns given")
    for name, s in scores.items():
        if np.shape(s) != labels.shape:
            raise RecordError(f"{where}: score {name!r} has shape {np.shape(s)}, labels {labels.shape}")
    if len(np.unique(labels)) != 2:
        raise RecordError(f"{where}: the test labels hold one class only; an AUROC needs normal (0) and anomalous (1)")
    times = {"fit_seconds": 0.0, "score_seconds": 0.0, "wall_seconds": 0.0, **(timing or {})}
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "dataset": dataset,
        "normal_class": str(normal_class),
        "method": method,
        "variant": variant,
        "seed": int(seed),
        "metrics": {
            "auroc": {k: auroc(labels, np.asarray(v)) for k, v in scores.items()},
            "auroc_ci": auroc_intervals(labels, scores),  # 95% DeLong interval per column (con2.stats)
            **(extras or {}),
        },
        "timing": {k: (None if v is None else float(v)) for k, v in times.items()},
        "peak_memory_mb": peak_memory_mb,
        "n_train": int(n_train),
        "n_test": int(len(labels)),
        "n_anomalous": int(labels.sum()),
        "batch_size": None if batch_size is None else int(batch_size),
        "split_seed": None if split_seed is None else int(split_seed),
        "split_sha256": split_sha256,
        "config": dict(config),
        "config_hash": config_hash or hash_config(config),
        "versions": _versions(),
        "git_commit": _git_commit(),
        "device": device,
        "cpu": cpu_model(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    if str(device).startswith("cuda"):
        import torch  # heavy: only here, where a CUDA run has loaded it already

        if torch.cuda.is_available():
            record["gpu"] = torch.cuda.get_device_name(torch.device(device))
    for key in ("epochs", "steps", "resumed_from_epoch", "precision"):
        if training and key in training:
            record[key] = training[key]
    if scoring is not None:
        record["scoring"] = json.loads(json.dumps(scoring))
    if method_card is not None:
        record["method_card"] = json.loads(json.dumps(method_card))
    if curve is not None:
        record["curve"] = json.loads(json.dumps(curve))
    return record
