"""What an invocation may train, from the targets named on its command line.

`all`, `runs`, a record or any other target train the grid's runs; `studies` or a study's table
(a scope of ``report.scopes``) train that study's runs; a table, figure or aggregate named alone
trains nothing: a rebuild reads the records on disk and never trains, checks or downloads data,
whatever ``data_dir`` says (issue 36, point 4). Nor does ``snakemake --report``, whatever its targets: it
reads what is on disk (issue 58, item 2).

Example:
    >>> t = Targets(["results/tables/table1_medical.md"], scoped=["fidelity"])
    >>> t.trains_grid, t.trains_anything
    (False, False)
    >>> Targets(["table_fidelity"], scoped=["fidelity"]).trains_scope("fidelity")
    True
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from pathlib import Path

# where the outputs that only read records live (aggregates, tables, figures, measured times)
ARTEFACT_DIRS = ("results/tables/", "results/figures/", "results/evaluation/", "results/score_runtime/")


def relative_targets(targets: Iterable[str]) -> list[str]:
    """Targets as Snakemake got them, a path relative to the working directory (a rule name as it is)."""
    return [t if "/" not in t else os.path.relpath(os.path.abspath(t)) for t in targets]


class Targets:
    """The named targets of one invocation (none: `all`) and the studies of the profile; ``report``: the
    invocation is ``snakemake --report``, which trains nothing."""

    def __init__(self, targets: Iterable[str], scoped: Collection[str], report: bool = False) -> None:
        self.targets = relative_targets(targets)
        self.scoped = set(scoped)
        self.report = report

    def scope_of(self, target: str) -> str | None:
        """The study (a scope of ``report.scopes``) a target trains, or None."""
        if target.startswith("table_") and target[len("table_") :] in self.scoped:
            return target[len("table_") :]
        for prefix in ("results/tables/", "results/evaluation/scopes/"):
            if target.startswith(prefix):
                stem = Path(target).name.split(".")[0]
                return stem if stem in self.scoped else None
        return None

    def is_artefact(self, target: str) -> bool:
        """True for a target that only reads records: a table (not a study's), a figure, an aggregate."""
        if self.scope_of(target) is not None:
            return False
        return target == "aggregate" or target.startswith(("table_", "figure_")) or target.startswith(ARTEFACT_DIRS)

    @property
    def trains_grid(self) -> bool:
        """True if the grid's runs train (`all`, `runs`, a record, any other target; never in a report)."""
        if self.report:
            return False
        return not all(self.is_artefact(t) or self.scope_of(t) or t == "studies" for t in self.targets or ["all"])

    def trains_scope(self, scope: str) -> bool:
        """True if a study's runs train: `studies`, or the study's table named (never in a report)."""
        return not self.report and any(t == "studies" or self.scope_of(t) == scope for t in self.targets)

    @property
    def trains_anything(self) -> bool:
        """True unless every target only reads records (a rebuild)."""
        return self.trains_grid or any(self.trains_scope(s) for s in self.scoped)
