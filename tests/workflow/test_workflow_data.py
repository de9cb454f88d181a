"""Data and aggregation: records never leave the tables when data are missing or the grid changes,
and an offline run without data ends with the summary of what was skipped and how to get it.

Every test works in a temporary copy of the workflow (tests/workflow_helpers.py); the tiny profile
runs once per session (the ``tiny_run`` fixture, tests/conftest.py).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from workflow_helpers import (
    SNAKEMAKE,
    clone,
    copy_workflow,
    fake_breastmnist,
    finished,
    job_stats,
    records,
    runs_csv_records,
    small_profile,
    snakemake,
)

pytestmark = pytest.mark.slow

if shutil.which("snakemake") is None and subprocess.run([*SNAKEMAKE, "--version"], capture_output=True).returncode:
    pytest.skip("snakemake is not installed (pip install -e '.[workflow]')", allow_module_level=True)


@pytest.fixture(scope="module")
def small_grid(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Digits class 0 and a small BreastMNIST-shaped file (workflow_helpers.fake_breastmnist), CON2 invert, run
    `all` once for this module: {"wd": that run, read only (a test works in its own clone), "data": its data
    folder, "datasets" and "main": the profile's datasets and main experiment (a test changes its deep copy)}."""
    folder = tmp_path_factory.mktemp("small_grid")
    wd = copy_workflow(folder / "wd")
    data = folder / "data"
    datasets, main = fake_breastmnist(data)
    prof = small_profile(wd, datasets, {"main": main})
    full = snakemake(wd, "--cores", "2", "all", "--configfile", prof, "--config", f"data_dir={data}")
    assert full.returncode == 0, full.stderr[-3000:]
    return {"wd": wd, "data": data, "datasets": datasets, "main": main}


def small_grid_copy(small_grid: dict[str, Any], tmp_path: Path) -> tuple[Path, Path, dict, dict]:
    """This test's clone of the module's run, its data folder, and deep copies of its datasets and main experiment."""
    wd = clone(small_grid["wd"], tmp_path / "wd")
    return wd, small_grid["data"], copy.deepcopy(small_grid["datasets"]), copy.deepcopy(small_grid["main"])


def test_no_record_ever_leaves_the_tables_and_a_grid_change_trains_at_once(small_grid: dict, tmp_path: Path) -> None:
    """Issue 9, cases 1 and 2: the README's one-table command without the data_dir override, and
    data that the profile cannot see, never drop a finished run; one call after a change trains."""
    wd, data, datasets, main = small_grid_copy(small_grid, tmp_path)  # `all` run once: digits and BreastMNIST
    prof = "small.yaml"
    everything = runs_csv_records(wd)
    assert {Path(r).parts[2] for r in everything} == {"digits", "breastmnist"} and all(everything.values())

    # case 1: the README's single-table command, without --config data_dir=... (nothing under ./data, offline)
    (wd / "results/tables/table1_medical.md").unlink()
    one = snakemake(wd, "--cores", "1", "results/tables/table1_medical.md", "--configfile", prof)
    assert one.returncode == 0, one.stderr[-3000:]
    assert job_stats(one.stdout + one.stderr) == Counter({"table_table1_medical": 1})
    assert runs_csv_records(wd) == everything
    assert re.search(
        r"\| CON2 \(NND\) \| ours \| \d+\.\d \[1×1\]", (wd / "results/tables/table1_medical.md").read_text()
    )

    # the data are gone for this profile (markers deleted, nothing under ./data, offline): the runs stay
    shutil.rmtree(wd / "results/data")
    (wd / "results/evaluation/runs.csv").unlink()
    blind = snakemake(wd, "--cores", "2", "all", "--configfile", prof)
    assert blind.returncode == 0, blind.stderr[-3000:]
    assert finished(blind.stdout + blind.stderr)["train"] == 0
    assert runs_csv_records(wd) == everything
    assert "breastmnist (28 px)" in blind.stderr and "SKIPPED" in blind.stderr

    # case 2: a grid change (digits: another epoch count and a second seed), then ONE call trains it
    before = records(wd)
    datasets["digits"]["run"] = {"epochs": 2}
    changed = snakemake(
        wd,
        "--cores",
        "2",
        "all",
        "--configfile",
        small_profile(
            wd,
            datasets,
            {"main": main, "more": {"datasets": ["digits"], "seeds": [1], "methods": {"con2": ["invert"]}}},
        ),
        "--config",
        f"data_dir={data}",
    )
    assert changed.returncode == 0, changed.stderr[-3000:]
    assert finished(changed.stdout + changed.stderr)["train"] == 2
    after = records(wd)
    digits0 = "results/runs/digits/0/con2/invert/seed0/record.json"
    assert after[digits0] > before[digits0] and json.loads((wd / digits0).read_text())["epochs"] == 2
    assert {k: v for k, v in after.items() if "breastmnist" in k} == {
        k: v for k, v in before.items() if "breastmnist" in k
    }
    assert set(runs_csv_records(wd)) == set(after) and len(after) == 3

    # breastmnist leaves the grid: its record is still aggregated, flagged, and reported
    gone = snakemake(
        wd,
        "--cores",
        "1",
        "all",
        "--configfile",
        small_profile(
            wd,
            datasets,
            {
                "main": {**main, "datasets": ["digits"]},
                "more": {"datasets": ["digits"], "seeds": [1], "methods": {"con2": ["invert"]}},
            },
        ),
        "--config",
        f"data_dir={data}",
    )
    assert gone.returncode == 0, gone.stderr[-3000:]
    flags = runs_csv_records(wd)
    breast = "results/runs/breastmnist/1/con2/invert/seed0/record.json"
    assert set(flags) == set(after) and flags[breast] is False and sum(flags.values()) == 2
    assert f"{breast}: not a run of this profile's grid" in (wd / "results/logs/aggregate.log").read_text()
    assert "1 record(s) outside this profile's grid" in gone.stderr
    assert "outside this profile's grid" in (wd / "results/tables/table1_medical.md").read_text()

    # deleting that run's directory is what drops it: aggregation reruns on its own
    shutil.rmtree(wd / "results/runs/breastmnist")
    dropped = snakemake(wd, "--cores", "1", "all", "--configfile", "small.yaml", "--config", f"data_dir={data}")
    assert dropped.returncode == 0, dropped.stderr[-3000:]
    assert finished(dropped.stdout + dropped.stderr)["aggregate"] == 1
    assert set(runs_csv_records(wd)) == set(after) - {breast}


