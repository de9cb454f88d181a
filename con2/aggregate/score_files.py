"""A run's score files (``scores.csv``, ``validation_scores.csv``), read and checked before a table trusts them.

``scores.csv`` (``index``, ``label``, one column per score; :meth:`con2.run.rundir.RunDir.write_scores`)
is, with ``validation_scores.csv``, the one run file besides ``record.json`` the report reads. The
aggregation checks it against its record (:func:`con2.aggregate.collect.collect_valid_runs` leaves a
record out whose scores fail) and copies both files of every run it keeps into one bundle beside its
runs CSV (:mod:`con2.aggregate.bundle`), which the tables that read per-image scores read, never a run
folder. Both kinds of source answer the same two questions (:class:`ScoresSource`); :data:`RUN_FOLDERS`
reads beside the records (the aggregation itself, ``con2 metrics``, a test that names it: no builder
defaults to it). A file passes when every column is a finite number, the labels are 0 or 1, the index
is unique whole numbers, its rows and anomalies are the record's ``n_test`` and ``n_anomalous``, and each
AUROC the record (or a runs.csv row) states is the AUROC of its column recomputed here
(:func:`con2.maths.metrics.auroc`, the function the record was built with) within
:data:`AUROC_TOLERANCE`. A bad file gives a problem (one phrase), never an exception.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from con2.atomic import NotARegularFile, read_regular
from con2.run.rundir import SCORES, VALIDATION, bytes_sha256, written_sha256

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
    from con2.maths.stats import delong_auc_variance  # lazy: scipy.special only when a scores.csv is checked

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
        # DeLong's AUC is the Mann-Whitney statistic with midranks, scikit-learn's roc_auc_score (the record's
        # number) to rounding, without importing scikit-learn: 1.8 s of each table job that checks score files
        scores = frame[column].to_numpy(dtype=np.float64)
        recomputed = 100.0 * delong_auc_variance(scores[labels == 1], scores[labels == 0])[0]
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
            _PARSED[digest] = parsed_csv(io.StringIO(data.decode("utf-8")))
        except UnicodeDecodeError:
            _PARSED[digest] = (None, "is not a readable CSV (UnicodeDecodeError)")
    return digest, _PARSED[digest]


def parsed_csv(source: str | io.StringIO) -> tuple[pd.DataFrame | None, str]:
    """A ``scores.csv`` (a path, or its text), read and parsed (:func:`parse_scores`): ``(frame, "")``
    or ``(None, problem)``."""
    try:
        table = pd.read_csv(source)
    except (OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        return None, f"is not a readable CSV ({type(exc).__name__})"
    return parse_scores(table)


def checked_against(parsed: tuple[pd.DataFrame | None, str], expected: Expected) -> RunScores:
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
    return checked_against(parsed, expected)


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


def validation_not_written(record: Mapping[str, Any], path: str | Path) -> str | None:
    """``"<its validation_scores.csv> is not the file its run wrote (...)"`` when the file beside the record at
    ``path`` is readable and its sha256 is not the one the record keeps (``files_sha256``), else None (no sha256
    kept: an older record; no file, or one that cannot be read: :func:`read_validation_scores` says why)."""
    kept = written_sha256(record, VALIDATION)
    if kept is None:
        return None
    data, _, _ = read_score_file(validation_file(path))
    return f"{validation_file(path)} {NOT_WRITTEN}" if data is not None and bytes_sha256(data) != kept else None


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
    return validation_values(table, path, column, n)


def validation_values(table: pd.DataFrame, path: Path, column: str, n: int) -> tuple[np.ndarray | None, str]:
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
