"""Pretrained weights: found in a file or a model cache, checked (checksum, keys, shapes), never downloaded."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from con2 import weights
from con2.errors import ConfigError
from con2.weights import KNOWN, WeightSet, resolve

R18 = "torchvision/resnet18-imagenet1k-v1"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def caches(tmp_path, monkeypatch):
    """Empty model caches: no $CON2_WEIGHTS_DIR and a torch home of our own."""
    monkeypatch.delenv(weights.ENV_DIR, raising=False)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    return tmp_path


def tiny_set(**kw) -> WeightSet:
    """A weight set for a small Linear model (fast tests of the loading checks)."""
    base = dict(
        name="test/linear",
        family="test",
        architecture="torch.nn:Identity",
        files={"linear.pth": ""},
        url="https://example.org/linear.pth",
    )
    return WeightSet(**{**base, **kw})


def test_the_table_matches_torchvision_urls_and_file_names():
    from torchvision.models import get_model_weights

    for arch in ("resnet18", "resnet50", "resnet152", "wide_resnet50_2"):
        ws = KNOWN[f"torchvision/{arch.replace('_', '-')}-imagenet1k-v1"]
        url = get_model_weights(arch)["IMAGENET1K_V1"].url
        assert ws.url == url and ws.filename == url.rsplit("/", 1)[1]
        assert ws.files[ws.filename] == ws.filename.rsplit("-", 1)[1].split(".")[0]  # the sha256 prefix in the name
    for ws in KNOWN.values():
        assert ws.fmt in weights.FORMATS and ws.filename and (ws.url or ws.notes)


def test_the_hub_cache_is_torchs(caches, monkeypatch):
    assert weights.hub_checkpoint_dir() == Path(torch.hub.get_dir()) / "checkpoints"
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(caches / "xdg"))
    assert (
        weights.hub_checkpoint_dir()
        == Path(torch.hub.get_dir()) / "checkpoints"
        == caches / "xdg/torch/hub/checkpoints"
    )


def test_a_missing_file_names_the_file_and_how_to_get_it(caches):
    with pytest.raises(ConfigError) as err:
        resolve(str(caches / "nope.pth"), R18, owner="panda")
    msg = str(err.value)
    assert "params.weights: no file at" in msg and "nope.pth" in msg
    assert "https://download.pytorch.org/models/resnet18-f37072fd.pth" in msg and "never downloads" in msg


def test_an_empty_value_searches_the_caches_in_order(caches, monkeypatch):
    with pytest.raises(ConfigError, match="resnet18-f37072fd.pth or resnet18-5c106cde.pth was found in"):
        resolve("", R18)
    own, hub = caches / "own", weights.hub_checkpoint_dir()
    (hub / "resnet18-5c106cde.pth").parent.mkdir(parents=True)
    (hub / "resnet18-5c106cde.pth").write_bytes(b"old file name")
    monkeypatch.setenv(weights.ENV_DIR, str(own))
    # found in torch's hub cache, and then its checksum (the prefix in its name) is checked
    with pytest.raises(ConfigError, match="has sha256 .* expected 5c106cde"):
        resolve("", R18)
    # a file of the right digest in $CON2_WEIGHTS_DIR wins; a directory value is a cache of its own
    ws = tiny_set(files={"good.pth": hashlib.sha256(b"content").hexdigest()[:8]})
    (own / "good.pth").parent.mkdir()
    (own / "good.pth").write_bytes(b"content")
    found = resolve("", ws)
    assert found.path == (own / "good.pth").resolve() and found.verified
    assert resolve(str(own), ws).path == found.path


def test_checksums_known_or_given_are_checked_and_recorded(caches):
    f = caches / "resnet18-f37072fd.pth"
    f.write_bytes(b"not the real file")
    with pytest.raises(ConfigError, match="expected f37072fd"):
        resolve(str(f), R18)
    other = caches / "my_copy.pth"
    other.write_bytes(b"some weights")
    digest = hashlib.sha256(b"some weights").hexdigest()
    unverified = resolve(str(other), R18)  # a name the table does not know: no digest to check
    assert unverified.sha256 == digest and not unverified.verified
    assert resolve(str(other), R18, sha256=digest[:12]).verified
    with pytest.raises(ConfigError, match="has sha256"):
        resolve(str(other), R18, sha256="0000")


def test_a_known_set_name_of_another_architecture_is_refused(caches):
    with pytest.raises(ConfigError, match="architecture"):
        resolve("torchvision/resnet50-imagenet1k-v1", R18)
    with pytest.raises(ConfigError, match="unknown weight set"):
        resolve("", "torchvision/resnet19")


def test_keys_and_shapes_must_fit_the_model(caches):
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    expected = weights.expected_shapes(model)
    good = caches / "good.pth"
    torch.save(model.state_dict(), good)
    state = weights.load_checked(resolve(str(good), tiny_set()), expected)
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    wrong = caches / "wrong.pth"
    torch.save(nn.Sequential(nn.Linear(4, 2)).state_dict(), wrong)
    with pytest.raises(ConfigError) as err:
        weights.load_checked(resolve(str(wrong), tiny_set()), expected)
    msg = str(err.value)
    assert (
        "wrong.pth does not fit" in msg
        and "missing keys (1.weight" in msg
        and "0.weight: file (2, 4) vs model (2, 3)" in msg
    )
    garbage = caches / "garbage.pth"
    garbage.write_text("not a pickle")
    with pytest.raises(ConfigError, match="garbage.pth cannot be read as state_dict weights"):
        weights.load_state_dict(resolve(str(garbage), tiny_set()))


# torch deprecates writing TorchScript; the test writes one because published weights come as such archives
@pytest.mark.filterwarnings("ignore:`torch.jit.(script|save)` is deprecated:FutureWarning")
def test_checkpoints_and_torchscript_archives_are_unwrapped(caches):
    model = nn.Linear(3, 2)
    ckpt = caches / "ckpt.pth.tar"
    torch.save({"target_encoder": {f"module.{k}": v for k, v in model.state_dict().items()}, "epoch": 3}, ckpt)
    ws = tiny_set(fmt="checkpoint", state_key="target_encoder", strip_prefix="module.")
    assert sorted(weights.load_state_dict(resolve(str(ckpt), ws))) == ["bias", "weight"]
    with pytest.raises(ConfigError, match="holds no 'encoder' entry"):
        weights.load_state_dict(resolve(str(ckpt), tiny_set(fmt="checkpoint", state_key="encoder")))
    scripted = caches / "scripted.pt"
    torch.jit.save(torch.jit.script(model), str(scripted))
    state = weights.load_checked(resolve(str(scripted), tiny_set(fmt="torchscript")), weights.expected_shapes(model))
    assert torch.equal(state["weight"], model.weight)


def test_random_stand_ins_fit_their_architecture(caches):
    path = weights.save_random_weights(R18, caches / "r18.pth")
    import torchvision

    weights.load_checked(resolve(str(path), R18), weights.expected_shapes(torchvision.models.resnet18()))
    with pytest.raises(NotImplementedError):
        weights.save_random_weights("openai/clip-vit-b-16", caches / "clip.pt")


@pytest.mark.slow
def test_the_cli_refuses_a_missing_or_wrong_weights_file(tiny, caches):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TORCH_HOME": str(caches / "torch_home")}
    env.pop(weights.ENV_DIR, None)
    base = [sys.executable, "-m", "con2", "train", "--run-dir", str(caches / "run"), "--set"]
    base += [f"{k}={v}" for k, v in tiny.items()] + ["method=panda"]
    missing = subprocess.run(
        base + ["params.weights=/nonexistent"], capture_output=True, text=True, env=env, cwd=caches
    )
    assert missing.returncode == 2 and missing.stderr.startswith("con2: error: params.weights: no file at /nonexistent")
    assert (
        "https://download.pytorch.org/models/resnet152-394f9c45.pth" in missing.stderr
        and "Traceback" not in missing.stderr
    )
    none = subprocess.run(base, capture_output=True, text=True, env=env, cwd=caches)
    assert none.returncode == 2 and "no file resnet152-394f9c45.pth or resnet152-b121ed2d.pth was found" in none.stderr
    other = caches / "linear.pth"  # weights of another architecture
    torch.save(nn.Linear(3, 2).state_dict(), other)
    wrong = subprocess.run(
        base + ["params.backbone=resnet18", f"params.weights={other}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=caches,
    )
    assert (
        wrong.returncode == 2
        and "linear.pth does not fit torchvision.models:resnet18: 122 missing keys" in wrong.stderr
    )
    assert "Traceback" not in wrong.stderr
