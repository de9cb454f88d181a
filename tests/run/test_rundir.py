"""The run directory module and the one atomic writer: temporaries, the lock, plans, records, checkpoints."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import con2.atomic
from con2.atomic import atomic_path, partial_name, partials, write_bytes_atomic, write_text_atomic
from con2.config import make_config
from con2.errors import ConfigError, RunDirError
from con2.run.records import RecordError, build_record
from con2.run.rundir import COMPLETE, REPLACE, TRAIN, RunDir, config_diff
from con2.training.checkpoints import load_checkpoint, save_checkpoint


def test_temporary_names_are_unique_and_beside_the_target(tmp_path):
    names = {partial_name(tmp_path / "checkpoint.pt") for _ in range(50)}
    assert len(names) == 50 and all(
        n.parent == tmp_path and n.name.startswith(".checkpoint.pt.partial-") for n in names
    )


def test_atomic_write_replaces_whole_files_and_cleans_up_on_error(tmp_path):
    target = tmp_path / "a" / "file.txt"
    write_text_atomic(target, "one")
    write_text_atomic(target, "two")
    assert target.read_text() == "two"
    with pytest.raises(ZeroDivisionError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise ZeroDivisionError("a failure while the temporary is half written")
    assert target.read_text() == "two" and not partials(target.parent)


def test_a_failed_write_names_the_final_path_and_leaves_no_temporary(tmp_path, monkeypatch):
    def full(path, mode="r", *a, **k):
        handle = open(path, mode, *a, **k)

        def write(data):
            raise OSError(errno.ENOSPC, "No space left on device")

        handle.write = write
        return handle

    monkeypatch.setattr(con2.atomic, "open", full, raising=False)
    with pytest.raises(OSError) as err:
        write_bytes_atomic(tmp_path / "x.bin", b"data")
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(tmp_path / "x.bin")
    assert not any(tmp_path.iterdir())


def test_lock_is_exclusive_within_and_across_processes(tmp_path):
    """One writer: runner.run is the one place that locks a run directory, so a second lock, from this
    process or another, is another writer and stops naming the holder."""
    rd = RunDir(tmp_path / "run")
    with rd.lock():
        with pytest.raises(RunDirError, match="is in use by another writer: pid"):
            with rd.lock():
                pass
        assert (rd.path / ".lock").exists()  # the refused second lock left the first one in place
        probe = subprocess.run(
            [sys.executable, "-c", f"from con2.run.rundir import RunDir\nwith RunDir({str(rd.path)!r}).lock(): pass"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert probe.returncode != 0 and "RunDirError" in probe.stderr and "is in use by another writer" in probe.stderr
    assert not rd.path.exists()  # created by the lock, left empty: removed again


def test_lock_removes_leftover_temporaries(tmp_path):
    rd = RunDir(tmp_path)
    leftover = partial_name(rd.checkpoint)
    leftover.write_bytes(b"half a checkpoint")
    with rd.lock():
        assert not leftover.exists()


def test_plan_of_a_run_directory(tmp_path):
    cfg = make_config({"dataset": "digits"})
    other = make_config({"dataset": "digits", "lr": 0.01})
    rd = RunDir(tmp_path)
    assert rd.action(cfg) == TRAIN and rd.stored() is None
    rd.write_config(cfg)
    assert rd.action(other) == TRAIN  # a config without a checkpoint binds nothing
    rd.checkpoint.write_bytes(b"")
    assert rd.action(cfg) == TRAIN  # resume
    with pytest.raises(ConfigError, match=r"holds a checkpoint of another configuration.*lr: 0.001 -> 0.01"):
        rd.action(other)
    assert rd.action(other, replace_stale=True) == REPLACE and rd.action(other, force=True) == TRAIN
    record = build_record(
        dataset="digits",
        normal_class="0",
        method="con2",
        variant="default",
        seed=0,
        labels=np.array([0, 1]),
        scores={"s": np.array([0.0, 1.0])},
        n_train=3,
        config=cfg.to_dict(),
        config_hash=cfg.config_hash(),
    )
    rd.write_record(record)
    assert rd.action(cfg) == COMPLETE and rd.action(cfg, replace_stale=True) == COMPLETE
    with pytest.raises(ConfigError, match="holds a finished run of another configuration"):
        rd.action(other)


def test_config_diff_lists_result_keys_only():
    old = {"lr": 0.001, "device": "cpu", "params": {"temperature": 0.5}}
    new = {"lr": 0.01, "device": "cuda", "params": {"temperature": 0.5, "loss": "context_only"}}
    assert config_diff(old, new) == ["lr: 0.001 -> 0.01", "params.loss: (unset) -> context_only"]


def test_build_record_computes_aurocs_and_refuses_bad_input():
    kw = dict(dataset="d", normal_class="0", method="m", variant="v", seed=1, n_train=4, config={"a": 1})
    record = build_record(
        labels=np.array([0, 0, 1, 1]),
        scores={"s": np.array([0.1, 0.4, 0.35, 0.8])},
        split_seed=0,
        split_sha256="ab",
        batch_size=2,
        scoring={"s": "mean"},
        **kw,
    )
    assert record["metrics"]["auroc"]["s"] == pytest.approx(75.0)
    assert (record["split_seed"], record["split_sha256"], record["batch_size"]) == (0, "ab", 2)
    assert record["scoring"] == {"s": "mean"} and len(record["config_hash"]) == 16
    with pytest.raises(RecordError, match="one class only"):
        build_record(labels=np.array([0, 0]), scores={"s": np.array([0.1, 0.2])}, **kw)
    with pytest.raises(RecordError, match="has shape"):
        build_record(labels=np.array([0, 1]), scores={"s": np.array([0.1])}, **kw)


def test_a_record_counts_its_validation_scores_and_the_file_never_outlives_them(tmp_path):
    """Issue 35: n_val and val_sha256 in the record (validated by the schema), one vector per test
    column or a clear error, and a re-scoring without validation images removes the older file."""
    from con2.run.records import validate_record

    kw = dict(dataset="d", normal_class="0", method="m", variant="v", seed=1, n_train=4, config={"a": 1})
    labels, scores = np.array([0, 0, 1, 1]), {"s": np.array([0.1, 0.4, 0.35, 0.8]), "t": np.zeros(4)}
    record = build_record(
        labels=labels, scores=scores, validation={"s": np.ones(3), "t": np.ones(3)}, val_sha256="cd", **kw
    )
    validate_record(record)
    assert (record["n_val"], record["val_sha256"]) == (3, "cd")
    assert build_record(labels=labels, scores=scores, validation={}, **kw)["n_val"] == 0  # a dataset without val
    assert "n_val" not in build_record(labels=labels, scores=scores, **kw)  # not scored at all (external)
    for bad in ({"s": np.ones(3)}, {"s": np.ones(3), "t": np.ones(2)}, {"s": np.ones((3, 2)), "t": np.ones((3, 2))}):
        with pytest.raises(RecordError, match="validation scores must be one vector per test score column"):
            build_record(labels=labels, scores=scores, validation=bad, **kw)
    rd = RunDir(tmp_path / "run")
    rd.path.mkdir()
    rd.write_validation_scores({"s": np.array([0.5, 0.25]), "t": np.zeros(2)})
    assert rd.validation_scores.read_text().splitlines() == ["index,s,t", "0,0.5,0.0", "1,0.25,0.0"]
    rd.write_validation_scores({})
    assert not rd.validation_scores.exists()


def test_every_record_names_its_cpu(tmp_path, monkeypatch):
    """Issue 19, point 13: identical numbers hold on the same kind of CPU only, so each record
    stores the CPU's model name (the schema's optional `cpu`) beside `precision`."""
    import platform

    import con2.run.provenance as provenance
    from con2.run.records import read_record, write_record

    kw = dict(dataset="d", normal_class="0", method="m", variant="v", seed=1, n_train=4, config={})
    record = build_record(labels=np.array([0, 1]), scores={"s": np.array([0.1, 0.4])}, **kw)
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    names = [ln.split(":", 1)[1].strip() for ln in lines if ln.split(":")[0].strip() == "model name"]
    assert record["cpu"] == (" ".join(names[0].split()) if names else record["cpu"]) and record["cpu"]
    write_record(record, tmp_path / "record.json")  # valid against the schema
    assert read_record(tmp_path / "record.json")["cpu"] == record["cpu"]
    # without /proc/cpuinfo: what `platform` says
    real_open = open

    def no_cpuinfo(file, *args, **kwargs):
        if file == "/proc/cpuinfo":
            raise FileNotFoundError(file)
        return real_open(file, *args, **kwargs)

    provenance.cpu_model.cache_clear()
    monkeypatch.setattr("builtins.open", no_cpuinfo)
    try:
        assert provenance.cpu_model() == (platform.processor() or platform.machine() or "unknown")
    finally:
        monkeypatch.undo()
        provenance.cpu_model.cache_clear()


class NotATensor:
    pass


def test_checkpoints_hold_tensors_only_and_load_with_weights_only(tmp_path):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint({"epoch": 2, "model": {"w": torch.ones(2)}, "betas": (0.9, 0.999), "fingerprint": "x"}, path)
    state = load_checkpoint(path)
    assert state["epoch"] == 2 and torch.equal(state["model"]["w"], torch.ones(2)) and state["betas"] == (0.9, 0.999)
    torch.save({"model": {}, "code": NotATensor()}, path)  # a pickled object: refused, nothing runs
    with pytest.raises(RunDirError, match=rf"checkpoint {path} .*--force"):
        load_checkpoint(path)
    with pytest.raises(FileNotFoundError, match="run `con2 train`"):
        load_checkpoint(tmp_path / "missing.pt")


def test_engine_checkpoints_load_with_weights_only(tiny, tmp_path):
    """What the training loop saves (model, AdamW and cosine-schedule state) loads with weights_only=True."""
    from con2.run.runner import CHECKPOINT, run

    run(make_config(tiny), tmp_path)
    state = load_checkpoint(Path(tmp_path) / CHECKPOINT)
    assert {"epoch", "step", "model", "optimizer", "scheduler", "fingerprint"} <= set(state)
