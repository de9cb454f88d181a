"""Snakemake script of rule evaluate: every record of the grid -> one tidy CSV, plus seed means.

``runs.csv`` has one row per (run, score) with AUROC, silhouette, timings, peak memory, the
benchmark TSV's wall time and RSS, and what the resolved config says (contexts, loss, sizes);
``summary.csv`` has mean, std and count over seeds per (dataset, normal class, method, variant,
score). Records are validated on reading; a broken one fails here naming the file and field.
"""

import sys
from pathlib import Path

snakemake = globals()["snakemake"]  # injected by Snakemake's script directive
sys.path.insert(0, str(snakemake.scriptdir))
from _log import logged  # noqa: E402


def benchmark_for(record: str) -> str:
    from con2.report.grid import BENCH_ROOT, RUNS_ROOT

    rel = Path(record).parent.relative_to(RUNS_ROOT)
    return f"{BENCH_ROOT}/{rel}.tsv"


def main() -> None:
    from con2.report.collect import collect_runs, summarize

    records = [str(p) for p in snakemake.input.records]
    runs = collect_runs(records, {r: benchmark_for(r) for r in records})
    summary = summarize(runs)
    for path in (snakemake.output.runs, snakemake.output.summary):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    runs.to_csv(snakemake.output.runs, index=False)
    summary.to_csv(snakemake.output.summary, index=False)
    print(f"{len(records)} records, {len(runs)} rows -> {snakemake.output.runs}")


with logged(snakemake):
    main()
