"""The workflow's own Python (Snakefile, workflow/rules/*.smk) imports only what it uses (issue 60, item 2:
common.smk imported install_grid_progress and start_heartbeat and used neither). Snakemake's files are not
Python a linter reads, so this test reads their imports itself; the rule files share one namespace (each is
included into the Snakefile's), so a name counts as used anywhere among them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").rglob("*.smk"))]
FROM_IMPORT = re.compile(r"^from\s+[\w.]+\s+import\s+(.+)$", re.M)
IMPORT = re.compile(r"^import\s+(.+)$", re.M)


def imported_names(text: str) -> list[str]:
    """The names a file's top-level imports bind (``as`` names where given; comments dropped)."""
    names = []
    for match in [*FROM_IMPORT.finditer(text), *IMPORT.finditer(text)]:
        for part in match.group(1).split("#")[0].strip("() ").split(","):
            words = part.split()
            if words:
                names.append(words[-1] if "as" in words else words[0].split(".")[0])
    return names


def test_imported_names_are_read_as_the_files_bind_them() -> None:
    text = "import os  # lambdas\nfrom a.b import c, d as e\nfrom x import (y)\nimport p.q\n"
    assert sorted(imported_names(text)) == ["c", "e", "os", "p", "y"]


def test_every_name_the_workflow_imports_is_used() -> None:
    texts = {f: f.read_text() for f in FILES}
    everything = "\n".join(texts.values())
    unused = []
    for f, text in texts.items():
        for name in imported_names(text):
            if len(re.findall(rf"\b{re.escape(name)}\b", everything)) < 2:  # its import, and a use
                unused.append(f"{f.relative_to(ROOT)}: {name}")
    assert not unused, f"imported and never used: {unused}"
