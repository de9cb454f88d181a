"""What every ``con2`` subcommand shares: one error line for the errors a user can fix."""

from __future__ import annotations

import argparse
import sys

from con2.errors import Con2Error, write_failure


def error_message(exc: Con2Error | OSError) -> str:
    """The text after ``con2: error:`` for an error a user can fix (an OSError names its path and the fix)."""
    if isinstance(exc, Con2Error):
        return str(exc)
    return write_failure(exc) or (
        str(exc) if exc.filename is None or str(exc.filename) in str(exc) else f"{exc} ({exc.filename})"
    )


def run_command(args: argparse.Namespace) -> int:
    """Run a parsed command; errors a user can fix print as ``con2: error: ...`` and return 2."""
    try:
        return int(args.func(args))
    except (Con2Error, OSError) as exc:  # disk full, read-only, missing file: say which path and what to do
        message = error_message(exc)
    except KeyboardInterrupt:
        print("con2: interrupted; rerun the same command to resume from the last checkpoint", file=sys.stderr)
        return 130
    print(f"con2: error: {message}", file=sys.stderr)
    return 2
