"""Snakemake script of rule aggregate: every record on disk -> one tidy CSV, plus seed means.

``runs.csv`` has one row per (run, score) with AUROC, silhouette, timings, peak memory, the
benchmark TSV's wall time, RSS and CPU time, what the resolved config says (contexts, loss,
sizes) and ``in_grid``: whether the run belongs to this profile's grid with this config (records
outside it are kept, and listed in the log). ``summary.csv`` has mean, std and count over seeds per
(dataset, normal class, method, variant, score). ``scores.json.gz`` bundles the score files of every
run ``runs.csv`` holds (:func:`con2.aggregate.bundle.bundle_bytes`): the tables read per-image scores
there, never in a run folder. A bad record (unreadable, binary, not JSON,
against the schema, a NaN metric, or in a folder that is not its run's, e.g. a copied
``seed0.bak``) never stops the aggregation: it is left out, with one line naming the file, the
problem and the fix in the log and in ``skipped`` (read by the workflow's last lines), and every
other record is aggregated.
"""

import os
import sys
from pathlib import Path

snakemake = globals()["snakemake"]  # injected by Snakemake's script directive
sys.path.insert(0, str(snakemake.scriptdir))
from _log import logged  # noqa: E402


def main() -> None:
    import pandas as pd

    from con2.aggregate.bundle import bundle_bytes
    from con2.aggregate.collect import collect_valid_runs
    from con2.aggregate.csv_text import csv_frame
    from con2.aggregate.runs_csv import summarize
    from con2.atomic import atomic_path
    from con2.paths import BENCH_ROOT, RUNS_ROOT, record_key
    from con2.run.rundir import bytes_sha256
    from con2.text import terminal_safe

    grid = dict(snakemake.params.grid)  # run key -> config hash (None: a method that keeps none)
    records = [str(p) for p in (*snakemake.input.records, *snakemake.input.checked)]  # before and after the data check
    records += [p.rsplit("@", 1)[0] for p in snakemake.params.outside]
    records += list(snakemake.params.get("not_runs", []))  # record.json files in folders that are no run key
    bench = {r: f"{BENCH_ROOT}/{key}.tsv" for r in records if (key := record_key(r))}
    runs, skipped = collect_valid_runs(records, bench, runs_root=RUNS_ROOT)

    def belongs(path: str, config_hash: str) -> bool:
        key = record_key(path)
        return key in grid and grid[key] in (None, config_hash)

    runs["in_grid"] = [belongs(p, h) for p, h in zip(runs["record"], runs["config_hash"], strict=True)]
    skipped_frame = pd.DataFrame(
        [(s.record, _mtime_ns(s.record), s.problem, s.fix) for s in skipped],
        columns=["record", "mtime_ns", "problem", "fix"],
    )
    outputs = [(runs, snakemake.output.runs), (skipped_frame, snakemake.output.skipped)]
    if "summary" in snakemake.output.keys():  # the scoped aggregation (rule aggregate_scope) writes none
        outputs.append((summarize(runs), snakemake.output.summary))
    # every CSV through csv_frame (no spreadsheet formula, no control character); runs.csv sealed in the scores bundle
    runs_text = csv_frame(runs).to_csv(index=False)
    outputs = [(runs_text, snakemake.output.runs), *((csv_frame(f).to_csv(index=False), p) for f, p in outputs[1:])]
    for text, path in outputs:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(Path(path)) as tmp:
            tmp.write_bytes(text.encode("utf-8"))
    with atomic_path(Path(snakemake.output.scores)) as tmp:
        tmp.write_bytes(bundle_bytes(runs["record"].unique(), bytes_sha256(runs_text.encode("utf-8"))))
    print(f"{len(records)} records, {len(runs)} rows -> {snakemake.output.runs}")
    for s in skipped:
        print(terminal_safe(s.line()))  # a folder's name is one line of the log, its escapes shown
    outside = runs.loc[~runs["in_grid"], ["record"]].drop_duplicates()["record"].tolist()
    if outside:
        print(f"{len(outside)} record(s) outside this profile's grid, aggregated as they are (in_grid = False):")
        for path in outside:
            why = "not a run of this profile's grid" if record_key(path) not in grid else "trained under another config"
            print(terminal_safe(f"  {path}: {why}"))


def _mtime_ns(path: str) -> int:
    """The file's modification time (the closing lines report a skipped file only while it is unchanged)."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


with logged(snakemake):
    main()
