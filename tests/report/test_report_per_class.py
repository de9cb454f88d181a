"""con2.builders.per_class: AUROC per normal class."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from report_fixtures import collect, config, fake_record, inputs_of, load_runs_of, paper  # noqa: F401  (fixtures: test parameters of the same name)

from con2.builders.per_class import per_class as per_class_table


def test_per_class_with_one_seed_does_not_claim_a_spread_over_seeds(
    tmp_path: Path, paper: pd.DataFrame, config: dict
) -> None:
    recs = [
        fake_record("cifar10", c, "con2", "invert", 0, {"nnd": a}, {"contexts": ["invert"]})
        for c, a in (("airplane", 90.0), ("cat", 80.0))
    ]
    t = per_class_table(inputs_of(collect(tmp_path, recs), paper, config, dataset="cifar10"))
    assert [r[1] for r in t.rows] == ["90.0 [1×1]", "80.0 [1×1]", f"85.0 ± {np.std([90, 80], ddof=1):.1f} [2×1]"]
    assert "one seed per class" in t.notes[0] and "over seeds" not in t.notes[0]
    assert (
        "mean ± std of its 3 seeds"
        in per_class_table(inputs_of(load_runs_of(tmp_path, 3), paper, config, dataset="cifar10")).notes[0]
    )


def test_a_class_with_several_seeds_shows_its_seed_0_runs_to_compare_a_one_seed_run_with(
    tmp_path: Path, paper: pd.DataFrame, config: dict
) -> None:
    """Issue 58, item 6: the CIFAR-10 table printed 3-seed means for airplane, automobile and bird and no seed-0
    cell, so a newcomer's one-seed run had nothing to compare with. A class with several seeds gets a seed-0 row
    under it, and the CSV a column auroc_seed0; a class with one seed needs neither row."""
    recs = [
        fake_record("cifar10", "airplane", "con2", "invert", s, {"nnd": a}, {"contexts": ["invert"]})
        for s, a in ((0, 74.0), (1, 78.0), (2, 82.0))
    ]
    recs += [fake_record("cifar10", "airplane", "simclr", "default", 1, {"knn": 61.0}, {})]  # no seed 0 of it
    recs += [fake_record("cifar10", "cat", "con2", "invert", 0, {"nnd": 60.0}, {"contexts": ["invert"]})]
    t = per_class_table(inputs_of(collect(tmp_path, recs), paper, config, dataset="cifar10"))
    assert t.columns == ["Normal class", "CON2 (NND)", "SimCLR (kNN)"]
    assert [r[0] for r in t.rows] == ["airplane", "airplane (seed 0)", "cat", "mean"]
    assert t.rows[0][1] == f"78.0 ± {np.std([74, 78, 82], ddof=1):.1f} [1×3]"
    assert t.rows[1][1:] == ["74.0 [1×1]", "–"]  # SimCLR ran seed 1 alone: no seed-0 cell
    assert any("'<class> (seed 0)'" in note for note in t.notes)
    frame = t.data.set_index(["normal_class", "method", "score"])
    assert frame.loc[("airplane", "con2", "nnd"), "auroc_seed0"] == 74.0
    assert frame.loc[("cat", "con2", "nnd"), "auroc_seed0"] == 60.0
    assert np.isnan(frame.loc[("airplane", "simclr", "knn"), "auroc_seed0"])
    # the mean row still averages the class means, not the seed-0 rows
    assert t.rows[-1][1].startswith(f"{(78.0 + 60.0) / 2:.1f} ± ")
    one = per_class_table(inputs_of(collect(tmp_path / "one", recs[3:]), paper, config, dataset="cifar10"))
    assert [r[0] for r in one.rows] == ["airplane", "cat", "mean"] and not any("(seed 0)" in n for n in one.notes)
