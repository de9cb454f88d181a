"""Bad input stops with a message that names the problem, and leaves no partial record.

The second half takes every case of issue 10's table through the command line (``con2.cli.main``,
the function behind ``con2``): exit status 2, a ``con2: error:`` line naming the problem and the
fix, and nothing partial left in the run directory.
"""

import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import TINY
from data_fixtures import write_medmnist_npz

from con2.atomic import partials
from con2.cli.main import main
from con2.config import load_config, make_config
from con2.data import DataError
from con2.errors import ConfigError, NonFiniteLossError
from con2.methods import registry
from con2.methods.con2_method import Con2
from con2.run.records import read_record
from con2.run.runner import CHECKPOINT, RECORD, run
from con2.training.models import build_encoder


def no_record_left(path):
    return not (path / RECORD).exists() and not partials(path)


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
        [
            sys.executable,
            "-m",
            "con2",
            "train",
            "--set",
            "dataset=breastmnist",
            f"data_dir={tmp_path}",
            "--run-dir",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2
    assert "con2: error: breastmnist: breastmnist.npz not found" in res.stderr
    assert "Traceback" not in res.stderr
    res = subprocess.run(
        [sys.executable, "-m", "con2", "train", "--set", "widht=3", "--run-dir", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2 and "'widht'" in res.stderr


# --------------------------------------------------------------------------- issue 10's table, through the CLI

TINY_SET = [f"{k}={json.dumps(v)}" for k, v in TINY.items()]


def train(run_dir, *overrides, flags=()):
    """``con2 train`` with the tiny digits config plus ``overrides``; returns the exit status."""
    return main(["train", "--set", *TINY_SET, *overrides, "--run-dir", str(run_dir), *flags])


def error_of(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("con2: error: ") and "Traceback" not in err, err
    return err


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A finished tiny run directory (copied by the tests that need one)."""
    path = tmp_path_factory.mktemp("finished") / "run"
    assert train(path) == 0
    return path


def copy_of(run_dir, tmp_path):
    dest = tmp_path / "run"
    shutil.copytree(run_dir, dest)
    return dest


def test_cli_one_class_test_split_stops_at_data_load(tmp_path, capsys):
    write_medmnist_npz(tmp_path / "data" / "breastmnist.npz", {"train": [3, 5], "val": [1, 1], "test": [0, 4]})
    run_dir = tmp_path / "run"
    code = train(run_dir, "dataset=breastmnist", "image_size=28", f"data_dir={tmp_path / 'data'}", "batch_size=2")
    err = error_of(capsys)
    assert code == 2
    assert "breastmnist: the test split of normal class 1 holds only normal images (4 images" in err
    assert "con2 data get breastmnist" in err and "normal_class" in err
    assert not run_dir.exists()  # stopped before training: nothing written


def test_cli_second_writer_stops_at_once_naming_the_holder(tmp_path, capsys):
    run_dir = tmp_path / "run"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from con2.run.rundir import RunDir\n"
            f"with RunDir({str(run_dir)!r}).lock():\n    print('held', flush=True); time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        res = subprocess.run(
            [sys.executable, "-m", "con2", "train", "--set", *TINY_SET, "--run-dir", str(run_dir)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert f"con2: error: run directory {run_dir} is in use by another writer: pid {holder.pid} " in res.stderr
        assert f"on host {socket.gethostname()}, started " in res.stderr and "Fix: wait for it" in res.stderr
        assert not (run_dir / "config.yaml").exists()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # the holder died without releasing: its lock file is left, and does not block the next writer
    assert (run_dir / ".lock").exists()
    assert train(run_dir) == 0
    assert (run_dir / RECORD).is_file() and not (run_dir / ".lock").exists()


def test_cli_no_space_left_says_so_and_leaves_no_temporary(tmp_path, capsys, monkeypatch):
    import con2.atomic

    def full_disk_open(path, mode="r", *args, **kwargs):
        handle = open(path, mode, *args, **kwargs)
        if "checkpoint.pt" in str(path) and "w" in mode:
            real_write = handle.write

            def write(data):
                real_write(bytes(data)[: len(data) // 2])
                raise OSError(errno.ENOSPC, "No space left on device")

            handle.write = write
        return handle

    monkeypatch.setattr(con2.atomic, "open", full_disk_open, raising=False)
    run_dir = tmp_path / "run"
    code = train(run_dir)
    err = error_of(capsys)
    assert code == 2 and f"no space left on device writing {run_dir / CHECKPOINT}. Fix: free space" in err
    assert not partials(run_dir) and not (run_dir / CHECKPOINT).exists() and not (run_dir / RECORD).exists()
    monkeypatch.undo()
    assert train(run_dir) == 0 and (run_dir / RECORD).is_file()  # space freed: the same command completes


def read_only_below(monkeypatch, root: Path) -> None:
    """Make every write under ``root`` fail as on a read-only file system (we may run as root,
    which ignores permission bits)."""
    root = str(root)
    real_open, real_mkdir = os.open, os.mkdir

    def refuse(path):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    def guarded_open(path, flags, *args, **kwargs):
        if str(path).startswith(root) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            refuse(path)
        return real_open(path, flags, *args, **kwargs)

    def guarded_mkdir(path, *args, **kwargs):
        if str(path).startswith(root):
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_open)
    monkeypatch.setattr(os, "mkdir", guarded_mkdir)


@pytest.mark.parametrize("which", ["run directory", "parent"])
def test_cli_read_only_paths(which, tmp_path, capsys, monkeypatch):
    parent = tmp_path / "results"
    run_dir = parent / "run"
    if which == "run directory":
        run_dir.mkdir(parents=True)
        read_only_below(monkeypatch, run_dir)
        blocked = run_dir / ".lock"
    else:
        parent.mkdir()
        read_only_below(monkeypatch, parent)
        blocked = run_dir
    code = train(run_dir)
    err = error_of(capsys)
    assert code == 2 and f"cannot write {blocked}: read-only file system. Fix: make that folder writable" in err
    assert not any(parent.rglob("*")) or list(parent.rglob("*")) == [run_dir]


def test_cli_corrupt_checkpoint_names_the_file_and_force(finished_run, tmp_path, capsys):
    run_dir = copy_of(finished_run, tmp_path)
    (run_dir / RECORD).unlink()
    ckpt = run_dir / CHECKPOINT
    ckpt.write_bytes(ckpt.read_bytes()[: ckpt.stat().st_size // 2])
    code = train(run_dir)
    err = error_of(capsys)
    assert code == 2 and f"checkpoint {ckpt} is truncated or corrupt" in err and "--force" in err
    assert no_record_left(run_dir)
    assert train(run_dir, flags=["--force"]) == 0 and read_record(run_dir / RECORD)["resumed_from_epoch"] == 0


def test_cli_finished_run_with_another_config_is_refused(finished_run, tmp_path, capsys):
    run_dir = copy_of(finished_run, tmp_path)
    before = read_record(run_dir / RECORD)
    code = train(run_dir, "lr=0.01", "params.temperature=0.2")
    err = error_of(capsys)
    assert code == 2 and f"{run_dir} holds a finished run of another configuration" in err
    assert "differing keys: lr: 0.001 -> 0.01; params.temperature: (unset) -> 0.2" in err and "--force" in err
    assert read_record(run_dir / RECORD) == before  # nothing touched
    assert train(run_dir, "lr=0.01", "params.temperature=0.2", flags=["--replace-stale"]) == 0
    out = capsys.readouterr().out
    assert f"{run_dir}: removing checkpoint.pt and record.json, written under another configuration" in out
    after = read_record(run_dir / RECORD)
    assert after["config"]["lr"] == 0.01 and after["config_hash"] != before["config_hash"]
    assert after["resumed_from_epoch"] == 0
    assert train(run_dir, "lr=0.01", "params.temperature=0.2") == 0
    assert "run already complete" in capsys.readouterr().out


def test_cli_batch_larger_than_the_training_set(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = train(run_dir, "batch_size=1000")
    err = error_of(capsys)
    assert code == 2
    assert "'batch_size': 1000 is larger than the training set of digits (normal class 0: 119 images)" in err
    assert "Fix: --set batch_size=119 or smaller" in err and not run_dir.exists()


def test_record_stores_the_effective_batch_and_the_split(finished_run):
    record = read_record(finished_run / RECORD)
    from con2.data import load_one_class

    data = load_one_class("digits", None, "0", seed=0, size=16)
    assert record["batch_size"] == TINY["batch_size"] and record["split_seed"] == 0
    assert record["split_sha256"] == data.manifest["split_sha256"]


@pytest.mark.parametrize(
    "overrides,message",
    [
        (["image_size=1"], "'image_size': 1 px is below the 8 px that encoder 'resnet18' takes"),
        (["image_size=7"], "Fix: --set image_size=8 or larger"),
        (["encoder=resnet18_imagenet", "image_size=16"], "below the 32 px that encoder 'resnet18_imagenet' takes"),
        (
            ["dataset=breastmnist", "image_size=12", "data_dir=."],
            "MedMNIST comes in sizes (28, 64, 128, 224), not 12. Fix: use one of them: `con2 train --set data_size=28`",
        ),
    ],
)
def test_cli_image_size_below_what_the_encoder_takes(overrides, message, tmp_path, capsys):
    code = train(tmp_path / "run", *overrides)
    err = error_of(capsys)
    assert code == 2 and message in err and not (tmp_path / "run").exists()


def test_cli_data_dir_that_is_a_file(tmp_path, capsys):
    not_a_dir = tmp_path / "data.txt"
    not_a_dir.write_text("")
    code = train(tmp_path / "run", "dataset=breastmnist", "image_size=28", f"data_dir={not_a_dir}")
    err = error_of(capsys)
    assert code == 2 and f"data_dir {not_a_dir} is a file, not a folder. Fix: pass the folder" in err
    assert not (tmp_path / "run").exists()


def test_cli_answers_a_finished_run_without_loading_torch(finished_run):
    code = (
        "import sys; from con2.cli.main import main; "
        f"rc = main(['train', '--set', *{TINY_SET!r}, '--run-dir', {str(finished_run)!r}]); "
        "print(rc, 'torch' in sys.modules, 'pandas' in sys.modules, 'con2.data.registry' in sys.modules)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.stdout.strip().splitlines()[-1] == "0 False False False", res.stdout + res.stderr
    assert "run already complete" in res.stdout


def test_cli_evaluate_rescores_into_another_directory_and_names_a_corrupt_checkpoint(finished_run, tmp_path, capsys):
    before = read_record(finished_run / RECORD)
    out = tmp_path / "no_tta"
    assert main(["evaluate", "--run-dir", str(finished_run), "--set", "tta=0", "--out", str(out)]) == 0
    record = read_record(out / RECORD)
    assert record["config"]["tta"] == 0 and record["metrics"] != before["metrics"]
    assert (out / CHECKPOINT).read_bytes() == (finished_run / CHECKPOINT).read_bytes() and not partials(out)
    assert read_record(finished_run / RECORD) == before  # the source run is untouched
    ckpt = out / CHECKPOINT
    ckpt.write_bytes(ckpt.read_bytes()[:100])
    capsys.readouterr()
    assert main(["evaluate", "--run-dir", str(out)]) == 2
    assert f"checkpoint {ckpt} is truncated or corrupt" in error_of(capsys)
