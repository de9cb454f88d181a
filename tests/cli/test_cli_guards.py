"""Issue 32, items 1 and 11-15: empty path options, the grid ETA's inputs, config bounds, deep YAML,
`con2 plan --throughput` rows and `con2 methods --rules` / `--log` that are no file.

Each command-line case runs ``con2`` in a subprocess through ``cli()`` of tests/workflow/test_hostile_inputs.py
(its peak-memory wrapper) and checks: exit 2, ONE ``con2: error:`` line that names the problem and the
fix, within 10 s and 1 GB, and, where a run directory is involved, the md5 of each of its files unchanged
and nothing written in the current folder.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import TINY
from test_hostile_inputs import ROOT, TEST_CONFIG, assert_one_line, cli, snakemake, workflow_copy

from con2.cli.main import main
from con2.config import MAX_LAYER_SIZE, MAX_THREADS, MAX_WIDTH
from con2.errors import ConfigError
from con2.grid.cost_tables import SIZES_CSV, THROUGHPUT_COLUMNS, manifest_size, read_sizes
from con2.grid.experiments import expand_grid
from con2.workflow.eta import WeighedRun, eta_line, grid_eta, view_cost, weigh_runs
from con2.yaml_files import MAX_CONFIG_DEPTH, check_size

TINY_SET = [f"{k}={json.dumps(v)}" for k, v in TINY.items()]
# one row of the throughput table as `con2 plan` reads it (tests change one column)
THROUGHPUT_ROW = {
    "device": "NVIDIA H200",
    "image_size": "224",
    "width": "64",
    "batch_size": "64",
    "views_per_image": "4",
    "compile": "false",
    "images_per_s": "3000",
    "source": "x",
}
DEEP = "[" * 1000 + "]" * 1000  # 2 kB, no alias: PyYAML's recursive loader ends in a RecursionError


def md5s(folder: Path) -> dict[str, str]:
    """{relative path: md5} of every file under ``folder``."""
    return {
        str(p.relative_to(folder)): hashlib.md5(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()
    }


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tiny run directory (copied by the tests that use it)."""
    path = tmp_path_factory.mktemp("finished") / "run"
    assert main(["train", "--set", *TINY_SET, "--run-dir", str(path)]) == 0
    return path


# ------------------------------------------------------------------------------------------ 1: empty paths
def test_evaluate_with_an_empty_out_does_not_rescore_the_run_in_place(finished_run: Path, tmp_path: Path) -> None:
    """`--out ""` (an unset "$OUT") is refused: the run's record, config and checkpoint keep their bytes."""
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    before = md5s(run)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    result = cli("evaluate", "--run-dir", str(run), "--set", "tta=4", "--out", "", cwd=cwd)
    assert_one_line(result, "--out is empty", "leave --out out to re-score the run in place")
    assert md5s(run) == before
    assert sorted(p.name for p in cwd.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [
        ["train", "--set", *TINY_SET, "--run-dir", ""],
        ["train", "--set", *TINY_SET, "--run-dir", "r", "--log", ""],
        ["train", "--config", "", "--run-dir", "r"],
        ["evaluate", "--run-dir", ""],
        ["methods", "--rules", ""],
        ["methods", "--workflow", ""],
        ["plan", "--configfile", ""],
        ["plan", "--throughput", ""],
        ["plan", "--data-dir", ""],
        ["data", "get", "digits", "--data-dir", ""],
        ["data", "list", "--data-dir", ""],
        ["contexts", "--dataset", "digits", "--data-dir", ""],
    ],
    ids=lambda a: " ".join(x or "''" for x in a if "=" not in x),
)
def test_an_empty_path_option_is_refused_and_nothing_is_written(tmp_path: Path, args: list[str]) -> None:
    """Every path option given as "" (never "not given", never the current folder): one line naming it."""
    option = next(a for i, a in enumerate(args) if a.startswith("--") and args[i + 1] == "")
    assert_one_line(cli(*args, cwd=tmp_path), f"{option} is empty", f"Fix: pass {option} a path")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------ 11: the ETA's inputs
