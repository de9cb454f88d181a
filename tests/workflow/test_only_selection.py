"""Part of a grid (issue 58, item 1): ``only_classes``, ``only_methods`` (``method``: all its variants, or
``method/variant``) and ``only_seeds`` beside ``only_datasets``. A dry run trains exactly the runs they name;
a name the grid does not have is refused in one line naming the key, the name and the names it has; the
tables speak of the selected runs only (a dataset or a method left out is not "missing").

The grid is asked of the typed layer (:func:`con2.workflow.startup.check_profile`, then
:class:`con2.workflow.session.Session`, as a launch does before its first rule); one dry run shows the job
list Snakemake prints.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from report_fixtures import config, inputs_of, paper, runs  # noqa: F401  (fixtures: test parameters of the same name)
from workflow_helpers import ROOT, SNAKEMAKE, TEST_CONFIG, copy_workflow, profile_error, snakemake

from con2.workflow import startup
from con2.workflow.session import Session

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"


def test_profile(**selection: Any) -> dict[str, Any]:
    """The test profile (digits 0 and 1; CON2 invert on both, its ablations and SimCLR, CSI on class 0; seed 0),
    with two seeds and the ``only_*`` values given as ``--config`` would give them."""
    cfg = yaml.safe_load((ROOT / TEST_CONFIG).read_text())
    cfg["seeds"] = [0, 1]
    cfg.update(selection)
    return cfg


def grid_keys(cfg: dict[str, Any]) -> set[str]:
    """The run keys of the grid a launch would schedule for ``cfg``."""
    startup.check_profile(cfg, SCHEMA)
    return {r.key for r in Session(cfg, ROOT, lambda: [], lambda: {}).runs}


test_profile.__test__ = False  # a helper, not a test


def test_each_key_keeps_exactly_what_it_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    everything = grid_keys(test_profile())
    assert len(everything) == 2 * 2 + 2 * (3 + 2)  # con2/invert on 2 classes; flip, k3, best, simclr, csi on class 0
    by_class = grid_keys(test_profile(only_classes=1))  # `--config only_classes=1` gives the integer 1
    assert by_class == {"digits/1/con2/invert/seed0", "digits/1/con2/invert/seed1"}
    every_variant = grid_keys(test_profile(only_methods="con2"))
    assert every_variant == {k for k in everything if "/con2/" in k} and len(every_variant) == 4 + 3 * 2
    pairs = grid_keys(test_profile(only_methods="con2/flip,simclr"))
    assert pairs == {f"digits/0/{m}/seed{s}" for m in ("con2/flip", "simclr/default") for s in (0, 1)}
    assert grid_keys(test_profile(only_seeds=1)) == {k for k in everything if k.endswith("seed1")}
    assert grid_keys(test_profile(only_seeds=["1"])) == {k for k in everything if k.endswith("seed1")}  # `=[1]`
    together = test_profile(only_classes="0", only_methods=["con2/invert", "csi"], only_seeds="0")
    assert grid_keys(together) == {"digits/0/con2/invert/seed0", "digits/0/csi/default/seed0"}


@pytest.mark.parametrize(
    ("selection", "line"),
    [
        (
            {"only_classes": "1,7"},
            "only_classes: 7 not among the normal classes the selected datasets run (0, 1); name some of them, "
            "or leave only_classes empty for all",
        ),
        (
            {"only_methods": "con2/nope,simclr,pixels"},
            "only_methods: con2/nope, pixels not among the methods and method/variant pairs of the grid (con2, "
            "con2/best, con2/flip, con2/invert, con2/k3, csi, csi/default, simclr, simclr/default)",
        ),
        ({"only_seeds": "0,5"}, "only_seeds: 5 not among the grid's seeds (0, 1)"),
        ({"only_seeds": "x"}, "only_seeds: "),  # the schema's pattern: integers
        (
            {"only_classes": "1", "only_methods": "simclr"},  # each in the grid, but SimCLR runs class 0 only
            "only_classes, only_methods: no run of the grid has them all",
        ),
    ],
)
def test_a_name_the_grid_lacks_is_refused_naming_the_key_and_the_accepted_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, selection: dict[str, Any], line: str
) -> None:
    monkeypatch.chdir(tmp_path)
    error = profile_error(test_profile(**selection))
    assert error.startswith("invalid workflow config: ") and "\n" not in error, error
    assert line in error, error
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_dry_run_trains_exactly_the_named_runs(tmp_path: Path) -> None:
    if shutil.which("snakemake") is None and subprocess.run([*SNAKEMAKE, "--version"], capture_output=True).returncode:
        pytest.skip("snakemake is not installed (pip install -e '.[workflow]')")
    wd = copy_workflow(tmp_path)
    (wd / "two_seeds.yaml").write_text(yaml.safe_dump(test_profile()))
    res = snakemake(
        wd, "-n", "--configfile", "two_seeds.yaml", "--config", "only_classes=0", "only_methods=con2/flip,csi"
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    trained = set(re.findall(r"^Job \d+: train (\S+ \S+ seed \d+)$", out, re.M))
    assert trained == {f"digits/0 {m} seed {s}" for m in ("con2/flip", "csi/default") for s in (0, 1)}, trained
    assert not (wd / "results").exists()  # a dry run writes nothing
    wrong = snakemake(wd, "-n", "--configfile", "two_seeds.yaml", "--config", "only_methods=simclr/invert")
    assert wrong.returncode != 0
    said = [ln for ln in (wrong.stdout + wrong.stderr).splitlines() if "only_methods: simclr/invert not among" in ln]
    assert len(said) == 1 and "simclr/default" in said[0], (wrong.stdout + wrong.stderr)[-2000:]


# ------------------------------------------------------------------------------- the tables see the selection
def test_the_tables_call_nothing_missing_that_the_selection_left_out(
    runs: pd.DataFrame,
    paper: pd.DataFrame,
    config: dict,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PANDA without its weights is "not run" in Table 1, unless only_methods leaves it out; a dataset that
    only_classes leaves out is "not in this profile", not a dataset with no record yet."""
    from con2.builders.method_tables import table1_medical
    from con2.report.notes import absent_notes, profile_datasets

    monkeypatch.setenv("CON2_WEIGHTS_DIR", str(tmp_path / "weights"))  # no pretrained weights anywhere
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    methods = {"con2": ["invert"], "panda": ["default"]}
    cfg = {
        **config,
        "datasets": {"breastmnist": {}, "cifar10": {}},
        "variants": {"invert": {"params": {"contexts": ["invert"]}}},
        "experiments": {"main": {"datasets": ["breastmnist", "cifar10"], "methods": methods}},
    }
    weights = "PANDA (panda/default): not run, its pretrained weights are missing"
    assert any(n.startswith(weights) for n in table1_medical(inputs_of(runs, paper, cfg)).notes)
    only_con2 = {**cfg, "only_methods": "con2"}
    assert not any(n.startswith(weights) for n in table1_medical(inputs_of(runs, paper, only_con2)).notes)

    assert profile_datasets(cfg) == {"breastmnist", "cifar10"}
    airplane = {**cfg, "only_classes": "airplane"}  # a CIFAR-10 class: BreastMNIST runs none of it
    assert profile_datasets(airplane) == {"cifar10"}
    assert absent_notes(["breastmnist"], airplane, None) == [
        "Not in this profile: BreastMNIST (no experiment of the profile names them, or only_classes leave them out)."
    ]
