"""The profile of the last workflow run in this folder, which a command without ``--configfile`` uses (issue 46,
point 1; issue 58, item 4).

Each run (the Snakefile's ``onstart``: never a dry run) writes its whole profile, the merged config with
every ``--config`` value, to :data:`LAST_PROFILE`, its first lines saying how it was given. A command
without ``--configfile`` reads that file instead of the default profile (:func:`recalled_profile`) and says
so in its first line: after the test profile, ``snakemake --report`` reported the default profile's tables,
never built, and the README's table rebuild read the default profile (7 records "outside this profile's
grid", 67 runs "have no record yet") while ``--report`` read the last one. One rule now: the folder's last
profile, else the default profile. Where none of the files a report embeds exists all the same (results of
an older version, or another profile named), :func:`report_missing` makes it one line naming the profile
to give; where some exist, the report shows them and lists the others (con2/workflow/startup.py).

A results folder is copied and shared, so that file is read as data, never handed to Snakemake as a
configfile (issue 57, item 1): Snakemake's own reader runs YTE templates (``__use_yte__: true`` evaluates
Python) and the profile's ``extra_rules`` are Snakemake code. :func:`read_last_profile` bounds its size
before parsing, reads it as safe YAML, and refuses YTE and rule files outside the checkout (or inside
the results folder), each in one line naming the file and the fix.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from con2.atomic import write_text_atomic
from con2.errors import ConfigError
from con2.text import terminal_safe
from con2.yaml_files import read_yaml_mapping

__all__ = [
    "LAST_PROFILE",
    "UNBUILT_KEY",
    "given_as",
    "read_last_profile",
    "recalled_profile",
    "remember_profile",
    "report_missing",
    "report_mode",
    "report_partial",
    "unbuilt",
]

LAST_PROFILE = Path("results/last_profile.yaml")
HEAD = "# The profile of the last snakemake run in this folder; a command without --configfile uses it.\n"
GIVEN = "# Given as: "
#: the config key that hands the report's landing text (workflow/report/workflow.rst) the files not built yet
#: (set by con2.workflow.startup.prepare_report in a report only; it shapes no table: con2.workflow.artefact_rules)
UNBUILT_KEY = "con2_report_unbuilt"


def report_mode(argv: Sequence[str]) -> bool:
    """Whether the command line asks Snakemake for a report (``--report`` [PATH] or ``--report=PATH``)."""
    return any(a == "--report" or a.startswith("--report=") for a in argv)


def given_text(configfiles: Sequence[str | Path], overrides: Mapping[str, Any], recalled_as: str = "") -> str:
    """How a profile was given on the command line: ``--configfile A B --config k=v`` (``(the default
    profile)`` without a file); ``recalled_as``: how the last run's profile, which this one used for want of a
    ``--configfile``, was given (:func:`given_as`), the ``--config`` values of this one added to it."""
    named = [
        shlex.quote(os.path.relpath(f) if Path(f).is_absolute() and _inside(Path(f)) else str(f)) for f in configfiles
    ]
    files = f"--configfile {' '.join(named)}" if named else (recalled_as or "(the default profile)")
    values = " ".join(shlex.quote(f"{k}={v}") for k, v in overrides.items())
    if not values:
        return files
    return f"{files} {values}" if not named and " --config " in f" {files} " else f"{files} --config {values}"


def _inside(path: Path) -> bool:
    """Whether ``path`` lies under the working directory (then it is shown relative to it)."""
    return path.resolve().is_relative_to(Path.cwd().resolve())


def remember_profile(
    config: Mapping[str, Any],
    configfiles: Sequence[str | Path],
    overrides: Mapping[str, Any],
    path: Path = LAST_PROFILE,
    recalled_as: str = "",
) -> None:
    """Write the run's merged ``config`` to ``path`` (atomically), with how it was given (``configfiles``,
    the ``--config`` ``overrides``; ``recalled_as``: :func:`given_text`) in its first lines."""
    body = yaml.safe_dump(_plain(config), sort_keys=False, allow_unicode=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, HEAD + GIVEN + given_text(configfiles, overrides, recalled_as) + "\n" + body)


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
    """How the remembered profile was given (its ``# Given as:`` line), or ``""``; escaped for a terminal
    (:func:`con2.text.terminal_safe`): the file comes from a results folder, which may be anyone's."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[:3]
    except OSError:
        return ""
    return terminal_safe(next((line[len(GIVEN) :] for line in lines if line.startswith(GIVEN)), ""))


def recalled_profile(path: Path = LAST_PROFILE) -> Path | None:
    """The profile file a command without ``--configfile`` reads (a run, a dry run, a table rebuild, a
    report): the last run's (:data:`LAST_PROFILE`) where one was written, else ``None`` (the default profile)."""
    return path if path.is_file() else None


#: The one key by which Snakemake's config reader runs a file as a YTE template (Python expressions).
YTE_KEY = "__use_yte__"


def read_last_profile(path: Path, checkout: Path) -> dict[str, Any]:
    """The profile in ``path`` (:data:`LAST_PROFILE`) as data, for ``snakemake --report``: its size checked
    before it is parsed (:data:`con2.yaml_files.MAX_CONFIG_BYTES`), read as safe YAML (no tags, no bombs),
    and refused if it would run code: a YTE template (:data:`YTE_KEY`), or ``extra_rules`` naming a rule
    file outside ``checkout`` (the workflow's folder) or inside the results folder that holds ``path``.

    Raises:
        ConfigError: one line naming ``path``, what it holds and the fix.
    """
    fix = (
        f"delete {path} (the next run writes it again), or name the profile the results were built with "
        "(`snakemake --report results/report.html --configfile workflow/config/<profile>.yaml`)"
    )
    what = "snakemake --report: the last run's profile"
    profile = read_yaml_mapping(path, what, fix)
    if YTE_KEY in profile:
        raise ConfigError(
            f"{what} {path} sets {YTE_KEY}: a YTE template runs Python, and a results folder is read as data, "
            f"never run. Fix: {fix}"
        )
    rules = profile.get("extra_rules") or []
    for rule in rules if isinstance(rules, list) else [rules]:
        where = Path(str(rule)).resolve()
        if not where.is_relative_to(checkout.resolve()) or where.is_relative_to(path.parent.resolve()):
            raise ConfigError(
                f"{what} {path} names the rule file {terminal_safe(str(rule))} in extra_rules, outside this "
                f"checkout ({checkout.resolve()}) or inside the results folder: a results folder never brings "
                f"code to run. Fix: {fix}"
            )
    return profile


def unbuilt(files: Collection[str], built: Callable[[str], bool] = os.path.isfile) -> list[str]:
    """The ``files`` that are not ``built`` (default: on disk), sorted."""
    return sorted({f for f in files if not built(f)})


def report_missing(
    files: Collection[str], recalled: Path | None, built: Callable[[str], bool] = os.path.isfile
) -> str | None:
    """One line for a report none of whose embedded files is ``built`` (``files``: the tables' HTML pages and
    the figures' PNGs of the profile), naming the profile to give; ``None`` when one of them is (the
    report shows what is built and lists the rest: :func:`report_partial`)."""
    missing = unbuilt(files, built)
    if not missing or len(missing) < len(set(files)):
        return None
    more = f" (and {len(missing) - 1} more of this profile's report files)" if len(missing) > 1 else ""
    which = f"the profile of the last run, {given_as(recalled)}" if recalled else "the default profile"
    return (
        f"snakemake --report: {missing[0]}{more} does not exist: this report is of {which}. Fix: build it first "
        "(`snakemake --cores 2 all` with the same profile), or name the profile the results were built with "
        "(`snakemake --report results/report.html --configfile workflow/config/<profile>.yaml`)"
    )


def report_partial(
    files: Collection[str], recalled: Path | None, built: Callable[[str], bool] = os.path.isfile
) -> str | None:
    """One line for a report of a partial grid (some of ``files`` ``built``, not all): how many are missing, the
    first of them, that the report shows the others and lists these, and the command that builds them;
    ``None`` when every file or none is built."""
    missing = unbuilt(files, built)
    total = len(set(files))
    if not missing or len(missing) == total:
        return None
    which = f"the last run's profile, {given_as(recalled)}" if recalled else "the default profile"
    more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
    return (
        f"con2 report: {len(missing)} of the {total} report files of {which} are not built yet ({missing[0]}{more}): "
        f"the report shows the {total - len(missing)} that are and lists the others on its first page; "
        "`snakemake --cores 2 all` with the same profile builds them"
    )
