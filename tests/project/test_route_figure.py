"""docs/architecture.md "The route of a figure job" is what a figure job runs (issue 60, item 5): the job of rule
``figure_silhouette`` (``workflow/rules/figures.smk``: ``workflow/scripts/make_figure.py`` run as Snakemake runs
it, in a fresh interpreter, on a results folder as the workflow leaves it) calls a function of each module of
the section's numbered list, in the order the list gives, and of no other module; the modules it only imports
the section names too. The recorder and the checks are ``test_route_training.py``'s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_route_training import Ran, listed, route_problems, run_job, section
from test_table_inputs import (
    project,  # noqa: F401  (the fixture: a results folder as the workflow leaves it)
    rule_files,
)

from con2.report.artefacts import FIGURES, TABLES
from con2.report.tables import table_from_files
from con2.workflow.artefact_rules import ArtefactRules
from con2.workflow.session import Session

TITLE = "## The route of a figure job"
RULE = "workflow/rules/figures.smk"
FIGURE, DATASET = "per_class", "breastmnist"  # drawn per dataset from its table's CSV, written by the table's job


def figure_job(session: Session, figure: str = FIGURE, dataset: str = DATASET) -> dict[str, Any]:
    """The job of ``figure``'s rule for ``dataset`` (its ``{dataset}`` wildcard) as Snakemake hands it to the
    rule's script (its inputs, outputs, params, wildcards and log), once the table it draws has been written
    where the table's rule writes it."""
    rules = ArtefactRules(session)
    artefact = FIGURES[figure]
    table = TABLES[artefact.table]
    settings = rules.settings()
    built = table_from_files(artefact.table, rule_files(rules, table, dataset), settings, dataset)
    assert built.rows, "the figure draws bars"
    table_stem = table.stem.replace("{dataset}", dataset)
    built.write(*(f"results/tables/{table_stem}.{ext}" for ext in ("csv", "md", "tex", "html")))
    params = rules.params(artefact)
    assert set(params) == {"settings"}, params  # a figure of one table: no panels to hand over
    stem = artefact.stem.replace("{dataset}", dataset)
    return {
        "script": "workflow/scripts/make_figure.py",
        "input": rule_files(rules, artefact, dataset),
        "output": {ext: f"results/figures/{stem}.{ext}" for ext in ("png", "pdf")},
        "params": {"figure": figure, "settings": dict(params["settings"])},
        "wildcards": {"dataset": dataset},
        "log": f"results/logs/figures/{stem}.log",
    }


@pytest.fixture
def figure(project: tuple[Session, dict[str, Any]], tmp_path: Path) -> Ran:  # noqa: F811
    session, _ = project
    job = figure_job(session)
    ran = run_job(job, tmp_path)
    assert all((tmp_path / path).stat().st_size > 0 for path in job["output"].values())
    return ran


def test_the_figure_route_names_every_module_the_job_runs_in_order(figure: Ran) -> None:
    """The section's numbered list is the job's route, from the rule to the PNG and PDF; a failure names what
    differs, and ``figure.called`` is the order to write."""
    # the recording sees the job: the script, the registry, the figure's builder
    assert {"workflow/scripts/make_figure.py", "con2/report/artefacts.py"} <= set(figure.called)
    assert any(path.endswith("/figures.py") for path in figure.called), figure.called
    problems = route_problems(figure, section(TITLE), RULE)
    assert not problems, (problems, figure)


def test_the_route_check_can_fail_on_this_section() -> None:
    """The section's own list, with two modules swapped or one left out, fails the check."""
    text = section(TITLE)
    doc = listed(text)
    ran = Ran(doc[1:], [])
    assert route_problems(ran, text, RULE) == []
    a, b = doc[2], doc[3]
    swapped = text.replace(f"`{a}`", "@").replace(f"`{b}`", f"`{a}`").replace("@", f"`{b}`")
    assert route_problems(ran, swapped, RULE) == [f"item 3 is {b}; the job's next first call is into {a}"]
    line = next(x for x in text.splitlines() if x.startswith(f"4. `{b}`"))
    assert route_problems(ran, text.replace(line, ""), RULE) == [
        f"{b}: the job calls it; the numbered list leaves it out"
    ]
