"""Issue 16's bad inputs through the command line: each ends in ONE ``con2: error:`` line, exit 2,
naming the problem and the fix, and leaves nothing behind.

Every case runs ``con2.cli.main`` in-process (the function behind ``con2``); the few that need a
trained model share one tiny finished run. Cases: malformed or dangerous YAML (overrides, config
files, a run directory's files), out-of-range values, booleans where numbers go, MedMNIST files
whose labels or image sizes are wrong, unreadable data, ``con2 evaluate --set`` keys that would
change the model, a checkpoint that does not fit its config, and scoring passes that would run
for hours.
"""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import TINY

from con2.cli.main import evaluate_overrides, main
from con2.config import EVALUATE_RUNTIME_KEYS, MAX_TTA, SCORING_KEYS
from con2.errors import ConfigError
from con2.run.execute import MAX_NN_BLOCKS, MAX_SCORING_BATCHES, scoring_work
from con2.run.rundir import CHECKPOINT, CONFIG, RECORD

TINY_SET = [f"{k}={json.dumps(v)}" for k, v in TINY.items()]


def train(run_dir: Path, *overrides: str, config: Path | None = None) -> int:
    """``con2 train`` with the tiny digits config plus ``overrides``; returns the exit status."""
    extra = ["--config", str(config)] if config is not None else []
    return main(["train", *extra, "--set", *TINY_SET, *overrides, "--run-dir", str(run_dir)])


def one_error_line(capsys: pytest.CaptureFixture) -> str:
    """The one ``con2: error:`` line the command printed (and nothing else on stderr)."""
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("con2: error: ") and "Traceback" not in err, err
    return lines[0]


