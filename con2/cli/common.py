"""What every ``con2`` subcommand shares: one error line for the errors a user can fix."""

from __future__ import annotations

import argparse
import sys

from con2.errors import Con2Error, ConfigError, write_failure
from con2.text import terminal_safe

# Every option of a ``con2`` subcommand that names a file or folder, by its ``dest``: an empty value
# (what an unset shell variable, ``--out "$OUT"``, gives) would be read as "not given" or as the current
# folder, so it is refused before the command runs (:func:`check_path_options`).
PATH_OPTIONS: dict[str, str] = {
    "run_dir": "--run-dir",
    "out": "--out",
    "config": "--config",
    "log": "--log",
    "configfile": "--configfile",
    "throughput": "--throughput",
    "sizes": "--sizes",
    "paper_hours": "--paper-hours",
    "data_dir": "--data-dir",
    "workflow": "--workflow",
    "rules": "--rules",
}


def error_message(exc: Con2Error | OSError) -> str:
    """The text after ``con2: error:`` for an error a user can fix (an OSError names its path and the fix)."""
    if isinstance(exc, Con2Error):
        return str(exc)
    return write_failure(exc) or (
        str(exc) if exc.filename is None or str(exc.filename) in str(exc) else f"{exc} ({exc.filename})"
    )


def check_path_options(args: argparse.Namespace) -> None:
    """Refuse a path option given as the empty string (:data:`PATH_OPTIONS`): ``--out ""`` would re-score
    a run in place, ``--run-dir ""`` train into the current folder.

    Raises:
        ConfigError: naming the option and the fix.
    """
    for dest, option in PATH_OPTIONS.items():
        value = getattr(args, dest, None)
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            raise ConfigError(
                f'{option} is empty (an unset shell variable, e.g. {option} "$DIR"?): an empty path would be '
                f"read as no {option} or as the current folder. Fix: pass {option} a path (set that variable)"
                + (", or leave --out out to re-score the run in place" if option == "--out" else "")
            )


def run_command(args: argparse.Namespace) -> int:
    """Run a parsed command; errors a user can fix print as ``con2: error: ...`` and return 2 (an empty
    path option among them: :func:`check_path_options`)."""
    try:
        check_path_options(args)
        return int(args.func(args))
    except (Con2Error, OSError) as exc:  # disk full, read-only, missing file: say which path and what to do
        message = error_message(exc)
    except KeyboardInterrupt:  # only training has a checkpoint to resume from; the other commands start again
        again = "to resume from the last checkpoint" if getattr(args, "command", "") == "train" else "to start it again"
        print(f"con2: interrupted; rerun the same command {again}", file=sys.stderr)
        return 130
    print(f"con2: error: {terminal_safe(message)}", file=sys.stderr)  # a file name's escapes shown, one line
    return 2
