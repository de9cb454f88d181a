"""Send a script's stdout and stderr to its Snakemake log file (imported by the other scripts)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def logged(snakemake: Any) -> Iterator[None]:
    """Within the block, print() and tracebacks go to ``snakemake.log[0]`` (when the rule has one).

    A write that fails for want of space or permission (:func:`con2.errors.job_write_failure`) ends the
    script with one ``con2: error: ...`` line (on the console and, if it can still be written, in
    the log) and exit status 1, not a traceback; a log that can no longer be written (a full disk)
    never adds one of its own.
    """
    if not snakemake.log:
        with one_line_write_errors(None):
            yield
        return
    path = Path(str(snakemake.log[0]))
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a")
    from con2.text import escaping

    log = escaping(fh)  # every line a script or a library prints reads as the text it is
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log), one_line_write_errors(log):
            yield
    finally:
        with contextlib.suppress(OSError):  # the log's last buffer on a full disk: the console has the error
            fh.close()


@contextlib.contextmanager
def one_line_write_errors(log: IO[str] | None) -> Iterator[None]:
    """A failed write (disk full, read-only, no permission) as one ``con2: error:`` line and exit 1;
    any other error's traceback to ``log`` (as far as it can be written), then raised."""
    from con2.errors import job_write_failure

    try:
        yield
    except OSError as exc:
        message = job_write_failure(exc)
        if message is None:
            _traceback(log)
            raise
        from con2.text import terminal_safe

        line = terminal_safe(f"con2: error: {message}")
        if log is not None:
            with contextlib.suppress(OSError):
                print(line, file=log, flush=True)
        print(line, file=sys.__stderr__, flush=True)
        raise SystemExit(1) from None
    except BaseException:
        _traceback(log)
        raise


def _traceback(log: IO[str] | None) -> None:
    """The current exception's traceback into ``log`` (nothing if there is none or it cannot be written)."""
    if log is None:
        return
    import traceback

    with contextlib.suppress(OSError):
        traceback.print_exc(file=log)
        log.flush()
