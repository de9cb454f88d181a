"""A run's ``scores.csv``, read and checked before a table trusts it.

``scores.csv`` (``index``, ``label``, one column per score; :meth:`con2.run.rundir.RunDir.write_scores`)
is, with ``validation_scores.csv``, the one run file besides ``record.json`` the report reads. The
aggregation checks it against its record (:func:`con2.report.collect.collect_valid_runs` leaves a
record out whose scores fail) and copies both files of every run it keeps into one bundle beside its
runs CSV (:func:`bundle_bytes`; ``results/evaluation/scores.json.gz``, :func:`con2.paths.scores_bundle`;
with each record's learning curve), a declared output: the tables
that read per-image scores (the paired comparisons, :mod:`con2.report.comparisons`; the operating
points, :mod:`con2.report.operating`) read that bundle (:class:`ScoresBundle`), an input of their
rule, never a run folder. Both kinds of source answer the same two questions
(:class:`ScoresSource`); :data:`RUN_FOLDERS` reads beside the records (the aggregation itself,
``con2 metrics``, a test that names it: no builder defaults to it). A file
passes when every column is a finite number, the labels are 0 or 1, the index is unique whole
numbers, its rows and anomalies are the record's ``n_test`` and ``n_anomalous``, and each AUROC
the record (or a runs.csv row) states is the AUROC of its column recomputed here
(:func:`con2.maths.metrics.auroc`, the function the record was built with) within
:data:`AUROC_TOLERANCE`. A bad file gives a problem (one phrase), never an exception.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import shlex
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from con2.atomic import NotARegularFile, open_regular_file, read_regular
from con2.run.rundir import SCORES, VALIDATION, bytes_sha256, written_sha256
from con2.text import terminal_safe

# percent points: half the last digit the tables print (a stored AUROC rounded to one decimal passes)
AUROC_TOLERANCE = 0.05


@dataclass(frozen=True)
class Expected:
    """What a run's record says its ``scores.csv`` holds (``None``: not checked).

    Attributes:
        n_test: test images (rows). n_anomalous: anomalies (label 1).
        aurocs: ``((column, AUROC in percent), ...)``, each to be recomputed from its column.
        sha256: the sha256 of the file's bytes as its run wrote it (the record's ``files_sha256``; since
            issue 47): a file sorted within each label, or restored from elsewhere, keeps its AUROC but not this.
    """

    n_test: int | None = None
    n_anomalous: int | None = None
    aurocs: tuple[tuple[str, float], ...] = ()
    sha256: str | None = None


@dataclass(frozen=True)
class RunScores:
    """A run's scores: the frame (``index`` -> ``label`` and the score columns, sorted by index) or
    why not (``problem``); ``found``: the file exists (a record without one is not checked)."""

    frame: pd.DataFrame | None
    problem: str = ""
    found: bool = True


def scores_file(record: str | Path) -> Path:
    """The ``scores.csv`` beside a ``record.json``."""
    return Path(str(record)).parent / SCORES


def _count(n: int, what: str) -> str:
    return f"{n} {what} value" if n == 1 else f"{n} {what} values"


def as_count(value: Any) -> int | None:
    """``value`` as an int, or None when missing (NaN in a runs.csv row)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return int(value)


def expected_of_record(record: Mapping[str, Any]) -> Expected:
    """:class:`Expected` of a validated record: its test counts, every AUROC of ``metrics.auroc`` and the
    sha256 of its ``scores.csv``."""
    aurocs = tuple(sorted((str(k), float(v)) for k, v in record["metrics"]["auroc"].items()))
    counts = as_count(record.get("n_test")), as_count(record.get("n_anomalous"))
    return Expected(*counts, aurocs, written_sha256(record, SCORES))


