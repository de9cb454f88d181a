"""Issue 44, point 5: the GPU call's CIFAR-10 part (e), the workflow smoke that starts the call, and what the
call carries (benchmarks/gpu_predictions.py, gpu_runs.py, gpu_fidelity.py, gpu_workflow.py, gpu_carry.py)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml
from test_gpu_packing import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


load = load_benchmark  # a module of benchmarks/ (they import each other by name, as when run as scripts)


def env_with_root() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def run_script(cmd: list[str], timeout: float) -> list[dict]:
    """A benchmark script run from the repository root: its exit code 0, its JSON lines."""
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env_with_root(), cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    return [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]


# -- part (e)'s predictions and its config ---------------------------------------------------------------------


@pytest.fixture
def stand_in_rates(monkeypatch: pytest.MonkeyPatch):
    """Round stand-in rates: 4608 images/s compiled (one second per epoch of 9 x 512), one second per scoring,
    3 + 1 s to compile, 10 s of data, 4 s of start-up (the measured ones live in gpu_predictions.py)."""
    gp = load("gpu_predictions")
    monkeypatch.setattr(gp, "CIFAR_STEP_IMAGES_PER_S", {True: 4608.0, False: 2304.0})
    monkeypatch.setattr(gp, "GFLOP_PER_VIEW", {224: 4.0, 64: 4.0, 32: 1.0})
    monkeypatch.setattr(gp, "SCORE_VIEWS_PER_S_224", 150_000.0)  # x 4 at 32 px: 600,000 views/s, 15,000 x 40 views
    for name, value in (("CIFAR_COMPILE_SECONDS", 3.0), ("EVAL_COMPILE_SECONDS", 1.0), ("CIFAR_DATA_SECONDS", 10.0)):
        monkeypatch.setattr(gp, name, value)
    monkeypatch.setattr(gp, "STARTUP_SECONDS", 4.0)
    return gp


def test_cifar_part_is_predicted_from_the_32px_step(stand_in_rates) -> None:
    gp = stand_in_rates
    curve = load("gpu_runs").curve_epochs(2048)
    assert gp.dataset_of(gp.CIFAR) == "cifar10" and gp.dataset_of("as printed") == "breastmnist"
    # 5000 images, N = 512: 9 full batches (the partial one dropped) = 4608 images per epoch
    assert gp.fit_seconds(gp.CIFAR, 2048, compile=True) == pytest.approx(2048.0)
    assert gp.fit_seconds(gp.CIFAR, 2048, compile=False) == pytest.approx(4096.0)
    assert gp.score_seconds(gp.CIFAR) == pytest.approx(1.0)
    cpu = 4 + 3 + 1 + 10  # start-up, the 32 px compilation, the scoring graphs', the data
    whole = gp.run_cost(gp.CIFAR, 2048, len(curve), True, 0, "H200")
    assert whole.cpu == cpu and whole.gpu == pytest.approx(2048 + 7 * 1.0)  # 6 curve points + the final scoring
    h100 = gp.run_cost(gp.CIFAR, 2048, len(curve), True, 0, "H100")
    assert h100.cpu == cpu and h100.gpu == pytest.approx(whole.gpu * gp.GPU_SLOWDOWN["H100"])
    # to an epoch: the CPU work, the fit so far, the curve points on the way; the final scoring only at the end
    assert gp.cost_to_epoch(gp.CIFAR, 64, 2048, curve, True) == pytest.approx(cpu + 64 + 1)
    assert gp.cost_to_epoch(gp.CIFAR, 2048, 2048, curve, True) == pytest.approx(whole.total)
    assert gp.first_point_seconds(gp.CIFAR, 2048, curve, True) == pytest.approx(cpu + 64 + 1)
    assert gp.first_point_seconds(gp.CIFAR, 2048, curve, True, from_epoch=100) == pytest.approx(cpu + 28 + 1)
    assert gp.epoch_within(gp.CIFAR, cpu + 65, 2048, curve, True) == 64
    assert gp.epoch_within(gp.CIFAR, cpu + 64.9, 2048, curve, True) == 63  # epoch 64's scoring does not fit
    assert gp.epoch_within(gp.CIFAR, cpu + 200, 2048, curve, True) == 198  # 128's point on the way
    assert gp.epoch_within(gp.CIFAR, cpu - 1, 2048, curve, True) == 0  # not even the start-up
    assert gp.epoch_within(gp.CIFAR, 1e9, 2048, curve, True) == 2048
    assert gp.fixed_seconds(gp.CIFAR, compile=True) == pytest.approx(cpu + 1.0)


def test_cifar_part_at_the_measured_rates_fits_no_call() -> None:
    """What the plan is built on (benchmarks/README.md): 2048 epochs fit no 540 s call on either card, but the
    first curve point does, so part (e) runs to the budget; the H100 is slower by the assumed factor."""
    gp = load("gpu_predictions")
    curve = load("gpu_runs").curve_epochs(2048)
    for kind in ("H200", "H100"):
        assert gp.run_cost(gp.CIFAR, 2048, len(curve), True, 0, kind).total > 540
        assert gp.first_point_seconds(gp.CIFAR, 2048, curve, True, 0, kind) < 540 / 2
    h200, h100 = (gp.epoch_within(gp.CIFAR, 540, 2048, curve, True, 0, k) for k in ("H200", "H100"))
    assert 64 <= h100 < h200 < 2048


def fake_call(gf, budget_s: float, epochs: int = 2048, **flags):
    args = argparse.Namespace(budget_s=budget_s, no_pack=False, tiny=False, **flags)
    curve = load("gpu_runs").curve_epochs(epochs)
    return gf.Call(args, None, print, epochs, True, Path("out"), None, [], "H200", curve)


def test_the_cifar_config_is_the_papers() -> None:
    """Part (e)'s config: the plan's base (width 64) with CIFAR-10's own settings, the curve on its own test views."""
    gf = load("gpu_fidelity")
    gr = load("gpu_runs")
    it = next(x for x in gr.plan_items("all") if x.part == "e")
    assert it.to_budget and it.curve and it.label == load("gpu_predictions").CIFAR
    call = fake_call(gf, 540)
    call.base[:] = ["dataset=breastmnist", "data_dir=d", "epochs=2048", *gr.PAPER]
    cfg = call.config(it)
    assert (cfg.dataset, cfg.normal_class, cfg.image_size, cfg.data_size) == ("cifar10", "airplane", 32, 32)
    assert (cfg.width, cfg.batch_size, cfg.epochs, cfg.tta, cfg.csi_views) == (64, 512, 2048, 40, 0)
    assert cfg.center_crop == 1.0 and cfg.params == {}  # CON2 as printed: its default context (invert)
    assert list(cfg.score_at) == [64, 128, 256, 512, 1024, 2048] and cfg.curve_views is None
    tiny = fake_call(gf, 540, epochs=2)
    tiny.args.tiny = True
    tiny.base[:] = ["dataset=breastmnist", "data_dir=d", "epochs=2", *gr.TINY]
    small = tiny.config(it)  # --tiny keeps its sizes, reads CIFAR-10's 32 px files, scores cheaply
    assert (small.dataset, small.image_size, small.data_size, small.width, small.batch_size) == (
        "cifar10",
        16,
        32,
        8,
        128,
    )
    assert (small.tta, small.csi_views, small.threads) == (0, 0, 1)
    bmnist = tiny.config(gr.Item("a", "as printed"))  # the BreastMNIST runs' tiny configs are unchanged
    assert (bmnist.dataset, bmnist.tta, bmnist.csi_views, bmnist.threads) == ("breastmnist", 4, 2, None)


