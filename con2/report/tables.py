"""Build any table of the registry by name: :func:`build_table`.

Every builder has one signature, ``build(inputs: ReportInputs) -> Table``: it reads the fields of
:class:`~con2.report.artefacts.ReportInputs` that its entry in :data:`con2.report.artefacts.TABLES`
lists (the runs, one row per run and score; the paper's numbers; the profile's ``report`` block;
...). The builders live by family in :mod:`con2.builders`; what they share is this package, the
report's vocabulary. :func:`build_table` adds the note on records outside the profile's grid
(left out of every table and figure unless ``report.include_outside_grid``:
:meth:`~con2.report.artefacts.ReportInputs.load`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from con2.paper_names import dataset_label
from con2.report.artefacts import TABLES, ReportInputs
from con2.report.format import Table
from con2.source_formats import IMAGE_FOLDER


def outside_grid_note(inputs: ReportInputs) -> str | None:
    """The one note a table gets when results/evaluation/runs.csv holds records outside the profile's grid."""
    n = len(inputs.outside_grid)
    if not n:
        return None
    what = "another profile's, or trained under another configuration; in_grid = False in results/evaluation/runs.csv"
    if inputs.report.get("include_outside_grid", False):
        return f"{n} run(s) outside this profile's grid ({what}) are included where they fit."
    return f"{n} run(s) outside this profile's grid left out ({what}; `report.include_outside_grid: true` shows them)."


def re_encoded_note(table: Table, inputs: ReportInputs) -> str | None:
    """The one note a table gets when it shows a dataset whose runs read a re-encoded copy (a CIFAR-10
    image dump: record ``data_source.format`` = ``image-folder``, runs.csv ``data_format``): its pixels are
    not the official files', so its numbers are not the official set's to the last decimal."""
    runs = inputs.runs
    if runs is None or runs.empty or "data_format" not in runs or "dataset" not in table.data:
        return None
    shown = set(table.data["dataset"].dropna().astype(str))
    copies = runs[(runs["data_format"] == IMAGE_FOLDER) & runs["dataset"].isin(shown)]
    if copies.empty:
        return None
    names = ", ".join(dataset_label(d) for d in sorted(set(copies["dataset"])))
    return (
        f"{names}: read from an image folder (records' data_source.format {IMAGE_FOLDER}), a re-encoding of the "
        "official files (e.g. JPEG), not the official bytes: its pixels differ slightly from the official arrays'."
    )


def build_table(name: str, inputs: ReportInputs) -> Table:
    """The table ``name`` of :data:`~con2.report.artefacts.TABLES` from ``inputs``, with the note on
    records outside the profile's grid where it reads runs, and the note on re-encoded data where it
    shows such a dataset (:func:`re_encoded_note`)."""
    table = TABLES[name].builder()(inputs)
    if inputs.runs is not None and (note := outside_grid_note(inputs)):
        table.notes.append(note)
    if note := re_encoded_note(table, inputs):
        table.notes.append(note)
    return table


def table_from_files(name: str, files: Mapping[str, str], settings: Mapping[str, Any], dataset: str = "") -> Table:
    """The table ``name`` from the files its rule gives (``files``: input name -> path, the rule's
    inputs) and the profile settings it is built from: what ``workflow/scripts/make_table.py`` runs.
    The builder opens no file beyond ``files`` (``tests/report/test_table_inputs.py``)."""
    return build_table(name, ReportInputs.load(TABLES[name], files, settings, dataset))
