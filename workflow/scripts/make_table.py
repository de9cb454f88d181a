"""Snakemake script of the table rules: one table of con2.report.artefacts.TABLES (CSV + MD + TeX + HTML).

``params.table`` names the table, ``params.settings`` gives the profile settings it is built from
(a rerun trigger: a changed ``report:`` setting rebuilds it); the rule's inputs are the files it
reads (``runs``, ``paper``, ``hours``, ``measured``, ``status``, ``gpu``, ``scores``) and no other,
and the ``dataset`` wildcard, where there is one, the dataset of a table made per dataset.
"""

import sys

snakemake = globals()["snakemake"]  # injected by Snakemake's script directive
sys.path.insert(0, str(snakemake.scriptdir))
from _log import logged  # noqa: E402


def main() -> None:
    from con2.faults import fault_point
    from con2.report.artefacts import FILE_INPUTS, TABLES
    from con2.report.tables import table_from_files

    artefact = TABLES[snakemake.params.table]
    given = [name for name in FILE_INPUTS if name in snakemake.input.keys()]
    files = {name: str(getattr(snakemake.input, name)) for name in given if str(getattr(snakemake.input, name))}
    dataset = str(getattr(snakemake.wildcards, "dataset", ""))
    table = table_from_files(artefact.name, files, dict(snakemake.params.settings), dataset)
    fault_point("table_build", table=artefact.name)  # tests: a kill with the job started, no output yet
    table.write(snakemake.output.csv, snakemake.output.md, snakemake.output.tex, snakemake.output.html)
    print(table.markdown())


with logged(snakemake):
    main()
