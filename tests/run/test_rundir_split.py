"""Every method and every external path scores the same test images for one (dataset, normal class,
split seed), whatever the training seed: all load their data through ``con2.data.rundata.load_run_data``,
and every record stores the split's checksum, so a drift would show here."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import TINY
from method_fixtures import tiny_for, with_stand_in_weights

from baselines.examples import pixel_nn
from con2.config import RUNTIME_KEYS, make_config
from con2.data import load_one_class
from con2.methods import all_methods
from con2.run.external import main as external_main
from con2.run.records import read_record
from con2.run.runner import RECORD, SCORES, run

REPO = Path(__file__).resolve().parents[2]
NORMAL, SPLIT_SEED, SEEDS = "3", 0, (0, 1)


@pytest.fixture(scope="module")
def expected() -> dict:
    """The harness's split of digits class 3 at split seed 0 (16 px, the tiny config's size)."""
    manifest = load_one_class("digits", None, NORMAL, seed=SPLIT_SEED, size=TINY["image_size"]).manifest
    other = load_one_class("digits", None, NORMAL, seed=SPLIT_SEED + 1, size=TINY["image_size"]).manifest
    assert other["test_ids"] != manifest["test_ids"]  # the split seed matters, so the checks below can fail
    return manifest


def check(record: dict, labels, expected: dict) -> None:
    assert record["split_seed"] == SPLIT_SEED and record["split_sha256"] == expected["split_sha256"]
    assert [int(x) for x in labels] == expected["test_labels"]


@pytest.mark.parametrize("method", list(all_methods()))
def test_every_method_sees_the_same_test_ids_across_training_seeds(method, expected, tmp_path):
    cls = all_methods()[method]
    for seed in SEEDS:
        params = with_stand_in_weights(method, dict(cls.test_params), tmp_path / "stand_in_weights")
        cfg = make_config(
            {
                **tiny_for(method, TINY),
                "method": method,
                "params": params,
                "normal_class": NORMAL,
                "seed": seed,
                "split_seed": SPLIT_SEED,
                "max_steps": 1,
            }
        )
        run(cfg, tmp_path / str(seed))
        check(read_record(tmp_path / str(seed) / RECORD), pd.read_csv(tmp_path / str(seed) / SCORES)["label"], expected)


def test_the_external_path_sees_the_same_test_ids_across_training_seeds(expected, tmp_path):
    data_set = [f"image_size={TINY['image_size']}", f"split_seed={SPLIT_SEED}"]
    for seed in SEEDS:
        raw, run_dir = tmp_path / f"raw{seed}.csv", tmp_path / f"seed{seed}"
        pixel_nn.main(
            [
                "--data-dir",
                str(tmp_path),
                "--dataset",
                "digits",
                "--normal-class",
                NORMAL,
                "--set",
                *data_set,
                "--out",
                str(raw),
            ]
        )
        assert pd.read_csv(raw)["id"].tolist() == expected["test_ids"]
        code = external_main(
            [
                "--scores",
                str(raw),
                "--run-dir",
                str(run_dir),
                "--dataset",
                "digits",
                "--normal-class",
                NORMAL,
                "--method",
                "pixel_nn",
                "--seed",
                str(seed),
                "--set",
                *data_set,
                "--data-dir",
                str(tmp_path),
            ]
        )
        assert code == 0
        check(read_record(run_dir / RECORD), pd.read_csv(run_dir / SCORES)["label"], expected)


def test_the_external_path_refuses_scores_of_another_split(expected, tmp_path, capsys):
    raw = tmp_path / "raw.csv"
    pixel_nn.main(
        [
            "--data-dir",
            str(tmp_path),
            "--dataset",
            "digits",
            "--normal-class",
            NORMAL,
            "--set",
            f"image_size={TINY['image_size']}",
            "split_seed=1",
            "--out",
            str(raw),
        ]
    )
    code = external_main(
        [
            "--scores",
            str(raw),
            "--run-dir",
            str(tmp_path / "run"),
            "--dataset",
            "digits",
            "--normal-class",
            NORMAL,
            "--method",
            "pixel_nn",
            "--seed",
            "1",
            "--set",
            f"image_size={TINY['image_size']}",
            "--data-dir",
            str(tmp_path),
        ]
    )
    assert (
        code == 2 and "differ from the harness's digits split (normal class 3, split seed 0" in capsys.readouterr().err
    )
    assert not (tmp_path / "run").exists()


def readme_example() -> str:
    """The ``toy.py`` block of workflow/rules/methods/README.md."""
    text = (REPO / "workflow" / "rules" / "methods" / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    (toy,) = [b for b in blocks if "load_run_data" in b]
    return toy


def test_the_readme_example_sees_the_same_test_ids_across_training_seeds(expected, tmp_path):
    for seed in SEEDS:
        settings = {k: v for k, v in TINY.items() if k not in RUNTIME_KEYS}
        settings.update(
            dataset="digits",
            normal_class=NORMAL,
            method="toy",
            variant="default",
            seed=seed,
            split_seed=SPLIT_SEED,
            params={},
        )
        record = tmp_path / f"seed{seed}" / RECORD
        snakemake = SimpleNamespace(
            params=SimpleNamespace(settings=settings),
            config={"data_dir": str(tmp_path)},
            output=SimpleNamespace(record=str(record)),
        )
        exec(compile(readme_example(), "workflow/rules/methods/README.md:toy.py", "exec"), {"snakemake": snakemake})
        rec = read_record(record)
        assert rec["method"] == "toy" and rec["seed"] == seed
        check(rec, pd.read_csv(record.parent / SCORES)["label"], expected)
