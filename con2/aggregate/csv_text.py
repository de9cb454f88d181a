"""The CSV files con2 writes (``runs.csv``, every table's CSV), and the same frames read back.

A text cell or column name goes through :func:`con2.text.csv_cell` on the way out (no formula a
spreadsheet would run, no control character) and :func:`con2.text.csv_value` on the way back in, so a
name reads back as it was.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from con2.text import csv_cell, csv_value


def csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as con2 writes it to a CSV file: every text cell and column name through
    :func:`con2.text.csv_cell` (no formula a spreadsheet would run, no control character)."""
    return _text_mapped(frame, csv_cell)


def from_csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A frame read back from a CSV file :func:`csv_frame` wrote: its text cells and names as they were
    (:func:`con2.text.csv_value`)."""
    return _text_mapped(frame, csv_value)


def _text_mapped(frame: pd.DataFrame, text: Callable[[str], str]) -> pd.DataFrame:
    """A copy of ``frame`` with ``text`` applied to every text cell (of a column that is neither numbers nor
    booleans) and every column name."""
    out = frame.copy()
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column]) and not pd.api.types.is_bool_dtype(out[column]):
            out[column] = out[column].map(lambda v: text(v) if isinstance(v, str) else v)
    out.columns = [text(c) if isinstance(c, str) else c for c in out.columns]
    return out
