"""The scores bundle: the score files of every run a runs CSV holds, in one file beside it.

The aggregation copies the ``scores.csv`` and ``validation_scores.csv`` of every run it keeps, with each
record's learning curve, into one gzip file beside its runs CSV (:func:`bundle_bytes`;
``results/evaluation/scores.json.gz``, :func:`con2.paths.scores_bundle`), sealed with that CSV's sha256
(:func:`check_runs_seal`, :mod:`con2.aggregate.seal`), a declared output: the tables that read per-image scores
(the paired comparisons, :mod:`con2.report.paired`; the operating points, :mod:`con2.builders.operating`) read it
(:class:`ScoresBundle`, with the checks and messages of :data:`con2.aggregate.score_files.RUN_FOLDERS`),
an input of their rule, never a run folder.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.score_files import (
    Expected,
    RunScores,
    as_count,
    checked_against,
    parsed_csv,
    validation_file,
    validation_values,
)
from con2.aggregate.seal import SEAL, seal_problem
from con2.atomic import NotARegularFile, open_regular_file, read_regular
from con2.run.rundir import SCORES, VALIDATION
from con2.text import terminal_safe

BUNDLE_FORMAT = 1
# a file the aggregation could not read as text: kept as {UNREADABLE: "<exception name>"}
UNREADABLE = "unreadable"
CURVE = "curve"  # a bundle entry's copy of its record's learning curve


def _file_text(path: Path) -> str | dict[str, str] | None:
    """A score file's text; None when there is none; ``{UNREADABLE: why}`` when it cannot be read as text
    (a FIFO or a folder included: never waited on)."""
    try:
        return read_regular(path).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, NotARegularFile) as exc:
        return {UNREADABLE: type(exc).__name__}


def _record_curve(record: str) -> Mapping[str, Any] | None:
    """The ``curve`` of a record the aggregation kept (``{}`` without one; None if unreadable now)."""
    try:
        data = json.loads(read_regular(Path(record)).decode("utf-8"))
    except (OSError, ValueError, NotARegularFile):
        return None
    return (data.get("curve") or {}) if isinstance(data, dict) else None


def bundle_bytes(records: Iterable[str], csv_sha256: str | None = None) -> bytes:
    """What each of ``records``' runs scored, in one file (gzip of sorted JSON, no timestamp: the same
    files give the same bytes): ``{"csv_sha256": ..., "format": 1, "runs": {record: {"scores.csv": text,
    "validation_scores.csv": text, "curve": the record's curve}}}``, a file absent beside its record
    absent from its entry. ``csv_sha256``: the sha256 of the runs CSV written beside it, the seal a table
    checks that CSV by (:func:`check_runs_seal`; sorted first, so it is read without the rest)."""
    runs: dict[str, dict[str, Any]] = {}
    for record in sorted(set(map(str, records))):
        files: dict[str, Any] = {name: _file_text(Path(record).parent / name) for name in (SCORES, VALIDATION)}
        files[CURVE] = _record_curve(record)
        runs[record] = {name: text for name, text in files.items() if text is not None}
    seal = {SEAL: csv_sha256} if csv_sha256 else {}
    text = json.dumps({**seal, "format": BUNDLE_FORMAT, "runs": runs}, sort_keys=True)
    return gzip.compress(text.encode("utf-8"), compresslevel=1, mtime=0)  # level 1: 1/17 of the time of 9, 14% larger


def check_runs_seal(runs_csv: str | Path, bundle: str | Path) -> None:
    """Refuse a runs CSV that is not the file the aggregation wrote beside ``bundle`` (its sha256 differs from
    the seal :func:`bundle_bytes` keeps: :func:`con2.aggregate.seal.seal_problem`): a hand edit would reach every
    table, whose checks would then blame the records. A bundle without a seal (written before issue 47) checks
    nothing.

    Raises:
        ValueError: naming the file and the fix (rebuild it from the records).
    """
    problem = seal_problem(runs_csv, bundle)
    if problem:
        raise ValueError(problem)


class BundleTooLarge(ValueError):
    """A scores bundle that expands beyond what its size allows (:func:`bounded_gunzip`)."""


# A bundle expands at most this many times its compressed size (level-1 gzip of score files' JSON: about 3 to 5),
# and never needs to be refused below BUNDLE_FLOOR: a 3 MB gzip of 3 GB of whitespace took 6.4 GB of memory.
BUNDLE_RATIO = 50
BUNDLE_FLOOR = 256 * 2**20


def bounded_gunzip(path: Path) -> bytes:
    """The decompressed bytes of the gzip file ``path``, read in chunks and refused once they pass
    ``max(BUNDLE_FLOOR, BUNDLE_RATIO x its size)``.

    Raises:
        BundleTooLarge: naming the bound; OSError, zlib.error, EOFError: not a whole gzip file.
    """
    with open_regular_file(path) as raw:
        compressed = raw.read()
    limit = max(BUNDLE_FLOOR, BUNDLE_RATIO * len(compressed))
    out, total = [], 0
    inflate = zlib.decompressobj(wbits=31)  # gzip, one member (bundle_bytes writes one)
    data = compressed
    while data and not inflate.eof:
        chunk = inflate.decompress(data, 1 << 20)
        total += len(chunk)
        if total > limit:
            raise BundleTooLarge(f"it expands beyond {limit:,} bytes, {BUNDLE_RATIO} times its size")
        out.append(chunk)
        data = inflate.unconsumed_tail
    if not inflate.eof:
        raise EOFError("the gzip stream ends early")
    return b"".join(out)


def _entry_ok(entry: Any) -> bool:
    """Whether a bundle entry is what :func:`bundle_bytes` writes: score files' text (or ``{UNREADABLE: why}``)
    and the record's curve (a mapping, or None)."""
    if not isinstance(entry, dict):
        return False
    for name in (SCORES, VALIDATION):
        value = entry.get(name)
        if value is not None and not isinstance(value, str) and not (isinstance(value, dict) and UNREADABLE in value):
            return False
    return entry.get(CURVE) is None or isinstance(entry.get(CURVE), dict)


class ScoresBundle:
    """The aggregation's copy of the score files of the runs of one runs CSV (:func:`bundle_bytes`):
    the same checks and messages as :data:`RUN_FOLDERS`, each file parsed once."""

    def __init__(self, runs: Mapping[str, Mapping[str, Any]]) -> None:
        self.runs = runs
        self._parsed: dict[str, tuple[pd.DataFrame | None, str]] = {}
        self._tests: dict[tuple[str, Expected], RunScores] = {}
        self._validation: dict[str, pd.DataFrame | str | None] = {}

    @classmethod
    def read(cls, path: str | Path) -> ScoresBundle:
        """The bundle at ``path``.

        Raises:
            ValueError: not a bundle of this format (rerun the aggregation: ``snakemake`` does).
        """
        try:
            data = json.loads(bounded_gunzip(Path(path)))
        except (OSError, EOFError, ValueError, zlib.error, NotARegularFile, RecursionError) as exc:
            why = str(exc) if isinstance(exc, BundleTooLarge) else type(exc).__name__
            raise ValueError(f"{path} is no scores bundle ({why}); delete it and rerun snakemake") from None
        if not isinstance(data, dict) or data.get("format") != BUNDLE_FORMAT or not isinstance(data.get("runs"), dict):
            raise ValueError(f"{path} is no scores bundle of format {BUNDLE_FORMAT}; delete it and rerun snakemake")
        odd = next((record for record, entry in data["runs"].items() if not _entry_ok(entry)), None)
        if odd is not None:  # a hand-made or damaged file: one line, never an AttributeError later
            raise ValueError(
                f"{path} is no scores bundle (its entry {terminal_safe(str(odd))[:120]!r} is not score files' text); "
                f"delete it and rerun snakemake"
            )
        return cls(data["runs"])

    def test(self, record: str | Path, expected: Expected | None = None) -> RunScores:
        text = (self.runs.get(str(record)) or {}).get(SCORES)
        if text is None:
            return RunScores(None, f"no {SCORES} beside the record", found=False)
        key = (str(record), expected or Expected())
        if key not in self._tests:
            if key[0] not in self._parsed:  # parsed once per run, checked once per expectation
                unreadable = isinstance(text, dict)
                self._parsed[key[0]] = (
                    (None, f"is not a readable CSV ({text.get(UNREADABLE)})")
                    if unreadable
                    else parsed_csv(io.StringIO(text))
                )
            self._tests[key] = checked_against(self._parsed[key[0]], key[1])
        return self._tests[key]

    def validation(self, record: str | Path, column: str, n_val: Any) -> tuple[np.ndarray | None, str]:
        n = as_count(pd.to_numeric(n_val, errors="coerce"))
        if not n:
            return None, "no validation images scored"
        path = validation_file(record)
        key = str(record)
        if key not in self._validation:
            self._validation[key] = self._validation_table(key, path)
        table = self._validation[key]
        if table is None:
            return None, f"no {VALIDATION} beside the record (its n_val is {n})"
        if isinstance(table, str):
            return None, table
        return validation_values(table, path, column, n)

    def curve(self, record: str | Path) -> Mapping[str, Any] | None:
        return (self.runs.get(str(record)) or {}).get(CURVE)

    def _validation_table(self, record: str, path: Path) -> pd.DataFrame | str | None:
        """The record's validation table, or why it cannot be read, or None without one."""
        text = (self.runs.get(record) or {}).get(VALIDATION)
        if text is None:
            return None
        if isinstance(text, dict):
            return f"{path} cannot be read ({text.get(UNREADABLE)})"
        try:
            return pd.read_csv(io.StringIO(text))
        except ValueError as exc:
            return f"{path} cannot be read ({type(exc).__name__})"
