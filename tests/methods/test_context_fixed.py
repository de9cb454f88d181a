"""CON2 (Best) chooses its context once, before training (issue 32, item 4): the checkpoint keeps the
choice, and a resume or a re-scoring (``con2 evaluate``) takes it from there, whatever the data
would choose now; and ``con2 contexts`` refuses what it cannot measure (items 12 and 15).

"Data that would choose another context" (another ``data_dir``, another copy of the data) is made by
replacing the measurement CON2 uses with one that answers another context: a run that chose again
would record that context and train or score with it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import TINY
from test_hostile_inputs import assert_one_line, cli
from test_resume_data import killed_after_epoch_1

import con2.methods.con2_method as con2_method
from con2.config import MAX_IMAGE_SIZE, MAX_SEED, make_config
from con2.errors import ConfigError
from con2.methods import contexts as C
from con2.methods.registry import build_method
from con2.run.runner import CHECKPOINT, SCORES, rescore, run
from con2.training.checkpoints import load_checkpoint, save_checkpoint

BEST = {**TINY, "params": {"contexts": ["best"]}}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One uninterrupted CON2 (Best) run (the real choice on digits 0 at 16 px): its folder and record."""
    rd = tmp_path_factory.mktemp("best") / "trained"
    return rd, run(make_config(BEST), rd)


def other_choice(record: dict[str, Any]) -> dict[str, Any]:
    """A choice of another context than ``record``'s: what other data would give."""
    chosen = record["metrics"]["chosen_context"]
    other = next(c for c in ("invert", "flip", "equalize") if c != chosen)
    return {**record["metrics"]["context_choice"], "context": other}


@pytest.fixture
def data_would_choose_another(monkeypatch: pytest.MonkeyPatch, trained) -> list[str]:
    """From here on a choice from the training images answers another context; returns the contexts it gave."""
    given: list[str] = []
    choice = other_choice(trained[1])

    def choose(x: np.ndarray, seed: int = 0) -> dict[str, Any]:
        given.append(choice["context"])
        return choice

    monkeypatch.setattr(con2_method, "choose_context", choose)
    return given


def test_the_checkpoint_keeps_the_choice(trained) -> None:
    rd, record = trained
    kept = load_checkpoint(rd / CHECKPOINT).get("context_choice")
    assert kept is not None, "the checkpoint keeps no context_choice"
    assert record["metrics"]["chosen_context"] in ("invert", "flip", "equalize")
    assert json.loads(kept) == record["metrics"]["context_choice"]


@pytest.mark.parametrize("where", ["in_place", "out"])
def test_evaluate_scores_with_the_trained_context(trained, data_would_choose_another, tmp_path, where) -> None:
    rd, record = trained
    if where == "in_place":  # con2 evaluate --run-dir R (the same settings: the same scores)
        target, weights = tmp_path / "copy", None
        target.mkdir()
        for name in (CHECKPOINT, "config.yaml"):
            (target / name).write_bytes((rd / name).read_bytes())
    else:  # con2 evaluate --run-dir R --out O
        target, weights = tmp_path / "out", rd / CHECKPOINT
    again = rescore(make_config(BEST), target, weights)
    assert data_would_choose_another == [], "evaluate chose the context again"
    assert again["metrics"]["chosen_context"] == record["metrics"]["chosen_context"]
    assert again["metrics"]["context_choice"] == record["metrics"]["context_choice"]
    assert again["metrics"]["auroc"] == record["metrics"]["auroc"]
    assert (target / SCORES).read_bytes() == (rd / SCORES).read_bytes()


def test_a_resume_keeps_the_trained_context(trained, data_would_choose_another, tmp_path, monkeypatch) -> None:
    rd, record = trained
    resumed_dir = tmp_path / "resumed"
    monkeypatch.setattr(con2_method, "choose_context", C.choose_context)  # the first session: the real data
    killed_after_epoch_1(make_config(BEST), resumed_dir, monkeypatch)
    choice = other_choice(record)
    monkeypatch.setattr(con2_method, "choose_context", lambda x, seed=0: choice)  # the data now choose another
    resumed = run(make_config(BEST), resumed_dir)
    assert resumed["resumed_from_epoch"] == 1
    assert resumed["metrics"]["chosen_context"] == record["metrics"]["chosen_context"]
    assert resumed["metrics"]["auroc"] == record["metrics"]["auroc"]
    kept = json.loads(load_checkpoint(resumed_dir / CHECKPOINT)["context_choice"])
    assert kept["context"] == record["metrics"]["chosen_context"]


