"""The profile of the last workflow run in this folder, which ``snakemake --report`` reports (issue 46, point 1).

Without ``--configfile`` the Snakefile reads the default profile, so after the test profile the README's
``snakemake --report results/report.html`` looked for the default profile's tables, which were never
built, and failed after 70 warnings. Each run (the Snakefile's ``onstart``: never a dry run) now writes
its whole profile, the merged config with every ``--config`` value, to :data:`LAST_PROFILE`, its first
line saying how it was given; a ``--report`` without ``--configfile`` reads that file instead of the
default profile (:func:`recalled_profile`), so the report shows what the folder holds, whatever the
profile. Where a file the report embeds is missing all the same (results of an older version, or
another profile named), :func:`report_missing` makes it one line naming the profile to give.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from con2.atomic import write_text_atomic

__all__ = ["LAST_PROFILE", "given_as", "recalled_profile", "remember_profile", "report_missing", "report_mode"]

LAST_PROFILE = Path("results/last_profile.yaml")
HEAD = "# The profile of the last snakemake run in this folder; `snakemake --report` without --configfile reports it.\n"
GIVEN = "# Given as: "


def report_mode(argv: Sequence[str]) -> bool:
    """Whether the command line asks Snakemake for a report (``--report`` [PATH] or ``--report=PATH``)."""
    return any(a == "--report" or a.startswith("--report=") for a in argv)


def given_text(configfiles: Sequence[str | Path], overrides: Mapping[str, Any]) -> str:
    """How a profile was given on the command line: ``--configfile A B --config k=v`` (``(the default
    profile)`` without a file)."""
    named = [
        shlex.quote(os.path.relpath(f) if Path(f).is_absolute() and _inside(Path(f)) else str(f)) for f in configfiles
    ]
    files = f"--configfile {' '.join(named)}" if named else "(the default profile)"
    values = " ".join(shlex.quote(f"{k}={v}") for k, v in overrides.items())
    return f"{files} --config {values}" if values else files


def _inside(path: Path) -> bool:
    """Whether ``path`` lies under the working directory (then it is shown relative to it)."""
    return path.resolve().is_relative_to(Path.cwd().resolve())


def remember_profile(
    config: Mapping[str, Any],
    configfiles: Sequence[str | Path],
    overrides: Mapping[str, Any],
    path: Path = LAST_PROFILE,
) -> None:
    """Write the run's merged ``config`` to ``path`` (atomically), with how it was given (``configfiles``,
    the ``--config`` ``overrides``) in its first lines."""
    body = yaml.safe_dump(_plain(config), sort_keys=False, allow_unicode=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, HEAD + GIVEN + given_text(configfiles, overrides) + "\n" + body)


def _plain(value: Any) -> Any:
    """``value`` as plain YAML data (Snakemake's config may hold its own mapping and list types)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def given_as(path: Path = LAST_PROFILE) -> str:
    """How the remembered profile was given (its ``# Given as:`` line), or ``""``."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[:3]
    except OSError:
        return ""
    return next((line[len(GIVEN) :] for line in lines if line.startswith(GIVEN)), "")


def recalled_profile(argv: Sequence[str], path: Path = LAST_PROFILE) -> Path | None:
    """The profile file a ``snakemake --report`` without ``--configfile`` reads: the last run's
    (:data:`LAST_PROFILE`) where one was written, else ``None`` (the default profile)."""
    return path if report_mode(argv) and path.is_file() else None


def report_missing(files: Collection[str], recalled: Path | None) -> str | None:
    """One line for a report whose embedded files do not all exist (``files``: the tables' HTML pages and
    the figures' PNGs of the profile), naming the profile to give; ``None`` when they all exist."""
    missing = sorted(f for f in files if not Path(f).is_file())
    if not missing:
        return None
    more = f" (and {len(missing) - 1} more of this profile's report files)" if len(missing) > 1 else ""
    which = f"the profile of the last run, {given_as(recalled)}" if recalled else "the default profile"
    return (
        f"snakemake --report: {missing[0]}{more} does not exist: this report is of {which}. Fix: build it first "
        "(`snakemake --cores 2 all` with the same profile), or name the profile the results were built with "
        "(`snakemake --report results/report.html --configfile workflow/config/<profile>.yaml`)"
    )
