"""The code is formatted and linted as pyproject.toml configures ruff (line length 120)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def ruff() -> list[str]:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe is None:
        pytest.fail("ruff is not installed: pip install -e '.[test]'")
    return [exe]


@pytest.mark.parametrize("check", [["format", "--check", "."], ["check", "."]], ids=["format", "lint"])
def test_ruff_is_clean(check: list[str]) -> None:
    res = subprocess.run([*ruff(), *check], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, (
        f"`ruff {' '.join(check)}` found problems (fix: ruff format . && ruff check --fix .):\n{res.stdout}{res.stderr}"
    )
