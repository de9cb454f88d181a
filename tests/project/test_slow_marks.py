"""Every test that reads one of the session's workflow runs (tests/conftest.py: ``tiny_run``,
``labelled_reports``, each a Snakemake run built in the set-up of the first test that asks) is marked slow, so
the fast subset (``pytest -m "not slow"``) builds none: one unmarked test had a 152-163 s set-up (issue 58,
item 6). Read from the source with :mod:`ast`; nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import WORKFLOW_SESSION_FIXTURES

TESTS = Path(__file__).resolve().parents[1]


def unmarked(source: str) -> list[str]:
    """The test functions of ``source`` that take a session workflow fixture and are not marked slow (by a
    decorator or the module's ``pytestmark``)."""
    tree = ast.parse(source)
    module_slow = any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
        and "slow" in ast.unparse(node.value)
        for node in tree.body
    )
    found = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test"):
            continue
        args = {a.arg for a in node.args.args}
        slow = module_slow or any("mark.slow" in ast.unparse(d) for d in node.decorator_list)
        if args & set(WORKFLOW_SESSION_FIXTURES) and not slow:
            found.append(node.name)
    return found


def test_every_test_that_reads_a_session_workflow_run_is_marked_slow() -> None:
    missing = [
        f"{p.relative_to(TESTS)}::{name}" for p in sorted(TESTS.rglob("test_*.py")) for name in unmarked(p.read_text())
    ]
    assert not missing, f"mark these @pytest.mark.slow (they build a workflow run in their set-up): {missing}"


def test_the_check_can_fail() -> None:
    fast = "def test_a(tiny_run):\n    pass\n"
    assert unmarked(fast) == ["test_a"]
    assert unmarked("import pytest\n\n@pytest.mark.slow\n" + fast) == []
    assert unmarked("import pytest\npytestmark = pytest.mark.slow\n" + fast) == []
    assert unmarked("def test_b(tmp_path):\n    pass\n") == []
