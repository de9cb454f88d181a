"""Issue 25, points 2, 4, 5 and 6: a run directory and the data a run scores cannot be turned against the user.

Each case ends in ONE ``con2: error:`` line (exit 2) naming the problem and the fix, and leaves what was
already there byte for byte as it was:

* a run file or the ``.lock`` that is a symbolic link (or a hard link) is refused; its target is untouched;
* ``con2 evaluate --out`` onto a folder holding a run's files, or onto the run directory itself, is refused,
  naming a free folder;
* ``con2 evaluate`` of a checkpoint trained with another configuration than its ``config.yaml`` is refused
  (the checkpoint stores its configuration); older checkpoints are checked by their config hash, or evaluated
  with a note when they carry none;
* a test split with fewer than 5 anomalous or normal images is refused before training; a prepared cache
  edited in place (size and mtime kept) is noticed by its sha256 when a new run loads it, and prepared again.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from conftest import TINY
from data_fixtures import write_medmnist_npz
from test_cli_errors import one_error_line  # the one `con2: error:` line, as the CLI error tests read it

from con2.cli.main import free_folder, main
from con2.config import load_config
from con2.data.rundata import MIN_TEST_PER_CLASS, load_run_data
from con2.run.rundir import CHECKPOINT, CONFIG, LOCK, RECORD, RUN_FILES

TINY_SET = [f"{k}={json.dumps(v)}" for k, v in TINY.items()]


def train(run_dir: Path, *overrides: str) -> int:
    return main(["train", "--set", *TINY_SET, *overrides, "--run-dir", str(run_dir)])


def evaluate(run_dir: Path, *args: str) -> int:
    return main(["evaluate", "--run-dir", str(run_dir), *args])


def assert_refused(code: int, capsys: pytest.CaptureFixture, *needles: str) -> str:
    line = one_error_line(capsys)
    assert code == 2, line
    assert line.count("Fix: ") == 1, line
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


def contents(folder: Path) -> dict[str, bytes | str]:
    """Every entry of ``folder``: a file's bytes, a link's target."""
    return {
        p.name: (f"-> {os.readlink(p)}" if p.is_symlink() else p.read_bytes())
        for p in sorted(folder.iterdir())
        if not p.is_dir()
    }


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tiny run (the tests copy it before changing anything)."""
    path = tmp_path_factory.mktemp("finished") / "run"
    assert train(path) == 0
    return path


def copy_of(run_dir: Path, dest: Path) -> Path:
    shutil.copytree(run_dir, dest)
    return dest


# --------------------------------------------------------------------------- point 2: links in a run directory


def test_a_symlinked_lock_is_refused_and_its_target_untouched(tmp_path, capsys):
    """The repro: `ln -s victim.txt R/.lock; con2 train --run-dir R` replaced victim.txt with the lock's JSON."""
    run_dir, victim = tmp_path / "R", tmp_path / "victim.txt"
    run_dir.mkdir()
    victim.write_text("keep\n")
    (run_dir / LOCK).symlink_to(victim)
    line = assert_refused(
        train(run_dir), capsys, f"{run_dir / LOCK} is a symbolic link (to {victim})", f"`rm {run_dir / LOCK}`"
    )
    assert f"{victim} is untouched" in line
    assert victim.read_text() == "keep\n" and (run_dir / LOCK).is_symlink()
    assert sorted(p.name for p in run_dir.iterdir()) == [LOCK]  # nothing else was written


def test_a_dangling_symlinked_lock_creates_no_file_at_its_target(tmp_path, capsys):
    run_dir, target = tmp_path / "R", tmp_path / "elsewhere" / "planted"
    run_dir.mkdir()
    target.parent.mkdir()
    (run_dir / LOCK).symlink_to(target)
    assert_refused(train(run_dir), capsys, f"{run_dir / LOCK} is a symbolic link (to {target})")
    assert not target.exists()


def test_a_hard_linked_lock_is_refused_and_the_other_file_untouched(tmp_path, capsys):
    run_dir, victim = tmp_path / "R", tmp_path / "victim.txt"
    run_dir.mkdir()
    victim.write_text("keep\n")
    os.link(victim, run_dir / LOCK)
    assert_refused(train(run_dir), capsys, f"{run_dir / LOCK} is hard-linked to another file", "Fix: remove it")
    assert victim.read_text() == "keep\n"


