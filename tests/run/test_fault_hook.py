"""con2.faults: the CON2_FAULT grammar, a no-op when unset, a clear error when malformed, and a
point that fires delivers its signal (checked in a child process in a session of its own, so a
signal to its process group never reaches pytest)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from con2 import faults
from con2.faults import ENV, Fault, FaultSpecError, fault_point, parse

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("after_checkpoint", Fault("after_checkpoint")),
        ("after_checkpoint:epoch=2", Fault("after_checkpoint", match={"epoch": "2"})),
        (
            "after_checkpoint:epoch=1:signal=SIGINT",
            Fault("after_checkpoint", signal.SIGINT, match={"epoch": "1"}),
        ),
        ("table_build:signal=SIGKILL", Fault("table_build", signal.SIGKILL)),
        ("table_build:signal=kill:to=process", Fault("table_build", signal.SIGKILL, "process")),
        ("table_build:table=scores:signal=TERM", Fault("table_build", signal.SIGTERM, match={"table": "scores"})),
    ],
)
def test_the_grammar(value: str, expected: Fault) -> None:
    assert parse(value) == expected


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("after_chekpoint:epoch=1", "unknown fault point 'after_chekpoint'"),
        ("after_checkpoint:epoch", "'epoch' is not KEY=VALUE"),
        ("after_checkpoint:epoch=", "'epoch=' is not KEY=VALUE"),
        ("after_checkpoint::signal=INT", "'' is not KEY=VALUE"),
        ("after_checkpoint:signal=SIGNOPE", "unknown signal 'SIGNOPE'"),
        ("after_checkpoint:to=parent", "to='parent' is neither group nor process"),
        ("after_checkpoint:table=x", "'table' is not a key of after_checkpoint"),
        ("after_checkpoint:epoch=1:epoch=2", "'epoch' given twice"),
    ],
)
def test_a_malformed_value_names_the_variable_and_the_grammar(value: str, names: str) -> None:
    with pytest.raises(FaultSpecError) as err:
        parse(value)
    message = str(err.value)
    assert isinstance(err.value, ValueError)
    assert message.startswith(f"{ENV}={value!r}: {names}"), message
    assert "POINT[:KEY=VALUE]" in message and "after_checkpoint:epoch=1:signal=SIGINT" in message


def test_a_malformed_value_stops_at_the_first_point_reached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "after_checkpoint:epoch=one=two:signal")
    with pytest.raises(FaultSpecError, match=ENV):
        fault_point("after_checkpoint", epoch=1)


@pytest.mark.parametrize("value", [None, ""])
def test_unset_or_empty_is_a_no_op(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, value)
    delivered: list[Fault] = []
    monkeypatch.setattr(faults, "deliver", delivered.append)
    fault_point("after_checkpoint", epoch=1)
    fault_point("table_build", table="scores")
    assert delivered == []


def test_a_fault_fires_only_at_its_point_and_context(monkeypatch: pytest.MonkeyPatch) -> None:
    delivered: list[Fault] = []
    monkeypatch.setattr(faults, "deliver", delivered.append)
    monkeypatch.setenv(ENV, "after_checkpoint:epoch=2:signal=SIGKILL")
    fault_point("table_build", table="scores")
    fault_point("after_checkpoint", epoch=1)
    assert delivered == []
    fault_point("after_checkpoint", epoch=2)
    assert delivered == [Fault("after_checkpoint", signal.SIGKILL, match={"epoch": "2"})]


def test_a_point_the_registry_lacks_is_a_programming_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "after_checkpoint")
    with pytest.raises(ValueError, match="not in con2.faults.POINTS"):
        fault_point("no_such_point")


def run_point(fault: str | None, code: str) -> subprocess.CompletedProcess:
    """``code`` (after ``from con2.faults import fault_point``) in a child of its own session."""
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    if fault is not None:
        env[ENV] = fault
    return subprocess.run(
        [sys.executable, "-c", f"from con2.faults import fault_point\n{code}\nprint('survived')"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,  # a signal to its process group stays there
        # SIGINT at its default (pytest's parent may have set it to "ignore", inherited across exec)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


@pytest.mark.parametrize(
    ("fault", "code", "returncode"),
    [
        (
            "after_checkpoint:epoch=2:signal=SIGINT",
            "import signal; signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
            "for e in (1, 2, 3): fault_point('after_checkpoint', epoch=e)",
            -signal.SIGINT,
        ),
        ("table_build:signal=SIGKILL", "fault_point('table_build', table='scores')", -signal.SIGKILL),
        ("table_build:signal=SIGKILL:to=process", "fault_point('table_build', table='scores')", -signal.SIGKILL),
        ("table_build:signal=TERM:table=scores", "fault_point('table_build', table='scores')", -signal.SIGTERM),
    ],
)
def test_a_point_that_fires_delivers_its_signal(fault: str, code: str, returncode: int) -> None:
    res = run_point(fault, code)
    assert res.returncode == returncode, res.stdout + res.stderr
    assert "survived" not in res.stdout


def test_sigint_arrives_as_ctrl_c_at_the_point() -> None:
    """Python's own SIGINT handler: a KeyboardInterrupt raised at the point, before the next line."""
    code = (
        "try:\n"
        "    fault_point('after_checkpoint', epoch=1)\n"
        "    print('after the point')\n"
        "except KeyboardInterrupt:\n"
        "    raise SystemExit(130)"
    )
    res = run_point("after_checkpoint:epoch=1", code)
    assert res.returncode == 130, res.stdout + res.stderr
    assert "after the point" not in res.stdout


@pytest.mark.parametrize("fault", [None, "after_checkpoint:epoch=9:signal=SIGKILL", "table_build:table=other"])
def test_a_point_that_does_not_fire_lets_the_process_run_on(fault: str | None) -> None:
    res = run_point(fault, "fault_point('after_checkpoint', epoch=1); fault_point('table_build', table='scores')")
    assert res.returncode == 0 and "survived" in res.stdout, res.stdout + res.stderr


def test_the_module_imports_only_the_standard_library() -> None:
    """The hook sits in the training loop and the workflow scripts: importing it loads no torch."""
    res = run_point(None, "import sys; assert 'torch' not in sys.modules and 'numpy' not in sys.modules")
    assert res.returncode == 0, res.stdout + res.stderr
