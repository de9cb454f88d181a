"""Determinism, checkpoint-resume, and the run directory contract on tiny budgets."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

from con2.atomic import partials
from con2.config import make_config
from con2.data import load_one_class
from con2.run.records import read_record
from con2.run.runner import CHECKPOINT, RECORD, SCORES, run
from con2.training.checkpoints import load_checkpoint
from con2.training.engine import derived_seed
from con2.training.steps import steps_per_epoch


class Interrupt(Exception):
    pass


def interrupted_after(epoch: int, cfg, run_dir) -> None:
    """Run ``cfg`` in ``run_dir`` and stop it (as a kill would) once ``epoch``'s checkpoint is written."""

    def stop(done: int) -> None:
        if done == epoch:
            raise Interrupt

    with pytest.raises(Interrupt):
        run(cfg, run_dir, on_epoch_end=stop)


def test_same_seed_same_numbers_on_cpu(tiny, tmp_path):
    a = run(make_config(tiny), tmp_path / "a")
    b = run(make_config(tiny), tmp_path / "b")
    assert a["metrics"] == b["metrics"]
    sa, sb = pd.read_csv(tmp_path / "a" / SCORES), pd.read_csv(tmp_path / "b" / SCORES)
    pd.testing.assert_frame_equal(sa, sb)
    run(make_config({**tiny, "seed": 1}), tmp_path / "c")
    assert not np.allclose(pd.read_csv(tmp_path / "c" / SCORES)["nnd"], sa["nnd"])


def test_interrupted_run_resumes_to_identical_metrics(tiny, tmp_path):
    cfg = make_config({**tiny, "epochs": 4, "batch_size": 16})
    full = run(cfg, tmp_path / "full")

    interrupted_after(2, cfg, tmp_path / "resumed")
    assert (tmp_path / "resumed" / CHECKPOINT).is_file()
    assert not (tmp_path / "resumed" / RECORD).exists()  # an interrupted run leaves no record
    assert load_checkpoint(tmp_path / "resumed" / CHECKPOINT)["epoch"] == 2
    resumed = run(cfg, tmp_path / "resumed")
    assert resumed["resumed_from_epoch"] == 2 and full["resumed_from_epoch"] == 0
    assert resumed["metrics"] == full["metrics"]
    assert resumed["steps"] == full["steps"] == 4 * steps_per_epoch(full["n_train"], 16)


def test_checkpoint_of_another_config_is_refused(tiny, tmp_path):
    run(make_config(tiny), tmp_path)
    (tmp_path / RECORD).unlink()
    from con2.errors import ConfigError

    with pytest.raises(ConfigError, match="another configuration"):
        run(make_config({**tiny, "lr": 0.01}), tmp_path)


def test_run_directory_holds_a_valid_record_and_scores(tiny, tmp_path):
    record = run(make_config(tiny), tmp_path)
    on_disk = read_record(tmp_path / RECORD)
    assert on_disk == json.loads(json.dumps(record))
    assert {k for k in on_disk["metrics"]["auroc"] if "@" not in k} == {"nnd", "lh"}  # headline readings
    assert -1 <= on_disk["metrics"]["silhouette"] <= 1
    data = load_one_class("digits", None, seed=0)
    assert on_disk["n_train"] == len(data.train) and on_disk["n_test"] == len(data.test)
    assert on_disk["n_anomalous"] == data.n_anomalous > 0
    scores = pd.read_csv(tmp_path / SCORES)
    assert len(scores) == len(data.test) and scores["label"].sum() == data.n_anomalous
    assert not partials(tmp_path)


def test_max_steps_caps_training(tiny, tmp_path):
    record = run(make_config({**tiny, "epochs": 50, "max_steps": 3}), tmp_path)
    assert record["steps"] == 3


def test_derived_seed_is_stable_and_distinct():
    assert derived_seed(0, 1) == derived_seed(0, 1)
    assert len({derived_seed(s, e) for s in range(5) for e in range(5)}) == 25


class Toy(torch.nn.Module):
    """A linear model with the method interface; its loss turns NaN at step ``nan_at``."""

    def __init__(self, nan_at: int | None = None) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)
        self.nan_at, self.calls = nan_at, 0

    def training_loss(self, images, progress):
        loss = self.lin(images.float().flatten(1) / 255).pow(2).mean()
        if self.calls == self.nan_at:
            loss = loss * float("nan")
        self.calls += 1
        return {"loss": loss, "twice": 2 * loss.detach()}


