"""CLIP-AD: WinCLIP's prompt ensemble, CLIP's zero-shot probability, OpenAI's weights found and checked."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from test_ijepa_zsad import caches  # noqa: F401  (fixture: empty model caches, the Hugging Face one included)

from baselines.clip_ad import ClipAD, class_embeddings, clip_scores, tiny_clip
from baselines.clip_ad_spec import SPEC, ClipADParams, prompts
from con2 import weights
from con2.config import make_config
from con2.errors import ConfigError, WeightsMissing

open_clip = pytest.importorskip("open_clip")
ROOT = Path(__file__).resolve().parents[2]


def config(**params):
    return make_config({"dataset": "digits", "image_size": 16, "method": "clip_ad", "max_steps": 0, "params": params})


def test_the_prompts_are_every_template_with_every_state_of_the_class():
    normal, anomalous = prompts(ClipADParams(class_name="breast"))
    assert len(normal) == 7 * 22 and len(anomalous) == 5 * 22
    assert "a photo of a flawless breast." in normal and "a photo of a breast." in normal
    assert "a close-up photo of the breast with defect." in anomalous and "a photo of a damaged breast." in anomalous
    assert not set(normal) & set(anomalous)
    mine = ClipADParams(normal_states=("normal {}",), anomaly_states=("damaged {}",), templates=("a photo of a {}.",))
    assert prompts(mine) == (["a photo of a normal object."], ["a photo of a damaged object."])
    with pytest.raises(ConfigError, match="templates must be a non-empty list of strings each with one"):
        SPEC.params_for(config(model="tiny", templates=["no slot"]))


def test_the_score_is_clips_softmax_probability_of_the_anomalous_class():
    torch.manual_seed(0)
    images, text = torch.randn(5, 8), F.normalize(torch.randn(2, 8), dim=1)
    cos = F.normalize(images, dim=1) @ text.T
    expected = torch.exp(100 * cos[:, 1]) / (torch.exp(100 * cos[:, 0]) + torch.exp(100 * cos[:, 1]))
    torch.testing.assert_close(clip_scores(images, text, 100.0), expected)


def test_class_embeddings_average_the_normalised_prompt_embeddings():
    torch.manual_seed(0)
    model = tiny_clip().eval()
    tok = open_clip.get_tokenizer("ViT-B-16")
    normal, anomalous = ["a photo of a object.", "a photo of a perfect object."], ["a photo of a damaged object."]
    got = class_embeddings(model, tok, normal, anomalous)
    with torch.no_grad():
        rows = [F.normalize(model.encode_text(tok([t])), dim=-1)[0] for t in normal]
        first = F.normalize((rows[0] + rows[1]) / 2, dim=0)
        second = F.normalize(model.encode_text(tok(anomalous))[0], dim=0)
    torch.testing.assert_close(got, torch.stack([first, second]))


def test_the_method_scores_the_clip_image_embedding_of_the_resized_view(caches):
    path = weights.save_random_weights(SPEC.weights(ClipADParams(model="tiny"))["weights"], caches / "clip.pth")
    cfg = config(model="tiny", weights=str(path), templates=["a photo of a {}."])
    m = ClipAD(cfg, SPEC.params_for(cfg)).eval()
    assert not any(p.requires_grad for p in m.parameters()) and len(m.test_views()) == 1  # one identity view
    reference = tiny_clip().eval()
    reference.load_state_dict(torch.load(path, weights_only=True))
    x = torch.rand(3, 3, 16, 16) * 2 - 1
    pixels = F.interpolate(x * 0.5 + 0.5, size=(32, 32), mode="bicubic", align_corners=False, antialias=True)
    mean = torch.tensor(open_clip.constants.OPENAI_DATASET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(open_clip.constants.OPENAI_DATASET_STD).view(1, 3, 1, 1)
    with torch.no_grad():
        torch.testing.assert_close(m.encoder(x), reference.encode_image((pixels - mean) / std))
    score = m.scoring().scorers["clip"].fn(m.encoder(x), torch.empty(0, 16), 0)
    torch.testing.assert_close(score, clip_scores(m.encoder(x), m.text, reference.logit_scale.exp().item()))


def test_openai_files_are_checked_and_their_extra_entries_dropped(caches):
    with pytest.raises(WeightsMissing, match=r"ViT-L-14-336px.pt or .* was found in .*`curl -L -o ViT-L-14-336px.pt "):
        SPEC.params_for(config())  # the default: OpenAI's ViT-L/14 at 336 px
    fake = caches / "ViT-B-16.pt"
    fake.write_bytes(b"not OpenAI's archive")
    with pytest.raises(ConfigError, match="ViT-B-16.pt has sha256 .*expected 5806e77cd80f8b59.*get it again"):
        SPEC.params_for(config(model="ViT-B-16", weights=str(fake)))
    # OpenAI's archives hold three entries that are not weights; a plain state dict is read as well
    model = tiny_clip()
    state = {**model.state_dict(), "input_resolution": torch.tensor(32), "context_length": torch.tensor(77)}
    torch.save({**state, "vocab_size": torch.tensor(49408)}, caches / "state.pt")
    ws = dataclasses.replace(weights.KNOWN["openai/clip-vit-b-16"], files={"state.pt": ""})
    loaded = weights.load_checked(weights.resolve(str(caches / "state.pt"), ws), weights.expected_shapes(model))
    assert sorted(loaded) == sorted(model.state_dict())


def test_a_wrong_clip_file_is_refused_with_the_fix_named(caches):
    """The hub copy of OpenAI's ViT-B/16, found in the Hugging Face cache, holding other weights."""
    snap = caches / "hf" / "models--timm--vit_base_patch16_clip_224.openai" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    from safetensors.torch import save_file

    save_file(tiny_clip().state_dict(), snap / "open_clip_model.safetensors")
    cfg = config(model="ViT-B-16")
    params = SPEC.params_for(cfg)  # found, no digest known for this file name
    with pytest.raises(ConfigError) as err:
        ClipAD(cfg, params)
    msg = str(err.value)
    assert "open_clip_model.safetensors does not fit open_clip ViT-B-16 with QuickGELU (OpenAI CLIP)" in msg
    assert "shape mismatches" in msg and "curl -L -o ViT-B-16.pt https://openaipublic.azureedge.net/clip/models/" in msg


@pytest.mark.slow
def test_the_cli_refuses_a_damaged_file_before_reading_any_data(caches):
    fake = caches / "ViT-L-14.pt"
    fake.write_bytes(b"truncated")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TORCH_HOME": str(caches / "torch_home")}
    cmd = [sys.executable, "-m", "con2", "train", "--run-dir", str(caches / "run"), "--set", "dataset=digits"]
    cmd += ["method=clip_ad", "max_steps=0", "params.model=ViT-L-14", f"params.weights={fake}"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=caches)
    assert out.returncode == 2 and out.stderr.startswith("con2: error: params.weights: ")
    assert "expected b8cca3fd41ae0c99" in out.stderr and "Traceback" not in out.stderr
    assert not (caches / "run" / "record.json").exists()
