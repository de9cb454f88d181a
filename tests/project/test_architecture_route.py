"""docs/architecture.md "Follow one run" is the code's route: each file it names exists, is named
once, and is reached from a file named before it, by an import (at the top of a module or lazy),
an ``include:``, ``script:`` or ``configfile:`` of the Snakefile and its rules, the ``con2`` command
a rule's shell runs, or the method registry's entry points (issue 34, point 7)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs/architecture.md"
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
