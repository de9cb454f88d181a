"""A method's declared scoring-only params re-score a trained model through ``con2 evaluate``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from test_errors import error_of, train

from con2.cli.main import main
from con2.methods import all_methods, get_spec
from con2.run.records import read_record
from con2.run.runner import RECORD


def test_every_declared_scoring_param_is_a_field_of_its_methods_params() -> None:
    for name in all_methods():
        spec = get_spec(name)
        assert set(spec.scoring_params) <= {f.name for f in dataclasses.fields(spec.Params)}, name
    with pytest.raises(TypeError, match="not fields of"):
        dataclasses.replace(get_spec("simclr"), scoring_params=("no_such_param",))


@pytest.fixture(scope="module")
def simclr_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("simclr") / "run"
    assert train(path, "method=simclr", "params={}") == 0
    return path


def test_evaluate_rescores_simclr_with_another_k(simclr_run, tmp_path, capsys) -> None:
    """The k-th nearest distance can only grow with k: every test image's kNN score at k=3 is at
    least its score at k=1 (the same features, the same test-time views), and the records say which k."""
    scores = {}
    for k in (1, 3):
        out = tmp_path / f"k{k}"
        assert main(["evaluate", "--run-dir", str(simclr_run), "--set", f"params.k={k}", "--out", str(out)]) == 0
        assert read_record(out / RECORD)["config"]["params"]["k"] == k
        scores[k] = pd.read_csv(out / "scores.csv")["knn"].to_numpy()
    assert np.all(scores[3] >= scores[1] - 1e-6) and np.any(scores[3] > scores[1] + 1e-6)
    capsys.readouterr()
    assert main(["evaluate", "--run-dir", str(simclr_run), "--set", "params.temperature=0.1"]) == 2
    err = error_of(capsys)
    assert "refused: params.temperature" in err and "params.k" in err and "params.ssd_clusters" in err
