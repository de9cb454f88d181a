"""The floors' cards (torch-free): two training-free nearest-neighbour detectors every method must beat.

* ``floor_pixels``: the cosine nearest-neighbour distance on raw pixels (S_NND on the flattened image,
  pixel values in [0, 1] as stored): no model at all.
* ``floor_random``: the same distance on the features of the run's encoder left at its random
  initialisation (seeded by the run's seed): the architecture without training.

Both score the run's own split at its sizes and centre crop, with one identity test view by default
(``params.tta``: the run's test-time views, as every trained method); neither trains (the workflow
runs them with ``max_steps: 0``). The implementation is :mod:`baselines.floors`.
"""

from __future__ import annotations

from dataclasses import dataclass

from con2.methods.spec import MethodSpec


@dataclass
class FloorParams:
    """A floor's one setting: which test-time views it averages over."""

    # False: one identity view (as ../shared/data/README.md measures the floor); True: the run's test-time views
    tta: bool = False


def floor_spec(name: str, implementation: str, description: str, label: str) -> MethodSpec:
    """A floor's card: one score, S_NND (``nnd``), and the one setting :class:`FloorParams`."""
    return MethodSpec(
        name=name,
        Params=FloorParams,
        implementation=f"baselines.floors:{implementation}",
        score_names=("nnd",),
        description=description,
        label=label,
        score_labels={"nnd": "NND"},
    )


PIXEL_SPEC = floor_spec(
    "floor_pixels",
    "PixelNN",
    "floor, no training: cosine nearest-neighbour distance on raw pixels (S_NND on the image itself)",
    "Floor: pixel NN",
)
RANDOM_SPEC = floor_spec(
    "floor_random",
    "RandomNN",
    "floor, no training: cosine nearest-neighbour distance on a randomly initialised encoder's features",
    "Floor: random encoder NN",
)
