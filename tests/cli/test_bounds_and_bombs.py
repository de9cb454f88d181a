"""Inputs each within a bound, or none at all, that ended in a traceback or a hang (issue 47, item 12).

Each now stops in one line naming the value and the fix, before any work: a cost plan of 10**400 epochs
or training images (``OverflowError``), ``csi_views=100000`` (trained, then failed at scoring), sizes
that together exceed the memory (the allocator's traceback, now one line keeping the checkpoint), a
scores bundle that is a gzip bomb or of the wrong shape (6.4 GB of memory; ``AttributeError``), a
300-character ``data_dir`` (a 39-line Snakemake traceback) and an unknown profile key (918 lines).
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest
import yaml
from conftest import TINY

import con2.run.execute as execute
from con2.aggregate import bundle as S
from con2.cli.main import main
from con2.grid.checks import GridError, check_profile_schema

ROOT = Path(__file__).resolve().parents[2]
TEST_PROFILE = ROOT / "workflow/config/test.yaml"
TINY_SET = [f"{k}={v}" for k, v in TINY.items()]


def one_line(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("con2: error: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def test_a_plan_of_10_to_the_400_epochs_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = yaml.safe_load(TEST_PROFILE.read_text())
    profile["run"] = {**profile.get("run", {}), "epochs": 10**400}
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(profile))
    assert main(["plan", "--configfile", str(path)]) == 2
    err = one_line(capsys, "config key 'epochs' must be at most 1,000,000", "(401 characters)")
    assert len(err) < 600


def test_a_training_set_size_of_10_to_the_400_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sizes = tmp_path / "sizes.csv"
    sizes.write_text(f"dataset,normal_class,n_train,source\ndigits,*,{10**400},typo\n")
    assert main(["plan", "--configfile", str(TEST_PROFILE), "--sizes", str(sizes)]) == 2
    one_line(capsys, "column n_train is", "not a positive finite whole number")


def test_csi_views_beyond_the_bound_is_refused_before_training(tmp_path: Path, capsys) -> None:
    assert main(["train", "--set", *TINY_SET, "method=csi", "csi_views=100000", "--run-dir", str(tmp_path / "r")]) == 2
    one_line(capsys, "config key 'csi_views' must be at most 1024", "Fix: --set csi_views=10")
    assert not (tmp_path / "r").exists()


def test_running_out_of_memory_is_one_line_naming_the_sizes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def allocator_fails(*args: object, **kwargs: object) -> None:  # what the CPU allocator raises
        raise RuntimeError(
            "[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: you tried to allocate "
            "1099511627776 bytes.\nmore lines of C++ context"
        )

    monkeypatch.setattr(execute, "fit", allocator_fails)
    assert main(["train", "--set", *TINY_SET, "--run-dir", str(tmp_path / "r")]) == 2
    one_line(capsys, "training ran out of memory", "image_size=16, width=4, batch_size=32", "Fix: lower batch_size")


def test_another_runtime_error_is_not_called_a_memory_problem(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    def bug(*args: object, **kwargs: object) -> None:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")

    monkeypatch.setattr(execute, "fit", bug)
    from con2.config import make_config
    from con2.run.runner import run

    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        run(make_config(TINY), tmp_path / "r")


def test_a_gzip_bomb_bundle_is_refused_within_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S, "BUNDLE_FLOOR", 2**20)  # the bound at 1 MiB, so the bomb can be small
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = squeeze.compress(b'{"format": 1, "runs": {' + b" " * (64 * 2**20)) + squeeze.flush()
    assert len(bomb) * S.BUNDLE_RATIO < 64 * 2**20  # it expands far beyond 50 times its size
    (tmp_path / "scores.json.gz").write_bytes(bomb)
    with pytest.raises(ValueError, match=r"is no scores bundle \(it expands beyond [\d,]+ bytes, 50 times its size\)"):
        S.ScoresBundle.read(tmp_path / "scores.json.gz")


@pytest.mark.parametrize(
    "runs",
    [{"r": "text"}, {"r": {"scores.csv": 5}}, {"r": {"curve": [1]}}, {"r": {"validation_scores.csv": ["x"]}}],
    ids=["entry-text", "scores-number", "curve-list", "validation-list"],
)
def test_a_bundle_of_the_wrong_shape_is_one_line(tmp_path: Path, runs: dict) -> None:
    path = tmp_path / "scores.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"format": 1, "runs": runs}).encode()))
    with pytest.raises(ValueError, match=r"is no scores bundle \(its entry 'r' is not score files' text\)"):
        S.ScoresBundle.read(path)


def test_a_data_dir_the_file_system_cannot_hold_is_one_line(tmp_path: Path) -> None:
    from test_workflow_session import profile

    from con2.workflow.session import Session

    with pytest.raises(GridError, match=r"holds a folder name of 300 bytes.*Fix: pass a shorter data_dir"):
        Session(profile(tmp_path / ("d" * 300)), ROOT, lambda: [], lambda: {})


def test_an_unknown_profile_key_is_one_line_naming_it() -> None:
    profile = {**yaml.safe_load(TEST_PROFILE.read_text()), "bogus_key": 1}
    with pytest.raises(GridError) as info:
        check_profile_schema(profile, ROOT / "workflow/schemas/config.schema.yaml")
    assert "\n" not in str(info.value) and "'bogus_key' was unexpected" in str(info.value)
    check_profile_schema(yaml.safe_load(TEST_PROFILE.read_text()), ROOT / "workflow/schemas/config.schema.yaml")
