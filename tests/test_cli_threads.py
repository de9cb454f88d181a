"""The ``con2`` command makes idle OpenMP threads sleep (issue 36, point 12).

libgomp reads ``OMP_WAIT_POLICY`` once, when torch loads it; with its default spin-wait a run of 2 torch
threads next to other CPU work trained 2-3x slower (``benchmarks/threads_under_load.py``). Importing
``con2.cli`` (every ``con2`` command does, before torch) sets ``PASSIVE`` unless the user set a policy.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = "import con2.cli, os, sys, torch; print(os.environ['OMP_WAIT_POLICY'], 'torch' in sys.modules)"


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_the_cli_sets_a_passive_wait_unless_the_user_chose_one(given: str | None, expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [expected, "True"]


def test_torch_is_not_loaded_before_the_policy_is_set() -> None:
    """The policy only works if libgomp has not been loaded yet: ``con2.cli``'s package init sets it
    before anything that imports torch."""
    probe = "import sys, os; import con2.cli; print(os.environ.get('OMP_WAIT_POLICY'))"
    code = (
        "import builtins, os\n"
        "real = builtins.__import__\n"
        "def guard(name, *a, **k):\n"
        "    if name == 'torch' and 'OMP_WAIT_POLICY' not in os.environ:\n"
        "        raise SystemExit('torch imported before OMP_WAIT_POLICY was set')\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = guard\n" + probe
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "PASSIVE", out.stderr[-2000:]