def test_call_outline_runs_part_e_to_the_budget_and_nothing_after(stand_in_rates) -> None:
    gp = stand_in_rates
    gf = load("gpu_fidelity")
    items = load("gpu_runs").plan_items("all", (1,))
    content, simclr, cifar = items[1], items[2], items[3]
    costs = {content: gp.Cost(100.0, 0.0), simclr: gp.Cost(200.0, 0.0), cifar: gp.Cost(2055.0, 18.0)}
    costs |= {it: gp.Cost(50.0, 0.0) for it in items[4:]}
    todo = {it: 0 for it in costs}
    outline = gf.call_outline(fake_call(gf, 250.0), items, "H200", todo, costs, 1.0)
    # 100 s, then SimCLR does not fit the 150 s left, then part (e) to epoch 150 - 18 - 2 scorings = 130
    assert outline[0] == "content only: 100 s" and outline[1].startswith("SimCLR + kNN: skipped")
    assert outline[2] == f"{gp.CIFAR}: to epoch ~130 of 2048 in 150 s (all: 2073 s)" and len(outline) == 3
    short = gf.call_outline(fake_call(gf, 180.0), items, "H200", todo, costs, 1.0)
    assert short[2].startswith(f"{gp.CIFAR}: skipped (its first curve point needs 83 s, 80 s left)")
    assert [x.split(":")[0] for x in short[3:]] == [it.label for it in items[4:]]  # the rest, each by its rule


