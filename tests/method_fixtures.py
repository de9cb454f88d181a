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


# PANDA's ImageNet ResNet has the standard stem: at the tiny configs' 16 px its last stage sees
# 1 x 1 inputs, which bf16 autocast on a CPU gets wrong and the engine refuses
# (con2.training.device.refuse_broken_cpu_bf16_convolutions); at 32 px it is computed right.
TRAIN_SIZE = {"panda": 32}


def tiny_for(name: str, tiny: dict[str, Any]) -> dict[str, Any]:
    """The tiny config for method ``name``: the same stored images (and so the same split), trained
    and scored at a larger size where the method's architecture needs one."""
    if name not in TRAIN_SIZE:
        return dict(tiny)
    return {**tiny, "image_size": TRAIN_SIZE[name], "data_size": tiny.get("data_size", tiny["image_size"])}
