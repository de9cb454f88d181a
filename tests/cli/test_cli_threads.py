"""The ``con2`` command shortens OpenMP's spin-wait (issue 36, point 12).

libgomp reads ``GOMP_SPINCOUNT`` / ``OMP_WAIT_POLICY`` once, when torch loads it; with its default spin a
run of 2 torch threads next to other CPU work trained 2-8x slower (``benchmarks/threads_under_load.py``).
Importing ``con2.cli`` (every ``con2`` command does, before torch) sets ``GOMP_SPINCOUNT=10000`` unless
the user chose a spin count or a wait policy.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = (
    "import con2.cli, os, sys, torch; "
    "print(os.environ.get('GOMP_SPINCOUNT'), os.environ.get('OMP_WAIT_POLICY'), 'torch' in sys.modules)"
)


def clean_env(**given: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    return {**env, **given}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, ["10000", "None", "True"]),
        ({"OMP_WAIT_POLICY": "ACTIVE"}, ["None", "ACTIVE", "True"]),
        ({"GOMP_SPINCOUNT": "5"}, ["5", "None", "True"]),
    ],
)
def test_the_cli_sets_a_short_spin_unless_the_user_chose_one(given: dict[str, str], expected: list[str]) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], env=clean_env(**given), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == expected


def test_torch_is_not_loaded_before_the_spin_count_is_set() -> None:
    """The setting only works if libgomp has not been loaded yet: ``con2.cli``'s package init sets it
    before anything that imports torch."""
    code = (
        "import builtins, os\n"
        "real = builtins.__import__\n"
        "def guard(name, *a, **k):\n"
        "    if name == 'torch' and 'GOMP_SPINCOUNT' not in os.environ:\n"
        "        raise SystemExit('torch imported before GOMP_SPINCOUNT was set')\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = guard\n"
        "import con2.cli; print(os.environ.get('GOMP_SPINCOUNT'))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "10000", out.stderr[-2000:]
