"""I-JEPA-ZSAD: the pretrained I-JEPA of the ``transformers`` library, not trained, S_NND score.

The CON2 paper's appendix: "the pretrained I-JEPA model from the transformers library", S_NND on
average-pooled embeddings with the normal training set as the index. Here:

* the model folder (``config.json`` + ``model.safetensors``, the hub repository
  ``params.model``, by default ``facebook/ijepa_vith14_1k``) is found on disk and checked by
  :mod:`con2.weights` (never downloaded) and loaded with ``IJepaModel.from_pretrained`` offline;
  a folder of another model, or weights that leave parameters missing or misshapen, stop the run
  naming the fix;
* inputs are the harness's views resized (bicubic) to the model's input size (224 px) and
  normalised with its image processor's mean and std (``preprocessor_config.json`` where the folder
  has one, else ImageNet's);
* the embedding is the mean of the last hidden states over the patch tokens (I-JEPA has no class
  token), ``[B, 1280]`` for ViT-H;
* the score is S_NND through the shared test-time loop: the run's fixed test-time views
  (``params.tta``; False: one identity view).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, cast

from torch import Tensor, nn

from baselines.ijepa_zsad_spec import SPEC, IJepaZSADParams
from baselines.zero_shot import PretrainedInput, ZeroShotMethod, require
from con2 import weights
from con2.maths.scores import nnd_scores
from con2.methods.scoring import Scorer, ScoringSpec
from con2.methods.spec import MethodSettings

if TYPE_CHECKING:  # transformers is optional, imported where a model is built
    from transformers import IJepaModel

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def tiny_ijepa() -> nn.Module:
    """A 2-block, 32-wide random ``IJepaModel`` (32 px, 8 px patches): the tests' stand-in, never a result."""
    transformers = require("transformers", "transformers", SPEC.name)
    config = transformers.IJepaConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=32, patch_size=8
    )
    return transformers.IJepaModel(config)


class PooledIJepa(nn.Module):
    """Harness inputs -> the model's preprocessing -> ``IJepaModel`` -> mean over tokens ``[B, d]``."""

    def __init__(self, model: IJepaModel, prep: PretrainedInput) -> None:
        super().__init__()
        self.model = model
        self.prep = prep
        self.out_dim = int(model.config.hidden_size)

    def forward(self, x: Tensor) -> Tensor:
        return self.model(pixel_values=self.prep(x)).last_hidden_state.mean(dim=1)


def preprocessing(folder: Path, image_size: int) -> PretrainedInput:
    """The model's input size, mean and std from its ``preprocessor_config.json`` (ImageNet's where absent)."""
    mean, std = IMAGENET_MEAN, IMAGENET_STD
    path = folder / "preprocessor_config.json"
    if path.is_file():
        cfg = json.loads(path.read_text())
        mean, std = cfg.get("image_mean", mean), cfg.get("image_std", std)
    return PretrainedInput(image_size, mean, std)


class IJepaZSAD(ZeroShotMethod):
    """The pretrained I-JEPA, frozen; S_NND on its average-pooled embeddings."""

    name = SPEC.name
    Params = IJepaZSADParams
    score_names = SPEC.score_names

    def __init__(self, cfg: MethodSettings, params: IJepaZSADParams) -> None:
        super().__init__(cfg, params)
        transformers = require("transformers", "transformers", self.name)
        resolved = SPEC.resolve_weights(params)["weights"]
        model = cast("IJepaModel", weights.load_hf_pretrained(resolved, transformers.IJepaModel, "ijepa"))
        # transformers types image_size as int | list | tuple; an I-JEPA config's is one int
        prep = preprocessing(resolved.path.parent, int(cast(int, model.config.image_size)))
        self.encoder = PooledIJepa(model, prep)
        self.freeze()

    def scoring(self) -> ScoringSpec:
        """S_NND: ``-max_m cos(f(x), f(x_m))`` on the pooled embedding, averaged over the test views."""
        chunk = self.cfg.nn_chunk
        return ScoringSpec({"nnd": Scorer(lambda te, tr, c: nnd_scores(te, tr, chunk))})