def assert_refused(code: int, capsys: pytest.CaptureFixture, *needles: str) -> str:
    line = one_error_line(capsys)
    assert code == 2, line
    assert "Fix: " in line, line
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tiny run directory (the tests copy it before changing anything)."""
    path = tmp_path_factory.mktemp("finished") / "run"
    assert train(path) == 0
    return path


def copy_of(run_dir: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "run"
    shutil.copytree(run_dir, dest)
    return dest


# ------------------------------------------------------------------ values (issue 16, cases 11, 12, 14, 15, 16)

VALUE_CASES = [
    (["epochs=[1"], ["override 'epochs=[1': the value is not valid YAML (line 1, column 3", "plain YAML value"]),
    (["x=!!python/object:os.system"], ["YAML tags that build Python objects (!!python/...) are refused"]),
    (["lr=-1"], ["'lr' must be > 0", "got -1.0", "Fix: --set lr=0.001"]),
    (["lr=0"], ["'lr' must be > 0", "got 0.0"]),
    (["lr=.nan"], ["'lr': nan is not a finite number", "Fix: write a number (the default is 0.001)"]),
    (["weight_decay=-1"], ["'weight_decay' must be >= 0", "Fix: --set weight_decay=0.001"]),
    (["lh_ridge=.nan"], ["'lh_ridge': nan is not a finite number"]),
    (["lh_ridge=-1"], ["'lh_ridge' must be >= 0", "Fix: --set lh_ridge=0.01"]),
    (["jitter_p=5"], ["'jitter_p' must be a probability in [0, 1], got 5.0", "Fix: --set jitter_p=0.8"]),
    (["grayscale_p=-2"], ["'grayscale_p' must be a probability in [0, 1], got -2.0", "Fix: --set grayscale_p=0.2"]),
    (["jitter=[0.4,0.4,0.4,0.9]"], ["'jitter' must be [brightness, contrast, saturation, hue]", "hue in [0, 0.5]"]),
    (["betas=[0.9,1.5]"], ["'betas' must be two numbers in [0, 1)"]),
    (["threads=0"], ["'threads' must be >= 1 (or null: torch's default), got 0", "Fix: --set threads=1"]),
    (["checkpoint_every=-5"], ["'checkpoint_every' must be >= 0 epochs", "Fix: --set checkpoint_every=1"]),
    (["checkpoint_seconds=-1"], ["'checkpoint_seconds' must be >= 0 seconds"]),
    (
        ["epochs=true"],
        ["'epochs': True is a boolean, not a valid int", "Fix: write a whole number (the default is 2048)"],
    ),
    (["lr=true"], ["'lr': True is a boolean, not a valid float"]),
    (["dataset=no"], ["'dataset': False is a boolean", "quote a name, e.g. 'no'"]),
    (["seed=-1"], ["'seed' must be in 0..4294967295", "Fix: --set seed=0"]),
    (["tta_seed=-3"], ["'tta_seed' must be in 0..4294967295"]),
    (["tta=2000000"], [f"'tta' must be at most {MAX_TTA}", "Fix: --set tta=40 (the paper's)"]),
    (["data_size=0"], ["'data_size' must be > 0"]),
    (["params.temperature=.nan"], ["'params.temperature': nan is not a finite number"]),
]


@pytest.mark.parametrize("overrides,needles", VALUE_CASES, ids=[" ".join(c[0]) for c in VALUE_CASES])
def test_bad_value_is_one_error_line(overrides, needles, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert_refused(train(run_dir, *overrides), capsys, *needles)
    assert not run_dir.exists()  # refused before anything was written


# --------------------------------------------------------------------------- config files (case 11)

CONFIG_FILES = {
    "malformed": (b"epochs: 2\nlr: [0.1\n", ["is not valid YAML (line 3, column 1", "Fix: correct that line"]),
    "binary": (bytes(range(256)) * 4, ["is not a YAML text file (byte 128 is not UTF-8)"]),
    "python-tag": (b"epochs: !!python/object/apply:os.system ['touch PWNED']\n", ["YAML tags that build Python"]),
    "a list": (b"- epochs: 2\n", ["must hold a mapping of keys to values, not a list"]),
}


@pytest.mark.parametrize("kind", list(CONFIG_FILES))
def test_bad_config_file_is_one_error_line(kind, tmp_path, capsys, monkeypatch):
    content, needles = CONFIG_FILES[kind]
    config = tmp_path / "run.yaml"
    config.write_bytes(content)
    monkeypatch.chdir(tmp_path)
    line = assert_refused(train(tmp_path / "run", config=config), capsys, f"config file {config} ", *needles)
    assert not (tmp_path / "run").exists() and not (tmp_path / "PWNED").exists(), line


def test_the_con2_program_prints_the_same_single_line(tmp_path):
    """Through a real process (``python -m con2``): exit 2 and one stderr line, no traceback."""
    config = tmp_path / "bad.yaml"
    config.write_bytes(b"epochs: !!python/object/apply:os.system ['touch PWNED']\n")
    for args in (["--set", "epochs=[1"], ["--config", str(config)]):
        res = subprocess.run(
            [sys.executable, "-m", "con2", "train", *args, "--run-dir", str(tmp_path / "run")],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr
        assert res.stderr.startswith("con2: error: ") and "Fix: " in res.stderr
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "run").exists()


def test_run_directory_that_is_a_file(tmp_path, capsys):
    not_a_dir = tmp_path / "run"
    not_a_dir.write_text("")
    assert_refused(train(not_a_dir), capsys, f"run directory {not_a_dir} is a file, not a folder")
    assert_refused(
        train(not_a_dir / "seed0"), capsys, f"{not_a_dir / 'seed0'} cannot be created: {not_a_dir} is a file"
    )
    assert not_a_dir.read_text() == ""


def test_binary_record_is_one_error_line(finished_run, tmp_path, capsys):
    run_dir = copy_of(finished_run, tmp_path)
    (run_dir / RECORD).write_bytes(b"\x80\x81\xfe\xff" * 64)
    assert_refused(train(run_dir), capsys, f"{run_dir / RECORD}: not a text file", "rerun with --force")
    assert (run_dir / RECORD).read_bytes() == b"\x80\x81\xfe\xff" * 64  # nothing touched


def test_malformed_config_beside_a_checkpoint_is_one_error_line(finished_run, tmp_path, capsys):
    run_dir = copy_of(finished_run, tmp_path)
    (run_dir / RECORD).unlink()
    (run_dir / CONFIG).write_text("epochs: [1\n")
    line = assert_refused(train(run_dir), capsys, "holds a checkpoint of another configuration: its config.yaml")
    assert "is not valid YAML (line 2, column 1" in line and "--force" in line and line.count("Fix:") == 1


# --------------------------------------------------------------------------- con2 evaluate (case 10, 11, 13)


@pytest.mark.parametrize(
    "overrides,refused",
    [
        (["epochs=50"], "epochs"),
        (["width=16"], "width"),
        (["method=simclr"], "method"),
        (["tta=0", "params.temperature=0.2", "lr=0.1"], "params.temperature, lr"),
    ],
)
def test_evaluate_refuses_keys_that_change_the_model(overrides, refused, finished_run, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["evaluate", "--run-dir", str(finished_run), "--set", *overrides, "--out", str(out)])
    line = assert_refused(code, capsys, f"changes only how the trained model is scored; refused: {refused} (")
    assert "Allowed: tta, tta_seed, csi_views, lh_ridge, nn_chunk, eval_batch_size, data_dir" in line
    assert not out.exists()


def test_evaluate_accepts_scoring_and_runtime_keys_and_declared_scoring_params():
    evaluate_overrides([f"{k}=1" for k in (*SCORING_KEYS, *EVALUATE_RUNTIME_KEYS)])
    evaluate_overrides(["params.k=5"], scoring_params=("k",))  # a method's declared scoring-only params
    with pytest.raises(ConfigError, match=r"refused: params\.head_dim \("):
        evaluate_overrides(["params.k=5", "params.head_dim=64"], scoring_params=("k",))
    with pytest.raises(ConfigError, match=r"refused: amp, compile, checkpoint_every \("):
        evaluate_overrides(["amp=false", "compile=true", "checkpoint_every=3"])


def test_evaluate_a_model_that_does_not_fit_its_config_leaves_nothing(finished_run, tmp_path, capsys):
    run_dir = copy_of(finished_run, tmp_path)
    cfg = yaml.safe_load((run_dir / CONFIG).read_text())
    (run_dir / CONFIG).write_text(yaml.safe_dump({**cfg, "width": 8}))  # the checkpoint holds width 4
    out = tmp_path / "out"
    code = main(["evaluate", "--run-dir", str(run_dir), "--set", "tta=0", "--out", str(out)])
    line = assert_refused(code, capsys, f"checkpoint {run_dir / CHECKPOINT} does not fit the model", "size mismatch")
    assert "evaluate it with the config.yaml that trained it" in line
    assert not out.exists()  # no checkpoint, no config, no record
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    assert main(["evaluate", "--run-dir", str(run_dir)]) == 2  # in place: nothing is rewritten either
    one_error_line(capsys)
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before


def test_evaluate_on_a_corrupt_checkpoint_names_con2_train(finished_run, tmp_path, capsys):
    run_dir = copy_of(finished_run, tmp_path)
    ckpt = run_dir / CHECKPOINT
    ckpt.write_bytes(ckpt.read_bytes()[:100])
    out = tmp_path / "out"
    line = assert_refused(
        main(["evaluate", "--run-dir", str(run_dir), "--out", str(out)]),
        capsys,
        f"checkpoint {ckpt} is truncated or corrupt",
        f"Fix: retrain that run (`con2 train --run-dir {run_dir} --force`",
    )
    assert "rerun with --force" not in line and not out.exists()


@pytest.mark.parametrize(
    "content,needle",
    [(b"epochs: [1\n", "is not valid YAML (line 2, column 1"), (b"\xff\xfe" * 20, "is not a YAML text file")],
)
def test_evaluate_with_an_unreadable_run_config(content, needle, finished_run, tmp_path, capsys):
    run_dir = copy_of(finished_run, tmp_path)
    (run_dir / CONFIG).write_bytes(content)
    assert_refused(
        main(["evaluate", "--run-dir", str(run_dir), "--set", "tta=0", "--out", str(tmp_path / "out")]),
        capsys,
        f"run configuration {run_dir / CONFIG} ",
        needle,
        "con2 train wrote it",
    )
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- scoring passes that run for hours (16)


def test_scoring_work_counts_batches_and_blocks():
    """Against a count by brute force over the loops the scoring pass runs."""
    for views, n, m, batch, chunk in [(3, 119, 599, 1, 1), (41, 399, 156, 256, 4096), (5, 10, 7, 3, 4)]:
        batches = sum(len(range(0, size, batch)) for _ in range(views) for size in (n, m))
        blocks = sum(1 for _ in range(views) for _i in range(0, m, chunk) for _j in range(0, n, chunk))
        assert scoring_work(views, n, m, batch, chunk) == (batches, blocks)


@pytest.mark.parametrize(
    "overrides,needles",
    [
        (
            ["tta=1000", "eval_batch_size=1"],
            [
                "'eval_batch_size': scoring 1000 test-time view(s) x (119 training + 599 test images) in batches of 1",
                f"beyond the bound of {MAX_SCORING_BATCHES:,}",
                "Fix: --set eval_batch_size=4 or more",
                "or fewer views (tta=1000",
            ],
        ),
        (
            ["tta=200", "nn_chunk=1"],
            [
                "'nn_chunk': the nearest-neighbour search of 200 test-time view(s)",
                f"bound of {MAX_NN_BLOCKS:,}",
                "Fix: --set nn_chunk=2 or more",
            ],
        ),
    ],
)
def test_scoring_pass_beyond_the_bounds_stops_before_training(overrides, needles, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert_refused(train(run_dir, *overrides), capsys, *needles)
    assert not run_dir.exists()


def test_lh_ridge_zero_with_fewer_images_than_dimensions_completes(tmp_path, capsys):
    """ridge 0, 119 training images, 128 feature dimensions (width 16): the covariance is singular;
    the smallest jitter that factorises it makes S_LH well defined (con2.maths.scores.cholesky_with_jitter)."""
    run_dir = tmp_path / "run"
    assert train(run_dir, "lh_ridge=0", "width=16", "epochs=1") == 0
    record = json.loads((run_dir / RECORD).read_text())
    assert record["n_train"] < 8 * 16 and np.isfinite(record["metrics"]["auroc"]["lh"])


# --------------------------------------------------------------------------- data (cases 11, 13, 14)


def npz(path: Path, *, labels=None, sizes=(28, 28, 28), channels=(0, 0, 0), counts=((3, 5), (1, 1), (2, 4))) -> Path:
    """A breastmnist npz: ``counts[split]`` images per class, each split at its own size/channels;
    ``labels`` replaces the train labels."""
    rng = np.random.default_rng(0)
    arrays = {}
    for split, size, c, per in zip(("train", "val", "test"), sizes, channels, counts):
        y = np.concatenate([np.full(n, k, dtype=np.uint8) for k, n in enumerate(per)])
        h, w = size if isinstance(size, tuple) else (size, size)
        arrays[f"{split}_images"] = rng.integers(0, 256, (len(y), h, w, *((c,) if c else ())), dtype=np.uint8)
        arrays[f"{split}_labels"] = y[:, None]
    if labels is not None:
        arrays["train_labels"] = labels
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    return path


NPZ_CASES = {
    "string labels": (
        dict(labels=np.array(["1", "0", "1", "0", "1", "1", "0", "1"])),
        ["train_labels must be whole-number class indices, got <U1 values such as '1'"],
    ),
    "fractional labels": (
        dict(labels=np.array([0.95, 1, 1, 0, 1, 1, 0, 1])),
        ["train_labels must be whole-number class indices, got float64 values such as 0.95", "truncated"],
    ),
    "56 px in a 28 px file": (
        dict(sizes=(56, 56, 56)),
        ["is named for 28 px images but its train_images are 56x56 px", "`breastmnist_56.npz`", "--size 28"],
    ),
    "28x20 images": (dict(sizes=((28, 20),) * 3), ["but its train_images are 28x20 px"]),
    "splits of different resolutions": (dict(sizes=(28, 28, 56)), ["but its test_images are 56x56 px"]),
    "splits of different channels": (
        dict(channels=(0, 0, 3)),
        ["mixes image shapes across its splits (28x28x1, 28x28x3)"],
    ),
    "no training image of the normal class": (
        dict(counts=((3, 0), (1, 1), (2, 4))),
        ["no training images of normal class 1", "Fix: check that the copy of breastmnist is complete"],
    ),
}


@pytest.mark.parametrize("case", list(NPZ_CASES))
def test_bad_medmnist_file_is_one_error_line(case, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CON2_CACHE_DIR", str(tmp_path / "cache"))
    kwargs, needles = NPZ_CASES[case]
    path = npz(tmp_path / "data" / "breastmnist.npz", **kwargs)
    run_dir = tmp_path / "run"
    overrides = ["dataset=breastmnist", "image_size=28", f"data_dir={tmp_path / 'data'}", "batch_size=2"]
    assert_refused(train(run_dir, *overrides), capsys, "breastmnist: ", *needles)
    assert not run_dir.exists() and path.is_file()


def test_unreadable_medmnist_file_is_not_called_damaged(tmp_path, capsys, monkeypatch):
    """A file the user may not read (we run as root in CI, so the refusal is simulated) is not
    'truncated', and deleting it is not the fix."""
    monkeypatch.setenv("CON2_CACHE_DIR", str(tmp_path / "cache"))
    path = npz(tmp_path / "data" / "breastmnist.npz")

    def refuse(file, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(file))

    monkeypatch.setattr(np, "load", refuse)
    code = train(tmp_path / "run", "dataset=breastmnist", "image_size=28", f"data_dir={tmp_path / 'data'}")
    line = assert_refused(code, capsys, f"breastmnist: cannot read {path}: permission denied. Fix: make it readable")
    assert "truncated" not in line and "delete it and" not in line and "do not delete it" in line


def test_a_profile_with_a_negative_lr_fails_while_the_grid_is_built():
    """Issue 16, case 15: the workflow's grid expansion validates each run's config before any job."""
    from con2.grid import experiments

    profile = {
        "seeds": [0],
        "run": {"lr": -1},
        "datasets": {"digits": {}},
        "variants": {},
        "experiments": {"e": {"datasets": ["digits"], "methods": {"con2": ["default"]}}},
    }
    with pytest.raises(
        experiments.GridError, match=r"'lr' must be > 0 \(the optimiser's base learning rate\), got -1\.0\. Fix"
    ):
        experiments.expand_grid(profile, lambda dataset: ["0"])
