"""I-JEPA-ZSAD's card (torch-free): parameters, constraints, labels and the pretrained weights it needs.

The CON2 paper's appendix: the pretrained I-JEPA model of the ``transformers`` library, S_NND on
average-pooled embeddings, no training. The implementation is :mod:`baselines.ijepa_zsad`; the
model folder is found and checked by :mod:`con2.weights` (the Hugging Face cache, ``$CON2_WEIGHTS_DIR``
or ``params.weights``), never downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass

from con2.errors import ConfigError
from con2.methods.spec import MethodSettings, MethodSpec
from con2.weights import KNOWN, WeightSet, ijepa_hub_set, stand_in_set

TINY = "tiny"  # a 2-block random I-JEPA for pipeline checks (tests); never a result
TINY_SET = stand_in_set(
    "con2/ijepa-tiny-random", "ijepa", "baselines.ijepa_zsad:tiny_ijepa", "model.safetensors", fmt="hf_pretrained"
)


@dataclass
class IJepaZSADParams:
    """I-JEPA-ZSAD's settings; the paper's Table 1 row is the ViT-H/14 (ImageNet-1k) model."""

    model: str = "facebook/ijepa_vith14_1k"  # the hub repository of a transformers IJepaModel | tiny (tests)
    weights: str = ""  # "" = look the model folder up in the caches (see con2.weights), or a folder / file
    weights_sha256: str = ""  # expected sha256 (or prefix) of the weights file, where the cache does not name it
    tta: bool = True  # True: S_NND averaged over the run's test-time views (as every method); False: one identity view


def weight_set(params: IJepaZSADParams) -> str | WeightSet:
    """The model folder the run needs: a known hub set, any other hub repository, or the tiny stand-in."""
    if params.model == TINY:
        return TINY_SET
    return params.model if params.model in KNOWN else ijepa_hub_set(params.model)


def check(params: IJepaZSADParams, cfg: MethodSettings) -> None:
    if params.model != TINY and params.model.count("/") != 1:
        raise ConfigError(
            f"params.model must be a Hugging Face repository 'org/name' of an I-JEPA model "
            f"(e.g. 'facebook/ijepa_vith14_1k') or {TINY!r}, got {params.model!r}"
        )


SPEC = MethodSpec(
    name="ijepa_zsad",
    Params=IJepaZSADParams,
    implementation="baselines.ijepa_zsad:IJepaZSAD",
    score_names=("nnd",),
    description=(
        "I-JEPA-ZSAD: the pretrained I-JEPA (transformers' IJepaModel, ViT-H/14), not trained (run with "
        "max_steps=0); score S_NND on its average-pooled embeddings; needs the model folder (params.weights)"
    ),
    label="I-JEPA-ZSAD",
    score_labels={"nnd": "NND"},
    paper_rows={"nnd": ("I-JEPA-ZSAD", "")},
    compute_name=None,
    test_params={"model": TINY},
    check=check,
    weights=lambda params: {"weights": weight_set(params)},
)
