"""The run directory: its files, its one writer, its writes, its record, and the data a run sees.

Layout of a run directory::

    config.yaml      the resolved configuration (written before training starts)
    checkpoint.pt    weights + optimiser state (the resume point; tensors and plain values only)
    scores.csv       per-sample test scores (index, label, one column per score)
    validation_scores.csv  the normal validation images' scores (index, one column per score), where
                     the dataset has a validation split (MedMNIST's): a threshold without test labels
    features.npz     identity-view representations per split and context (float16)
    curve.csv        the learning curve (``score_at``): one row per scored epoch, AUROC per column
    record.json      the one-run record, written last: present = run complete
    .lock            held while a process writes here (removed when it stops)

Everything here is the single place for: the file names; the lock (one writer per run directory:
a second writer stops at once naming the holder; a lock left by a killed process never blocks,
since the operating system drops an ``flock`` with its process; a lock or run file that is a link
is refused, never followed); atomic writes of every file
(unique temporary names, removed on failure: :mod:`con2.atomic`); what a directory already holds
and whether it belongs to a given config (:meth:`RunDir.action`); the record of a run, built by
:func:`build_record` for registered methods and external programs alike; and the data of a run,
:func:`load_run_data`, which every method and external baseline uses, so all of them score the
same test images for the same (dataset, normal class, split seed) whatever the training seed.

Heavy modules (torch, numpy, pandas, the data layer) are imported inside the functions that need
them: the command line answers "already complete" without loading torch.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from con2.atomic import (
    NotARegularFile,
    clean_partials,
    folder_in_the_way,
    read_regular,
    remove,
    write_bytes_atomic,
    write_text_atomic,
)
from con2.config import RunConfig, config_diff, load_config
from con2.errors import ConfigError, RunDirError
from con2.run.lock import link_refusal, locked
from con2.run.records import RecordError, read_record, write_record

if TYPE_CHECKING:
    import numpy as np


RECORD, CHECKPOINT, SCORES, FEATURES, CONFIG, LOCK = (
    "record.json",
    "checkpoint.pt",
    "scores.csv",
    "features.npz",
    "config.yaml",
    ".lock",
)
CURVE = "curve.csv"
VALIDATION = "validation_scores.csv"
# The files a run directory holds (besides its lock): what `con2 evaluate --out` refuses to write over.
RUN_FILES = (RECORD, CHECKPOINT, SCORES, FEATURES, CONFIG, CURVE, VALIDATION)

# What a command does with a run directory (see RunDir.action).
TRAIN, COMPLETE, REPLACE = "train", "complete", "replace"


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


def bytes_sha256(data: bytes) -> str:
    """The sha256 (hex) of a score file's bytes, as a record's ``files_sha256`` keeps it."""
    return hashlib.sha256(data).hexdigest()


def written_sha256(record: Mapping[str, Any], name: str) -> str | None:
    """The sha256 a record keeps of the score file ``name`` its run wrote (``files_sha256``), or None (older)."""
    files = record.get("files_sha256")
    value = files.get(name) if isinstance(files, Mapping) else None
    return value if isinstance(value, str) else None


def score_file_state(record_path: str | Path, name: str) -> str:
    """Whether the score file ``name`` beside the record at ``record_path`` is the one its run wrote, by content:
    ``"same"``; ``"edited"`` (other bytes than the record's ``files_sha256``, or, for a record older than that,
    a ``scores.csv`` newer than the record); ``"gone"`` (the record keeps its sha256, the file is missing or
    no regular file); ``"unknown"`` (nothing to compare it with). The record is read as JSON, not validated."""
    folder = Path(record_path).parent
    try:
        record = json.loads(read_regular(Path(record_path)))
    except (OSError, ValueError, NotARegularFile):
        return "unknown"
    kept = written_sha256(record, name) if isinstance(record, dict) else None
    if kept is None:
        if name != SCORES:
            return "unknown"
        try:
            newer = os.stat(folder / name).st_mtime_ns > os.stat(record_path).st_mtime_ns
        except OSError:
            return "unknown"
        return "edited" if newer else "unknown"
    try:
        data = read_regular(folder / name)
    except (OSError, NotARegularFile):
        return "gone"
    return "same" if bytes_sha256(data) == kept else "edited"


def scores_text(labels: np.ndarray, scores: Mapping[str, np.ndarray]) -> str:
    """The text of ``scores.csv``: index, label, one column per score (``[M]`` each)."""
    import numpy as np  # lazy: numpy and pandas only when scores are written
    import pandas as pd  # lazy: numpy and pandas only when scores are written

    table = pd.DataFrame(
        {"index": np.arange(len(labels)), "label": labels, **{k: np.asarray(v) for k, v in scores.items()}}
    )
    return str(table.to_csv(index=False))


def validation_text(scores: Mapping[str, np.ndarray]) -> str | None:
    """The text of ``validation_scores.csv``: index, one column per score (``[V]`` each, the normal validation
    images); ``None`` without any."""
    import numpy as np  # lazy: numpy and pandas only when scores are written
    import pandas as pd  # lazy: numpy and pandas only when scores are written

    if not scores:
        return None
    n = len(next(iter(scores.values())))
    table = pd.DataFrame({"index": np.arange(n), **{k: np.asarray(v) for k, v in scores.items()}})
    return str(table.to_csv(index=False))


def unfinished_rescore(record: Mapping[str, Any]) -> str:
    """``"re-scored (con2 evaluate) from a checkpoint at epoch 47 of 3000"`` for a record of a re-scoring whose
    checkpoint had not finished training (its ``rescored``), else ``""``: its numbers are not the run's."""
    rescored = record.get("rescored")
    if not isinstance(rescored, Mapping) or not rescored.get("unfinished"):
        return ""
    return (
        f"re-scored (con2 evaluate) from a checkpoint at epoch {rescored.get('checkpoint_epoch')} of "
        f"{rescored.get('planned_epochs')}"
    )


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
    validation_scores = property(lambda self: self.path / VALIDATION)

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
            with locked(self.path / LOCK):
                self.check_links()
                clean_partials(self.path)
                yield
        finally:
            if created and self.path.is_dir() and not any(self.path.iterdir()):
                self.path.rmdir()

    def check_links(self) -> None:
        """Refuse a run file (:data:`RUN_FILES`) that is a symbolic link: con2 would read another run's
        file as this one's, and its target is no file of this directory (atomic writes replace the
        link, never the target, but a run must not start from, or be judged by, a file elsewhere); and one
        that is a folder (``checkpoint.pt/important.txt``), which a write or ``--force`` would remove.

        Raises:
            RunDirError: naming the link and its target, or the folder, and the fix.
        """
        for name in RUN_FILES:
            if (self.path / name).is_symlink():
                raise link_refusal(self.path / name)
            if (self.path / name).is_dir():  # never written over nor removed (--force): someone's files
                raise RunDirError(folder_in_the_way(self.path / name))

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
            # a re-scoring of an unfinished checkpoint (its `rescored`) is no finished run: training resumes
            return Stored(self.record, dict(r["config"]), r["config_hash"], not unfinished_rescore(r))
        if self.checkpoint.is_file() and self.config.is_file():
            try:
                cfg = load_config(self.config)
            except ConfigError as exc:  # the message's own fix does not apply here: action() gives one
                return Stored(self.config, {}, None, False, problem=str(exc).split(". Fix: ")[0])
            return Stored(self.config, cfg.to_dict(), cfg.config_hash(), False)
        return None

    def action(self, cfg: RunConfig, *, force: bool = False, replace_stale: bool = False) -> str:
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

        write_text_atomic(self.config, yaml.safe_dump(cfg.to_dict(), sort_keys=False))

    def write_scores(self, labels: np.ndarray, scores: Mapping[str, np.ndarray]) -> str:
        """``scores.csv`` (:func:`scores_text`); returns the sha256 of its bytes, which the record keeps
        (``files_sha256``): the aggregation then checks the file by its content."""
        text = scores_text(labels, scores)
        write_text_atomic(self.scores, text)
        return bytes_sha256(text.encode())

    def write_validation_scores(self, scores: Mapping[str, np.ndarray]) -> str | None:
        """``validation_scores.csv`` (:func:`validation_text`); returns the sha256 of its bytes (``None``: a run
        without validation images, which removes an older file, so it never outlives its scores)."""
        text = validation_text(scores)
        if text is None:
            self.validation_scores.unlink(missing_ok=True)
            return None
        write_text_atomic(self.validation_scores, text)
        return bytes_sha256(text.encode())

    def write_features(self, arrays: Mapping[str, np.ndarray]) -> None:
        """``features.npz`` (compressed)."""
        import numpy as np  # lazy: numpy only when features are written

        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as allow_pickle
        write_bytes_atomic(self.features, buffer.getbuffer())

    def write_curve(self, points: list[Mapping[str, Any]]) -> None:
        """``curve.csv``: one row per point ``{"epoch", "seconds", "auroc": {column: %}, "extras": {...}}``,
        columns ``epoch, seconds, auroc[<column>]..., <extra>...``."""
        import pandas as pd  # lazy: pandas only when a learning curve is written

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
        import pandas as pd  # lazy: pandas only when a learning curve is read

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
