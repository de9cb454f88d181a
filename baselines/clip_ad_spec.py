"""CLIP-AD's card (torch-free): parameters, constraints, labels and the pretrained weights it needs.

Zero-shot anomaly detection with CLIP: an image is scored by how much more it resembles prompts
describing a damaged object than prompts describing a normal one. The CON2 paper's Table 1 row
"CLIP-AD" names no prompts in the material available to us, so the prompts are parameters; the
defaults are WinCLIP's compositional prompt ensemble (Jeong et al., CVPR 2023; the one the CLIP
baselines of AnomalyCLIP, MVFA and APRIL-GAN/VAND use): state words x templates, averaged per
state. The model defaults to OpenAI's ViT-L/14 at 336 px, which those zero-shot medical baselines
use. The implementation is :mod:`baselines.clip_ad`.
"""

from __future__ import annotations

from dataclasses import dataclass

from con2.errors import ConfigError
from con2.methods.spec import MethodSettings, MethodSpec
from con2.weights import WeightSet, stand_in_set

# open_clip model name -> OpenAI's weights (con2.weights.KNOWN)
MODELS = {
    "ViT-B-16": "openai/clip-vit-b-16",
    "ViT-L-14": "openai/clip-vit-l-14",
    "ViT-L-14-336": "openai/clip-vit-l-14-336",
}
TINY = "tiny"  # a 1-block random CLIP for pipeline checks (tests); never a result
TINY_SET = stand_in_set("con2/clip-tiny-random", "clip", "baselines.clip_ad:tiny_clip", "clip-tiny-random.pth")

# WinCLIP's compositional prompt ensemble: "{}" in a state is the class name, "{}" in a template the state.
NORMAL_STATES = (
    "{}",
    "flawless {}",
    "perfect {}",
    "unblemished {}",
    "{} without flaw",
    "{} without defect",
    "{} without damage",
)
ANOMALY_STATES = ("damaged {}", "broken {}", "{} with flaw", "{} with defect", "{} with damage")
TEMPLATES = (
    "a cropped photo of the {}.",
    "a cropped photo of a {}.",
    "a close-up photo of a {}.",
    "a close-up photo of the {}.",
    "a bright photo of a {}.",
    "a bright photo of the {}.",
    "a dark photo of the {}.",
    "a dark photo of a {}.",
    "a jpeg corrupted photo of a {}.",
    "a jpeg corrupted photo of the {}.",
    "a blurry photo of the {}.",
    "a blurry photo of a {}.",
    "a photo of a {}.",
    "a photo of the {}.",
    "a photo of a small {}.",
    "a photo of the small {}.",
    "a photo of a large {}.",
    "a photo of the large {}.",
    "a photo of the {} for visual inspection.",
    "a photo of a {} for visual inspection.",
    "a photo of the {} for anomaly detection.",
    "a photo of a {} for anomaly detection.",
)


@dataclass
class ClipADParams:
    """CLIP-AD's settings: the CLIP model and the prompts (every one a choice the paper leaves open)."""

    model: str = "ViT-L-14-336"  # open_clip name of an OpenAI CLIP: ViT-B-16 | ViT-L-14 | ViT-L-14-336 | tiny (tests)
    weights: str = ""  # "" = look OpenAI's file up in the model caches (see con2.weights), or a file / folder
    weights_sha256: str = ""  # expected sha256 (or prefix) of a weights file whose name the table does not know
    class_name: str = "object"  # the [class] of the prompts (WinCLIP names the object; "object" is class-agnostic)
    normal_states: tuple[str, ...] = NORMAL_STATES  # "{}" = class_name
    anomaly_states: tuple[str, ...] = ANOMALY_STATES
    templates: tuple[str, ...] = TEMPLATES  # "{}" = a state
    tta: bool = (
        False  # False: one identity view (zero-shot CLIP scores the image once); True: mean over the run's views
    )


def prompts(params: ClipADParams) -> tuple[list[str], list[str]]:
    """The normal and the anomalous prompts: every template filled with every state of the class."""

    def fill(states: tuple[str, ...]) -> list[str]:
        return [t.format(s.format(params.class_name)) for s in states for t in params.templates]

    return fill(params.normal_states), fill(params.anomaly_states)


def check(params: ClipADParams, cfg: MethodSettings) -> None:
    if params.model != TINY and params.model not in MODELS:
        raise ConfigError(f"params.model must be one of {[*MODELS, TINY]}, got {params.model!r}")
    for key in ("normal_states", "anomaly_states", "templates"):
        values = getattr(params, key)
        if not values or any(v.count("{}") != 1 for v in values):
            raise ConfigError(
                f"params.{key} must be a non-empty list of strings each with one '{{}}', got {list(values)}"
            )
    if not params.class_name.strip():
        raise ConfigError("params.class_name must not be empty (e.g. 'object', or what the images show)")


def weight_set(params: ClipADParams) -> str | WeightSet:
    return TINY_SET if params.model == TINY else MODELS[params.model]


SPEC = MethodSpec(
    name="clip_ad",
    Params=ClipADParams,
    implementation="baselines.clip_ad:ClipAD",
    score_names=("clip",),
    description=(
        "CLIP-AD: zero-shot CLIP (open_clip, OpenAI ViT-L/14@336) with WinCLIP's prompt ensemble, not trained "
        "(run with max_steps=0); score p(anomalous prompt); needs OpenAI's weights (params.weights)"
    ),
    label="CLIP-AD",
    score_labels={"clip": "p(anomalous)"},
    paper_rows={"clip": ("CLIP-AD", "")},
    compute_name=None,
    test_params={"model": TINY, "templates": ["a photo of a {}."]},
    check=check,
    weights=lambda params: {"weights": weight_set(params)},
)
