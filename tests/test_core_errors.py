"""Bad input stops with a message that names the problem, and leaves no partial record."""

import subprocess
import sys

import numpy as np
import pytest

from con2.config import load_config, make_config
from con2.data import DataError
from con2.errors import ConfigError, NonFiniteLossError
from con2.methods import registry
from con2.methods.con2_method import Con2
from con2.models import build_encoder
from con2.runner import RECORD, run


def no_record_left(path):
    return not (path / RECORD).exists() and not list(path.glob("*.tmp*"))


def test_missing_data_file_names_file_and_fix(tiny, tmp_path):
    cfg = make_config({**tiny, "dataset": "breastmnist", "image_size": 28, "data_dir": str(tmp_path / "empty")})
    with pytest.raises(DataError, match=r"breastmnist\.npz.*con2 data get breastmnist"):
        run(cfg, tmp_path / "run")
    assert no_record_left(tmp_path / "run")


def test_malformed_data_file(tiny, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "breastmnist.npz").write_bytes(b"PK\x03\x04 truncated")
    cfg = make_config({**tiny, "dataset": "breastmnist", "image_size": 28, "data_dir": str(data)})
    with pytest.raises(DataError, match="breastmnist"):
        run(cfg, tmp_path / "run")
    np.savez(data / "breastmnist.npz", train_images=np.zeros((2, 4, 4), np.uint8))
    with pytest.raises(DataError, match="lacks keys"):
        run(cfg, tmp_path / "run")
    assert no_record_left(tmp_path / "run")


def test_unknown_encoder_context_and_too_small_image(tiny, tmp_path):
    with pytest.raises(ConfigError, match="unknown encoder 'resnet_nope'"):
        run(make_config({**tiny, "encoder": "resnet_nope"}), tmp_path)
    with pytest.raises(ConfigError, match="unknown context 'rot90'"):
        run(make_config({**tiny, "params": {"contexts": ["rot90"]}}), tmp_path)
    with pytest.raises(ConfigError, match="image_size=8 is not accepted by encoder 'vit_tiny_patch16_224'"):
        build_encoder("vit_tiny_patch16_224", 8)
    assert no_record_left(tmp_path)


def test_invalid_config_keys_and_values():
    with pytest.raises(ConfigError, match=r"unknown config key\(s\) \['epochz'\]"):
        make_config({"epochz": 3})
    with pytest.raises(ConfigError, match="'tta' must be an even"):
        make_config({"tta": 3})
    with pytest.raises(ConfigError, match="'batch_size'"):
        load_config(None, ["batch_size=many"])
    with pytest.raises(ConfigError, match=r"unknown params \['temp'\] for method 'con2'"):
        registry.build_method(make_config({"params": {"temp": 0.1}, "width": 8, "image_size": 16}))
    with pytest.raises(ConfigError, match="'tta': 4 test-time views cannot be split evenly over 3"):
        registry.build_method(make_config({"params": {"n_contexts": 3}, "tta": 4, "width": 8, "image_size": 16}))
    with pytest.raises(ConfigError, match="'channels_last' and 'width'"):
        make_config({"width": 4, "channels_last": True})
    with pytest.raises(ConfigError, match="unknown method 'con3'"):
        registry.get_method("con3")


class NanMethod(Con2):
    name = "nan_test_method"

    def training_loss(self, images, progress):
        out = super().training_loss(images, progress)
        return {**out, "loss": out["loss"] * float("nan")}


def test_nan_loss_stops_with_message_and_no_record(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "METHODS", dict(registry.all_methods()))  # undone after the test
    monkeypatch.setattr(registry, "_CLASSES", dict(registry._CLASSES))
    registry.register(NanMethod)
    cfg = make_config({**tiny, "method": "nan_test_method"})
    with pytest.raises(NonFiniteLossError, match=r"non-finite loss at epoch 0, step 0 \(.*loss=nan"):
        run(cfg, tmp_path)
    assert no_record_left(tmp_path)


def test_cli_reports_errors_with_exit_code_2(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "con2", "train", "--set", "dataset=breastmnist", f"data_dir={tmp_path}",
         "--run-dir", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120,
    )
    assert res.returncode == 2
    assert "con2: error: breastmnist: breastmnist.npz not found" in res.stderr
    assert "Traceback" not in res.stderr
    res = subprocess.run(
        [sys.executable, "-m", "con2", "train", "--set", "widht=3", "--run-dir", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120,
    )
    assert res.returncode == 2 and "'widht'" in res.stderr