# -- the carried CIFAR-10 folder -----------------------------------------------------------------------------


def image_folder(root: Path) -> dict[str, bytes]:
    files = {"train/airplane/0000.jpg": b"\xff\xd8one", "train/bird/0000.jpg": b"\xff\xd8two", "test/cat/9.png": b"3"}
    for rel, data in files.items():
        (root / "cifar10" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "cifar10" / rel).write_bytes(data)
    return files


def test_the_cifar_folder_travels_packed_and_unpacks_byte_for_byte(tmp_path: Path) -> None:
    carry, runs = load("gpu_carry"), load("gpu_runs")
    files = image_folder(tmp_path / "src")
    data = tmp_path / "data"
    packed = carry.pack_folder(tmp_path / "src" / "cifar10", data / runs.CIFAR_ARCHIVE)
    assert [p for p, _ in packed.files] == sorted(f"cifar10/{rel}" for rel in files)
    stamp = (data / runs.CIFAR_ARCHIVE).stat().st_mtime_ns
    assert carry.pack_folder(tmp_path / "src" / "cifar10", data / runs.CIFAR_ARCHIVE) == packed  # fresh: kept
    assert (data / runs.CIFAR_ARCHIVE).stat().st_mtime_ns == stamp
    assert not runs.cifar_present(data)
    line = runs.unpack_cifar(data)
    assert line is not None and line["event"] == "data" and line["files"] == 3
    assert {rel: (data / "cifar10" / rel).read_bytes() for rel in files} == files
    assert runs.cifar_present(data) and runs.unpack_cifar(data) is None  # there already: nothing to do
    assert sorted(p.name for p in data.iterdir()) == ["cifar10", "cifar10.tar.xz", "cifar10.tar.xz.json"]

    (tmp_path / "src" / "cifar10" / "test" / "cat" / "10.png").write_bytes(b"4")  # a changed folder: packed again
    assert len(carry.pack_folder(tmp_path / "src" / "cifar10", data / runs.CIFAR_ARCHIVE).files) == 4


def test_a_bad_cifar_archive_is_refused_in_one_line(tmp_path: Path) -> None:
    runs = load("gpu_runs")
    other = tmp_path / "other"
    (other / "elsewhere").mkdir(parents=True)
    (other / "elsewhere" / "x.jpg").write_bytes(b"x")
    with tarfile.open(tmp_path / runs.CIFAR_ARCHIVE, "w:xz") as t:
        t.add(other / "elsewhere", arcname="elsewhere")
    with pytest.raises(ValueError, match=r"unpacks to \['elsewhere'\], not cifar10/ alone"):
        runs.unpack_cifar(tmp_path)
    assert not runs.cifar_present(tmp_path)
    (tmp_path / runs.CIFAR_ARCHIVE).write_bytes(b"not an archive")
    with pytest.raises(ValueError, match="could not be unpacked.*gpu_carry.py"):
        runs.unpack_cifar(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cifar10.tar.xz", "other"]  # no half-unpacked folder


# -- the carried wheels --------------------------------------------------------------------------------------


def fake_wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    path = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    meta = [f"Name: {name}", f"Version: {version}", *(f"Requires-Dist: {r}" for r in requires)]
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name.replace('-', '_')}-{version}.dist-info/METADATA", "\n".join(meta) + "\n")
    return path


