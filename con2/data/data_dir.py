"""Where the data live: the folder when none is given, and a given folder as every message names it (light:
the workflow and the command line import it at start-up, before numpy or any dataset source)."""

from __future__ import annotations

import os
from pathlib import Path

from con2.config import DEFAULT_DATA_DIR


def default_data_dir() -> Path:
    """The data folder when none is given: ``$CON2_DATA_DIR``, else :data:`con2.config.DEFAULT_DATA_DIR` (``data``)."""
    return Path(os.environ.get("CON2_DATA_DIR", DEFAULT_DATA_DIR))


def absolute_data_dir(data_dir: str | Path | None) -> Path:
    """``data_dir`` absolute and normalised (``None``: :func:`default_data_dir`): ``~`` expanded and ``..`` removed
    lexically, symbolic links kept, so ``../shared/data`` from ``/x/con2-bench`` is ``/x/shared/data``, the folder
    as a user would write it. The one normalisation of a data folder: the data layer finds datasets there and the
    workflow's data check names it so."""
    return Path(os.path.abspath(Path(data_dir).expanduser() if data_dir is not None else default_data_dir()))