def toy_fit(tmp_path, model, **kw):
    from con2.training.engine import TrainSettings, fit

    images = torch.randint(0, 256, (12, 1, 2, 2), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    settings = TrainSettings(epochs=3, batch_size=4, progress=False, channels_last=False, **kw)
    return fit(model, images, settings, torch.device("cpu"), tmp_path / "ckpt.pt")


def test_non_finite_loss_names_its_step_though_read_later(tmp_path):
    from con2.errors import NonFiniteLossError

    # 3 steps per epoch; the NaN appears at step 4 (epoch 1) and is read at that epoch's end
    with pytest.raises(NonFiniteLossError, match=r"epoch 1, step 4 \(loss=nan, twice=nan\); lower lr"):
        toy_fit(tmp_path, Toy(nan_at=4), finite_check_every=100)
    assert torch.load(tmp_path / "ckpt.pt", weights_only=False)["epoch"] == 1  # never a checkpoint after it


def test_loss_terms_are_read_every_k_steps_and_at_epoch_end(tmp_path, monkeypatch):
    import con2.training.engine as engine

    reads = []
    real = engine.read_terms
    monkeypatch.setattr(engine, "read_terms", lambda pending: reads.append([s for _, s, _ in pending]) or real(pending))
    result = toy_fit(tmp_path, Toy(), finite_check_every=2)
    assert reads == [[0, 1], [2], [3, 4], [5], [6, 7], [8]]
    assert set(result.last_terms) == {"loss", "twice"}
    assert result.last_terms["twice"] == pytest.approx(2 * result.last_terms["loss"])


@pytest.mark.parametrize(
    ("every", "seconds", "written"),
    [(1, 0.0, [1, 2, 3, 4, 5]), (2, 0.0, [2, 4, 5]), (1, 50.0, [2, 4, 5]), (1, 1000.0, [5]), (0, 0.0, [5])],
)
def test_checkpoints_every_k_epochs_but_no_sooner_than_the_time_floor(tmp_path, monkeypatch, every, seconds, written):
    import con2.training.engine as engine
    from con2.training.engine import TrainSettings, fit

    clock = [0.0]  # a fake clock: every training step takes 10 s, so an epoch (3 steps) 30 s

    class Slow(Toy):
        def training_loss(self, images, progress):
            clock[0] += 10.0
            return super().training_loss(images, progress)

    saved = []
    monkeypatch.setattr(engine.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(engine, "save_atomic", lambda state, path: saved.append(state["epoch"]))
    images = torch.zeros(12, 1, 2, 2, dtype=torch.uint8)
    settings = TrainSettings(
        epochs=5, batch_size=4, progress=False, channels_last=False, checkpoint_every=every, checkpoint_seconds=seconds
    )
    fit(Slow(), images, settings, torch.device("cpu"), tmp_path / "ckpt.pt")
    assert saved == written


class StridedConv(torch.nn.Module):
    """A 3 x 3 stride-2 convolution on ``size`` x ``size`` inputs, with the method interface."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.conv = torch.nn.Conv2d(1, 2, 3, stride=2, padding=1)

    def training_loss(self, images, progress):
        x = torch.nn.functional.interpolate(images.float() / 255, size=self.size)
        return {"loss": self.conv(x).float().pow(2).mean()}


def test_a_strided_convolution_on_a_1x1_input_is_refused_under_cpu_bf16(tmp_path, monkeypatch):
    import con2.training.engine as engine
    from con2.errors import ConfigError
    from con2.training.device import refuse_broken_cpu_bf16_convolutions
    from con2.training.engine import TrainSettings, fit

    model = StridedConv(1)
    with pytest.raises(ConfigError, match=r"convolution conv on its 1 x 1 input .*set amp=false .*image_size"):
        with refuse_broken_cpu_bf16_convolutions(model):
            model.training_loss(torch.zeros(2, 1, 4, 4, dtype=torch.uint8), 0.0)
    assert not model.conv._forward_pre_hooks  # the hooks go with the context
    two = StridedConv(2)
    with refuse_broken_cpu_bf16_convolutions(two):
        two.training_loss(torch.zeros(2, 1, 4, 4, dtype=torch.uint8), 0.0)  # 2 x 2 is computed right

    # in fit: only where bf16 autocast runs on the CPU, before any update or checkpoint
    images = torch.zeros(8, 1, 4, 4, dtype=torch.uint8)
    settings = TrainSettings(epochs=1, batch_size=4, progress=False, channels_last=False)
    monkeypatch.setattr(engine, "autocast_enabled", lambda device, amp: amp)
    with pytest.raises(ConfigError, match="set amp=false"):
        fit(StridedConv(1), images, settings, torch.device("cpu"), tmp_path / "ckpt.pt")
    assert not (tmp_path / "ckpt.pt").exists()
    for ok_model, amp in ((StridedConv(2), True), (StridedConv(1), False)):
        fit(ok_model, images, TrainSettings(**{**settings.__dict__, "amp": amp}), torch.device("cpu"), None)


def test_compile_trains_and_keeps_checkpoint_keys(tmp_path):
    model = Toy()
    toy_fit(tmp_path, model, compile=True)
    assert set(torch.load(tmp_path / "ckpt.pt", weights_only=False)["model"]) == {"lin.weight", "lin.bias"}


def test_compile_failure_is_a_config_error(tmp_path, monkeypatch):
    import torch._dynamo

    from con2.errors import ConfigError

    def broken(self, *args, **kwargs):
        raise torch._dynamo.exc.TorchDynamoException("no C++ compiler found")

    monkeypatch.setattr(torch.nn.Linear, "compile", lambda self: setattr(self, "forward", broken.__get__(self)))
    with pytest.raises(ConfigError, match="compile=true failed on this machine .*set compile=false"):
        toy_fit(tmp_path, Toy(), compile=True)


def test_autocast_policy():
    from con2.training.device import autocast_enabled, cpu_has_native_bf16

    assert not autocast_enabled(torch.device("cpu"), amp=False)
    assert autocast_enabled(torch.device("cpu"), amp=True) == cpu_has_native_bf16()
    assert autocast_enabled(torch.device("cuda"), amp=True) and not autocast_enabled(torch.device("cuda"), amp=False)


# /proc/cpuinfo as the three CPU kinds this project has run on print it (flags shortened)
CPUINFO_AMX = (
    "processor\t: 0\nmodel name\t: Intel Xeon\nflags\t\t: fpu avx2 avx512f avx512_vnni avx512_bf16 amx_bf16 amx_tile\n"
)
CPUINFO_AVX512_ONLY = "processor\t: 0\nmodel name\t: Intel Xeon\nflags\t\t: fpu avx2 avx512f avx512bw avx512_vnni\n"
CPUINFO_ZEN4 = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512f avx512_bf16\n"
CPUINFO_OLD_AMD = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 fma\n"


@pytest.mark.parametrize(
    "cpuinfo, onednn, native",
    [
        (CPUINFO_AMX, True, True),
        (CPUINFO_ZEN4, True, True),
        (CPUINFO_AVX512_ONLY, True, False),  # oneDNN emulates bf16 there: 2.35x slower than float32
        (CPUINFO_OLD_AMD, False, False),
        (CPUINFO_AMX, False, False),  # oneDNN without bf16 kernels: never autocast
        ("no flags here\n", True, True),  # no flags to read (not Linux): oneDNN's word stands
    ],
)
def test_native_bf16_needs_the_cpu_flag_not_only_onednn(cpuinfo, onednn, native):
    from con2.training.device import cpu_flags, native_bf16_from_flags

    assert native_bf16_from_flags(cpu_flags(cpuinfo), onednn) is native


def test_cpu_has_native_bf16_reads_the_flags(monkeypatch):
    import con2.training.device as device

    avx512_only = device.cpu_flags(CPUINFO_AVX512_ONLY)
    monkeypatch.setattr(device, "cpu_flags", lambda cpuinfo=None: avx512_only)
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: True, raising=False)
    assert not device.cpu_has_native_bf16() and not device.autocast_enabled(torch.device("cpu"), amp=True)


def test_steady_training_step_builds_no_tensor_from_host_data(tiny):
    """``torch.tensor(data)`` in the step would be a blocking host-to-device copy on a GPU, every step."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from con2.methods import build_method
    from con2.training.engine import TrainSettings, make_optimizer, prepare_model, train_step

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.add(str(func))
            return func(*args, **(kwargs or {}))

    method = build_method(make_config({**tiny, "width": 8, "channels_last": True}))
    settings = TrainSettings(epochs=1, batch_size=8)
    prepare_model(method, settings, torch.device("cpu"))
    optimizer, scheduler = make_optimizer(method, settings, torch.device("cpu"), 10)
    x = torch.randint(0, 256, (8, 1, 16, 16), dtype=torch.uint8)
    train_step(method, x, 0.0, optimizer, scheduler, autocast=False)  # the optimiser creates its state once
    with Ops() as ops:
        train_step(method, x, 0.1, optimizer, scheduler, autocast=False)
    assert "aten.lift_fresh.default" not in ops.seen
    assert "aten.grid_sampler_2d.default" in ops.seen  # the views ran inside the recorded step


# ------------------------------------------------------------------------------------ learning curve
def test_a_learning_curve_changes_nothing_of_the_run(tiny, tmp_path):
    """Scoring during training leaves the weights, the RNG streams and BatchNorm's statistics alone:
    the run ends with the same checkpoint, scores and metrics as one without a curve."""
    cfg = {**tiny, "epochs": 3, "batch_size": 16}
    plain = run(make_config(cfg), tmp_path / "plain")
    curved = run(make_config({**cfg, "score_at": [1, 2]}), tmp_path / "curved")
    assert curved["metrics"] == plain["metrics"] and "curve" not in plain
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "plain" / SCORES), pd.read_csv(tmp_path / "curved" / SCORES))
    a, b = load_checkpoint(tmp_path / "plain" / CHECKPOINT), load_checkpoint(tmp_path / "curved" / CHECKPOINT)
    for key, value in a["model"].items():  # weights and BatchNorm running statistics alike
        assert torch.equal(value, b["model"][key]), key
    points = curved["curve"]["points"]
    assert [p["epoch"] for p in points] == [1, 2, 3]  # score_at, and the last epoch
    assert set(points[0]["auroc"]) == set(curved["metrics"]["auroc"])  # every reading, at every point
    assert points[0]["auroc"] != points[-1]["auroc"]
    assert -1 <= points[0]["extras"]["silhouette"] <= 1 and curved["timing"]["curve_seconds"] > 0
    on_disk = pd.read_csv(tmp_path / "curved" / "curve.csv")
    assert on_disk["epoch"].tolist() == [1, 2, 3]
    np.testing.assert_allclose(on_disk["auroc[nnd]"], [p["auroc"]["nnd"] for p in points])


