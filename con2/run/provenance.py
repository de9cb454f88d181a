"""Where a record came from: package versions, the git commit, the CPU model, a config's hash."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata as md
import json
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _versions() -> dict[str, str]:

    out = {"python": platform.python_version()}
    for pkg in ("torch", "torchvision", "kornia", "timm", "numpy", "scikit-learn", "con2-bench"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def _git_commit() -> str | None:

    try:
        res = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5
        )
        return res.stdout.strip() or None if res.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def hash_config(config: Mapping[str, Any]) -> str:
    """16 hex digits of sha256 over a config's JSON (external runs; RunConfig has its own hash)."""

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


NATIVE_BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})  # as con2.training.engine.NATIVE_BF16_FLAGS


def cpu_precision(cpuinfo: str | None = None) -> str:
    """How this CPU trains: ``"bf16 autocast"`` where its flags include native bfloat16 (AVX512-BF16,
    AMX-BF16), else ``"float32"`` (what :func:`con2.training.device.autocast_enabled` decides, read
    from ``/proc/cpuinfo`` without importing torch). ``cpuinfo``: the file's text (tests), else read."""
    try:
        text = cpuinfo if cpuinfo is not None else Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return "float32"
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            return "bf16 autocast" if NATIVE_BF16_CPU_FLAGS & set(value.split()) else "float32"
    return "float32"


def cpu_device_name() -> str:
    """This CPU as the throughput table names devices: its model and how it trains
    (``AMD EPYC 7B13 (float32)``): a row measured with bf16 autocast is no rate for a CPU without it."""
    return f"{cpu_model()} ({cpu_precision()})"
