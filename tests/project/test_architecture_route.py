"""docs/architecture.md "Follow one run" is the code's route: each file it names exists, is named
once, and is reached from a file named before it, by an import (at the top of a module or lazy; a
rule's script importing a module beside it), an ``include:``, ``script:`` or ``configfile:`` of the
Snakefile and its rules, the ``con2`` command a rule's shell runs, or the method registry's entry
points (issue 34, point 7). And it is complete for the table stage (issue 45, item 8): every module
of the project that the job of Table 1's rule runs is named, after the module that imports it
(:func:`test_the_route_names_every_module_the_table_job_runs`)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

from route_job import FRESH_JOB
from test_table_inputs import (
    project,  # noqa: F401  (the fixture: a results folder as the workflow leaves it)
    rule_files,
)

from con2.report.artefacts import TABLES
from con2.workflow.artefact_rules import ArtefactRules
from con2.workflow.session import Session

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs/architecture.md"
SCRIPTS = ROOT / "workflow/scripts"  # a rule's script imports the modules beside it (on its sys.path)
SMK_REFS = re.compile(r"""(?:include|script|configfile):\s*(?:f?["'])([^"']+)["']""")
# a YAML file of workflow/ that a Snakefile names (the default profile, the schema it checks the profile against)
FILE_ARG = re.compile(r"""f?["'](?:\{workflow\.basedir\}/)?(workflow/[^"'{}]+\.ya?ml)["']""")
FROM_IMPORT = re.compile(r"^\s*from\s+(con2[\w.]*)\s+import\s+(.+)$", re.M)


def route() -> list[str]:
    """The files the section names, in order (paths with a slash or the Snakefile; results/ left out)."""
    text = DOC.read_text()
    section = text[text.index("## Follow one run") :]
    section = section[: section.index("\n## ", 3)]
    names = re.findall(r"`([^`\s]+)`", section)
    return [n for n in names if (n == "Snakefile" or "/" in n) and not n.startswith(("results/", "tests/", "con2 "))]


def module_file(name: str) -> Path | None:
    base = ROOT / Path(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def python_refs(path: Path) -> set[Path]:
    """The con2 modules a Python file imports, anywhere in it (``from pkg import module`` included)."""
    out: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if name.startswith(("con2", "baselines")) and (found := module_file(name)):
                out.add(found)
            elif path.parent == SCRIPTS and (SCRIPTS / f"{name}.py").is_file():
                out.add(SCRIPTS / f"{name}.py")
    return out


def snakemake_refs(path: Path) -> set[Path]:
    """What a Snakefile or rule file includes, runs as a script, reads as config, names as a YAML file
    of ``workflow/`` (the profile and schema it checks) or imports, and the ``con2`` command line its shell runs."""
    text = path.read_text()
    out: set[Path] = set()
    for ref in SMK_REFS.findall(text) + FILE_ARG.findall(text):
        ref = ref.replace("{workflow.basedir}/", "")
        for base in (path.parent, ROOT):
            if (base / ref).resolve().is_file():
                out.add((base / ref).resolve())
                break
    for module, names in FROM_IMPORT.findall(text):
        for name in [module] + [f"{module}.{n.strip().split(' ')[0]}" for n in names.split(",")]:
            if found := module_file(name):
                out.add(found)
    if re.search(r'"con2 \w', text):
        out.add(ROOT / "con2/cli/main.py")
    return out


def entry_point_refs() -> set[Path]:
    """The modules the method registry loads by name (pyproject's ``con2.methods`` entry points), and
    each spec's implementation module."""
    points = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["con2.methods"]
    out: set[Path] = set()
    for value in points.values():
        spec = module_file(value.split(":")[0])
        if spec:
            out.add(spec)
            for impl in re.findall(r"""implementation\s*=\s*["']([\w.]+):""", spec.read_text()):
                if found := module_file(impl):
                    out.add(found)
    return out


def builder_refs() -> set[Path]:
    """The modules the artefact registry loads by name (each table's and figure's builder)."""
    from con2.report.artefacts import FIGURES, TABLES

    return {f for a in [*TABLES.values(), *FIGURES.values()] if (f := module_file(a.builder_path.split(":")[0]))}


def refs(path: Path) -> set[Path]:
    """What ``path`` reaches; importing a package reaches what its ``__init__`` re-exports."""
    found = (
        snakemake_refs(path) if path.suffix in (".smk", "") else python_refs(path) if path.suffix == ".py" else set()
    )
    if path == ROOT / "con2/methods/registry.py":
        found |= entry_point_refs()
    if path == ROOT / "con2/report/artefacts.py":
        found |= builder_refs()
    for init in [f for f in found if f.name == "__init__.py" and f != path]:
        found |= python_refs(init)
    return found


def test_the_route_names_real_files_once() -> None:
    files = route()
    assert len(files) >= 30, files  # the parse found the section
    missing = [f for f in files if not (ROOT / f).is_file()]
    assert not missing, missing
    twice = sorted({f for f in files if files.count(f) > 1})
    assert not twice, f"named more than once: {twice}"


def unreached(names: list[str]) -> list[str]:
    """The files of ``names`` that no file named before them imports, includes or runs."""
    files = [(ROOT / f).resolve() for f in names]
    return [
        str(path.relative_to(ROOT))
        for i, path in enumerate(files[1:], start=1)
        if not any(path in refs(earlier) for earlier in files[:i])
    ]


def test_each_file_is_reached_from_one_named_before_it() -> None:
    assert not unreached(route()), f"named before any file that imports, includes or runs it: {unreached(route())}"


def test_the_route_check_can_fail() -> None:
    """The route backwards, or with the engine before the command line that leads to it, is caught."""
    files = route()
    assert unreached(list(reversed(files)))
    engine = files.index("con2/training/engine.py")
    assert "con2/training/engine.py" in unreached(["Snakefile", files[engine], *files[1:engine]])


# The route's completeness (issue 45, item 8): the modules the job of Table 1's rule runs.

TABLE = "table1_medical"
TABLE_STAGE = "workflow/rules/tables.smk"  # the route's table step starts with the rule's file

# The job as Snakemake runs it: a fresh interpreter runs the rule's script with its `snakemake` object
# (inputs, outputs, params, wildcards, log). An audit hook ("exec": a module's code run on import, or
# the script's by runpy) records each file of the project's code (con2/, baselines/, workflow/) run,
# once, with the module whose code imported it: the nearest project frame below it (a package's
# __init__ passed through).
JOB = (
    r"""
import json, os, runpy, sys
from types import SimpleNamespace
"""
    + FRESH_JOB
    + r"""
ran = {}


def importer(path):
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(code) and name != path and os.path.basename(name) != "__init__.py":
            return name
        frame = frame.f_back
    return None


def hook(event, args):
    if event == "exec" and hasattr(args[0], "co_filename"):
        path = args[0].co_filename
        if path.startswith(code) and path not in ran:
            ran[path] = importer(path)


snakemake = SimpleNamespace(
    input=Named(job["input"]), output=Named(job["output"]), params=Named(job["params"]),
    wildcards=Named(job["wildcards"]), log=[job["log"]], scriptdir=os.path.join(root, "workflow", "scripts"),
)
sys.addaudithook(hook)
runpy.run_path(snakemake.scriptdir + "/make_table.py", init_globals={"snakemake": snakemake}, run_name="__main__")
with open(out_file, "w") as fh:
    json.dump(list(ran.items()), fh)
"""
)


class Executed(NamedTuple):
    """A module of the project the job ran and the one whose code imported it (paths relative to the
    checkout; ``None``: the rule's script, which Snakemake runs)."""

    path: str
    importer: str | None


def relative(path: str | None) -> str | None:
    return None if path is None else str(Path(path).relative_to(ROOT))


def run_table_job(session: Session, workdir: Path, table: str = TABLE) -> list[Executed]:
    """The modules the job of ``table``'s rule runs, in the order they start (a package's ``__init__``
    aside: Python runs it on the way to any module inside; what it imports is recorded)."""
    rules = ArtefactRules(session)
    artefact = TABLES[table]
    job = {
        "input": rule_files(rules, artefact, ""),
        "output": {ext: f"results/tables/{artefact.stem}.{ext}" for ext in ("csv", "md", "tex", "html")},
        "params": {"table": table, "settings": dict(rules.params(artefact)["settings"])},
        "wildcards": {},
        "log": f"results/logs/tables/{artefact.stem}.log",
    }
    (workdir / "job.json").write_text(json.dumps(job))
    env = {k: v for k, v in os.environ.items() if k != "CON2_FAULT"}  # no fault point fires
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))  # this checkout's code
    done = subprocess.run(
        [sys.executable, "-c", JOB, str(ROOT), "job.json", "ran.json"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = workdir / job["log"]
    assert done.returncode == 0, (done.stderr[-3000:], log.read_text()[-3000:] if log.is_file() else "")
    assert (workdir / job["output"]["md"]).is_file()
    ran = [Executed(relative(p), relative(i)) for p, i in json.loads((workdir / "ran.json").read_text())]
    return [e for e in ran if Path(e.path).name != "__init__.py"]


def unnamed(executed: list[Executed], names: list[str]) -> list[str]:
    """The modules the job ran that the route does not name."""
    return [e.path for e in executed if e.path not in names]


def out_of_order(executed: list[Executed], names: list[str]) -> list[str]:
    """The modules the route names in its table step (from :data:`TABLE_STAGE` on) before the module whose
    code imported them in the job (the rule's script: before the rule's file)."""
    start = names.index(TABLE_STAGE)
    out = []
    for path, by in executed:
        by = by or TABLE_STAGE
        if path in names and names.index(path) >= start and by in names and names.index(by) > names.index(path):
            out.append(f"{path} (imported by {by})")
    return out


def test_the_route_names_every_module_the_table_job_runs(
    project: tuple[Session, dict[str, Any]],
    tmp_path: Path,
) -> None:
    """Completeness: Table 1's job (``workflow/scripts/make_table.py`` run as its rule runs it, in a fresh
    interpreter, on a results folder as the workflow leaves it) runs only modules of ``con2/``,
    ``baselines/`` and ``workflow/`` that the route names.

    In order, where the job defines one: a module runs once, imported by one module (the rule's file
    runs the script), so the import tree orders each module after its importer; the order of siblings is
    that of import statements, which says nothing to a reader. So each module the route names in its
    table step (from ``workflow/rules/tables.smk`` on) comes after the module that imported it. A module
    the route names before the table step (the paths, the records, the aggregation's files) the reader
    has met already: the table job uses it again, and the table step comes after them all."""
    session, _ = project
    executed = run_table_job(session, tmp_path)
    paths = [e.path for e in executed]
    # the recording sees the job: the script, the table's builder and the module computing its marks
    assert {"workflow/scripts/make_table.py", "con2/builders/method_tables.py", "con2/report/paired.py"} <= set(paths)
    names = route()
    assert not unnamed(executed, names), f"run by {TABLE}'s job, not named in the route: {unnamed(executed, names)}"
    assert not out_of_order(executed, names), f"named before the module importing them: {out_of_order(executed, names)}"


def test_the_completeness_check_can_fail() -> None:
    """A route without the module that computes Table 1's marks names it as missing; one naming it
    before the builder that imports it names it as out of order."""
    executed = [
        Executed("workflow/scripts/make_table.py", None),
        Executed("con2/builders/method_tables.py", "con2/report/artefacts.py"),
        Executed("con2/report/paired.py", "con2/builders/method_tables.py"),
        Executed("con2/paths.py", "con2/aggregate/collect.py"),
    ]
    names = route()
    assert not unnamed(executed, names) and not out_of_order(executed, names)
    without = [n for n in names if n != "con2/report/paired.py"]
    assert unnamed(executed, without) == ["con2/report/paired.py"]
    early = [n for n in without if n != "con2/builders/method_tables.py"]
    at = early.index("con2/report/artefacts.py") + 1
    early[at:at] = ["con2/report/paired.py", "con2/builders/method_tables.py"]
    assert out_of_order(executed, early) == ["con2/report/paired.py (imported by con2/builders/method_tables.py)"]
