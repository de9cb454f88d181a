"""SIGTERM to Snakemake's pid stops its training jobs, and the console stays short (issue 27, point 13).

`timeout`, a cluster's time limit or `kill PID` send SIGTERM to Snakemake alone; Snakemake's own
answer waits for the running jobs (hours of training) and repeats "Will exit after finishing
currently running jobs". The workflow's handler (con2/run/signals.py, installed by the Snakefile's
`onstart`) stops the jobs and Snakemake as Ctrl-C does; the same command then resumes. `kill -INT
PID` does the same (issue 36, point 10), where SIGINT is not ignored.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from workflow_helpers import SNAKEMAKE, TEST_CONFIG, copy_workflow, snakemake, workflow_env

from con2.run.signals import descendants
from con2.workflow.console import hashed, short_reason, short_reasons_block

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]

GRACEFUL = "Will exit after finishing currently running jobs"
RUNS = ("0", "1")


EPOCHS = 100


def profile(wd: Path) -> str:
    """The tiny profile, two runs of ~25 s each (~0.2 s an epoch here: time to interrupt both even
    when Snakemake starts the second a few seconds after the first), a checkpoint every epoch."""
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["run"].update(epochs=EPOCHS, width=8, image_size=28)
    cfg["checkpoint_seconds"] = 0  # a runtime key: never in the config hash
    cfg["datasets"]["digits"]["normal_classes"] = list(RUNS)
    cfg["experiments"] = {"main": {"datasets": ["digits"], "methods": {"con2": ["invert"]}}}
    (wd / "sigterm.yaml").write_text(yaml.safe_dump(cfg))
    return "sigterm.yaml"


def below(pid: int) -> dict[int, str]:
    """{pid: command line} of every process below ``pid``; `ps -ww`: never cut to a terminal's
    width (a long venv path pushes "con2 train" past column 80)."""
    mine = set(descendants(pid))
    ps = subprocess.run(["ps", "-ww", "-A", "-o", "pid=", "-o", "args="], capture_output=True, text=True).stdout
    found = {int(p): args for p, _, args in (line.strip().partition(" ") for line in ps.splitlines())}
    return {p: args for p, args in found.items() if p in mine}


def trainers(pid: int) -> list[int]:
    """The `con2 train` processes below ``pid`` (the job shells' children, not the shells)."""
    return [p for p, args in below(pid).items() if re.search(r"(^|[/ ])con2 train ", args) and "-c " not in args]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def sigint_as_a_terminal_gives_it() -> None:
    """In the child before exec: SIGINT to its default. A job started with `&` by a non-interactive
    shell (CI's `bash .ci/run &`) inherits SIGINT ignored, and so would Snakemake (the handler then
    leaves it ignored on purpose: con2/run/signals.py); subprocess's restore_signals leaves SIGINT as is."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def mtime(path: Path) -> float:
    return path.stat().st_mtime


def interrupt_once_both_train(
    proc: subprocess.Popen, console: Path, run_dirs: list[Path], since: float, sig: signal.Signals
) -> None:
    """Waits until both runs train and each wrote a checkpoint after ``since`` (a state, not a time), sends
    ``sig`` to Snakemake's pid alone (as `timeout`, a cluster or `kill -INT PID` sends it), and checks that
    Snakemake exits and no `con2 train` job outlives it (``console``: Snakemake's output, shown on a failure)."""
    deadline = time.time() + 300
    while True:
        running = trainers(proc.pid)
        fresh = [d for d in run_dirs if (d / "checkpoint.pt").exists() and mtime(d / "checkpoint.pt") > since]
        if len(running) == 2 and len(fresh) == len(run_dirs):
            break
        finished = [d for d in run_dirs if (d / "record.json").exists()]
        assert not finished, f"a run finished before both were training: raise EPOCHS ({below(proc.pid)})"
        assert proc.poll() is None and time.time() < deadline, (below(proc.pid), console.read_text()[-3000:])
        time.sleep(0.2)
    os.kill(proc.pid, sig)
    assert proc.wait(timeout=120) != 0
    deadline = time.time() + 30  # orphans are reaped by init: give it a moment
    while any(alive(p) for p in running) and time.time() < deadline:
        time.sleep(0.2)
    assert not [p for p in running if alive(p)], f"a `con2 train` job outlived Snakemake after {sig.name}"


def test_sigterm_and_sigint_stop_the_training_jobs_and_the_same_command_resumes(tmp_path: Path) -> None:
    """SIGTERM, and SIGINT to Snakemake's pid alone (`kill -INT PID`: before issue 36, point 10, its jobs
    trained on for minutes), stop every training job; the same command resumes. Also where this test
    runs with SIGINT ignored (a background job): Snakemake starts with SIGINT as a terminal gives it.
    One workflow takes both signals: SIGTERM while both runs train from scratch, then SIGINT while the
    same command trains them on from their checkpoints; the same command then finishes them."""
    wd = copy_workflow(tmp_path)
    cmd = [*SNAKEMAKE, "--cores", "2", "runs", "--configfile", profile(wd)]
    run_dirs = [wd / f"results/runs/digits/{c}/con2/invert/seed0" for c in RUNS]
    resumed_at = {}  # run folder -> the epoch the second command resumed it from
    for sig in (signal.SIGTERM, signal.SIGINT):
        console = wd / f"console_{sig.name}.txt"
        since = time.time()
        with console.open("w") as out:
            # a session of its own: this test's process group never gets a signal meant for the workflow
            proc = subprocess.Popen(
                cmd,
                cwd=wd,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=workflow_env(wd),
                preexec_fn=sigint_as_a_terminal_gives_it,
            )
        try:
            interrupt_once_both_train(proc, console, run_dirs, since, sig)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        text = console.read_text()
        assert text.count(GRACEFUL) == 0, text[-3000:]
        for c, d in zip(RUNS, run_dirs, strict=True):  # each trainer stopped as on Ctrl-C, its log says so
            log = (wd / f"results/logs/train/digits/{c}/con2/invert/seed0.log").read_text()  # this command's
            assert "con2: interrupted; rerun the same command" in log, (sig.name, log[-2000:])
            assert (d / "checkpoint.pt").exists() and not (d / "record.json").exists(), sorted(os.listdir(d))
            resumed = re.search(r"^resuming from .* at epoch (\d+) ", log, re.M)
            assert bool(resumed) == (sig == signal.SIGINT), log[-2000:]  # the second command resumed the first's
            if resumed:
                resumed_at[d] = int(resumed.group(1))

    res = subprocess.run(cmd, cwd=wd, capture_output=True, text=True, timeout=600, env=workflow_env(wd))
    assert res.returncode == 0, res.stderr[-3000:]
    for d in run_dirs:
        record = json.loads((d / "record.json").read_text())
        assert record["resumed_from_epoch"] > resumed_at[d] and record["epochs"] == EPOCHS, (resumed_at[d], record)

    # a changed run setting, every table and figure to build: each job's reason in one short line
    dry = snakemake(wd, "-n", "all", "--configfile", "sigterm.yaml", "--config", "run={epochs: 31}")
    lines = (dry.stdout + dry.stderr).splitlines()
    assert dry.returncode == 0 and "(+" in dry.stdout, lines[-40:]  # the target `all`: "(+N more)" files
    assert max(map(len, lines)) <= 300, max(lines, key=len)


HANDLER = """
import os, signal, subprocess, sys, time
from con2.run.signals import terminate_jobs_on_sigint
# as a terminal gives it, or as a non-interactive shell gives its `&` jobs (whatever this test inherited)
signal.signal(signal.SIGINT, signal.SIG_IGN if sys.argv[1] == "ignored" else signal.default_int_handler)
job = subprocess.Popen(["sleep", "60"])
terminate_jobs_on_sigint(grace=0.5)
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(1)  # the handler runs here at the latest
    print("on", end=" ")
except KeyboardInterrupt:
    print("interrupted", end=" ")
try:
    print(job.wait(timeout=5))
except subprocess.TimeoutExpired:
    job.kill()
    print("running")
"""


@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_sigint_handler_stops_the_jobs_later_and_keeps_an_inherited_ignore(inherited: str) -> None:
    """`kill -INT` to the process alone: KeyboardInterrupt at once, SIGTERM to its jobs ``grace`` later;
    SIGINT inherited ignored (`snakemake ... &` from a script) stays ignored (con2/run/signals.py says why)."""
    res = subprocess.run(
        [sys.executable, "-c", HANDLER, inherited],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
    )
    want = "interrupted -15" if inherited == "default" else "on running"
    assert res.returncode == 0 and res.stdout.strip() == want, (res.stdout, res.stderr)


def test_hashed_params_compare_as_before_and_print_short() -> None:
    """A profile-sized param prints as `<label hash>`, changes exactly when its repr() does, and
    reaches a `script:` job (pickled) as the same plain value."""
    settings = {"report": {"subject": "con2", "natural": ["digits"] * 200}, "run": {"epochs": 1}}
    h = hashed(settings, "settings")
    assert isinstance(h, dict) and h == settings and str(h) == repr(settings)
    assert re.fullmatch(r"<settings [0-9a-f]{12}>", repr(h))
    assert repr(hashed(dict(settings), "settings")) == repr(h)  # stable: the same value, the same hash
    assert repr(hashed({**settings, "run": {"epochs": 2}}, "settings")) != repr(h)
    back = pickle.loads(pickle.dumps(h, protocol=4))
    assert dict(back) == settings and repr(back) == repr(h)
    files = hashed([f"results/runs/r{i}/record.json@1" for i in range(70)], "outside")
    assert re.fullmatch(r"<outside [0-9a-f]{12}>", repr(files)) and list(files)[0].endswith("@1")

    reason = "Missing output files: a.md; Input files updated by another job: " + ", ".join(
        f"t{i}.csv" for i in range(70)
    )
    assert (
        short_reason(reason)
        == "Missing output files: a.md; Input files updated by another job: t0.csv, t1.csv, t2.csv (+67 more)"
    )
    assert len(short_reason("Params have changed since last execution: " + "x" * 1000)) == 300
    block = "Reasons:\n    (check individual jobs above for details)\n    missing output files:\n        "
    assert short_reasons_block(block + ", ".join(f"table_{i}" for i in range(26))).endswith("table_5 (+20 more)")
