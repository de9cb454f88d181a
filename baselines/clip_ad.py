"""CLIP-AD: zero-shot anomaly detection with CLIP (open_clip, OpenAI's weights), not trained.

The score of an image is CLIP's zero-shot classifier between two classes, "normal" and
"anomalous" (WinCLIP's compositional prompt ensemble, Jeong et al., CVPR 2023):

* each class's text embedding is the mean of the L2-normalised embeddings of its prompts (every
  template filled with every state word of :mod:`baselines.clip_ad_spec`), normalised again;
* the image embedding is CLIP's (the harness's view resized, bicubic, to the model's input size
  and normalised with CLIP's mean and std), normalised;
* score = softmax over the two classes of ``logit_scale * cos(image, class)``: the anomalous
  class's probability (``logit_scale`` is the model's learnt one, 100 for OpenAI's CLIP), on one
  identity view (``params.tta``: averaged over the run's test-time views).

The training set is not used by the score (zero-shot). The weights are OpenAI's (the TorchScript
archive, or open_clip's copy on the Hugging Face hub), found and checked by :mod:`con2.weights`;
the model is open_clip's architecture with QuickGELU, every state-dict key and shape checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from baselines.clip_ad_spec import SPEC, TINY, ClipADParams, prompts
from baselines.zero_shot import PretrainedInput, ZeroShotMethod, require
from con2 import weights
from con2.methods.scoring import Scorer, ScoringSpec
from con2.methods.spec import MethodSettings

if TYPE_CHECKING:  # open_clip is optional, imported where a model is built (untyped: Any to mypy)
    from open_clip import CLIP


def tiny_clip() -> CLIP:
    """A 1-block, 32-wide random CLIP (32 px, 8 px patches; OpenAI's tokenizer): the tests' stand-in, never a result."""
    open_clip = require("open_clip", "open_clip_torch", SPEC.name)
    vision = open_clip.model.CLIPVisionCfg(layers=1, width=32, head_width=16, patch_size=8, image_size=32)
    text = open_clip.model.CLIPTextCfg(context_length=77, vocab_size=49408, width=32, heads=2, layers=1)
    return open_clip.model.CLIP(embed_dim=16, vision_cfg=vision, text_cfg=text, quick_gelu=True)


def build_clip(params: ClipADParams) -> CLIP:
    """The open_clip model of ``params.model`` with its checked pretrained weights loaded (eval mode)."""
    open_clip = require("open_clip", "open_clip_torch", SPEC.name)
    resolved = SPEC.resolve_weights(params)["weights"]
    model = tiny_clip() if params.model == TINY else open_clip.create_model(params.model, force_quick_gelu=True)
    model.load_state_dict(weights.load_checked(resolved, weights.expected_shapes(model)))
    return model.eval()


@torch.no_grad()
def class_embeddings(
    model: CLIP, tokenizer: Callable[[list[str]], Tensor], normal: list[str], anomalous: list[str]
) -> Tensor:
    """``[2, d]``: the normalised mean of each class's normalised prompt embeddings (normal, anomalous)."""
    rows = [
        F.normalize(model.encode_text(tokenizer(texts), normalize=True).mean(0), dim=-1)
        for texts in (normal, anomalous)
    ]
    return torch.stack(rows).float()


def clip_scores(images: Tensor, text: Tensor, logit_scale: float | Tensor) -> Tensor:
    """p(anomalous) of image embeddings ``[M, d]`` against class embeddings ``text [2, d]`` -> ``[M]``."""
    logits = logit_scale * F.normalize(images.float(), dim=-1) @ text.T.to(images.device)
    return logits.softmax(dim=-1)[:, 1]


class ClipImage(nn.Module):
    """Harness inputs -> CLIP's preprocessing -> CLIP's image tower -> embedding ``[B, d]``."""

    def __init__(self, visual: nn.Module, prep: PretrainedInput, out_dim: int) -> None:
        super().__init__()
        self.visual = visual
        self.prep = prep
        self.out_dim = out_dim

    def forward(self, x: Tensor) -> Tensor:
        return self.visual(self.prep(x))


class ClipAD(ZeroShotMethod):
    """OpenAI CLIP, frozen; score p(anomalous prompts | image)."""

    name = SPEC.name
    Params = ClipADParams
    score_names = SPEC.score_names
    text: Tensor  # buffer: the class embeddings [2, d]

    def __init__(self, cfg: MethodSettings, params: ClipADParams) -> None:
        super().__init__(cfg, params)
        open_clip = require("open_clip", "open_clip_torch", self.name)
        model = build_clip(params)
        tokenizer = open_clip.get_tokenizer("ViT-B-16")  # OpenAI's BPE tokenizer, 77 tokens (every OpenAI CLIP's)
        normal, anomalous = prompts(params)
        self.register_buffer("text", class_embeddings(model, tokenizer, normal, anomalous), persistent=False)
        self.logit_scale = float(model.logit_scale.detach().exp())
        size = model.visual.image_size
        size = int(size[0] if isinstance(size, tuple | list) else size)
        mean, std = open_clip.constants.OPENAI_DATASET_MEAN, open_clip.constants.OPENAI_DATASET_STD
        self.encoder = ClipImage(model.visual, PretrainedInput(size, mean, std), int(self.text.shape[1]))
        self.freeze()  # the text tower is dropped: its work is done in self.text

    def scoring(self) -> ScoringSpec:
        """p(anomalous) of the image embedding, averaged over the test views (one view unless params.tta)."""
        return ScoringSpec({"clip": Scorer(lambda te, tr, c: clip_scores(te, self.text, self.logit_scale))})
