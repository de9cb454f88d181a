"""A sign of life on a quiet console (con2/workflow/heartbeat.py, issue 46, point 2): the bookkeeping
and the line with a clock of our own, then the thread on a logger."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from con2.workflow.heartbeat import QUIET_SECONDS, Heartbeat, last_log_line, quiet_seconds, start_heartbeat


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def record(event: str | None, msg: str = "", **extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("snakemake", logging.INFO, __file__, 1, msg, None, None)
    if event is not None:
        rec.event = SimpleNamespace(value=event)
    for k, v in extra.items():
        setattr(rec, k, v)
    return rec


def test_a_line_comes_after_a_quiet_time_while_a_job_runs_naming_it_and_its_logs_last_line(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    lines = ["scoring will encode 40 view(s)", "epoch 10/10  loss=5.5  120 img/s  ETA 0s"]
    log.write_text("\n".join([*lines, "scoring: 12 of 41 passes, about 3.2 min left"]) + "\n")
    clock = Clock()
    beat = Heartbeat(quiet=45.0, clock=clock)
    assert beat.tick(clock.now + 100) is None  # no job running: nothing to say
    beat.filter(record("job_info", rule_msg="train breastmnist/1 con2/invert seed 1", jobid=7, log=[f"{log} (log)"]))
    clock.now += 44.0
    assert beat.tick(clock.now) is None  # not quiet long enough
    clock.now += 1.0
    line = beat.tick(clock.now)
    assert line == (
        "con2 grid: still working (45 s without a line): train breastmnist/1 con2/invert seed 1, 45 s in, "
        'log: "scoring: 12 of 41 passes, about 3.2 min left"'
    )
    beat.filter(record(None, line))  # the line itself reaches the console: the next one waits a quiet time
    clock.now += 30.0
    assert beat.tick(clock.now) is None
    beat.filter(record("job_info", rule_msg="table table1_medical", jobid=8, log=[]))  # another job: a record too
    clock.now += 45.0
    assert beat.tick(clock.now) == (
        "con2 grid: still working (45 s without a line): train breastmnist/1 con2/invert seed 1, 2 min 00 s in, "
        'log: "scoring: 12 of 41 passes, about 3.2 min left"; table table1_medical, 45 s in, nothing in its log yet'
    )
    beat.filter(record("job_finished", job_id=7))
    beat.filter(record("job_error", jobid=8))
    clock.now += 100.0
    assert beat.tick(clock.now) is None and beat.running == {}  # every job over: silence is fine


def test_a_logs_last_line_is_one_short_safe_line(tmp_path: Path) -> None:
    assert last_log_line(None) is None and last_log_line(str(tmp_path / "none.log")) is None
    log = tmp_path / "a.log"
    log.write_text("")
    assert last_log_line(str(log)) is None
    log.write_text("first\n" + "x" * 5000 + "\n" + "50%\r75%\r100% \x1b[31mred\n\n")
    assert last_log_line(str(log)) == "100% \\x1b[31mred"  # a bar's last state; no escape reaches the terminal
    log.write_text("y" * 300 + "\n")
    line = last_log_line(str(log))
    assert line is not None and len(line) == 120 and line.endswith("...")


def test_the_quiet_time_is_45_s_unless_the_environment_says_otherwise() -> None:
    assert QUIET_SECONDS == 45.0 and quiet_seconds({}) == 45.0
    assert quiet_seconds({"CON2_QUIET_SECONDS": "2"}) == 2.0
    assert quiet_seconds({"CON2_QUIET_SECONDS": "soon"}) == 45.0 and quiet_seconds({"CON2_QUIET_SECONDS": "-1"}) == 45.0


def test_the_thread_logs_the_line_on_the_logger_and_a_new_heartbeat_replaces_it(tmp_path: Path) -> None:
    logger = logging.getLogger("con2-test-heartbeat")
    logger.setLevel(logging.INFO)
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, rec: logging.LogRecord) -> None:
            seen.append(str(rec.msg))

    logger.addHandler(Keep())
    first = start_heartbeat(logger, quiet=0.2)
    logger.info(
        "job", extra={"event": SimpleNamespace(value="job_info"), "rule_msg": "slow job", "jobid": 1, "log": []}
    )
    deadline = time.time() + 30
    while not any(s.startswith("con2 grid: still working") for s in seen) and time.time() < deadline:
        time.sleep(0.05)
    assert any(s.startswith("con2 grid: still working (0 s without a line): slow job, ") for s in seen), seen
    second = start_heartbeat(logger, quiet=0.2)
    assert [f for f in logger.filters if isinstance(f, Heartbeat)] == [second] and first is not second
    logger.info("done", extra={"event": SimpleNamespace(value="job_finished"), "job_id": 1})
    logger.removeFilter(second)


@pytest.mark.parametrize("event", ["job_finished", "job_error"])
def test_a_job_that_ends_is_no_longer_named(event: str) -> None:
    clock = Clock()
    beat = Heartbeat(quiet=1.0, clock=clock)
    beat.filter(record("job_info", rule_msg="a", jobid=1, log=[]))
    beat.filter(record("job_info", rule_msg="b", jobid=2, log=[]))
    beat.filter(record(event, job_id=1, jobid=1))
    clock.now += 5
    line = beat.tick(clock.now)
    assert line is not None and ": b, 5 s in" in line and ": a," not in line and "; a," not in line
