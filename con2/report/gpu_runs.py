"""The GPU runs of ``benchmarks/gpu_fidelity.py``: its JSON lines in ``benchmarks/measured/``.

Read by :class:`~con2.report.artefacts.ReportInputs` (the ``gpu`` input) for the budget bound
(:mod:`con2.builders.bound`) and the reproduction report.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd


def read_gpu_lines(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The final results of ``benchmarks/gpu_fidelity.py`` runs: one row per (file, setting, seed).

    Columns: setting, seed, epochs, image_size, data_size, main (the headline score), auroc (of
    ``main``), device, file. Lines without an ``auroc`` mapping (points, pauses, skips) are left out;
    lines written before ``image_size`` was recorded are the 224 px plan's.
    """
    rows = []
    for path in sorted(map(Path, paths)):
        for line in path.read_text(errors="replace").splitlines():
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(d, dict) or not isinstance(d.get("auroc"), dict) or d.get("event") not in (None, "run"):
                continue
            main = str(d.get("main") or "nnd")
            value = d["auroc"].get(main)
            if not isinstance(value, (int, float)):
                continue
            rows.append(
                {
                    "setting": str(d.get("setting")),
                    "seed": int(d.get("seed", 0)),
                    "epochs": int(d.get("epochs", 0)),
                    "image_size": int(d.get("image_size") or 224),
                    "data_size": int(d.get("data_size") or 28),
                    "main": main,
                    "auroc": float(value),
                    "device": str(d.get("gpu") or d.get("device") or "gpu"),
                    "file": path.name,
                }
            )
    cols = ["setting", "seed", "epochs", "image_size", "data_size", "main", "auroc", "device", "file"]
    frame = pd.DataFrame(rows, columns=cols)
    # a run repeated in a later file (a resumed call) counts once: the last line wins
    return frame.drop_duplicates(["setting", "seed", "epochs", "image_size", "data_size"], keep="last")
