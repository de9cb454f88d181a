"""Snakemake script of the figure rules: one figure of con2.report.artefacts.FIGURES (PNG + PDF).

``params.figure`` names the figure, ``params.settings`` gives the profile settings it is built
from (a rerun trigger: a changed ``report:`` setting redraws it); the rule's inputs are the files
it reads (a table's CSV as ``table``, ``measured``, ...), ``params.panels`` the files of the PCA
figure's runs (``(title, record, features, scores)`` each), and the ``dataset`` wildcard, where there
is one, the dataset of a figure made per dataset.
"""

import sys

snakemake = globals()["snakemake"]  # injected by Snakemake's script directive
sys.path.insert(0, str(snakemake.scriptdir))
from _log import logged  # noqa: E402


def main() -> None:
    from con2.report.artefacts import FIGURES, FILE_INPUTS, ReportInputs

    artefact = FIGURES[snakemake.params.figure]
    given = [name for name in FILE_INPUTS if name in snakemake.input.keys()]
    files = {name: str(getattr(snakemake.input, name)) for name in given if str(getattr(snakemake.input, name))}
    dataset = str(getattr(snakemake.wildcards, "dataset", ""))
    panels = getattr(snakemake.params, "panels", ())
    inputs = ReportInputs.load(artefact, files, dict(snakemake.params.settings), dataset, panels)
    png, pdf = snakemake.output.png, snakemake.output.pdf
    artefact.builder()(inputs, png, pdf)
    print(f"wrote {png} and {pdf}")


with logged(snakemake):
    main()
