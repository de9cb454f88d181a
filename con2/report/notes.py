"""The short lines under a table that say what it lacks and why: a dataset without runs (not in the
profile, skipped for want of data, not run yet), data gone since the runs, a method without its
pretrained weights, a study's table before its runs. Each points to the ``missing`` table
(:data:`~con2.report.artefacts.MISSING_FILE`) for the long fixes; the builders share them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from con2.grid.experiments import as_list
from con2.paper_names import dataset_label
from con2.report.artefacts import MISSING_FILE, ReportInputs
from con2.report.methods import Methods, lacking_weights, selected_names


def profile_datasets(config: Mapping[str, Any], status: Mapping[str, Mapping[str, Any]] | None = None) -> set[str]:
    """The datasets the profile's grid runs: those its ``experiments`` name (``only_datasets`` applied, and
    those ``only_classes``, ``only_methods`` and ``only_seeds`` keep no run of left out: :func:`selected_names`)
    and every dataset of the data status (the grid's data, checked by the workflow)."""
    only = set(as_list(config.get("only_datasets")))
    named = {d for exp in (config.get("experiments") or {}).values() for d in as_list((exp or {}).get("datasets"))}
    kept = selected_names(config)
    if kept is not None:
        named &= {d for d, _, _ in kept}
    checked = {str(m.get("dataset", key.split("/")[0])) for key, m in (status or {}).items()}
    return {d for d in named if not only or d in only} | checked


def why_skipped(marker: Mapping[str, Any]) -> str:
    """The data layer's reason without its own fix list ("pneumoniamnist.npz not found in ...")."""
    reason = " ".join(str(marker.get("reason", "its data were not found")).split())
    why = reason.split(" Fix: ")[0].removeprefix(f"{marker.get('dataset', '')}: ").rstrip(".")
    return why + (
        " (download: false in the profile)" if "(download: false" in reason and "(download" not in why else ""
    )


def skipped_data(status: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Mapping[str, Any]]:
    """``{dataset: marker}`` of the datasets the data status says were skipped (the first size's marker)."""
    skipped: dict[str, Mapping[str, Any]] = {}
    for key, marker in (status or {}).items():
        if marker.get("status") == "skipped":
            skipped.setdefault(str(marker.get("dataset", key.split("/")[0])), marker)
    return skipped


def skipped_note(dataset: str) -> str:
    """A table's one line on a dataset skipped for want of data; the fix is in the ``missing`` table."""
    return f"{dataset_label(dataset)}: skipped, its data are missing (how to get them: {MISSING_FILE})."


def stale_data_notes(present: list[str], status: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """One line per dataset of a table that has runs but whose data the status says are missing now
    (a rebuild under another ``data_dir``): the numbers are the records already on disk; runs without
    a record were not trained, and the fix is in the ``missing`` table."""
    skipped = skipped_data(status)
    return [
        f"{dataset_label(d)}: skipped now, its data are missing (how to get them: {MISSING_FILE}); the numbers are "
        "its runs already on disk, runs without a record were not trained."
        for d in present
        if d in skipped
    ]


def missing_weights_notes(
    config: Mapping[str, Any], runs: pd.DataFrame, datasets: list[str] | None, names: Methods
) -> list[str]:
    """One short line per (method, variant) of the profile's experiments on ``datasets`` (``None``: all)
    that has no runs there because the pretrained weights its method needs are missing
    (:func:`~con2.report.methods.lacking_weights`, torch-free; labelled by ``names``, the caller's
    :class:`~con2.report.methods.Methods`); the fix is in the ``missing`` table."""
    notes = []
    for lack in lacking_weights(config, runs, datasets, names).values():
        what = "are missing" if lack.missing else "were refused"
        who = f"{lack.label} ({lack.method}/{lack.variant})"
        notes.append(f"{who}: not run, its pretrained weights {what} (how to get them: {MISSING_FILE}).")
    return notes


def absent_notes(
    absent: list[str], config: Mapping[str, Any], status: Mapping[str, Mapping[str, Any]] | None
) -> list[str]:
    """Why each dataset of a table has no run: not in the profile, or in it but skipped for want of
    data (one line pointing to :data:`~con2.report.artefacts.MISSING_FILE`, which says why and how to
    get them, from the data status the workflow wrote), or in it with no record yet."""
    skipped = skipped_data(status)
    in_profile = profile_datasets(config, status)
    notes = []
    outside = [dataset_label(d) for d in absent if d not in in_profile]
    if outside:
        why = "no experiment of the profile names them"
        given = [
            k
            for k in ("only_datasets", "only_classes", "only_methods", "only_seeds")
            if config.get(k) not in (None, "", [])
        ]
        why += f", or {', '.join(given)} leave them out" if given else ""
        notes.append(f"Not in this profile: {', '.join(outside)} ({why}).")
    notes += [skipped_note(d) for d in absent if d in skipped]
    pending = [dataset_label(d) for d in absent if d in in_profile and d not in skipped]
    if pending:
        notes.append(
            f"In this profile, no run of a main variant here yet: {', '.join(pending)} (the workflow's last lines "
            "say what is missing)."
        )
    return notes


def no_runs(inputs: ReportInputs, name: str) -> str:
    """The one body line of table ``name`` without runs: for a study of ``report.scopes`` (which
    ``all`` leaves out) the command that trains its runs; else the usual ``(no runs)``."""
    if name not in (inputs.report.get("scopes") or {}):
        return "(no runs)"
    return (
        "(no runs: `snakemake --cores 2 studies` trains them, or name this file as the target: "
        f"`snakemake --cores 2 results/tables/{name}.md`)"
    )