def test_the_last_point_of_a_full_plan_curve_is_the_final_score(tiny, tmp_path):
    record = run(make_config({**tiny, "tta": 4, "score_at": [1], "curve_views": None}), tmp_path)
    last = record["curve"]["points"][-1]
    assert last["epoch"] == record["epochs"] == 2 and record["curve"]["views"] is None
    assert last["auroc"] == pytest.approx(record["metrics"]["auroc"], abs=1e-9)
    assert last["extras"]["silhouette"] == pytest.approx(record["metrics"]["silhouette"])
    # a cheap curve (2 fixed views, one CSI view) scores the same model otherwise
    cheap = run(make_config({**tiny, "tta": 4, "score_at": [1], "curve_views": 2}), tmp_path / "cheap")
    assert cheap["metrics"] == record["metrics"]
    assert cheap["curve"]["points"][-1]["auroc"]["nnd"] != pytest.approx(record["metrics"]["auroc"]["nnd"], abs=1e-9)


def test_a_resumed_run_keeps_the_curve_points_it_had(tiny, tmp_path):
    cfg = make_config({**tiny, "epochs": 4, "batch_size": 16, "score_at": [1, 2, 3]})
    full = run(cfg, tmp_path / "full")

    interrupted_after(2, cfg, tmp_path / "resumed")
    curve_csv = tmp_path / "resumed" / "curve.csv"
    kept = pd.read_csv(curve_csv)
    assert kept["epoch"].tolist() == [1, 2]
    kept.loc[0, "auroc[nnd]"] = 12.5  # a mark: a point computed again would lose it
    kept.to_csv(curve_csv, index=False)
    resumed = run(cfg, tmp_path / "resumed")
    assert resumed["resumed_from_epoch"] == 2
    got, want = resumed["curve"]["points"], full["curve"]["points"]
    assert [p["epoch"] for p in got] == [1, 2, 3, 4]
    assert got[0]["auroc"]["nnd"] == 12.5  # kept, not recomputed
    for a, b in zip(got[1:], want[1:]):
        assert a["auroc"] == pytest.approx(b["auroc"])
    # a fresh start (no checkpoint) drops a stale curve
    (tmp_path / "resumed" / CHECKPOINT).unlink()
    (tmp_path / "resumed" / RECORD).unlink()
    again = run(cfg, tmp_path / "resumed")
    assert again["curve"]["points"][0]["auroc"]["nnd"] == pytest.approx(want[0]["auroc"]["nnd"])


def test_score_at_is_a_list_of_epochs(tiny):
    from con2.errors import ConfigError

    assert make_config({**tiny, "score_at": [5, 1]}).score_at == (5, 1)
    assert make_config({**tiny, "score_at": 3}).score_at == (3,)
    with pytest.raises(ConfigError, match="score_at"):
        make_config({**tiny, "score_at": [0, 2]})
    with pytest.raises(ConfigError, match="score_at"):
        make_config({**tiny, "score_at": [1.5]})
