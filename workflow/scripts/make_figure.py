"""Snakemake script of the figure rules (PNG + PDF), from a table's CSV or run directories."""

import sys

snakemake = globals()["snakemake"]  # injected by Snakemake's script directive
sys.path.insert(0, str(snakemake.scriptdir))
from _log import logged  # noqa: E402


def main() -> None:
    import pandas as pd

    from con2.report import figures as F

    kind = snakemake.params.figure
    png, pdf = snakemake.output.png, snakemake.output.pdf
    if kind == "per_class":
        F.per_class_figure(
            pd.read_csv(snakemake.input.table, dtype={"normal_class": str}), snakemake.wildcards.dataset, png, pdf
        )
    elif kind == "silhouette":
        F.silhouette_figure(pd.read_csv(snakemake.input.table), png, pdf)
    elif kind == "score_runtime":
        F.score_runtime_figure(pd.read_csv(snakemake.input.table), png, pdf)
    elif kind == "pca":
        F.pca_figure([tuple(p) for p in snakemake.params.panels], png, pdf, int(snakemake.params.max_points))
    else:
        raise SystemExit(f"unknown figure kind {kind!r}")
    print(f"wrote {png} and {pdf}")


with logged(snakemake):
    main()
