"""A run's ``scores.csv``, read and checked before a table trusts it.

``scores.csv`` (``index``, ``label``, one column per score; :meth:`con2.run.rundir.RunDir.write_scores`)
is the one run file besides ``record.json`` the report reads: the aggregation checks it against
its record (:func:`con2.report.collect.collect_valid_runs` leaves a record out whose scores fail),
and the paired comparisons read the per-image scores (:mod:`con2.report.comparisons`). A file
passes when every column is a finite number, the labels are 0 or 1, the index is unique whole
numbers, its rows and anomalies are the record's ``n_test`` and ``n_anomalous``, and each AUROC
the record (or a runs.csv row) states is the AUROC of its column recomputed here
(:func:`con2.maths.metrics.auroc`, the function the record was built with) within
:data:`AUROC_TOLERANCE`. A bad file gives a problem (one phrase), never an exception.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from con2.run.rundir import SCORES, VALIDATION

# percent points: half the last digit the tables print (a stored AUROC rounded to one decimal passes)
AUROC_TOLERANCE = 0.05


@dataclass(frozen=True)
class Expected:
    """What a run's record says its ``scores.csv`` holds (``None``: not checked).

    Attributes:
        n_test: test images (rows). n_anomalous: anomalies (label 1).
        aurocs: ``((column, AUROC in percent), ...)``, each to be recomputed from its column.
    """

    n_test: int | None = None
    n_anomalous: int | None = None
    aurocs: tuple[tuple[str, float], ...] = ()


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
    """:class:`Expected` of a validated record: its test counts and every AUROC of ``metrics.auroc``."""
    aurocs = tuple(sorted((str(k), float(v)) for k, v in record["metrics"]["auroc"].items()))
    return Expected(as_count(record.get("n_test")), as_count(record.get("n_anomalous")), aurocs)


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


@lru_cache(maxsize=1024)
def _checked(path: str, stamp: tuple[int, int], expected: Expected) -> RunScores:
    """:func:`read_run_scores` of a file as it is at ``stamp`` (mtime ns, size): a changed file is read again."""
    try:
        table = pd.read_csv(path)
    except (OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        return RunScores(None, f"is not a readable CSV ({type(exc).__name__})")
    frame, problem = parse_scores(table)
    if frame is None:
        return RunScores(None, problem)
    problem = disagreement(frame, expected)
    return RunScores(None if problem else frame, problem)


def read_run_scores(record: str | Path, expected: Expected | None = None) -> RunScores:
    """The ``scores.csv`` beside ``record``, checked (:func:`parse_scores`, :func:`disagreement`).

    Returns:
        :class:`RunScores`: the frame, or ``found`` False (no file), or the problem (one phrase that
        follows "its scores.csv ...").
    """
    path = scores_file(record)
    try:
        st = path.stat()
    except OSError:
        return RunScores(None, f"no {SCORES} beside the record", found=False)
    if not path.is_file():
        return RunScores(None, "is not a file")
    return _checked(str(path), (st.st_mtime_ns, st.st_size), expected or Expected())


def scores_problem(record: Mapping[str, Any], path: str | Path) -> str | None:
    """Why a validated record at ``path`` may not be aggregated for its ``scores.csv``, or None
    (None also without the file: a record older than scores.csv, or an external one without it)."""
    scores = read_run_scores(path, expected_of_record(record))
    if not scores.found or not scores.problem:
        return None
    return f"its {SCORES} {scores.problem}"


def validation_file(record: str | Path) -> Path:
    """The ``validation_scores.csv`` beside a ``record.json``."""
    return Path(str(record)).parent / VALIDATION


@lru_cache(maxsize=256)
def _validation_table(path: str, stamp: tuple[int, int]) -> pd.DataFrame:
    """A ``validation_scores.csv`` as it is at ``stamp`` (mtime ns, size): read once for all its
    score columns, as :func:`_checked` reads a ``scores.csv`` (callers only read the frame)."""
    return pd.read_csv(path)


def read_validation_scores(record: str | Path, column: str, n_val: Any) -> tuple[np.ndarray | None, str]:
    """``(scores [V], "")`` of ``column`` in the ``validation_scores.csv`` beside ``record``, checked
    against the record's ``n_val``; else ``(None, why)``: no validation images scored (a dataset
    without a validation split, a record older than issue 35, an external program), or a file that
    disagrees with its record."""
    n = as_count(pd.to_numeric(n_val, errors="coerce"))
    if not n:
        return None, "no validation images scored"
    path = validation_file(record)
    try:
        st = path.stat()
        table = _validation_table(str(path), (st.st_mtime_ns, st.st_size))
    except FileNotFoundError:
        return None, f"no {VALIDATION} beside the record (its n_val is {n})"
    except (OSError, ValueError) as exc:
        return None, f"{path} cannot be read ({type(exc).__name__})"
    if len(table) != n:
        return None, f"{path} holds {len(table)} row(s); its record scored {n} validation image(s)"
    if column not in table.columns:
        return None, f"{path} has no column {column!r}"
    values = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(values)):
        return None, f"{path}: {int((~np.isfinite(values)).sum())} non-finite value(s) in {column!r}"
    return values, ""
