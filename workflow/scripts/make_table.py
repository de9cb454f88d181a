"""Snakemake script of the table rules: one artefact from results/evaluation/runs.csv (CSV + MD + TeX).

``params.table`` names the builder in :data:`con2.report.tables.TABLES` (``per_class`` takes the
dataset wildcard; ``score_runtime`` reads the measurement CSV instead of the runs).
"""

import sys

snakemake = globals()["snakemake"]  # injected by Snakemake's script directive
sys.path.insert(0, str(snakemake.scriptdir))
from _log import logged  # noqa: E402


def main() -> None:
    from con2.report import tables as T
    from con2.report.collect import load_runs
    from con2.report.paper import load_compute_hours, load_paper_numbers

    name = snakemake.params.table
    config = snakemake.config
    if name == "score_runtime":
        import pandas as pd

        table = T.score_runtime(pd.read_csv(snakemake.input.measured))
    else:
        runs = load_runs(snakemake.input.runs)
        paper = load_paper_numbers(snakemake.input.paper)
        if name == "per_class":
            table = T.per_class(runs, paper, config, snakemake.wildcards.dataset)
        elif name == "compute_cost":
            table = T.compute_cost(runs, paper, config, load_compute_hours(snakemake.input.hours))
        else:
            table = T.TABLES[name](runs, paper, config)
        if note := T.outside_grid_note(runs):
            table.notes.append(note)
    table.write(snakemake.output.csv, snakemake.output.md, snakemake.output.tex)
    print(table.markdown())


with logged(snakemake):
    main()