def expected_of_row(row: Mapping[str, Any], score: str) -> Expected:
    """What a runs.csv row says of its run's scores: the test counts and the AUROC of ``score``."""
    stated = pd.to_numeric(row.get("auroc"), errors="coerce")
    return Expected(
        as_count(pd.to_numeric(row.get("n_test"), errors="coerce")),
        as_count(pd.to_numeric(row.get("n_anomalous"), errors="coerce")),
        ((score, float(stated)),) if pd.notna(stated) else (),
    )


def parse_scores(table: pd.DataFrame) -> tuple[pd.DataFrame | None, str]:
    """``(frame, "")`` of a read ``scores.csv`` that is well formed, else ``(None, problem)``."""
    missing = [c for c in ("index", "label") if c not in table.columns]
    if missing:
        return None, f"has no {' or '.join(repr(c) for c in missing)} column"
    if table.empty or len(table.columns) < 3:
        return None, "holds no rows" if table.empty else "holds no score column"
    words = [c for c in table.columns if not pd.api.types.is_numeric_dtype(table[c]) or table[c].dtype == bool]
    if words:
        col = words[0]
        bad = pd.to_numeric(table[col], errors="coerce").isna() & table[col].notna()
        return None, f"column {col!r} holds {_count(int(bad.sum()), 'non-numeric')}"
    values = table.to_numpy(dtype=np.float64)
    odd = ~np.isfinite(values)
    if odd.any():
        at = int(np.flatnonzero(odd.any(axis=0))[0])
        return (
            None,
            f"column {table.columns[at]!r} holds {_count(int(odd[:, at].sum()), 'non-finite')} (NaN or infinite)",
        )
    index = table["index"].to_numpy(dtype=np.float64)
    if not (index == np.round(index)).all() or table["index"].duplicated().any():
        return None, "its index is not unique whole numbers"
    if not table["label"].isin([0, 1]).all():
        return None, "a label is neither 0 (normal) nor 1 (anomaly)"
    frame = table.astype({"index": np.int64, "label": np.int64}).set_index("index").sort_index()
    return frame, ""


def disagreement(frame: pd.DataFrame, expected: Expected) -> str:
    """Why a well-formed ``frame`` is not the run ``expected`` describes, or ``""``."""
    from con2.maths.metrics import auroc  # lazy: scikit-learn and scipy only when a scores.csv is checked

    labels = frame["label"].to_numpy()
    if expected.n_test is not None and len(frame) != expected.n_test:
        return f"has {len(frame)} rows, the record {expected.n_test} test images"
    if expected.n_anomalous is not None and int(labels.sum()) != expected.n_anomalous:
        return f"labels {int(labels.sum())} anomalies, the record {expected.n_anomalous}"
    for column, stated in expected.aurocs:
        if column not in frame.columns:
            return f"has no column {column!r}, whose AUROC the record states"
        if len(np.unique(labels)) != 2:
            return "labels no anomaly or no normal image: it gives no AUROC"
        recomputed = auroc(labels, frame[column].to_numpy(dtype=np.float64))
        if not abs(recomputed - stated) <= AUROC_TOLERANCE:
            return f"gives AUROC {recomputed:.2f} for column {column!r}, the record {stated:.2f}"
    return ""


NOT_WRITTEN = (
    "is not the file its run wrote (its sha256 differs from the record's files_sha256: edited, sorted, shifted or "
    "restored from another run)"
)


def read_score_file(path: Path) -> tuple[bytes | None, str, bool]:
    """``(bytes, "", True)`` of a score file, else ``(None, problem, found)``: no file (``found`` False), no
    regular file (a folder, a FIFO: never waited on) or unreadable."""
    try:
        return read_regular(path), "", True
    except FileNotFoundError:
        return None, "", False
    except NotARegularFile:
        return None, "is not a regular file (a folder, a FIFO or a device)", True
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or type(exc).__name__})", True


_PARSED: dict[str, tuple[pd.DataFrame | None, str]] = {}  # a scores.csv's sha256 -> parsed (content-keyed)
_PARSED_MAX = 1024


