"""PANDA's card (torch-free): parameters, constraints, labels and the pretrained weights it needs.

The implementation is :mod:`baselines.panda`. The weights are found and checked by
:mod:`con2.weights` when a run is validated (before any data is read or job started).
"""

from __future__ import annotations

from dataclasses import dataclass

from con2.errors import ConfigError
from con2.methods.spec import MethodSettings, MethodSpec
from con2.weights import WeightSet

BACKBONES = ("resnet18", "resnet50", "resnet152", "wide_resnet50_2")
VARIANTS = ("early", "ewc")
BATCHNORM = ("frozen", "train")
FISHER_SETS = {"resnet152": "panda/fisher-diagonal-resnet152"}  # PANDA published the Fisher diagonal of its ResNet152


@dataclass
class PandaParams:
    """PANDA's hyperparameters (Reiss et al., CVPR 2021); defaults are its code's (github.com/talreiss/PANDA)."""

    backbone: str = "resnet152"  # torchvision ImageNet ResNet (PANDA's default 152; its "50" is wide_resnet50_2)
    weights: str = ""  # ImageNet weights: "" = look the backbone's file up in the model caches, or a file/dir/set name
    weights_sha256: str = ""  # expected sha256 (or prefix) of a weights file whose name the table does not know
    variant: str = "early"  # early: compactness loss alone, stopped after the run's (few) epochs | ewc: + EWC
    ewc_lambda: float = 1e4  # lambda of the EWC penalty (PANDA's 1e4)
    fisher: str = ""  # variant=ewc: the Fisher diagonal file ("" = the backbone's known one in the model caches)
    fisher_sha256: str = ""  # expected sha256 of a Fisher file whose name the table does not know
    k: int = 2  # kNN score: sum of squared distances to the k nearest training features (PANDA's 2)
    augment: bool = False  # PANDA fine-tunes on un-augmented images; True: the run's random views
    tta: bool = False  # PANDA scores one view; True: average over the run's `tta` test-time views
    batchnorm: str = "frozen"  # frozen: BatchNorm keeps ImageNet statistics while fine-tuning (PANDA's code) | train


def check(params: PandaParams, cfg: MethodSettings) -> None:
    choices = (("backbone", BACKBONES), ("variant", VARIANTS), ("batchnorm", BATCHNORM))
    for key, allowed in choices:
        if getattr(params, key) not in allowed:
            raise ConfigError(f"params.{key} must be one of {allowed}, got {getattr(params, key)!r}")
    if params.k < 1:
        raise ConfigError(f"params.k must be >= 1, got {params.k}")
    if params.ewc_lambda < 0:
        raise ConfigError(f"params.ewc_lambda must be >= 0, got {params.ewc_lambda}")


def weight_sets(params: PandaParams) -> dict[str, str | WeightSet]:
    """The ImageNet weights of the backbone and, for the EWC variant, the Fisher diagonal."""
    needs: dict[str, str | WeightSet] = {"weights": f"torchvision/{params.backbone.replace('_', '-')}-imagenet1k-v1"}
    if params.variant == "ewc":
        needs["fisher"] = FISHER_SETS.get(params.backbone) or WeightSet(
            name=f"panda/fisher-diagonal-{params.backbone}",
            family="fisher",
            architecture=f"torchvision.models:{params.backbone}",
            files={f"fisher_diagonal_{params.backbone}.pth": ""},
            url="",
            keys="parameters",
            notes=(
                f"no Fisher diagonal is published for {params.backbone} (PANDA's is for resnet152): compute "
                "the diagonal "
                f"of the Fisher information of the ImageNet classifier, a dict {{parameter name: tensor}}"
            ),
        )
    return needs


SPEC = MethodSpec(
    name="panda",
    Params=PandaParams,
    implementation="baselines.panda:Panda",
    score_names=("knn",),
    description=(
        "PANDA: an ImageNet-pretrained ResNet fine-tuned on the normal data with the compactness loss "
        "(early stopping or EWC); score: kNN (k=2) distance; needs pretrained weights (params.weights)"
    ),
    label="PANDA",
    score_labels={"knn": "kNN"},
    paper_rows={"knn": ("PANDA", "")},
    compute_name=None,
    test_params={"backbone": "resnet18"},
    check=check,
    weights=weight_sets,
)
