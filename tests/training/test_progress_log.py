"""What a user sees while a run trains (issue 19, points 9 and 10): a log written to a file gets one
line per epoch with an ETA (no carriage-return bar), the console of `con2 train --log` gets the
first epoch's line and the result, and a run on the prepared (read-only, memory-mapped) data warns
about nothing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import torch

from con2.training.engine import TrainSettings, epoch_line, fit, format_duration

ROOT = Path(__file__).resolve().parents[2]
EPOCH = re.compile(r"^epoch (\d+)/(\d+)  loss=\S+( \w+=\S+)*  \d+ img/s  ETA (\d+h)?(\d+m)?\d+s$")


def test_format_duration_and_epoch_line() -> None:
    assert [format_duration(s) for s in (0, 4.4, 59.6, 75.2, 3725)] == ["0s", "4s", "1m00s", "1m15s", "1h02m05s"]
    line = epoch_line(3, 10, {"context": 0.5, "loss": 1.25}, 412.4, 65)
    assert line == "epoch 3/10  loss=1.25 context=0.5  412 img/s  ETA 1m05s"  # the minimised loss first
    assert EPOCH.match(line)


class Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def training_loss(self, images, progress):
        loss = self.lin(images.float().flatten(1) / 255).pow(2).mean()
        return {"loss": loss, "half": loss.detach() / 2}


def test_fit_prints_one_line_per_epoch_when_stderr_is_not_a_terminal(tmp_path: Path, capsys) -> None:
    images = torch.randint(0, 256, (12, 1, 2, 2), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    settings = TrainSettings(epochs=4, batch_size=4, progress=True, channels_last=False, checkpoint_seconds=0)
    fit(Linear(), images, settings, torch.device("cpu"), tmp_path / "ckpt.pt")  # pytest's capture: no terminal
    out, err = capsys.readouterr()
    assert "\r" not in out + err and "train:" not in err  # no tqdm bar
    lines = [m for m in map(EPOCH.match, out.splitlines()) if m]
    assert [(m[1], m[2]) for m in lines] == [(str(e), "4") for e in range(1, 5)], out
    assert out.splitlines()[-1].endswith("ETA 0s")  # nothing left after the last epoch
    # resumed from epoch 4 of 6: the lines go on from epoch 5 (the ETA from this process's pace)
    fit(
        Linear(), images, TrainSettings(**{**settings.__dict__, "epochs": 6}), torch.device("cpu"), tmp_path / "ckpt.pt"
    )
    out = capsys.readouterr().out
    assert [(m[1], m[2]) for m in map(EPOCH.match, out.splitlines()) if m] == [("5", "6"), ("6", "6")], out


class Annealed(Linear):
    """A method whose loss weight anneals with training, as CON2's alpha does."""

    def progress_weights(self, progress: float) -> dict[str, float]:
        return {"alpha": progress}


def test_the_progress_line_shows_a_methods_loss_weights(tmp_path: Path, capsys) -> None:
    """CON2's loss = L_Context + alpha L_Content grows while alpha anneals 0 -> 1: the line shows alpha."""
    images = torch.randint(0, 256, (12, 1, 2, 2), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    settings = TrainSettings(epochs=4, batch_size=4, progress=True, channels_last=False, checkpoint_seconds=0)
    fit(Annealed(), images, settings, torch.device("cpu"), tmp_path / "ckpt.pt")
    lines = [line for line in capsys.readouterr().out.splitlines() if EPOCH.match(line)]
    # 3 steps an epoch, 12 in all: alpha after epoch e is the progress of its last step's successor
    assert [re.search(r"alpha=(\S+)", line)[1] for line in lines] == ["0.25", "0.5", "0.75", "1"]


def test_con2_shows_alpha_only_when_it_weighs_the_content_term() -> None:
    from con2.config import RunConfig
    from con2.methods.registry import build_method

    full = build_method(RunConfig(dataset="digits", image_size=16, width=4, epochs=10))
    assert full.progress_weights(0.0) == {"alpha": 0.0} and full.progress_weights(1.0) == {"alpha": 1.0}
    ablated = build_method(RunConfig(dataset="digits", image_size=16, width=4, params={"loss": "content_only"}))
    assert ablated.progress_weights(0.5) == {}


def test_a_logged_run_has_one_line_per_epoch_with_an_eta_and_no_warning(shared_data: Path, tmp_path: Path) -> None:
    """`con2 train --log` (the workflow's train job) on BreastMNIST with the paper's centre crop, on
    the prepared memmap: the log holds one line per epoch with its ETA, the console the first of
    them and the result, and no warning is printed (NumPy's "array is not writable" was one)."""
    log, run_dir = tmp_path / "logs" / "run.log", tmp_path / "run"
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"},
        "CON2_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT),
    }
    settings = (
        "dataset=breastmnist normal_class=1 image_size=28 width=4 channels_last=false epochs=3 batch_size=64 tta=2"
    )
    res = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-m", "con2", "train", "--set", *settings.split()]
        + [f"data_dir={shared_data}", "center_crop=0.875", "threads=1", "csi_views=2", "progress=true"]
        + ["--run-dir", str(run_dir), "--log", str(log)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    text = log.read_text()
    assert res.returncode == 0, text[-3000:] + res.stderr[-2000:]
    assert "Warning" not in text + res.stdout + res.stderr, text
    assert "\r" not in text
    epochs = [m for m in map(EPOCH.match, text.splitlines()) if m]
    assert [int(m[1]) for m in epochs] == [1, 2, 3] and {m[2] for m in epochs} == {"3"}, text
    console = res.stdout.splitlines()
    assert len(console) == 2 and res.stderr == "", res.stdout + res.stderr
    assert console[0].startswith("breastmnist/1 con2/default seed=0: epoch 1/3  loss=") and "ETA" in console[0]
    assert console[0].endswith(f"(log: {log})")
    assert re.match(r"^breastmnist/1 con2/default seed=0: AUROC\[nnd\]=\d+\.\d", console[1])
    assert text.splitlines()[-1] == console[1]


def test_a_logged_error_reaches_the_console_too(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    res = subprocess.run(
        [sys.executable, "-m", "con2", "train", "--set", "dataset=digits", "lr=-1"]
        + ["--run-dir", str(tmp_path / "run"), "--log", str(log)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert res.returncode == 2
    assert res.stdout.startswith("con2: error: ") and "lr" in res.stdout, res.stdout + res.stderr
    assert res.stdout.strip() in log.read_text()
