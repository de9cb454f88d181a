"""Where the data live when no folder is given (light: the workflow and the command line import it
at start-up, before numpy or any dataset source)."""

from __future__ import annotations

import os
from pathlib import Path


def default_data_dir() -> Path:
    """The data folder when none is given: ``$CON2_DATA_DIR``, else ``./data``."""
    return Path(os.environ.get("CON2_DATA_DIR", "data"))