def _parsed_bytes(data: bytes) -> tuple[str, tuple[pd.DataFrame | None, str]]:
    """``(sha256, parsed)`` of a ``scores.csv``'s bytes, parsed once per content (never per mtime)."""
    digest = bytes_sha256(data)
    if digest not in _PARSED:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.pop(next(iter(_PARSED)))
        try:
            _PARSED[digest] = _parsed_csv(io.StringIO(data.decode("utf-8")))
        except UnicodeDecodeError:
            _PARSED[digest] = (None, "is not a readable CSV (UnicodeDecodeError)")
    return digest, _PARSED[digest]


def _parsed_csv(source: str | io.StringIO) -> tuple[pd.DataFrame | None, str]:
    """A ``scores.csv`` (a path, or its text), read and parsed (:func:`parse_scores`): ``(frame, "")``
    or ``(None, problem)``."""
    try:
        table = pd.read_csv(source)
    except (OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        return None, f"is not a readable CSV ({type(exc).__name__})"
    return parse_scores(table)


def _against(parsed: tuple[pd.DataFrame | None, str], expected: Expected) -> RunScores:
    """A parsed ``scores.csv`` checked against ``expected`` (:func:`disagreement`)."""
    frame, problem = parsed
    if frame is None:
        return RunScores(None, problem)
    problem = disagreement(frame, expected)
    return RunScores(None if problem else frame, problem)


def read_run_scores(record: str | Path, expected: Expected | None = None) -> RunScores:
    """The ``scores.csv`` beside ``record``, checked by its content: its sha256 against ``expected.sha256``
    (where the record keeps one), then :func:`parse_scores` and :func:`disagreement`.

    Returns:
        :class:`RunScores`: the frame, or ``found`` False (no file), or the problem (one phrase that
        follows "its scores.csv ...").
    """
    expected = expected or Expected()
    data, problem, found = read_score_file(scores_file(record))
    if data is None:
        return RunScores(None, problem or f"no {SCORES} beside the record", found=found)
    digest, parsed = _parsed_bytes(data)
    if expected.sha256 is not None and digest != expected.sha256:
        return RunScores(None, NOT_WRITTEN)
    return _against(parsed, expected)


def scores_problem(record: Mapping[str, Any], path: str | Path) -> str | None:
    """Why a validated record at ``path`` may not be aggregated for its score files, or None (None also
    without a ``scores.csv``: a record older than scores.csv, or an external one without it): a ``scores.csv``
    that is malformed, disagrees with the record or is not the file its run wrote; a ``validation_scores.csv``
    that is not the file its run wrote (records since issue 47 keep both files' sha256)."""
    scores = read_run_scores(path, expected_of_record(record))
    if scores.found and scores.problem:
        return f"its {SCORES} {scores.problem}"
    kept = written_sha256(record, VALIDATION)
    if kept is None:
        return None
    data, problem, found = read_score_file(validation_file(path))
    if data is None:
        return f"its {VALIDATION} {problem or 'is missing (its record scored validation images)'}"
    if bytes_sha256(data) != kept:
        return f"its {VALIDATION} {NOT_WRITTEN}"
    return None


def validation_file(record: str | Path) -> Path:
    """The ``validation_scores.csv`` beside a ``record.json``."""
    return Path(str(record)).parent / VALIDATION


@lru_cache(maxsize=256)
def _validation_table(digest: str, data: bytes) -> pd.DataFrame:
    """A ``validation_scores.csv`` of these bytes (keyed by their sha256, ``digest``): read once for all its
    score columns, as a ``scores.csv`` is (callers only read the frame)."""
    return pd.read_csv(io.BytesIO(data))


def read_validation_scores(record: str | Path, column: str, n_val: Any) -> tuple[np.ndarray | None, str]:
    """``(scores [V], "")`` of ``column`` in the ``validation_scores.csv`` beside ``record``, checked
    against the record's ``n_val``; else ``(None, why)``: no validation images scored (a dataset
    without a validation split, a record older than issue 35, an external program), or a file that
    disagrees with its record."""
    n = as_count(pd.to_numeric(n_val, errors="coerce"))
    if not n:
        return None, "no validation images scored"
    path = validation_file(record)
    data, problem, found = read_score_file(path)
    if data is None:
        return None, f"{path} {problem}" if found else f"no {VALIDATION} beside the record (its n_val is {n})"
    try:
        table = _validation_table(bytes_sha256(data), data)
    except ValueError as exc:
        return None, f"{path} cannot be read ({type(exc).__name__})"
    return _validation_values(table, path, column, n)


def _validation_values(table: pd.DataFrame, path: Path, column: str, n: int) -> tuple[np.ndarray | None, str]:
    """``column`` of a read ``validation_scores.csv`` (at ``path``) checked against ``n`` validation images."""
    if len(table) != n:
        return None, f"{path} holds {len(table)} row(s); its record scored {n} validation image(s)"
    if column not in table.columns:
        return None, f"{path} has no column {column!r}"
    values = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(values)):
        return None, f"{path}: {int((~np.isfinite(values)).sum())} non-finite value(s) in {column!r}"
    return values, ""


