"""The one result line of `con2 train` / `con2 evaluate`: the headline readings and where the rest are."""

from __future__ import annotations

from pathlib import Path

from con2.cli.main import _result_line


def record(auroc: dict[str, float], silhouette: float | None = 0.86) -> dict:
    return {
        "dataset": "breastmnist",
        "normal_class": "1",
        "method": "con2",
        "variant": "invert",
        "seed": 0,
        "metrics": {"auroc": auroc, "silhouette": silhouette},
        "timing": {"fit_seconds": 81.4, "score_seconds": 30.2},
    }


def test_the_result_line_shows_headlines_and_points_to_the_record(tmp_path: Path) -> None:
    readings = {f"nnd@{f}/{r}": 50.0 + i for i, (f, r) in enumerate((f, r) for f in "abcdefghijk" for r in "xy")}
    line = _result_line(record({"nnd": 57.94, "lh": 41.86, **readings}), tmp_path / "run")
    assert line == (
        "breastmnist/1 con2/invert seed=0: AUROC[nnd]=57.9  AUROC[lh]=41.9  silhouette=0.860  (fit 81s, score 30s)"
        f"  22 more readings in {tmp_path / 'run' / 'record.json'}"
    )
    assert "@" not in line


def test_a_record_with_headlines_only_names_its_file(tmp_path: Path) -> None:
    line = _result_line(record({"knn": 66.04, "ssd": 56.7}, silhouette=None), tmp_path)
    assert line.endswith(f"AUROC[knn]=66.0  AUROC[ssd]=56.7  (fit 81s, score 30s)  record: {tmp_path / 'record.json'}")
    assert _result_line(record({"knn": 66.04})).endswith("(fit 81s, score 30s)")
