"""Build any table of the registry by name: :func:`build_table`.

Every builder has one signature, ``build(inputs: ReportInputs) -> Table``: it reads the fields of
:class:`~con2.report.artefacts.ReportInputs` that its entry in :data:`con2.report.artefacts.TABLES`
lists (the runs, one row per run and score; the paper's numbers; the profile's ``report`` block;
...). The builders live by family: :mod:`~con2.report.summary` (Table 1, the natural summary),
:mod:`~con2.report.ablations` (the subject's scores, contexts, loss terms, number of contexts),
:mod:`~con2.report.per_class`, :mod:`~con2.report.silhouette`, :mod:`~con2.report.compute`
(compute cost, score runtime), :mod:`~con2.report.reproduction` (every paper number next to ours,
opened by :mod:`~con2.report.verdict`), :mod:`~con2.report.fidelity`, :mod:`~con2.report.bound`,
:mod:`~con2.report.comparisons` and :mod:`~con2.report.curves`; what they share to select runs is in
:mod:`~con2.report.select`. :func:`build_table` adds the note on records outside the profile's grid.
"""

from __future__ import annotations

import pandas as pd

from con2.report.artefacts import TABLES, ReportInputs
from con2.report.format import Table


def outside_grid_note(runs: pd.DataFrame) -> str | None:
    """The note every table gets when the aggregation holds records outside the profile's grid."""
    if runs.empty or "in_grid" not in runs.columns:
        return None
    outside = runs.loc[~runs["in_grid"].fillna(True).astype(bool), "record"].nunique()
    if not outside:
        return None
    return (
        f"runs.csv holds {outside} run(s) outside this profile's grid (in_grid = False: another profile's, or a "
        "dataset unavailable now); they are included where they fit. Delete a run's directory to drop it."
    )


def build_table(name: str, inputs: ReportInputs) -> Table:
    """The table ``name`` of :data:`~con2.report.artefacts.TABLES` from ``inputs``, with the note on
    records outside the profile's grid where it reads runs."""
    table = TABLES[name].builder()(inputs)
    if inputs.runs is not None and (note := outside_grid_note(inputs.runs)):
        table.notes.append(note)
    return table
