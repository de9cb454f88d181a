"""The package's shape, checked: layers import only downwards, no import circle inside ``con2``, and
every import inside a function says why it is not at the top of its module.

Imports are read from the source with :mod:`ast` (nothing is imported), at module level and inside
functions alike, leaving out ``if TYPE_CHECKING:`` blocks (annotations only, never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "con2"
BASELINES = ROOT / "baselines"  # the methods layer's other half: the baselines, each a spec and an implementation

# Lowest first: a module may import its own layer and the layers below it, never one above.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "con2.errors",
        "con2.atomic",
        "con2.faults",
        "con2.resources",
        "con2.text",
        "con2.torch_support",
        "con2.yaml_files",
    ),
    ("con2.config", "con2.paths", "con2.paper_names", "con2.source_formats", "con2.maths", "con2.transforms"),
    ("con2.data", "con2.weights"),
    ("con2.training",),
    ("con2.methods", "baselines"),
    ("con2.run",),
    ("con2.grid", "con2.workflow.status"),  # the data check's markers and fixes: builders/missing.py reads them
    ("con2.aggregate",),
    ("con2.report",),  # the report's vocabulary: what the builders share
    ("con2.builders",),  # one module per table or figure family; a builder imports no builder
    ("con2.cli", "con2.workflow", "con2.__main__"),
)
BUILDERS = "con2.builders"


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of ``con2`` and ``baselines``, by its dotted name."""
    return {module_name(p): p for folder in (PACKAGE, BASELINES) for p in sorted(folder.rglob("*.py"))}


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def imports(path: Path, known: set[str], type_checking: bool = False) -> list[tuple[int, str, bool]]:
    """``(line, imported con2 module, inside a function)`` of every import of ``path`` that runs (and,
    with ``type_checking``, of those a type checker alone reads)."""
    tree = ast.parse(path.read_text())
    skip = set() if type_checking else _type_checking_lines(tree)
    inner: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Import | ast.ImportFrom):
                    inner.add(sub.lineno)
    found: list[tuple[int, str, bool]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom) or node.lineno in skip:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif node.module is None or node.level:
            names = []
        else:
            names = [
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module for a in node.names
            ]
        found += [(node.lineno, n, node.lineno in inner) for n in names if n.split(".")[0] in ("con2", "baselines")]
        if not names:
            found.append((node.lineno, "", node.lineno in inner))
    return found


def layer_of(name: str) -> int:
    for i, layer in enumerate(LAYERS):
        if any(name == top or name.startswith(top + ".") for top in layer):
            return i
    raise AssertionError(f"{name} is in no layer of tests/project/test_layers.py: add it to LAYERS")


def graph(type_checking: bool = False) -> dict[str, set[str]]:
    mods = modules()
    return {
        name: {dep for _, dep, _ in imports(path, set(mods), type_checking) if dep in mods and dep != name}
        for name, path in mods.items()
    }


def test_every_module_has_a_layer() -> None:
    for name in modules():
        if name != "con2":
            layer_of(name)


def test_layers_import_only_downwards() -> None:
    mods = modules()
    upward = [
        f"{mods[name].relative_to(ROOT)}: {name} (layer {layer_of(name)}) imports {dep} (layer {layer_of(dep)})"
        for name, deps in graph().items()
        if name != "con2"
        for dep in sorted(deps)
        if dep != "con2" and layer_of(dep) > layer_of(name)
    ]
    assert not upward, "\n".join(upward)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_cycles_finds_a_circle() -> None:  # the check itself can fail
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def builders_importing_builders(edges: dict[str, set[str]], package: str = BUILDERS) -> list[str]:
    """``"a imports b"`` for each module ``a`` of ``package`` that imports another module ``b`` of it (its
    ``__init__`` aside): what two builders share belongs in the report's vocabulary, below them."""
    inside = [name for name in edges if name.startswith(package + ".")]
    return [
        f"{a} imports {b}" for a in sorted(inside) for b in sorted(edges[a]) if b.startswith(package + ".") and b != a
    ]


def test_builders_check_finds_a_builder_importing_a_builder() -> None:  # the check itself can fail
    edges = {
        "con2.builders": set(),
        "con2.builders.a": {"con2.report.select", "con2.builders.b"},
        "con2.builders.b": {"con2.report.format"},
        "con2.report.select": set(),
    }
    assert builders_importing_builders(edges) == ["con2.builders.a imports con2.builders.b"]
    edges["con2.builders.a"] = {"con2.report.select", "con2.builders"}
    assert builders_importing_builders(edges) == []


def test_a_builder_imports_no_builder() -> None:
    """Adding a table is one builder module and one registry line: no builder leans on another, even for the
    type checker (``tests/project/test_layers.py``, docs/architecture.md "Adding a table")."""
    assert any(name.startswith(BUILDERS + ".") for name in modules()), "the walk found no builder"
    for type_checking in (False, True):
        assert not builders_importing_builders(graph(type_checking)), builders_importing_builders(graph(type_checking))


def test_no_import_circle_in_con2() -> None:
    assert cycles(graph()) == []


def test_no_import_circle_even_for_the_type_checker() -> None:
    """``if TYPE_CHECKING:`` imports count too (issue 34): a module that needs a class only for its
    annotations names what it reads as a Protocol (``con2.methods.scoring.Scorable``) instead."""
    assert cycles(graph(type_checking=True)) == []


def test_type_checking_imports_go_downwards_too() -> None:
    mods = modules()
    upward = [
        f"{name} imports {dep} for the type checker"
        for name, deps in graph(type_checking=True).items()
        if name != "con2"
        for dep in sorted(deps)
        if dep != "con2" and layer_of(dep) > layer_of(name)
    ]
    assert not upward, "\n".join(upward)
    assert mods  # the walk found the package


def test_function_level_imports_say_why() -> None:
    """An import inside a function hides a dependency: allowed only with a ``# lazy: <reason>`` comment
    on its line (a heavy or optional dependency kept off a light path: torch behind the command line,
    pandas behind the workflow's start, an extra such as transformers)."""
    silent = []
    for path in modules().values():
        lines = path.read_text().splitlines()
        tree = ast.parse("\n".join(lines))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Import | ast.ImportFrom):
                        text = " ".join(lines[sub.lineno - 1 : (sub.end_lineno or sub.lineno)])
                        if "# lazy:" not in text:
                            silent.append(f"{path.relative_to(ROOT)}:{sub.lineno}: {lines[sub.lineno - 1].strip()}")
    assert not silent, "function-level imports without a `# lazy: <reason>` comment:\n" + "\n".join(silent)
