"""Send a script's stdout and stderr to its Snakemake log file (imported by the other scripts)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def logged(snakemake: Any) -> Iterator[None]:
    """Within the block, print() and tracebacks go to ``snakemake.log[0]`` (when the rule has one)."""
    if not snakemake.log:
        yield
        return
    path = Path(str(snakemake.log[0]))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        try:
            yield
        except BaseException:
            import traceback

            traceback.print_exc(file=fh)
            raise
