"""The ``missing`` table: everything the profile could not run for want of files, and how to get them.

A table or figure that lacks runs because a dataset's data or a method's pretrained weights are
missing says so in one short line that points here (:data:`~con2.report.artefacts.MISSING_FILE`);
the long fixes (download commands, where to put the files) are written once, in this table:

* one row per dataset (and image size) the data status says was skipped (``inputs.status``, the
  workflow's ``results/data/status.json``): why, and the command that gets the data, numbered and
  shown under the table in a code block (quoted for a shell: a cell's Markdown escaping would
  change it);
* one row per (method, variant) of the profile's experiments not run because its pretrained weights
  are missing (:func:`con2.report.methods.lacking_weights`): what was looked for where, and how to
  get the file.

When nothing is missing the table says so in one line.
"""

from __future__ import annotations

import pandas as pd

from con2.paper_names import dataset_label
from con2.report.artefacts import ReportInputs
from con2.report.format import Table
from con2.report.methods import lacking_weights
from con2.report.notes import why_skipped
from con2.workflow.status import checked_in, data_fix, get_command

AGAIN = "then run the same snakemake command again"
COLUMNS = ["kind", "name", "what", "why", "fix", "command"]


def missing(inputs: ReportInputs) -> Table:
    """Rows: each dataset skipped for want of data, then each method variant without its weights; what, why, the fix."""
    runs = inputs.runs if inputs.runs is not None else pd.DataFrame(columns=["method", "variant", "dataset"])
    data: list[dict[str, str]] = []
    code: list[str] = []
    for key, marker in sorted((inputs.status or {}).items()):
        if marker.get("status") != "skipped":
            continue
        dataset = str(marker.get("dataset", key.split("/")[0]))
        size = marker.get("size") or (key.split("/")[1] if "/" in key else "")
        where = checked_in(marker)  # the fix built now: a marker of an older version stored it unquoted
        px = int(size) if size else None
        first, command = data_fix(dataset, px, where) if where else ("", get_command(dataset, px, "DIR"))
        what = f"{dataset_label(dataset)}: its data" + (f" ({size} px)" if size else "")
        code += [f"# ({len(code) // 2 + 1}) {what}", command]
        data.append(
            {
                "kind": "data",
                "name": key,
                "what": what,
                "why": f"skipped: {why_skipped(marker)}",
                "fix": f"{first}command ({len(code) // 2}) below, or for data already on disk elsewhere "
                f"`--config data_dir=DIR`; {AGAIN}",
                "command": command,
            }
        )
    for lack in lacking_weights(inputs.config, runs, None, inputs.names).values():
        data.append(
            {
                "kind": "weights",
                "name": f"{lack.method}/{lack.variant}",
                "what": f"{lack.label} ({lack.method}/{lack.variant}): its pretrained weights",
                "why": f"not run: {lack.why}",
                "fix": f"{lack.fix or 'see why'}; {AGAIN}",
            }
        )
    notes = []
    if data:
        notes.append(
            "Each row: what the profile could not run, why, and the fix. The tables and figures that lack these "
            "runs say so in one line that points here. `--config strict=true` turns a missing dataset or missing "
            "weights into an error."
        )
    if inputs.status is None:
        notes.append("No data status was given: only the pretrained weights were checked.")
    if code:
        notes.append("The commands below are quoted for a shell: copy them as they are.")
    return Table(
        "missing",
        "What is missing (data, pretrained weights) and how to get it",
        ["What", "Why", "Fix"],
        [[r["what"], r["why"], r["fix"]] for r in data],
        pd.DataFrame(data, columns=COLUMNS),
        notes,
        empty="Nothing is missing: every dataset's data and every method's pretrained weights were found.",
        code=code,
    )
