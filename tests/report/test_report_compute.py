"""con2.builders.compute: compute cost per run and the score-runtime table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from report_fixtures import collect, config, fake_record, inputs_of, paper, runs, score_runtime_measurements  # noqa: F401  (fixtures: test parameters of the same name)

from con2.builders.compute import compute_cost, score_runtime
from con2.report.artefacts import ReportInputs

BENCH = (
    "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    "{s}\t0:00:00\t900\t0\t0\t0\t0\t0\t50\t{cpu}\n"
)


def test_compute_cost_carries_the_load_and_warns_when_extrapolating_from_it(
    tmp_path: Path, paper: pd.DataFrame, config: dict
) -> None:
    def rec(ds: str, threads: int) -> dict:
        r = fake_record(ds, "1", "con2", "invert", 0, {"nnd": 80.0}, {"contexts": ["invert"]})
        r["config"]["threads"] = threads
        return r

    recs = [rec("breastmnist", 2), rec("octmnist", 1), rec("pneumoniamnist", 1)]
    # breastmnist: 2 threads, 100 s wall, 190 CPU s -> share 0.95 (idle); octmnist: 100 s, 40 CPU s -> 0.40 (loaded)
    runs = collect(tmp_path, recs, {0: BENCH.format(s=100, cpu=190), 1: BENCH.format(s=100, cpu=40)})
    t = compute_cost(inputs_of(runs, paper, config))
    share = {r[0]: r[t.columns.index("CPU share")] for r in t.rows}
    assert share == {"BreastMNIST": "0.95", "OctMNIST": "0.40*", "PneumoniaMNIST": "–?"}
    hours = {r[0]: r[t.columns.index("h at 2048 ep")] for r in t.rows}
    assert hours["BreastMNIST"] == f"{12.0 / 4 * 2048 / 3600:.1f}" and hours["OctMNIST"].endswith("*")
    warning = next(n for n in t.notes if n.startswith("WARNING"))
    assert "OctMNIST" in warning and "PneumoniaMNIST" in warning and "BreastMNIST" not in warning
    idle = collect(tmp_path / "idle", [recs[0]], {0: BENCH.format(s=100, cpu=190)})
    assert not any(n.startswith("WARNING") for n in compute_cost(inputs_of(idle, paper, config)).notes)


def test_score_runtime_is_rounded_in_milliseconds_and_names_its_repeats() -> None:
    """Issue 27 (12): '0.00047' was a raw float of seconds from one repeat."""
    measured = score_runtime_measurements().assign(repeats=5)
    measured.loc[0, "seconds"] = 0.00047
    table = score_runtime(ReportInputs(measured=measured))
    assert table.columns[4] == "Time (ms)" and table.rows[0][4] == "0.5"
    assert all(len(row[4].split(".")[-1]) <= 1 for row in table.rows)  # one decimal at most
    assert "median over 5 repeat(s)" in table.notes[0] and "overhead" in table.notes[1]
