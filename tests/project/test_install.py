"""``pip install .`` works without a checkout: the wheel carries the package data, and ``con2 methods``
and ``con2 plan`` run from an installed copy in a folder far from the source tree.

The wheel is built without its dependencies (no network, seconds); the installed copy runs on this
environment's torch, pandas, ... with the checkout kept off ``sys.path``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    src = tmp_path_factory.mktemp("src") / "con2-bench"  # a copy: the build leaves build/ and *.egg-info behind
    shutil.copytree(
        ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv*", "results", "site", "*.egg-info", "build")
    )
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    (found,) = out.glob("con2_bench-*.whl")
    return found


def test_the_wheel_carries_the_package_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for table in ("paper_numbers.csv", "paper_compute_hours.csv", "train_set_sizes.csv", "throughput.csv"):
        assert f"con2/resources/{table}" in names, sorted(n for n in names if "resources" in n)
    assert "con2/cli/__init__.py" in names and "baselines/simclr_spec.py" in names
    assert not any(n.startswith(("tests/", "workflow/", "benchmarks/")) for n in names)


def test_an_installed_copy_lists_methods_and_plans_a_profile_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    res = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    away = tmp_path / "elsewhere"
    away.mkdir()
    profile = away / "paper.yaml"
    shutil.copyfile(ROOT / "workflow" / "config" / "paper.yaml", profile)
    # the installed copy first on the path; the checkout (an editable install's finder, PYTHONPATH) never consulted
    env = {**os.environ, "PYTHONPATH": str(target), "PYTHONNOUSERSITE": "1"}
    code = (
        "import sys, con2; from con2.cli import main; "
        "assert con2.__file__.startswith(sys.argv[1]), con2.__file__; "
        "raise SystemExit(main(sys.argv[2:]))"
    )

    def con2(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-c", code, str(target), *args]
        return subprocess.run(cmd, cwd=away, env=env, capture_output=True, text=True, timeout=300)

    methods = con2("methods")
    assert methods.returncode == 0, methods.stderr[-3000:]
    assert "con2" in methods.stdout and "simclr" in methods.stdout
    plan = con2("plan", "--configfile", str(profile))
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "not checked against the workflow's schema" in plan.stderr  # no checkout beside it: one line says so
    assert re.match(r"[\d,]+ training runs on one NVIDIA H200 \(throughput: throughput.csv", plan.stdout), plan.stdout
    default = con2("plan")  # no checkout here: the default profile's absence is named, with the fix
    assert default.returncode == 2 and "run con2 plan from the checkout's root, or pass --configfile" in default.stderr
