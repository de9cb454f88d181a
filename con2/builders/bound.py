"""How far each measured budget goes: CON2 as printed against content alignment alone and SimCLR.

The reproduction verdict's bound (issue 24). For every budget of ``report.bound`` that has been
measured, on one dataset: CON2 as printed, content alignment alone (L_Context dropped) and SimCLR
+ kNN, mean ± std over seeds, and the two differences to CON2 with a 95% interval over seeds (the
runs are paired by seed: a t-interval of the per-seed differences; one seed gives no interval).
CPU budgets are read from the records (``runs``), GPU budgets from the JSON lines that
``benchmarks/gpu_fidelity.py`` writes into ``benchmarks/measured/`` (``gpu``)::

    report:
      bound:
        dataset: breastmnist
        budgets:                  # records: the variant of each of the three
          - {label: "28 px, 10 epochs", con2: invert, content: content_only, simclr: default}
        gpu:                      # benchmarks/measured lines: their `setting`, at `epochs` and `image_size`
          - {label: "224 px, 2048 epochs", epochs: 2048, image_size: 224,
             con2: as printed, content: content only, simclr: SimCLR + kNN}
        unsettled: "2048 epochs at 224 px"   # what no CPU can settle (named while it has no lines)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from con2.report.artefacts import ReportInputs
from con2.report.budget import ROLES, bound_lines, bound_rows
from con2.report.format import Table, mean_std, signed
from con2.report.notes import no_runs


def _diff(row: Mapping[str, Any], role: str) -> str:
    mean, low, high = row[f"{role}_minus_con2"], row[f"{role}_low"], row[f"{role}_high"]
    if math.isnan(mean):
        return "–"
    if math.isnan(low):
        return f"{signed(round(mean, 1))} (1 seed)"
    return f"{signed(round(mean, 1))} [{low:+.1f}, {high:+.1f}]"


def budget_bound(inputs: ReportInputs) -> Table:
    """Rows: the budgets of ``report.bound`` measured; columns: the three methods and the differences."""
    spec = inputs.report.get("bound") or {}
    runs = inputs.runs if inputs.runs is not None else pd.DataFrame(columns=["dataset"])
    rows = bound_rows(runs, inputs.gpu, spec)
    columns = [
        "Budget",
        "Source",
        "CON2 as printed",
        "Content alone",
        "SimCLR + kNN",
        "Content − CON2",
        "SimCLR − CON2",
    ]
    body = [
        [
            r["budget"],
            f"{r['source'].upper()}: {r['machine']}",
            *(mean_std(r[f"{role}_mean"], r[f"{role}_std"]) + f" (n={r[f'{role}_seeds']})" for role, _, _ in ROLES),
            _diff(r, "content"),
            _diff(r, "simclr"),
        ]
        for r in rows
    ]
    notes = [
        "AUROC (%) on " + str(spec.get("dataset") or "breastmnist") + ", mean ± std over seeds (n); differences: "
        "mean over seeds of the per-seed difference, [95% t-interval over seeds].",
        *bound_lines(rows, spec),
    ]
    if not rows:
        notes.insert(0, "No budget of report.bound measured yet: `snakemake studies` trains the CPU ones.")
    frame = pd.DataFrame(rows)
    return Table(
        "budget_bound",
        "How far each budget goes: CON2 as printed against content alone and SimCLR",
        columns,
        body,
        frame,
        notes,
        empty=no_runs(inputs, "budget_bound"),
    )