def test_offline_without_data_ends_with_the_skipped_datasets_in_its_closing_lines(tmp_path: Path) -> None:
    wd = copy_workflow(tmp_path / "wd")
    empty = tmp_path / "data"
    empty.mkdir()
    datasets = {
        "digits": {"normal_classes": ["0"]},
        "breastmnist": {"run": {"image_size": 28}},
        "pneumonia": {"run": {"image_size": 28}},
    }
    prof = small_profile(
        wd, datasets, {"main": {"datasets": list(datasets), "methods": {"con2": ["invert"]}}}, download=True
    )
    # a data_dir with `..` in it (issue 19: paths were printed as /x/wd/../data/...)
    res = snakemake(wd, "--cores", "2", "all", "--configfile", prof, "--config", "data_dir=../wd/../data")
    assert res.returncode == 0, res.stderr[-3000:]
    totals = set(re.findall(r"^\d+ of (\d+) steps", res.stderr, re.M))
    assert len(totals) == 1, totals  # the step total of the first line: skipped data add no step and drop none
    tail = [ln for ln in res.stderr.splitlines() if ln.strip()][-10:]
    text = "\n".join(tail)
    assert tail[-1].startswith("-----") and "2 dataset(s) SKIPPED" in text, text
    assert "fix: con2 data get breastmnist --data-dir ../data --size 28" in text
    assert "fix: con2 data get pneumonia --data-dir ../data --size 28" in text
    assert "data already on disk elsewhere: add `--config data_dir=DIR` (or `export CON2_DATA_DIR=DIR`)" in text
    assert "no network" in text.lower() and "credentials" in text.lower()
    assert str(empty) in text and "/../" not in text, text  # every path normalised (the data layer's too)
    markers = [p.read_text() for p in (wd / "results/data").rglob("*px.json")]
    assert len(markers) == 3 and not any("/../" in m for m in markers), markers
    assert [Path(p).parts[2] for p in records(wd)] == ["digits"]  # the rest ran
    table1 = (wd / "results/tables/table1_medical.md").read_text()
    # Table 1 says which columns are skipped for missing data (why, the fix) and which are not in the profile
    fixes = (wd / "results/tables/missing.md").read_text()  # the long fixes: one file, which every short line names
    for name, label in (("breastmnist", "BreastMNIST"), ("pneumonia", "Pneumonia")):
        assert f"- {label}: skipped, its data are missing (how to get them: results/tables/missing.md).\n" in table1
        assert f"| {label}: its data (28 px) | skipped: " in fixes, fixes
        assert f"\ncon2 data get {name} --data-dir ../data --size 28\n" in fixes  # in the code block under the table
    assert "con2 data get" not in table1 and "in one file: results/tables/missing.md" in text
    assert "- Not in this profile: OctMNIST, Kvasir, BR35H, Melanoma (" in table1 and "Not run in" not in table1
    assert not list(empty.rglob("*.npz")) and not any(p.name.startswith(".") for p in empty.rglob("*"))

    strict = snakemake(wd, "--cores", "2", "all", "--configfile", prof, "--config", f"data_dir={empty}", "strict=true")
    assert strict.returncode != 0
    assert re.search(r"dataset (breastmnist|pneumonia) is unavailable and strict=true", strict.stderr), strict.stderr[
        -3000:
    ]
    assert "UNAVAILABLE with strict=true" in strict.stderr


def test_a_finished_grid_on_a_changed_copy_of_its_data_says_so_and_keeps_its_tables(
    small_grid: dict, tmp_path: Path
) -> None:
    """Issue 57 item 5: the same command with data_dir naming a copy whose images changed trains nothing; its
    last lines say that the records were trained on other images, and how to retrain; the tables stay."""
    from data_fixtures import write_medmnist_npz  # lazy: a helper module of tests/, on the path conftest.py sets

    wd, _, _, _ = small_grid_copy(small_grid, tmp_path)  # `all` run once with the data folder: a finished grid
    other = tmp_path / "other"
    prof = "small.yaml"
    tables = {p: p.read_bytes() for p in (wd / "results/tables").glob("*.md")}
    write_medmnist_npz(
        other / "medmnist" / "breastmnist.npz", {"train": [30, 70], "val": [2, 2], "test": [20, 25]}, pixel_seed=7
    )
    again = snakemake(wd, "--cores", "2", "all", "--configfile", prof, "--config", f"data_dir={other}")
    assert again.returncode == 0, again.stderr[-3000:]
    text = again.stdout + again.stderr
    assert "digits:" not in text  # kept without files: the same
    assert "breastmnist: 1 of its 1 record(s) were trained on other images than data_dir holds now" in text, text[
        -3000:
    ]
    assert "move results/runs/breastmnist aside" in text
    assert {p: p.read_bytes() for p in (wd / "results/tables").glob("*.md")} == tables and tables
