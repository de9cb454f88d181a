"""I-JEPA-ZSAD: the transformers I-JEPA found in the Hugging Face cache, checked, pooled, never trained."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from baselines.ijepa_zsad import IJepaZSAD, tiny_ijepa
from baselines.ijepa_zsad_spec import SPEC
from con2 import weights
from con2.config import make_config
from con2.errors import ConfigError, WeightsMissing
from con2.training.engine import TrainSettings, fit

REPO = "facebook/ijepa_vith14_1k"


@pytest.fixture
def caches(tmp_path, monkeypatch):
    """Empty model caches of our own: no $CON2_WEIGHTS_DIR, a torch home and a Hugging Face cache in tmp."""
    monkeypatch.delenv(weights.ENV_DIR, raising=False)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    return tmp_path


def put_in_hf_cache(folder: Path, cache: Path, repo: str, revision: str = "0" * 40) -> Path:
    """Lay ``folder``'s files out as ``hf download`` does: blobs named by sha256, linked from a snapshot."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snap = root / "snapshots" / revision
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    snap.mkdir(parents=True)
    for f in folder.iterdir():
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        shutil.copy(f, root / "blobs" / digest)
        os.symlink(f"../../blobs/{digest}", snap / f.name)
    (root / "refs").mkdir(exist_ok=True)
    (root / "refs" / "main").write_text(revision)
    return snap


def config(**params):
    return make_config(
        {"dataset": "digits", "image_size": 16, "method": "ijepa_zsad", "max_steps": 0, "params": params}
    )


def test_missing_weights_name_the_hub_download_command(caches):
    with pytest.raises(WeightsMissing) as err:
        SPEC.params_for(config())
    msg = str(err.value)
    assert f"'{REPO}' (params.weights) and no file model.safetensors was found in" in msg
    assert f"`hf download {REPO}`" in msg and str(caches / "hf") in msg and "never downloads" in msg


def test_the_model_is_found_in_the_hugging_face_cache_and_its_blob_checksum_checked(caches):
    folder = weights.save_random_weights(SPEC.weights(SPEC.Params(model="tiny"))["weights"], caches / "tiny")
    snap = put_in_hf_cache(folder, caches / "hf", REPO)
    resolved = weights.resolve("", REPO, owner="ijepa_zsad")
    assert resolved.path == snap / "model.safetensors" and resolved.verified  # sha256 = the blob's name
    assert resolved.sha256 == os.readlink(snap / "model.safetensors").rsplit("/", 1)[1]
    model = weights.load_hf_pretrained(resolved, __import__("transformers").IJepaModel, "ijepa")
    assert model.config.hidden_size == 32
    blob = (snap / "model.safetensors").resolve()
    blob.write_bytes(blob.read_bytes()[:-1] + b"!")  # damaged after download
    weights._sha256_cached.cache_clear()
    with pytest.raises(ConfigError, match=f"expected .* for '{REPO}': the file is damaged.*`hf download {REPO}`"):
        weights.resolve("", REPO)


def test_a_folder_of_another_model_or_architecture_is_refused_with_the_fix(caches):
    transformers = pytest.importorskip("transformers")
    vit = transformers.ViTModel(transformers.ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2))
    vit.save_pretrained(caches / "vit")
    with pytest.raises(
        ConfigError, match=rf"holds a 'vit' model, not 'ijepa'; it is not '{REPO}': .*hf download {REPO}"
    ):
        SPEC.load()(config(weights=str(caches / "vit")), SPEC.params_for(config(weights=str(caches / "vit"))))
    wide = transformers.IJepaModel(
        transformers.IJepaConfig(hidden_size=48, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    )
    wide.save_pretrained(caches / "wide")
    shutil.copy(tiny_ijepa_folder(caches) / "config.json", caches / "wide" / "config.json")  # weights of another size
    with pytest.raises(ConfigError, match=r"wide does not fit IJepaModel: \d+ shape mismatches .*hf download"):
        IJepaZSAD(config(weights=str(caches / "wide")), SPEC.params_for(config(weights=str(caches / "wide"))))


def tiny_ijepa_folder(caches: Path) -> Path:
    return weights.save_random_weights(SPEC.weights(SPEC.Params(model="tiny"))["weights"], caches / "tiny_folder")


def test_the_embedding_is_the_mean_last_hidden_state_of_the_resized_normalised_image(caches):
    folder = tiny_ijepa_folder(caches)
    cfg = config(model="tiny", weights=str(folder))
    m = IJepaZSAD(cfg, SPEC.params_for(cfg)).eval()
    assert not any(p.requires_grad for p in m.parameters())
    torch.manual_seed(0)
    x = torch.rand(4, 3, 16, 16) * 2 - 1  # a harness view: normalised to mean = std = 0.5
    pixels = F.interpolate(x * 0.5 + 0.5, size=(32, 32), mode="bicubic", align_corners=False, antialias=True)
    mean, std = torch.tensor([0.485, 0.456, 0.406]), torch.tensor([0.229, 0.224, 0.225])
    pixels = (pixels - mean.view(1, 3, 1, 1)) / std.view(1, 3, 1, 1)
    reference = tiny_ijepa()
    reference.load_state_dict(m.encoder.model.state_dict())
    with torch.no_grad():
        expected = reference.eval()(pixel_values=pixels).last_hidden_state.mean(1)
        torch.testing.assert_close(m.encoder(x), expected)
    # nothing to train: steps of the engine leave every weight (and so every score) as it is
    before = {k: v.clone() for k, v in m.state_dict().items()}
    settings = TrainSettings(epochs=1, batch_size=4, progress=False, amp=False, channels_last=False)
    result = fit(m, torch.randint(0, 256, (8, 3, 16, 16), dtype=torch.uint8), settings, torch.device("cpu"))
    assert result.steps == 2 and result.last_terms == {"loss": 0.0}
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
