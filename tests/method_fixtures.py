"""Helpers for tests that run every registered method (imported as ``method_fixtures``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from con2.config import dataclass_from_params
from con2.methods import all_methods
from con2.weights import save_random_weights


def with_stand_in_weights(name: str, params: dict[str, Any], folder: Path) -> dict[str, Any]:
    """``params`` plus, for each pretrained file the method needs, random weights of the right layout.

    The files are written to ``folder``; they exercise loading, checking and training, never results.
    """
    spec = all_methods()[name]
    needs = spec.weight_sets(dataclass_from_params(spec.Params, params, name))
    return {**params, **{key: str(save_random_weights(ws, folder / f"{key}.pth")) for key, ws in needs.items()}}
