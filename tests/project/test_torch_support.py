"""The installed torch is one the project supports (issue 58, item 5): an install that fell back to another
build (torch 2.13.0+cpu from a local wheel folder, not the pinned 2.14.1) exited 0 and nothing said so. The
suite fails here on such an install (so CI does), and ``con2`` warns in one line when it starts."""

from __future__ import annotations

import importlib
import importlib.metadata as md
import io
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import con2.torch_support as ts

cli = importlib.import_module("con2.cli.main")  # the module: con2.cli's `main` is its function

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_torch_is_in_the_supported_range() -> None:
    """The check itself: on a torch outside pyproject.toml's range this fails with the one line that says
    which torch is installed and the command that installs the pinned one."""
    problem = ts.torch_problem()
    assert problem is None, problem


def test_a_torch_outside_the_range_is_one_line_naming_it_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    real = md.version
    monkeypatch.setattr(md, "version", lambda name: "2.13.0+cpu" if name == "torch" else real(name))
    problem = ts.torch_problem()
    assert problem is not None and "\n" not in problem
    assert problem.startswith("con2: torch 2.13.0+cpu is installed, outside the supported range torch")
    assert str(ts.declared_range()) in problem
    assert "Fix: pip install torch==2.14.1 torchvision==0.29.1 (no GPU: add --index-url " in problem
    for inside in ("2.14.1", "2.14.1+cpu", "2.14.0"):
        monkeypatch.setattr(md, "version", lambda name, v=inside: v if name == "torch" else real(name))
        assert ts.torch_problem() is None, inside
    monkeypatch.setattr(md, "version", lambda name: "2.15.0" if name == "torch" else real(name))
    assert ts.torch_problem() is not None  # above the range too

    def missing(name: str) -> str:
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(md, "version", missing)
    assert (ts.torch_problem() or "").startswith("con2: torch is not installed. Fix: pip install torch==2.14.1")


def test_con2_warns_at_start_with_that_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(ts, "installed_torch", lambda: "2.13.0+cpu")
    assert cli.main(["methods", "--json"]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning: con2: torch ")]
    assert len(warnings) == 1 and "2.13.0+cpu" in warnings[0], err
    monkeypatch.setattr(ts, "installed_torch", lambda: "2.14.1")
    assert cli.main(["methods", "--json"]) == 0
    assert "warning:" not in capsys.readouterr().err
    out = io.StringIO()
    monkeypatch.setattr(ts, "torch_problem", lambda: 1 / 0)  # a broken check says so, never stops con2
    assert (ts.warn_if_unsupported(out) or "").startswith("con2: the installed torch could not be checked")


def test_the_range_is_read_from_pyproject_and_holds_what_ci_pins(tmp_path: Path) -> None:
    declared = ts.declared_range()
    assert declared is not None and str(declared) == str(Requirement(_pyproject_torch()))
    ci = (ROOT / ".ci" / "run").read_text()
    pins = re.search(r"pip install --quiet (torch==\S+) (torchvision==\S+)", ci)
    assert pins and pins.groups() == ts.PINNED, "con2/torch_support.py's PINNED is what .ci/run installs"
    assert declared.specifier.contains(ts.PINNED[0].split("==")[1])
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\ndependencies = ["numpy", "torch>=9,<10"]\n')
    assert str(ts.declared_range(other)) in ("torch<10,>=9", "torch>=9,<10")
    other.write_text('[project]\ndependencies = ["numpy"]\n')
    assert ts.declared_range(other) is None
    assert ts.torch_problem("1.0", Requirement("torch")) is None  # no range declared: nothing to say


def _pyproject_torch() -> str:
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return next(d for d in deps if d.startswith("torch") and not d.startswith("torchvision"))
