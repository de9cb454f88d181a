"""con2.report.per_class: AUROC per normal class."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from report_fixtures import collect, config, fake_record, inputs_of, load_runs_of, paper  # noqa: F401  (fixtures: test parameters of the same name)

from con2.report.per_class import per_class as per_class_table


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