def test_a_damaged_kept_choice_is_refused_naming_the_fix() -> None:
    method = build_method(make_config(BEST))
    with pytest.raises(ConfigError, match=r"context_choice is damaged.*Fix: restore the checkpoint"):
        method.restore_fixed_state({"context_choice": '{"context": "sideways"}'})


# ------------------------------------------------------------------ items 12 and 15: `con2 contexts` refusals
@pytest.mark.parametrize(
    "args, needles",
    [
        (["--size", "100000"], ["--size 100000", f"1..{MAX_IMAGE_SIZE}", "Fix: --size 224 or smaller"]),
        (["--size", "0"], ["--size 0", "Fix: --size 224"]),
        (["--seed", "-1"], ["--seed -1", f"0..{MAX_SEED}", "Fix: --seed 0"]),
        (["--seed", str(MAX_SEED + 1)], [f"--seed {MAX_SEED + 1}", "Fix: --seed 0"]),
    ],
)
def test_con2_contexts_refuses_a_size_or_seed_out_of_range(tmp_path: Path, args: list[str], needles) -> None:
    assert_one_line(cli("contexts", "--dataset", "digits", "--normal-class", "0", *args, cwd=tmp_path), *needles)


def constant_breastmnist(data_dir: Path, value: int) -> Path:
    """A BreastMNIST-shaped npz whose every image is the one grey ``value`` (28 px)."""
    arrays: dict[str, Any] = {}
    for split, n in (("train", 24), ("val", 8), ("test", 8)):
        arrays[f"{split}_images"] = np.full((n, 28, 28), value, np.uint8)
        arrays[f"{split}_labels"] = (np.arange(n) % 2).astype(np.uint8)[:, None]
    path = data_dir / "medmnist" / "breastmnist.npz"
    path.parent.mkdir(parents=True)
    np.savez_compressed(path, **arrays)
    return path


def test_the_alignment_of_constant_images_is_undefined_and_no_context_is_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from con2.cli.main import main

    x = np.full((12, 1, 16, 16), 0.3, np.float32)
    assert np.isnan(C.measure_context(x, "invert")["alignment"])
    with pytest.raises(C.NoBasisToChoose, match="no basis to choose a context: undefined invert alignment"):
        C.choose_context(x)

    constant_breastmnist(tmp_path / "data", 77)
    monkeypatch.setenv("CON2_CACHE_DIR", str(tmp_path / "cache"))
    argv = ["contexts", "--dataset", "breastmnist", "--data-dir", str(tmp_path / "data"), "--size", "28"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("con2: error: breastmnist normal class 1: the data give no basis")
    assert "Fix: set the context explicitly (params.contexts: [invert]" in lines[0]
    assert "undefined" in out and "<- chosen" not in out and "0.000" not in out


def test_con2_best_on_constant_images_is_a_config_error_naming_the_fix() -> None:
    import torch

    method = build_method(make_config(BEST))
    with pytest.raises(ConfigError, match=r"no basis to choose a context.*Fix: set the context"):
        method.prepare(torch.full((12, 1, 16, 16), 77, dtype=torch.uint8))


def test_a_checkpoint_of_an_older_con2_is_scored_after_choosing_again_with_a_note(
    trained, data_would_choose_another, tmp_path, capsys
) -> None:
    """A checkpoint written before con2 kept the choice: the only basis left is the data, and the note says so."""
    rd, record = trained
    old = tmp_path / "old"
    old.mkdir()
    (old / "config.yaml").write_bytes((rd / "config.yaml").read_bytes())
    state = load_checkpoint(rd / CHECKPOINT)
    del state["context_choice"]
    save_checkpoint(state, old / CHECKPOINT)
    again = rescore(make_config(BEST), old)
    assert data_would_choose_another == [other_choice(record)["context"]]
    assert again["metrics"]["chosen_context"] == data_would_choose_another[0]
    note = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note: ")]
    assert note == [
        f"note: checkpoint {old / CHECKPOINT} predates con2 keeping context_choice; decided again from this run's "
        f"training images (context_choice: {data_would_choose_another[0]})"
    ]
