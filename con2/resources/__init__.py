"""The tables the package reads at run time, shipped as package data (so ``pip install .`` has them):

- ``paper_numbers.csv``: the paper's published AUROCs (:mod:`con2.report.paper`);
- ``paper_compute_hours.csv``: the paper's GPU-hours per run;
- ``train_set_sizes.csv``: training-set sizes where no prepared data say them (``con2 plan``);
- ``throughput.csv``: measured training throughput per device and setting (``con2 plan``'s estimates).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def resource(name: str) -> Path:
    """The path of the package-data file ``name`` (pip installs package data as files on disk).

    Raises:
        FileNotFoundError: no such resource (the message lists the ones there are).
    """
    path = Path(str(files(__name__) / name))
    if not path.is_file():
        known = sorted(p.name for p in path.parent.glob("*.csv"))
        raise FileNotFoundError(f"no package resource {name!r} in {path.parent}; there are: {', '.join(known)}")
    return path