def test_a_lock_that_is_a_folder_is_one_line(tmp_path, capsys):
    run_dir = tmp_path / "R"
    (run_dir / LOCK).mkdir(parents=True)
    assert_refused(train(run_dir), capsys, f"{run_dir / LOCK} is not a regular file", "Fix: remove it")
    assert (run_dir / LOCK).is_dir()


@pytest.mark.parametrize("name", [CHECKPOINT, RECORD, CONFIG])
def test_train_refuses_a_symlinked_run_file_and_leaves_its_target(name, finished_run, tmp_path, capsys):
    """A link to another run's file (here: the finished run's own) would make this run resume from, or be judged
    complete by, a file elsewhere; the target keeps its bytes."""
    run_dir = tmp_path / "R"
    run_dir.mkdir()
    target = copy_of(finished_run, tmp_path / "other") / name
    before = target.read_bytes()
    (run_dir / name).symlink_to(target)
    assert_refused(train(run_dir), capsys, f"{run_dir / name} is a symbolic link (to {target})", "Fix: remove the link")
    assert target.read_bytes() == before
    assert contents(run_dir) == {name: f"-> {target}"}


@pytest.mark.parametrize("name", [CHECKPOINT, RECORD])
def test_evaluate_refuses_a_symlinked_run_file(name, finished_run, tmp_path, capsys):
    run_dir = copy_of(finished_run, tmp_path / "R")
    victim = tmp_path / "victim.bin"
    shutil.move(run_dir / name, victim)
    before = victim.read_bytes()
    (run_dir / name).symlink_to(victim)
    listing = contents(run_dir)
    assert_refused(evaluate(run_dir), capsys, f"{run_dir / name} is a symbolic link (to {victim})")
    assert victim.read_bytes() == before and contents(run_dir) == listing


# --------------------------------------------------------------------------- point 4: evaluate --out


def test_evaluate_out_onto_another_finished_run_is_refused_naming_a_free_folder(finished_run, tmp_path, capsys):
    """The issue's repro: `--out` another method's finished run replaced its checkpoint and record, exit 0."""
    other = copy_of(finished_run, tmp_path / "simclr" / "default" / "seed0")
    before = contents(other)
    line = assert_refused(
        evaluate(finished_run, "--set", "tta=0", "--out", str(other)),
        capsys,
        f"--out {other} already holds record.json, checkpoint.pt, scores.csv",
        f"e.g. --out {other}-2",
    )
    assert "features.npz" in line and "config.yaml" in line
    assert contents(other) == before and not (tmp_path / "simclr" / "default" / "seed0-2").exists()


