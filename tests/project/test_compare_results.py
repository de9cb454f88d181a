"""tools/compare_results.py, the check a restructuring's results are held to (issue 45): what it ignores
(times) and what it must not (scores), in records and in the aggregation's score bundle."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("compare_results", ROOT / "tools" / "compare_results.py")
assert spec is not None and spec.loader is not None
compare_results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_results)


def results(root: Path, seconds: float, score: float, wall: float) -> Path:
    run = {
        "curve": {"points": [{"epoch": 1, "seconds": seconds, "auroc": {"nnd": score}}]},
        "scores.csv": "index,label",
    }
    bundle = {"format": 1, "csv_sha256": f"{wall}", "runs": {"results/runs/x/record.json": run}}
    (root / "evaluation").mkdir(parents=True)
    (root / "evaluation" / "scores.json.gz").write_bytes(gzip.compress(json.dumps(bundle).encode()))
    record = {"metrics": {"auroc": {"nnd": score}}, "timing": {"wall_seconds": wall}}
    (root / "runs").mkdir()
    (root / "runs" / "record.json").write_text(json.dumps(record))
    return root


@pytest.mark.parametrize(("score", "differs"), [(91.5, False), (91.6, True)])
def test_times_are_ignored_and_scores_are_not(tmp_path: Path, capsys, score: float, differs: bool) -> None:
    old = results(tmp_path / "old", seconds=1.3, score=91.5, wall=10.0)
    new = results(tmp_path / "new", seconds=0.7, score=score, wall=12.0)
    assert compare_results.main(old, new) == int(differs)
    out = capsys.readouterr().out
    assert ("differs: evaluation/scores.json.gz" in out) == differs and ("differs: runs/record.json" in out) == differs