def test_carried_wheels_must_close_over_their_requirements(tmp_path: Path) -> None:
    carry = load("gpu_carry")
    a = fake_wheel(tmp_path, "snakemake", "9.27.1", ["yte", "PyYAML", "pulp", 'tomli; python_version < "3.11"'])
    b = fake_wheel(tmp_path, "yte", "1.9.4", ["dpath", 'sphinx; extra == "docs"', 'pywin32; sys_platform == "win32"'])
    assert carry.requirements(a) == ["yte", "pyyaml", "pulp"]  # markers evaluated for CPython 3.12 on Linux
    # dpath is neither carried nor in the image; pyyaml is in the image; pulp is left out on purpose
    assert carry.missing_requirements([a, b]) == {b.name: ["dpath"]}
    fake_wheel(tmp_path, "dpath", "2.2.0", [])
    assert carry.missing_requirements(sorted(tmp_path.glob("*.whl"))) == {}
    gaps = carry.wheel_gaps(tmp_path)
    assert "snakemake==9.27.1" not in gaps and "jsonschema==4.26.0" in gaps
    fake_wheel(tmp_path, "jsonschema", "4.0.0", [])  # another version than the pin: still a gap
    assert "jsonschema==4.26.0" in carry.wheel_gaps(tmp_path)
    assert not set(map(carry.canonical, carry.WHEELS)) & carry.IMAGE_PACKAGES  # nothing carried twice


def test_what_travels_counts_the_tree_shared_and_the_carried_paths(tmp_path: Path) -> None:
    carry = load("gpu_carry")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text("/build/\n")
    (tmp_path / "a.py").write_bytes(b"x" * 100)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "shared" / "data" / "f.npz").write_bytes(b"y" * 1000)
    (tmp_path / "build" / "gpu_wheels").mkdir(parents=True)
    (tmp_path / "build" / "gpu_wheels" / "w.whl").write_bytes(b"z" * 10_000)
    (tmp_path / "build" / "other.bin").write_bytes(b"q" * 99_999)  # ignored and not carried: stays
    sizes = carry.travelling_bytes(tmp_path, ["build/gpu_wheels"])
    assert sizes == {"tree": 100 + len("/build/\n"), "shared": 1000, "build/gpu_wheels": 10_000}
    (tmp_path / ".gitignore").write_text("/build/\n/shared/\n")  # an ignored shared/ travels all the same
    assert carry.travelling_bytes(tmp_path, [])["shared"] == 1000


# -- the workflow smoke ----------------------------------------------------------------------------------------


def test_workflow_smoke_summary_wants_every_record_on_the_device(tmp_path: Path) -> None:
    wf = load("gpu_workflow")
    for i, device in enumerate(("cuda:0", "cuda", "cpu")):
        run = tmp_path / "results" / "runs" / "digits" / str(i) / "con2" / "invert" / "seed0"
        run.mkdir(parents=True)
        (run / "record.json").write_text(json.dumps({"device": device, "config": {"method": "con2"}}))
    (tmp_path / "results" / "tables").mkdir(parents=True)
    (tmp_path / "results" / "tables" / "t.md").write_text("|")
    summary = wf.summarise(tmp_path)
    assert summary["records"] == 3 and summary["tables"] == 1 and summary["record_methods"] == {"con2": 3}
    assert summary["record_devices"] == {"cuda:0": 1, "cuda": 1, "cpu": 1}
    assert not wf.on_device("cuda", summary)  # one ran on the CPU
    summary["record_devices"].pop("cpu")
    assert wf.on_device("cuda", summary) and not wf.on_device("cpu", summary)
    assert not wf.on_device("cuda", {"record_devices": {}})  # no record: nothing ran on it


