"""Issue 57 item 8: a second launch in a results folder names the run that holds it, with the fix; a file left
by a killed run, or by a process that is no snakemake (a reused pid), names nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from con2.text import _CONTROL as CONTROL
from con2.workflow.holder import claim, held_by, holder_line, release


def _started(argv: list[str]) -> subprocess.Popen:
    """A process with ``argv``, once its command line shows it (Popen may return before the exec)."""
    proc = subprocess.Popen(argv)
    for _ in range(500):
        if Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[:2] == [a.encode() for a in argv[:2]]:
            break
        time.sleep(0.01)
    return proc


def test_a_live_snakemake_holding_the_folder_is_named_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "results" / ".con2-run.json"
    other = _started([sys.executable, "-c", "import time; time.sleep(60)", "snakemake", "all\x1b[2J"])
    try:
        path.parent.mkdir()
        path.write_text(json.dumps({"pid": other.pid, "command": "snakemake --cores 2 all\x1b[2J", "started": 0.0}))
        held = held_by(path)
        assert held is not None and held["pid"] == other.pid
        line = holder_line(held)
        assert "\n" not in line and not CONTROL.search(line), line
        assert f"pid {other.pid}" in line and "snakemake --cores 2 all\\x1b[2J" in line
        assert f"kill -TERM {other.pid}" in line and "keep their checkpoints" in line
    finally:
        other.kill()
        other.wait()
    assert held_by(path) is None  # the run is gone: its file names nothing


def test_a_pid_that_is_no_snakemake_or_this_process_names_nothing(tmp_path: Path) -> None:
    path = tmp_path / "holder.json"
    sleeper = _started([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        path.write_text(json.dumps({"pid": sleeper.pid, "command": "snakemake all", "started": time.time()}))
        assert held_by(path) is None  # a reused pid: alive, but not a snakemake
    finally:
        sleeper.kill()
        sleeper.wait()
    record = claim(["snakemake", "all"], path)
    assert record["pid"] == os.getpid() and json.loads(path.read_text())["command"] == "snakemake all"
    assert held_by(path) is None  # its own file: no line
    release(path)
    assert not path.exists()
    path.write_text("{not json")
    assert held_by(path) is None


def test_release_leaves_another_run_s_file(tmp_path: Path) -> None:
    path = tmp_path / "holder.json"
    path.write_text(json.dumps({"pid": os.getpid() + 1, "command": "snakemake all", "started": 0}))
    release(path)
    assert path.exists()


@pytest.mark.slow
def test_a_second_launch_in_the_folder_names_the_first_and_the_first_leaves_no_file(tmp_path: Path) -> None:
    """The issue's probe: a second `snakemake all` while the first runs said only "ProtectedOutputException ...
    rule aggregate"; now its first lines name the run that holds the folder and the fix."""
    from workflow_helpers import SNAKEMAKE, TEST_CONFIG, copy_workflow, snakemake, workflow_env

    wd = copy_workflow(tmp_path / "wd")
    first = subprocess.Popen(
        [*SNAKEMAKE, "--cores", "1", "all", "--configfile", TEST_CONFIG],
        cwd=wd,
        env=workflow_env(wd),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        holder = wd / "results" / ".con2-run.json"
        for _ in range(1200):  # its first job starts once the DAG is built (seconds; minutes on a loaded machine)
            if holder.is_file() or first.poll() is not None:
                break
            time.sleep(0.25)
        assert holder.is_file() and json.loads(holder.read_text())["pid"] == first.pid
        second = snakemake(wd, "--cores", "1", "all", "--configfile", TEST_CONFIG)
        text = second.stdout + second.stderr
        assert f"another snakemake run holds this results folder (pid {first.pid}, since " in text, text[-3000:]
        assert f"kill -TERM {first.pid}" in text
    finally:
        first.terminate()  # SIGTERM: the run's own handler stops its jobs, leaving checkpoints
        first.wait(timeout=300)
    assert not holder.exists()  # released at exit
