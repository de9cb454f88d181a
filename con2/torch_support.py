"""Is the installed torch one this project supports? (issue 58, item 5)

An install from PyTorch's CPU index that cannot reach download.pytorch.org fell back silently to a local
wheel (torch 2.13.0+cpu, not the pinned 2.14.1) and exited 0; nothing said so afterwards. The supported range
is the one ``pyproject.toml`` declares for ``torch`` (read from the checkout's ``pyproject.toml`` where it is
beside the package, else from the installed distribution's metadata, which pip wrote from it); the installed
version is read from the distribution's metadata, without importing torch (``con2 --help`` stays fast).

:func:`torch_problem` gives one line naming the installed version, the range and the command that installs
the pinned build, or ``None``; ``con2`` prints it as a warning when it starts (:func:`warn_if_unsupported`),
and the test suite fails on it (``tests/project/test_torch_support.py``), so CI does.
"""

from __future__ import annotations

import importlib.metadata as md
import sys
import tomllib
from pathlib import Path
from typing import TextIO

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from con2.text import terminal_safe

__all__ = ["PINNED", "PYPROJECT", "declared_range", "installed_torch", "torch_problem", "warn_if_unsupported"]

DISTRIBUTION = "con2-bench"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"  # a checkout's; absent in an installed wheel
# The build CI installs (.ci/run; tests/project/test_torch_support.py holds them equal), the one the committed CPU
# records under benchmarks/measured/ name (their `versions.torch`).
PINNED = ("torch==2.14.1", "torchvision==0.29.1")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def declared_range(pyproject: Path = PYPROJECT) -> Requirement | None:
    """The ``torch`` requirement of ``pyproject.toml``'s ``[project] dependencies`` (``pyproject``), else of
    the installed ``con2-bench`` distribution's metadata; ``None`` where neither declares one."""
    texts: list[str] = []
    try:
        texts = list(tomllib.loads(pyproject.read_text())["project"]["dependencies"])
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        try:
            texts = list(md.requires(DISTRIBUTION) or [])
        except md.PackageNotFoundError:
            texts = []
    for text in texts:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.name == "torch" and (req.marker is None or req.marker.evaluate()):
            return req
    return None


def installed_torch() -> str | None:
    """The installed torch's version as its distribution states it (``2.14.1``, ``2.13.0+cpu``), or ``None``."""
    try:
        return md.version("torch")
    except md.PackageNotFoundError:
        return None


def torch_problem(version: str | None = None, required: Requirement | None = None) -> str | None:
    """One line where torch ``version`` (default: the installed one) is missing or outside ``required`` (default:
    :func:`declared_range`), naming both and the command that installs the pinned build; ``None`` where it is
    inside (a local build tag such as ``+cpu`` counts as its release) or no range is declared."""
    version = installed_torch() if version is None else version
    required = declared_range() if required is None else required
    fix = f"pip install {' '.join(PINNED)} (no GPU: add --index-url {CPU_INDEX}); docs/install.md says more"
    if version is None:
        return f"con2: torch is not installed. Fix: {fix}"
    if required is None or not required.specifier:
        return None
    try:
        inside = required.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        inside = False
    if inside:
        return None
    return (
        f"con2: torch {version} is installed, outside the supported range {required} (pyproject.toml; CI "
        f"installs {PINNED[0].split('==')[1]}), so results may differ from the docs'. Fix: {fix}"
    )


def warn_if_unsupported(stream: TextIO | None = None) -> str | None:
    """Print :func:`torch_problem`'s line on ``stream`` (default stderr) as a warning, where there is one;
    return it. Never raises: a check of the install must not stop a command that may work."""
    try:
        line = torch_problem()
    except Exception as exc:  # a broken metadata file: said, not raised
        line = f"con2: the installed torch could not be checked ({type(exc).__name__}: {exc})"
    if line:
        print(terminal_safe(f"warning: {line}"), file=sys.stderr if stream is None else stream, flush=True)
    return line
