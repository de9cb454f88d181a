"""Shared fixtures: tiny configs that train in seconds on a CPU, and the offline data folder.

The tests mirror the packages: one folder per layer (``tests/maths/`` ... ``tests/workflow/``, as
``docs/architecture.md`` lists them; ``tests/project/`` checks the whole checkout: docs, style,
layers, install). Helpers shared across layers stay here beside this file (``*_fixtures.py``,
``workflow_helpers.py``); a test module another layer's test borrows from is importable by name
from every folder (the folders are on ``sys.path`` below, as pytest puts this one).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# One OpenMP / BLAS thread in each of the suite's two worker processes (pyproject.toml: -n 2 on 2 cores) and
# in the commands they start, unless the caller chose: more threads than cores spin instead of computing (A/B
# on this project's 2-core Xeon, both workers busy, two runs each: the GPU scripts' rehearsals 85 -> 75 CPU-s,
# the in-process training and maths tests 114 -> 109). Set before anything loads NumPy or torch; Snakemake's
# jobs get their rule's threads anyway.
for _pool in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_pool, "1")

_TESTS = Path(__file__).resolve().parent
sys.path[1:1] = [str(d) for d in sorted(_TESTS.iterdir()) if d.is_dir() and not d.name.startswith((".", "_"))]

# The offline data beside the checkout (../shared/data), or wherever CON2_SHARED_DATA points (a
# clone elsewhere, e.g. under /tmp).
SHARED_DATA = Path(os.environ.get("CON2_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))

TINY = {
    "dataset": "digits",
    "image_size": 16,
    "width": 4,
    "channels_last": False,  # width 4 + channels-last aborts in oneDNN's CPU backward (see config.validate)
    "epochs": 2,
    "batch_size": 32,
    "tta": 2,
    "csi_views": 2,  # CSI's test-time reading on 2 random views per image and context (default 10)
    "progress": False,
    "threads": 1,
    "device": "cpu",
    "eval_batch_size": 512,
    "checkpoint_seconds": 0,  # a checkpoint every epoch (the resume and kill tests need one mid-run)
}


# The session fixtures below that run the workflow (built once, shared by the pytest-xdist workers).
WORKFLOW_SESSION_FIXTURES = ("tiny_run", "labelled_reports")


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The installed torch in the session's header and, outside pyproject.toml's supported range, the one line
    that says so with the fix (con2/torch_support.py; tests/project/test_torch_support.py fails on it)."""
    from con2.torch_support import installed_torch, torch_problem  # lazy: read once per session, not per worker

    problem = torch_problem()
    return [f"torch {installed_torch()}: " + (problem or "in the supported range (pyproject.toml)")]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files in the order pytest-xdist's ``--dist loadfile`` should start them (``--no-loadscope-reorder``
    keeps it), longest first as far as the suite knows, so that no long file starts last and leaves the other
    worker idle: the files that read the session's workflow runs (each copies and reruns them), then the files
    with ``slow`` tests, then the rest, each in collection order; tests stay in file order.

    Among the files that read the session's runs, one that asks first for each of them starts the list (the
    first asking for ``tiny_run``, then the first asking for ``labelled_reports``): the two workers build both
    at once, where a second file asking for the same run first would leave its worker waiting on the lock
    (``built_once``) while the other builds it (~1 minute of one worker in CI)."""
    files: dict[Path, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.path, []).append(item)
    sessions = set(WORKFLOW_SESSION_FIXTURES)
    shared = {f for f, its in files.items() if any(sessions & set(it.fixturenames) for it in its)}
    slow = {f for f, its in files.items() if any(it.get_closest_marker("slow") for it in its)}

    def asks_first(f: Path) -> set[str]:
        """The session runs the first of the file's tests that reads any asks for."""
        return next(sessions & set(it.fixturenames) for it in files[f] if sessions & set(it.fixturenames))

    builders = (
        next((f for f in files if f in shared and name in asks_first(f)), None) for name in WORKFLOW_SESSION_FIXTURES
    )
    rank = {f: i for i, f in enumerate(dict.fromkeys(f for f in builders if f is not None))}
    order = sorted(files, key=lambda f: (rank.get(f, len(rank)), f not in shared, f not in slow))
    items[:] = [it for f in order for it in files[f]]


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Any]) -> Any:
    """What ``build(folder)`` returns (JSON), built once per test session, whichever pytest-xdist worker asks
    first: the others wait on a lock and read the same answer. The folder lies in the workers' common temporary
    folder (in one process, ``-n 0``: this session's); a failed build leaves no answer, so the next asker tries."""
    base = tmp_path_factory.getbasetemp()
    common = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    answer = common / f"{name}.json"
    with open(common / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not answer.is_file():
            folder = common / name
            shutil.rmtree(folder, ignore_errors=True)  # an earlier asker's failed build
            folder.mkdir()
            answer.write_text(json.dumps(build(folder)))
    return json.loads(answer.read_text())


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny tensors run far faster on one thread than with two threads fighting on a 2-core box."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def tiny() -> dict:
    """A digits config small enough to train and score in a few seconds."""
    return dict(TINY)


@pytest.fixture
def shared_data() -> Path:
    if not (SHARED_DATA / "medmnist" / "breastmnist.npz").is_file():
        pytest.fail(
            f"offline BreastMNIST missing at {SHARED_DATA}; the project's tests expect ../shared/data "
            "(or set CON2_SHARED_DATA to the folder holding medmnist/breastmnist.npz)"
        )
    return SHARED_DATA


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workflow's tiny profile run end to end once per session (every table and figure from real,
    tiny runs), shared by the workers; tests read it, and those that change things copy its directory
    (tests/workflow_helpers.py, ``clone``)."""

    def build(folder: Path) -> str:
        from workflow_helpers import TEST_CONFIG, copy_workflow, snakemake

        wd = copy_workflow(folder / "wd")
        res = snakemake(wd, "--cores", "2", "--configfile", TEST_CONFIG)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
        (wd / "console.txt").write_text(res.stdout + res.stderr)
        return str(wd)

    return Path(built_once(tmp_path_factory, "tiny_run", build))


@pytest.fixture(scope="session")
def labelled_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The one-run profile (workflow_helpers.ONE_RUN_PROFILE) run, then an external record labelled
    ``"Plain label"`` and the tables and report built, then the same record labelled ``hostile`` (tags and a
    reST ``javascript:`` link) and built again: once per session for the escaping tests of the report
    (tests/workflow/test_hostile_inputs.py) and of its landing (tests/report/test_report_landing.py).

    Returns ``{"wd": the working copy, "hostile": the label, and for "plain" and "hostile": {"page": report
    HTML, "files": {embedded file name: text}, "md": natural_summary.md}}``."""

    def build(folder: Path) -> dict[str, Any]:
        from workflow_helpers import (
            HOSTILE_LABEL,
            ONE_RUN_PROFILE,
            copy_workflow,
            external_record,
            report_of,
            snakemake,
        )

        wd = copy_workflow(folder / "wd")
        (wd / "one.yaml").write_text(ONE_RUN_PROFILE)
        built: dict[str, Any] = {"wd": str(wd), "hostile": HOSTILE_LABEL}
        for kind, label in (("plain", "Plain label"), ("hostile", HOSTILE_LABEL)):
            external_record(wd, "ext", label)
            res = snakemake(wd, "all", "--cores", "2", "--configfile", "one.yaml")
            assert res.returncode == 0, res.stderr[-3000:]
            page, files = report_of(wd, f"{kind}.html")
            md = (wd / "results/tables/natural_summary.md").read_text()
            built[kind] = {"page": page, "files": files, "md": md}
        return built

    built = built_once(tmp_path_factory, "labelled_reports", build)
    return {**built, "wd": Path(built["wd"])}