def damaged_manifests(data_dir: Path, value: object, seed: int = 0) -> list[Path]:
    """Split manifests of digits (16 px, classes 0 and 1, split seed ``seed``) whose ``n_train`` is
    ``value``, where :func:`con2.grid.cost_tables.manifest_size` looks for them (any seed)."""
    from con2.data.cache import cache_dir
    from con2.data.manifest import manifest_filename

    folder = cache_dir(data_dir, "digits", 16) / "splits"
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / manifest_filename(c, seed) for c in ("0", "1")]
    for path in paths:
        path.write_text(json.dumps({"n_train": value, "split_sha256": "x"}))
    return paths


@pytest.mark.parametrize("value", [None, "many", 0, -3, True, [1]])
def test_a_damaged_split_manifest_is_no_size_and_the_table_stands_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: object
) -> None:
    monkeypatch.setenv("CON2_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data"
    data.mkdir()
    damaged_manifests(data, value)
    assert manifest_size(data, "digits", "0", 16) is None
    runs = expand_grid(yaml.safe_load((ROOT / TEST_CONFIG).read_text()), lambda name: ["0", "1"])
    planned = weigh_runs(runs, data, None)  # was a TypeError at onstart: nothing ran
    table = read_sizes(SIZES_CSV)
    n = (table.get(("digits", "0")) or table[("digits", "*")])[0]
    simclr = next(r for r in runs if r.method == "simclr" and r.normal_class == "0")
    steps = max(1, n // simclr.config["batch_size"]) * simclr.config["batch_size"] * simclr.config["epochs"]
    # the sizes table's n_train, two views per image, each costing its size and width (con2.workflow.eta.view_cost)
    assert planned[simclr.key].weight == pytest.approx(steps * 2 * view_cost(simclr.config))


def test_con2_plan_with_a_damaged_manifest_plans_from_the_sizes_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was the onstart ETA's TypeError in `con2 plan` too: now it plans, exit 0, nothing on stderr."""
    monkeypatch.setenv("CON2_CACHE_DIR", str(tmp_path / ".cache"))  # where cli() points the child
    data = tmp_path / "data"
    data.mkdir()
    damaged_manifests(data, None)
    code, err, seconds, mb = cli("plan", "--configfile", str(ROOT / TEST_CONFIG), "--data-dir", str(data), cwd=tmp_path)
    assert code == 0 and err == "", err[-2000:]
    assert seconds < 10 and mb < 1024, (seconds, mb)


@pytest.mark.parametrize(("column", "value"), [("image_size", "0"), ("images_per_s", "nan"), ("width", "x")])
def test_a_bad_throughput_row_is_one_clear_error_for_the_eta(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, column: str, value: str
) -> None:
    """The ETA's prior reads the throughput table: a bad row is a ConfigError naming its line and column
    (the onstart block prints it as "con2 grid: no ETA (...)" and goes on), not a math domain error."""
    import con2.workflow.eta as eta

    table = tmp_path / "throughput.csv"
    row = {**THROUGHPUT_ROW, column: value}
    table.write_text("\n".join([",".join(THROUGHPUT_COLUMNS), ",".join(row[c] for c in THROUGHPUT_COLUMNS), ""]))
    monkeypatch.setattr(eta, "THROUGHPUT_CSV", table)
    runs = expand_grid(yaml.safe_load((ROOT / TEST_CONFIG).read_text()), lambda name: ["0", "1"])
    with pytest.raises(ConfigError, match=f"line 2: column {column} is {value!r}, not a positive finite"):
        weigh_runs(runs, None, "NVIDIA H200")


@pytest.mark.parametrize("wall", [0, 0.0, -5.0, math.nan, math.inf, -math.inf, "12", True])
def test_a_finished_run_without_a_positive_finite_wall_time_sets_no_pace(wall: object) -> None:
    """Zero, negative or non-finite wall seconds are no pace: never "about 0 s left"."""
    planned = [WeighedRun(f"r{i}", "con2", 100.0) for i in range(4)]
    eta = grid_eta(planned, {"r0": wall}, slots=1)  # type: ignore[dict-item]
    assert eta.done == 1 and eta.seconds_left is None
    assert eta_line(eta, 1) == "con2 grid: 1 of 4 training runs done; an ETA once a training run has finished"
    paced = grid_eta(planned, {"r0": wall, "r1": 50.0}, slots=1)  # type: ignore[dict-item]
    assert paced.done == 2 and paced.seconds_left == pytest.approx(2 * 100.0 * 0.5)
    assert paced.basis == "the pace of the 1 finished run"


def test_the_workflow_starts_with_a_damaged_split_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A manifest with `n_train: null` (split seed 7: no run reads it) under the data cache: the grid ETA
    at onstart no longer ends the workflow in a TypeError before any job; the run trains and the ETA line
    is printed."""
    wd = workflow_copy(tmp_path / "wd")
    data = wd / "data"
    data.mkdir()
    config = ["--configfile", TEST_CONFIG, "--config", f"data_dir={data}"]
    res = snakemake(wd, "data_status", "--cores", "1", *config)  # the data check: the DAG then holds the run
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    monkeypatch.setenv("CON2_CACHE_DIR", str(wd / ".con2-cache"))  # the workflow's (tests/workflow_helpers.py)
    damaged_manifests(data, None, seed=7)
    record = wd / "results" / "runs" / "digits" / "0" / "con2" / "invert" / "seed0" / "record.json"
    res = snakemake(wd, str(record.relative_to(wd)), "--cores", "1", *config)
    out = res.stdout + res.stderr
    assert res.returncode == 0 and "Traceback" not in out and "TypeError" not in out, out[-3000:]
    assert "con2 grid: 0 of 1 training runs done" in out, out[-3000:]
    assert json.loads(record.read_text())["method"] == "con2"


# ------------------------------------------------------------------------------------------ 12: config bounds
@pytest.mark.parametrize(
    ("override", "needles"),
    [
        ("width=100000", ["'width' must be at most", f"at most {MAX_WIDTH}", "Fix: --set width=64"]),
        ("params.head_dim=100000000", ["'params.head_dim' must be at most", f"{MAX_LAYER_SIZE}"]),
        ("method=simclr params.head_dim=100000", ["'params.head_dim'", "Fix: --set params.head_dim=128"]),
        ("method=csi params.head_dim=100000", ["'params.head_dim'"]),
        ("threads=100000", [f"'threads' must be at most {MAX_THREADS}", "Fix: --set threads="]),
    ],
)
def test_sizes_that_would_exhaust_memory_are_refused_naming_the_key(
    tmp_path: Path, override: str, needles: list[str]
) -> None:
    """Before the run directory is created or torch loads: one line naming the key, the bound and the fix."""
    args = ["train", "--set", *TINY_SET, *override.split(), "--run-dir", "r"]
    assert_one_line(cli(*args, cwd=tmp_path), *needles)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------ 13: deep YAML
@pytest.fixture
def deep(tmp_path: Path) -> Path:
    path = tmp_path / "deep.yaml"
    path.write_text(f"experiments: {DEEP}\n")
    return path


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["train", "--set", f"params.contexts={DEEP}", "--run-dir", "r"], ["override params.contexts=..."]),
        (["train", "--set", f"x={'{a: ' * 60}1{'}' * 60}", "--run-dir", "r"], ["override x=..."]),
        (["train", "--config", "{deep}", "--run-dir", "r"], ["config file"]),
        (["plan", "--configfile", "{deep}"], ["--configfile"]),
        (["evaluate", "--run-dir", "r", "--set", f"tta={DEEP}"], ["override tta=..."]),
    ],
    ids=["set-flow", "set-mapping", "config", "plan", "evaluate-set"],
)
def test_yaml_nested_too_deep_is_one_line(tmp_path: Path, deep: Path, args: list[str], needles: list[str]) -> None:
    filled = [a.format(deep=deep) if a == "{deep}" else a for a in args]
    if args[0] == "evaluate":  # a run directory whose config.yaml is read before the override
        (tmp_path / "r").mkdir()
        (tmp_path / "r" / "config.yaml").write_text(yaml.safe_dump(TINY))
    line = assert_one_line(cli(*filled, cwd=tmp_path), *needles)
    assert f"is nested more than {MAX_CONFIG_DEPTH} levels deep" in line, line


def test_block_yaml_nested_too_deep_is_refused_and_a_real_profile_is_not(tmp_path: Path) -> None:
    deep = tmp_path / "block.yaml"
    deep.write_text("experiments:\n" + "".join(" " * (i + 1) + "b:\n" for i in range(200)))
    assert_one_line(cli("plan", "--configfile", str(deep), cwd=tmp_path), "nested more than")
    check_size(yaml.safe_load((ROOT / "workflow" / "config" / "paper.yaml").read_text()), "paper", "-")
    nested: object = 1
    for _ in range(MAX_CONFIG_DEPTH + 1):
        nested = [nested]
    with pytest.raises(ConfigError, match=f"nested more than {MAX_CONFIG_DEPTH} levels deep"):
        check_size({"x": nested}, "the profile", "write it flat")


def test_a_deep_profile_stops_snakemake_with_one_error(tmp_path: Path) -> None:
    """Nested 300 deep (PyYAML still loads it): the Snakefile's size check refuses it in Snakemake's one
    error, before the schema check prints the whole profile; nothing is written."""
    wd = workflow_copy(tmp_path / "wd")
    n = 300
    (wd / "deep.yaml").write_text((wd / TEST_CONFIG).read_text() + f"\nx: {'[' * n}{']' * n}\n")
    res = snakemake(wd, "-n", "--configfile", "deep.yaml")
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-2000:]
    assert f"invalid workflow config: the profile is nested more than {MAX_CONFIG_DEPTH} levels deep" in out, out[
        -2000:
    ]
    assert "Traceback" not in out and "Failed validating" not in out and "[[[[" not in out, out[-2000:]
    assert not (wd / "results").exists()


# ------------------------------------------------------------------------------------------ 14: --throughput rows


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("images_per_s", "0"),
        ("images_per_s", "-5"),
        ("images_per_s", "nan"),
        ("images_per_s", "inf"),
        ("images_per_s", "fast"),
        ("views_per_image", "0"),
        ("image_size", "0"),
        ("image_size", "-28"),
        ("width", "0"),
        ("batch_size", "abc"),
    ],
)
def test_a_bad_throughput_row_is_one_line_naming_its_line_and_column(tmp_path: Path, column: str, value: str) -> None:
    table = tmp_path / "throughput.csv"
    good = ",".join(THROUGHPUT_ROW[c] for c in THROUGHPUT_COLUMNS)
    bad = ",".join(value if c == column else THROUGHPUT_ROW[c] for c in THROUGHPUT_COLUMNS)
    table.write_text("\n".join([",".join(THROUGHPUT_COLUMNS), good, bad, ""]))
    args = ["plan", "--configfile", str(ROOT / TEST_CONFIG), "--throughput", str(table)]
    line = assert_one_line(cli(*args, cwd=tmp_path), f"--throughput {table}, line 3: column {column} is {value!r}")
    assert "not a positive finite" in line and "Fix: correct that line" in line


def test_a_binary_throughput_table_is_called_a_csv_file(tmp_path: Path) -> None:
    table = tmp_path / "throughput.csv"
    table.write_bytes(b"device,\xff\xfe\x00\x01")
    args = ["plan", "--configfile", str(ROOT / TEST_CONFIG), "--throughput", str(table)]
    line = assert_one_line(cli(*args, cwd=tmp_path), "is not a CSV text file")
    assert "YAML" not in line


# ------------------------------------------------------------------------------------------ 15: --rules, --log
@pytest.mark.parametrize(
    ("target", "needles"),
    [
        ("/dev/zero", ["--rules /dev/zero is not a regular file"]),
        ("{checkpoint}", ["is not a Snakemake rule file (byte 0 is not UTF-8)"]),
        ("{folder}", ["is not a regular file"]),
        ("{missing}", ["no such rule file", "Fix: pass the path of a Snakemake rule file"]),
    ],
    ids=["dev-zero", "binary", "folder", "missing"],
)
def test_methods_rules_that_are_no_rule_file_are_one_line(tmp_path: Path, target: str, needles: list[str]) -> None:
    checkpoint = tmp_path / "checkpoint.pt"
    checkpoint.write_bytes(b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19" * 64)  # a torch pickle's first bytes
    folder = tmp_path / "rules"
    folder.mkdir()
    path = target.format(checkpoint=checkpoint, folder=folder, missing=tmp_path / "nope.smk")
    code, err, seconds, mb = result = cli("methods", "--rules", path, cwd=tmp_path)
    assert_one_line(result, *needles)
    assert "\ufffd" not in err


def test_train_log_that_is_a_folder_names_the_fix(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    args = ["train", "--set", *TINY_SET, "--run-dir", "r", "--log", "logs"]
    line = assert_one_line(cli(*args, cwd=tmp_path), "--log logs is a folder", "Fix: pass a file in it")
    assert "Errno" not in line and "--log logs/train.log" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs"]
