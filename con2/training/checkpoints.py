"""Checkpoint files: written atomically, read with ``weights_only=True``, checked against the run's config.

The engine saves and resumes through these; ``con2 evaluate`` loads and copies them.
"""

from __future__ import annotations

import io
import json
import pickle
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from con2.atomic import atomic_path, write_bytes_atomic
from con2.config import SCORING_KEYS, RunConfig, config_diff, load_config
from con2.errors import ConfigError, RunDirError, read_failure
from con2.text import shell_command

if TYPE_CHECKING:
    import torch


def copy_checkpoint(src: Path, dst: Path) -> None:
    """Copy a checkpoint file atomically (``con2 evaluate --out``)."""

    if not src.is_file():
        raise FileNotFoundError(f"no checkpoint at {src}; run `con2 train` for this run directory first")
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


def save_checkpoint(state: Mapping[str, Any], path: Path) -> None:
    """Write a checkpoint (tensors and plain values only) atomically; a full disk leaves the old one."""

    buffer = io.BytesIO()
    torch.save(dict(state), buffer)
    write_bytes_atomic(path, buffer.getbuffer())


def load_checkpoint(path: Path, device: torch.device | str = "cpu", fix: str | None = None) -> dict[str, Any]:
    """Read a checkpoint with ``weights_only=True`` (no code runs from the file).

    ``fix``: what the message of a corrupt file advises (default: ``con2 train``'s ``--force``).

    Raises:
        FileNotFoundError: no file; RunDirError: a truncated or corrupt file (names it and the fix).
    """

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
    fix = (
        f"evaluate the run directory that trained it (its config.yaml and {checkpoint.name} belong together; "
        f"a folder written by `con2 evaluate --out` is re-scored from its source run), or retrain "
        f"(`{shell_command('con2', 'train', '--run-dir', checkpoint.parent, '--force')}` with the configuration of "
        f"{config_file.name})"
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
