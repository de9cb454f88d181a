"""The seal of a runs CSV: the sha256 of the file the aggregation wrote, kept in the scores bundle beside it.

:func:`con2.aggregate.bundle.bundle_bytes` writes the runs CSV's sha256 first in the bundle (its ``csv_sha256``),
so a hand-edited runs CSV is known by content, whatever its mtime. Two readers ask: every table's inputs
(:func:`con2.aggregate.bundle.check_runs_seal`, when a table is built) and the workflow, once, before any job
(:class:`con2.workflow.session.Session`): an edited runs CSV made every table job fail on the seal, one traceback
each, and Snakemake then deleted their tables and figures (issue 57, item 7). Only the standard library and light
``con2`` modules are imported here: the Snakefile's parse imports it, and never pandas.
"""

from __future__ import annotations

import gzip
import re
import shlex
from pathlib import Path

from con2.atomic import NotARegularFile, open_regular_file, read_regular
from con2.run.rundir import bytes_sha256

SEAL = "csv_sha256"  # the bundle's entry holding its runs CSV's sha256 (before "format" and "runs", sorted)
_SEAL_HEAD = re.compile(r'^\{"csv_sha256": "([0-9a-f]{64})"')


def bundle_seal(path: str | Path) -> str | None:
    """The runs CSV's sha256 sealed in the bundle at ``path`` (its first bytes only), or None (a bundle
    written before the seal, or no bundle of this kind)."""
    try:
        with open_regular_file(Path(path)) as raw, gzip.open(raw, "rb") as handle:
            head = handle.read(100).decode("utf-8", errors="replace")
    except (OSError, EOFError, NotARegularFile):
        return None
    found = _SEAL_HEAD.match(head)
    return found.group(1) if found else None


def seal_problem(runs_csv: str | Path, bundle: str | Path) -> str | None:
    """Why the runs CSV is not the file the aggregation wrote beside ``bundle`` (its sha256 is not the seal, it is
    missing, no regular file or unreadable), as one line with the fix (rebuild it from the records); None when
    it is, or when the bundle keeps no seal (written before issue 47: nothing to check)."""
    sealed = bundle_seal(bundle)
    if sealed is None:
        return None
    try:
        if bytes_sha256(read_regular(Path(runs_csv))) == sealed:
            return None
        seal = Path(bundle).name
        why = f"is not the file the aggregation wrote (its sha256 is not the one {seal} seals: edited by hand?)"
    except FileNotFoundError:
        why = "is missing"
    except NotARegularFile:
        why = "is not a regular file (a folder, a FIFO or a device)"
    except OSError as exc:
        why = f"cannot be read ({exc.strerror or type(exc).__name__})"
    return (
        f"{runs_csv} {why}; the tables are built from the records only. Fix: delete it "
        f"(rm {shlex.quote(str(runs_csv))}) and run the same snakemake command again: the aggregation writes it anew "
        f"from the records"
    )
