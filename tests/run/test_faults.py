"""Fault injection: a kill, a full disk or a crowd of writers never loses work or leaves a partial file.

Each fault is followed by the same command, which must finish with outputs identical to an
uninterrupted run. Tiny configs (digits at 16 px, a 300-image MedMNIST-shaped npz) keep each test
to seconds; the training kill spawns two ``con2 train`` processes and is marked slow.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import TINY
from data_fixtures import write_medmnist_npz

import con2.atomic
from con2.atomic import partials
from con2.config import make_config
from con2.run.records import read_record
from con2.run.runner import CHECKPOINT, FEATURES, RECORD, SCORES, run
from con2.training.checkpoints import load_checkpoint

TINY_SET = [f"{k}={json.dumps(v)}" for k, v in TINY.items()]

# Prepares (and splits) breastmnist from argv[1] into $CON2_CACHE_DIR, sleeping argv[2] seconds
# per image so that a kill can land mid-preparation; prints what identifies the result.
PREPARE = """
import sys, time
import con2.data.cache as cache
pause, real = float(sys.argv[2]), cache.preprocess
def slow(*args, **kwargs):
    time.sleep(pause)
    return real(*args, **kwargs)
cache.preprocess = slow
from con2.data import load_one_class
d = load_one_class("breastmnist", sys.argv[1], size=28)
m = d.manifest
prepared = cache.load_prepared(cache.cache_dir(cache.Path(sys.argv[1]), "breastmnist", 28))
print(m["split_sha256"], m["images_sha256"], prepared.manifest["images_mtime_ns"])
"""


def prepare_cmd(data_dir: Path, pause: float) -> list[str]:
    return [sys.executable, "-c", PREPARE, str(data_dir), str(pause)]


def wait_for(condition, timeout: float = 120.0, what: str = "") -> None:
    t0 = time.monotonic()
    while not condition():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


@pytest.fixture
def medmnist_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    write_medmnist_npz(data / "breastmnist.npz", {"train": [100, 120], "val": [5, 5], "test": [30, 40]})
    return data


def cache_env(cache: Path) -> dict[str, str]:
    return {**os.environ, "CON2_CACHE_DIR": str(cache)}


def test_sigkill_during_data_preparation_then_the_same_command_completes_identically(medmnist_dir, tmp_path):
    reference = subprocess.run(
        prepare_cmd(medmnist_dir, 0), env=cache_env(tmp_path / "ref"), capture_output=True, text=True, timeout=120
    )
    assert reference.returncode == 0, reference.stderr
    cache = tmp_path / "cache"
    folder = cache / "breastmnist" / "28px"
    victim = subprocess.Popen(prepare_cmd(medmnist_dir, 0.01), env=cache_env(cache))
    wait_for(lambda: partials(folder), what="the preparation to start writing")
    time.sleep(0.2)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert partials(folder) and not (folder / "manifest.json").exists()  # killed mid-write: no cache claimed
    again = subprocess.run(
        prepare_cmd(medmnist_dir, 0), env=cache_env(cache), capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.split()[:2] == reference.stdout.split()[:2]  # same split, same image bytes
    ref_folder = tmp_path / "ref" / "breastmnist" / "28px"
    assert (folder / "images.npy").read_bytes() == (ref_folder / "images.npy").read_bytes()
    manifest, ref_manifest = (json.loads((f / "manifest.json").read_text()) for f in (folder, ref_folder))
    assert manifest["samples"] == ref_manifest["samples"] and manifest["images_sha256"] == ref_manifest["images_sha256"]
    assert not partials(folder)


def test_four_processes_prepare_one_dataset_at_once(medmnist_dir, tmp_path):
    cache = tmp_path / "cache"
    procs = [
        subprocess.Popen(prepare_cmd(medmnist_dir, 0.005), env=cache_env(cache), stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0]
    assert all(o == outs[0] for o in outs) and len(outs[0]) == 3  # same split, same images, one preparation (mtime)
    folder = cache / "breastmnist" / "28px"
    assert not partials(folder) and not partials(folder / "splits")


@pytest.mark.slow
def test_sigkill_during_training_then_the_same_command_resumes_identically(tmp_path):
    epochs = 10
    run_dir = tmp_path / "killed"
    cmd = [sys.executable, "-m", "con2", "train", "--set", *TINY_SET, f"epochs={epochs}", "--run-dir", str(run_dir)]
    victim = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: (run_dir / CHECKPOINT).is_file() or victim.poll() is not None, what="the first checkpoint")
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert not (run_dir / RECORD).exists()
    killed_at = load_checkpoint(run_dir / CHECKPOINT)["epoch"]
    assert 1 <= killed_at < epochs
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    resumed = read_record(run_dir / RECORD)
    assert resumed["resumed_from_epoch"] >= killed_at and not partials(run_dir)

    full = run(make_config({**TINY, "epochs": epochs}), tmp_path / "uninterrupted")
    assert resumed["metrics"] == full["metrics"] and resumed["steps"] == full["steps"]
    assert (run_dir / SCORES).read_bytes() == (tmp_path / "uninterrupted" / SCORES).read_bytes()
    with np.load(run_dir / FEATURES) as a, np.load(tmp_path / "uninterrupted" / FEATURES) as b:
        assert sorted(a.files) == sorted(b.files)
        for name in a.files:
            np.testing.assert_array_equal(a[name], b[name])


def test_disk_full_mid_training_keeps_the_last_checkpoint_and_resumes_identically(tmp_path, monkeypatch):
    """The second checkpoint write meets a full disk: the run stops with ENOSPC, the first checkpoint
    stays intact, no temporary is left; once space is back the same run resumes to the same numbers."""
    cfg = make_config({**TINY, "epochs": 3})
    writes = []

    def full_disk_open(path, mode="r", *args, **kwargs):
        handle = open(path, mode, *args, **kwargs)
        if "checkpoint.pt" in str(path) and "w" in mode:
            writes.append(path)
            if len(writes) == 2:
                real_write = handle.write

                def write(data):
                    real_write(bytes(data)[:1000])
                    raise OSError(errno.ENOSPC, "No space left on device")

                handle.write = write
        return handle

    monkeypatch.setattr(con2.atomic, "open", full_disk_open, raising=False)
    run_dir = tmp_path / "run"
    with pytest.raises(OSError) as err:
        run(cfg, run_dir)
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(run_dir / CHECKPOINT)
    assert not partials(run_dir) and not (run_dir / RECORD).exists()
    assert load_checkpoint(run_dir / CHECKPOINT)["epoch"] == 1
    monkeypatch.undo()
    resumed = run(cfg, run_dir)
    full = run(cfg, tmp_path / "uninterrupted")
    assert resumed["resumed_from_epoch"] == 1 and resumed["metrics"] == full["metrics"]
    pd.testing.assert_frame_equal(pd.read_csv(run_dir / SCORES), pd.read_csv(tmp_path / "uninterrupted" / SCORES))