# ----------------------------------------------------------------------------- where a table finds them
class ScoresSource(Protocol):
    """Where a report reads the per-image scores of the runs of a runs CSV (keyed by its ``record``)."""

    def test(self, record: str | Path, expected: Expected | None = None) -> RunScores:
        """The run's test scores, checked against ``expected`` (:func:`read_run_scores`)."""
        ...

    def validation(self, record: str | Path, column: str, n_val: Any) -> tuple[np.ndarray | None, str]:
        """``(scores [V], "")`` of ``column`` on the run's validation normals, else ``(None, why)``
        (:func:`read_validation_scores`)."""
        ...

    def curve(self, record: str | Path) -> Mapping[str, Any] | None:
        """The run's learning curve (the record's ``curve``: the AUROC of every score at each scored
        epoch; ``{}`` without one), or None when the record cannot be read."""
        ...


class RunFolders:
    """The score files beside each record: what the aggregation reads (and ``con2 metrics``)."""

    def test(self, record: str | Path, expected: Expected | None = None) -> RunScores:
        return read_run_scores(record, expected)

    def validation(self, record: str | Path, column: str, n_val: Any) -> tuple[np.ndarray | None, str]:
        return read_validation_scores(record, column, n_val)

    def curve(self, record: str | Path) -> Mapping[str, Any] | None:
        from con2.run.records import RecordError, read_record  # lazy: the record schema only when a curve is read

        try:
            return read_record(Path(str(record))).get("curve") or {}
        except RecordError:
            return None


RUN_FOLDERS = RunFolders()

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


def check_runs_seal(runs_csv: str | Path, bundle: str | Path) -> None:
    """Refuse a runs CSV that is not the file the aggregation wrote beside ``bundle`` (its sha256 differs from
    the seal :func:`bundle_bytes` keeps): a hand edit would reach every table, whose checks would then blame
    the records. A bundle without a seal (written before issue 47) checks nothing.

    Raises:
        ValueError: naming the file and the fix (rebuild it from the records).
    """
    sealed = bundle_seal(bundle)
    if sealed is None:
        return
    data, problem, found = read_score_file(Path(runs_csv))
    if data is not None and bytes_sha256(data) == sealed:
        return
    seal = Path(bundle).name
    why = problem or (
        f"is not the file the aggregation wrote (its sha256 is not the one {seal} seals: edited by hand?)"
        if found
        else "is missing"
    )
    raise ValueError(
        f"{runs_csv} {why}; the tables are built from the records only. Fix: delete it "
        f"(rm {shlex.quote(str(runs_csv))}) and run the same snakemake command again: the aggregation writes it anew "
        f"from the records"
    )


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
                    else _parsed_csv(io.StringIO(text))
                )
            self._tests[key] = _against(self._parsed[key[0]], key[1])
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
        return _validation_values(table, path, column, n)

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