def test_workflow_smoke_without_snakemake_says_so_and_a_done_smoke_is_reused(tmp_path: Path) -> None:
    script = str(ROOT / "benchmarks" / "gpu_workflow.py")
    cmd = [sys.executable, script, "--device", "cpu", "--work", str(tmp_path / "w"), "--block", "snakemake"]
    cmd += ["--jsonl", str(tmp_path / "lines.jsonl"), "--state", str(tmp_path / "state.json")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env_with_root())
    assert res.returncode == 0, res.stderr[-2000:]
    line = json.loads(res.stdout.splitlines()[-1])
    assert line["event"] == "workflow_smoke" and "snakemake is not importable here" in line["skipped"]
    assert not (tmp_path / "state.json").exists()  # not done: a later call tries again
    done = {"event": "workflow_smoke", "ok": True, "rc": 0, "record_devices": {"cuda:0": 7}}
    (tmp_path / "state.json").write_text(json.dumps(done))
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env_with_root())
    again = json.loads(res.stdout.splitlines()[-1])
    assert res.returncode == 0 and again == {**done, "reused": True, "from": str(tmp_path / "state.json")}
    written = [json.loads(x) for x in (tmp_path / "lines.jsonl").read_text().splitlines()]
    assert written == [line, again]


def one_run_per_method(folder: Path) -> Path:
    """The test profile (workflow/config/test.yaml) cut to one training run of each of its methods (CON2 invert,
    SimCLR, CSI on digits 0): the smoke's rehearsal here trains what every method needs, not the whole test
    profile again (tests/conftest.py's ``tiny_run`` runs that once per session); the GPU call keeps its default."""
    cfg = yaml.safe_load((ROOT / "workflow" / "config" / "test.yaml").read_text())
    cfg["datasets"]["digits"]["normal_classes"] = ["0"]
    cfg["experiments"] = {"main": cfg["experiments"]["main"], "baselines": cfg["experiments"]["baselines"]}
    path = folder / "smoke_profile.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.slow