@pytest.mark.parametrize("name", RUN_FILES)
def test_evaluate_out_holding_any_one_run_file_is_refused(name, finished_run, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_text("someone's\n")
    assert_refused(evaluate(finished_run, "--out", str(out)), capsys, f"--out {out} already holds {name} (")
    assert contents(out) == {name: b"someone's\n"}


@pytest.mark.parametrize("spelling", ["same", "dot", "link"])
def test_evaluate_out_equal_to_the_run_directory_is_refused(spelling, finished_run, tmp_path, capsys):
    run_dir = copy_of(finished_run, tmp_path / "seed0")
    before = contents(run_dir)
    out = {"same": str(run_dir), "dot": f"{run_dir}/.", "link": str(tmp_path / "alias")}[spelling]
    if spelling == "link":
        (tmp_path / "alias").symlink_to(run_dir)
    line = assert_refused(
        evaluate(run_dir, "--set", "tta=0", "--out", out),
        capsys,
        "is the run directory itself",
        "would replace its record.json and config.yaml",
        f"e.g. --out {tmp_path / 'seed0-rescored'}",
    )
    assert "already holds" not in line
    assert contents(run_dir) == before


def test_evaluate_out_into_an_empty_folder_works_and_a_second_time_is_refused(finished_run, tmp_path, capsys):
    out = tmp_path / "rescored"
    out.mkdir()
    assert evaluate(finished_run, "--set", "tta=0", "--out", str(out)) == 0
    capsys.readouterr()
    first = contents(out)
    assert RECORD in first and CHECKPOINT in first
    assert_refused(evaluate(finished_run, "--set", "tta=0", "--out", str(out)), capsys, f"e.g. --out {out}-2")
    assert contents(out) == first
    assert evaluate(out, "--set", "tta=2", "--out", str(tmp_path / "again")) == 0  # a re-scoring re-scores


def test_free_folder_skips_folders_with_anything_in_them(tmp_path):
    base = tmp_path / "out"
    assert free_folder(base) == base
    base.mkdir()
    assert free_folder(base) == base  # empty: free
    (base / "x").write_text("")
    (tmp_path / "out-2").mkdir()
    assert free_folder(base) == tmp_path / "out-2"
    (tmp_path / "out-2" / "y").write_text("")
    (tmp_path / "out-3").write_text("a file")
    assert free_folder(base) == tmp_path / "out-4"


# --------------------------------------------------------------------------- point 5: the checkpoint's configuration


def swap_contexts(run_dir: Path) -> None:
    """Make ``config.yaml`` describe the flip variant while the checkpoint holds the invert one (same shapes)."""
    cfg = yaml.safe_load((run_dir / CONFIG).read_text())
    assert "contexts" not in cfg["params"]  # the default: invert
    cfg["params"]["contexts"] = ["flip"]
    cfg["variant"] = "flip"
    (run_dir / CONFIG).write_text(yaml.safe_dump(cfg, sort_keys=False))


def test_the_checkpoint_stores_the_configuration_it_was_trained_with(finished_run):
    state = torch.load(finished_run / CHECKPOINT, weights_only=True)
    cfg = load_config(finished_run / CONFIG)
    assert state["fingerprint"] == cfg.config_hash()
    stored = json.loads(state["config"])
    assert stored == {k: v for k, v in cfg.to_dict().items() if k in stored} and stored["width"] == TINY["width"]
    assert "data_dir" not in stored and "threads" not in stored  # runtime keys stay out


def test_evaluate_refuses_a_checkpoint_of_another_configuration(finished_run, tmp_path, capsys):
    """The issue's repro: a copy of the invert run with the flip run's checkpoint wrote a record that said
    con2/invert, exit 0 (`con2 train` refuses the same case)."""
    run_dir = copy_of(finished_run, tmp_path / "R")
    swap_contexts(run_dir)
    before = contents(run_dir)
    out = tmp_path / "out"
    line = assert_refused(
        evaluate(run_dir, "--set", "tta=0", "--out", str(out)),
        capsys,
        f"checkpoint {run_dir / CHECKPOINT} was trained with another configuration than {run_dir / CONFIG}",
        "differing keys: params.contexts: (unset) -> ['flip']; variant: default -> flip",
        "evaluate the run directory that trained it",
    )
    assert "tta" not in line.split("differing keys: ")[1].split(". Fix")[0]  # a scoring key is no difference
    assert not out.exists()
    assert evaluate(run_dir) == 2  # in place: nothing is rewritten either
    one_error_line(capsys)
    assert contents(run_dir) == before
    assert train(run_dir, "params.contexts=[flip]", "variant=flip") == 2  # as con2 train refuses it
    one_error_line(capsys)


def old_checkpoint(run_dir: Path, keep_fingerprint: bool) -> None:
    """Rewrite ``run_dir``'s checkpoint as an older con2 wrote it: no ``config`` (and no ``fingerprint``)."""
    state = torch.load(run_dir / CHECKPOINT, weights_only=True)
    del state["config"]
    if not keep_fingerprint:
        del state["fingerprint"]
    torch.save(state, run_dir / CHECKPOINT)


def test_an_old_checkpoint_with_its_config_hash_still_evaluates(finished_run, tmp_path, capsys):
    run_dir = copy_of(finished_run, tmp_path / "R")
    old_checkpoint(run_dir, keep_fingerprint=True)
    assert evaluate(run_dir, "--set", "tta=0", "--out", str(tmp_path / "out")) == 0
    assert "note:" not in capsys.readouterr().out


def test_an_old_checkpoint_whose_config_hash_differs_is_refused(finished_run, tmp_path, capsys):
    run_dir = copy_of(finished_run, tmp_path / "R")
    old_checkpoint(run_dir, keep_fingerprint=True)
    swap_contexts(run_dir)
    trained = load_config(finished_run / CONFIG).config_hash()
    assert_refused(
        evaluate(run_dir, "--out", str(tmp_path / "out")),
        capsys,
        f"checkpoint {run_dir / CHECKPOINT} has config hash {trained}, {run_dir / CONFIG} "
        f"{load_config(run_dir / CONFIG).config_hash()} (another configuration",
    )
    assert not (tmp_path / "out").exists()


def test_an_old_checkpoint_without_a_config_hash_evaluates_with_a_note(finished_run, tmp_path, capsys):
    run_dir = copy_of(finished_run, tmp_path / "R")
    old_checkpoint(run_dir, keep_fingerprint=False)
    assert evaluate(run_dir, "--out", str(tmp_path / "out")) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")]
    assert notes == [
        f"note: checkpoint {run_dir / CHECKPOINT} carries no config hash (an older con2 or another program wrote "
        f"it): only that its weights fit the model {run_dir / CONFIG} describes is checked"
    ]
    assert (tmp_path / "out" / RECORD).is_file()


# --------------------------------------------------------------------------- point 6: the test split and its cache


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CON2_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


BREAST = ["dataset=breastmnist", "image_size=28", "batch_size=8"]


@pytest.mark.parametrize(
    "test_counts,counts_text",
    [
        ([1, 20], "holds 1 anomalous and 20 normal image(s)"),  # the case: AUROC 95.6 from one anomaly
        ([4, 20], "holds 4 anomalous and 20 normal image(s)"),
        ([20, 4], "holds 20 anomalous and 4 normal image(s)"),
    ],
)
def test_a_test_split_with_too_few_of_a_kind_is_refused_before_training(
    test_counts, counts_text, cache, tmp_path, capsys
):
    # BreastMNIST: normal class 1 (benign), anomalies are class 0
    write_medmnist_npz(tmp_path / "data" / "breastmnist.npz", {"train": [10, 20], "val": [1, 1], "test": test_counts})
    run_dir = tmp_path / "run"
    line = assert_refused(
        train(run_dir, *BREAST, f"data_dir={tmp_path / 'data'}"),
        capsys,
        f"breastmnist: the test split of normal class 1 {counts_text}",
        f"fewer than {MIN_TEST_PER_CLASS} of either is noise",
        "Fix: add test images to that copy of breastmnist (at least 5 of each kind), or choose another normal class",
    )
    assert "points)" in line
    assert not run_dir.exists()


def test_five_of_each_kind_is_enough(cache, tmp_path, tiny):
    write_medmnist_npz(tmp_path / "data" / "breastmnist.npz", {"train": [10, 20], "val": [1, 1], "test": [5, 5]})
    cfg = load_config(None, [*BREAST, f"data_dir={tmp_path / 'data'}"])
    data = load_run_data(cfg)
    assert (data.n_anomalous, data.n_normal_test) == (5, 5)


def edit_in_place_keeping_mtime(path: Path) -> None:
    """Change one pixel of ``path`` in place, keeping its size and mtime (what the cache's quick check sees)."""
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(st.st_size - 1)
        last = fh.read(1)
        fh.seek(st.st_size - 1)
        fh.write(bytes([last[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_size == st.st_size


def test_a_cache_edited_in_place_is_prepared_again_for_a_new_run(cache, tmp_path, capsys):
    write_medmnist_npz(tmp_path / "data" / "breastmnist.npz", {"train": [10, 20], "val": [1, 1], "test": [6, 7]})
    cfg = load_config(None, [*BREAST, f"data_dir={tmp_path / 'data'}"])
    clean = np.array(load_run_data(cfg).test)
    images = cache / "breastmnist" / "28px" / "images.npy"
    edit_in_place_keeping_mtime(images)
    capsys.readouterr()
    assert not np.array_equal(np.array(load_run_data(cfg).test), clean)  # a resume trusts size and mtime
    assert capsys.readouterr().out == ""
    again = load_run_data(cfg, verify=True)  # a new run checks the sha256
    assert np.array_equal(np.array(again.test), clean)
    out = capsys.readouterr().out
    assert f"breastmnist: the prepared {images} disagrees with the sha256 of its manifest" in out
    assert "preparing it again from the source" in out


def test_con2_train_of_a_new_run_checks_the_cache(cache, tmp_path, capsys):
    """Through the command: an edited cache under the same split_sha256 no longer changes a new run's AUROC."""
    write_medmnist_npz(tmp_path / "data" / "breastmnist.npz", {"train": [10, 20], "val": [1, 1], "test": [6, 7]})
    overrides = [*BREAST, f"data_dir={tmp_path / 'data'}", "epochs=1", "tta=0"]
    assert train(tmp_path / "a", *overrides) == 0
    edit_in_place_keeping_mtime(cache / "breastmnist" / "28px" / "images.npy")
    capsys.readouterr()
    assert train(tmp_path / "b", *overrides) == 0
    assert "disagrees with the sha256 of its manifest" in capsys.readouterr().out
    a, b = (json.loads((tmp_path / r / RECORD).read_text()) for r in ("a", "b"))
    assert a["split_sha256"] == b["split_sha256"] and a["metrics"] == b["metrics"]
