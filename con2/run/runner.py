"""One run, owned: the only place that locks a run directory and decides what a run does in it.

:func:`run` takes the directory's lock (:mod:`con2.run.lock`: one writer, a second stops at once
naming the holder), asks the directory what it holds (:meth:`con2.run.rundir.RunDir.action`: a
complete run of this configuration, a checkpoint to resume, files of another configuration to
refuse or replace), and only then hands the work to :func:`con2.run.execute.train` (data ->
method -> training -> scores -> record); :func:`rescore` locks the directory a trained model is
scored again into and hands it to :func:`con2.run.execute.rescore`. ``con2 train``, ``con2 evaluate``,
the workflow's jobs and the benchmarks all come through here, so a run is decided and locked exactly once.

torch is imported only when there is work to do: ``con2 train`` answers "already complete"
without loading it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from con2.config import RunConfig
from con2.errors import RunDirError
from con2.run.lock import holder_of
from con2.run.records import read_record
from con2.run.rundir import CHECKPOINT, COMPLETE, CONFIG, FEATURES, LOCK, RECORD, REPLACE, SCORES, RunDir

__all__ = ["CHECKPOINT", "CONFIG", "FEATURES", "RECORD", "SCORES", "rescore", "run"]


def run(
    cfg: RunConfig,
    run_dir: str | Path,
    on_epoch_end: Callable[[int], None] | None = None,
    *,
    force: bool = False,
    replace_stale: bool = False,
    say: Callable[[str], None] | None = None,
    on_complete: Callable[[Path], None] | None = None,
) -> dict[str, Any]:
    """Train (or resume) and score one run in ``run_dir``; return its record (:func:`con2.run.execute.train`).

    Args:
        on_epoch_end: called with each finished epoch (the console's first-epoch notice).
        force: discard what the directory holds and train from scratch.
        replace_stale: discard a checkpoint and record written under another configuration instead
            of refusing them.
        say: where the one-line notes go (already complete; files replaced); default ``print``.
        on_complete: called with the record's path instead of saying "already complete".

    Returns:
        The run's record; when the run is already complete (same configuration, no ``force``), the
        stored record, without loading torch.

    Raises:
        RunDirError: another process writes to ``run_dir``, or its checkpoint is corrupt.
        ConfigError: ``run_dir`` holds a checkpoint or record of another config (without
            ``replace_stale``), or the configuration cannot run (:func:`con2.run.execute.train`).
        DataError: missing or damaged data, or a test split without both classes.
        OSError: a write failed (disk full, read-only); nothing partial is left.
    """
    tell = say or (lambda line: print(line, flush=True))
    rd = RunDir(run_dir)
    with rd.lock():
        action = rd.action(cfg, force=force, replace_stale=replace_stale)  # another config: refused here
        if action == COMPLETE:
            if on_complete is not None:
                on_complete(rd.record)
            else:
                tell(f"{rd.record} exists: run already complete (use --force to retrain)")
            return read_record(rd.record)
        if action == REPLACE:
            stored = rd.stored()
            assert stored is not None  # REPLACE means a stored configuration was read
            tell(
                f"{rd.path}: removing {CHECKPOINT} and {RECORD}, written under another configuration "
                f"({rd.describe_change(stored, cfg)})"
            )
        if force or action == REPLACE:
            rd.discard()
        from con2.run import execute  # lazy: torch loads only once there is work to do

        return execute.train(cfg, rd, on_epoch_end)


def rescore(
    cfg: RunConfig,
    run_dir: str | Path,
    weights: str | Path | None = None,
    *,
    before: Callable[[RunDir], None] | None = None,
) -> dict[str, Any]:
    """Score the trained checkpoint ``weights`` (default: ``run_dir``'s own) under ``cfg`` without training
    (``con2 evaluate``), writing the run into ``run_dir``; return its record (:func:`con2.run.execute.rescore`).

    Args:
        before: called with the directory once its lock is held, before anything is read or written
            (``con2 evaluate --out`` checks there, as the one writer, that the folder is free).

    Raises:
        RunDirError: another process writes to ``run_dir`` or to the run directory of ``weights`` (a run
            still training), or the checkpoint is corrupt.
        FileNotFoundError: no checkpoint.
        ConfigError: weights that do not fit ``cfg``'s model, or a scoring pass that cannot run.
        DataError: missing or damaged data, or a test split without both classes.
        OSError: a write failed (disk full, read-only); nothing partial is left.
    """
    rd = RunDir(run_dir)
    refuse_training_source(rd, weights)
    with rd.lock():
        if before is not None:
            before(rd)
        from con2.run import execute  # lazy: as in run()

        return execute.rescore(cfg, rd, weights)


def refuse_training_source(rd: RunDir, weights: str | Path | None) -> None:
    """Refuse to re-score the checkpoint ``weights`` (default: ``rd``'s own) while another process holds the lock
    of the run directory it sits in: that run is still training, its checkpoint an unfinished model that is
    replaced every few epochs. ``rd`` itself is locked by :func:`run` (a second writer stops there).

    Raises:
        RunDirError: naming the run directory, its writer and the fix.
    """
    source = Path(weights).parent if weights is not None else rd.path
    if os.path.realpath(source) == os.path.realpath(rd.path):
        return
    holder = holder_of(source / LOCK)
    if holder is not None:
        raise RunDirError(
            f"run directory {source} is still training ({holder}): its {CHECKPOINT} is an unfinished model, replaced "
            f"every few epochs. Fix: wait for that run to finish (or stop it), then rerun this command"
        )