def test_gpu_call_runs_the_workflow_smoke_before_the_plan(tmp_path: Path, shared_data: Path) -> None:
    """gpu_call.sh as on the GPU image (kornia, medmnist, kaggle and PuLP unimportable in every process), with
    no budget for the plan: the test profile (cut to one run per method, ``--profile``) through Snakemake first
    (here on the CPU, the device it finds), its line in the plan's jsonl before the predictions; a second call on
    the machine reuses it."""
    out = tmp_path / "OUT"
    env = {**env_with_root(), "OUT": str(out), "BUDGET_S": "0", "SMOKE_S": "900", "WHEELS": str(tmp_path / "none")}
    env |= {"SMOKE_STATE": str(tmp_path / "smoke.json"), "SMOKE_WORK": str(tmp_path / "wf")}
    env["SMOKE_ARGS"] = f"--block kornia medmnist kaggle pulp --cores 2 --profile {one_run_per_method(tmp_path)}"
    cmd = ["bash", str(ROOT / "benchmarks" / "gpu_call.sh"), "--data-dir", str(shared_data)]
    cmd += ["--out", str(tmp_path / "gf"), "--records", str(tmp_path / "none")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1500, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    lines = [json.loads(x) for x in (out / "gpu_fidelity_all.jsonl").read_text().splitlines()]
    smoke = lines[0]
    assert smoke["event"] == "workflow_smoke" and smoke["ok"], smoke
    assert smoke["device"] == "cpu" and "no GPU here" in smoke["note"] and set(smoke["record_devices"]) == {"cpu"}
    # every run of the profile trained, one per method (the training rule and both baselines' paths), tables built
    assert smoke["records"] == 3 and smoke["record_methods"] == {"con2": 1, "simclr": 1, "csi": 1}, smoke
    assert smoke["tables"] > 0 and "--scheduler greedy" in smoke["command"]
    assert smoke["command"].endswith("--configfile smoke_profile.yaml --config device=cpu --scheduler greedy")
    # then the CIFAR-10 length study (issue 56), skipped with a line with no budget left, then the plan
    assert lines[1]["event"] == "length_skipped" and "120 s" in lines[1]["reason"]
    assert [x["event"] for x in lines[2:4]] == ["environment", "gpu_prediction"]
    assert "wheels: none in" in res.stdout and "plan: budget 0 s" in res.stdout
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert again.returncode == 0
    lines = [json.loads(x) for x in (out / "gpu_fidelity_all.jsonl").read_text().splitlines()]
    assert [x.get("reused") for x in lines if x["event"] == "workflow_smoke"] == [None, True]


@pytest.mark.slow
def test_cifar_part_rehearsal_runs_to_the_budget_and_says_how_far(tmp_path: Path, shared_data: Path) -> None:
    """Part (e) alone on the CPU at tiny sizes (16 px, width 8, the identity view): it starts although its whole
    run is not predicted to finish (finish-only), scores its first curve point on the real CIFAR-10 folder and,
    stopped there as when the budget is spent, its paused line says the epoch reached of how many and the curve
    points scored; without CIFAR-10 in the data folder it is skipped with the fix."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "cifar10").symlink_to(shared_data / "cifar10")
    script = str(ROOT / "benchmarks" / "gpu_fidelity.py")
    cmd = [sys.executable, script, "--data-dir", str(data), "--tiny", "--only", load("gpu_predictions").CIFAR]
    cmd += ["--out", str(tmp_path / "gf"), "--jsonl", str(tmp_path / "lines.jsonl"), "--checkpoint-s", "0"]
    lines = run_script([*cmd, "--finish-only", "--pause-at", "1"], timeout=1200)
    events = [x["event"] for x in lines]
    assert events[events.index("to_budget") :] == ["to_budget", "start", "point", "paused", "done"]
    prediction = next(x for x in lines if x["event"] == "prediction")
    assert prediction["part"] == "e" and prediction["to_budget"]
    paused = next(x for x in lines if x["event"] == "paused")
    assert (paused["reached_epoch"], paused["of_epochs"], paused["curve_scored"]) == (1, 2, [1])
    assert "epoch 1 of a 2-epoch schedule" in paused["note"] and "not a run of that length" in paused["note"]
    point = next(x for x in lines if x["event"] == "point")
    assert point["epoch"] == 1 and 0 <= point["nnd"] <= 100
    outline = next(x for x in lines if x["event"] == "gpu_prediction" and x["detected"])["call_outline"]
    assert outline[0].startswith(f"{load('gpu_predictions').CIFAR}: ")

    (data / "cifar10").unlink()
    skipped = [x for x in run_script([*cmd, "--out", str(tmp_path / "gf2")], timeout=600) if x["event"] == "skipped"]
    assert len(skipped) == 1 and "no CIFAR-10 in" in skipped[0]["reason"] and "gpu_carry.py" in skipped[0]["reason"]


def test_predict_only_prints_each_cards_outline_and_trains_nothing(shared_data: Path, tmp_path: Path) -> None:
    """`--predict-only`: the predictions and each card's call outline for a budget (a session's plan made
    before it starts), the committed records and H100 packing lines reused, nothing started or skipped."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "gpu_fidelity.py"), "--data-dir", str(shared_data)]
    cmd += ["--gpu", "H100", "--budget-s", "470", "--finish-only", "--predict-only", "--out", str(tmp_path / "gf")]
    lines = run_script([*cmd, "--jsonl", str(tmp_path / "lines.jsonl")], timeout=600)
    events = [x["event"] for x in lines]
    assert events == ["environment", "gpu_prediction", "gpu_prediction", *["prediction"] * 12, "plan", "done"]
    predicted = {x["setting"]: x["predicted_s"] for x in lines if x["event"] == "prediction"}
    outlines = {x["gpu"]: x["call_outline"] for x in lines if x["event"] == "gpu_prediction"}
    h100 = outlines["H100"]  # CON2 as printed is done (its record committed): content only comes first
    assert h100[0] == f"content only: {predicted['content only']} s"
    assert any(x.startswith(load("gpu_predictions").CIFAR) for x in h100)
    assert all(x.startswith(("content only", "SimCLR")) for x in outlines["H200"][:2])
