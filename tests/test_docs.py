"""The documentation: the MkDocs site under docs/ builds with `mkdocs build --strict` (mkdocs.yml
turns a link to a missing page or anchor into an error), the README stays short, and each of its
links into docs/ reaches a page, and an anchor on it, that exists.

Needs the `docs` extra (part of `test`): mkdocs and mkdocs-material."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
README_MAX_LINES = 260
TEST_COMMAND = "python -m mypy && python -m pytest -q"  # the README's, which .ci/run runs


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # without the banner about MkDocs 2
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built once from the checkout's mkdocs.yml and docs/."""
    pytest.importorskip("mkdocs", reason="the `docs` extra: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    res = mkdocs_build(ROOT / "mkdocs.yml", out)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return out


def test_the_site_builds_strict(site: Path) -> None:
    """`mkdocs build --strict` exits 0: no broken link, no missing anchor, no page left out of the nav."""
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix("").as_posix() for p in (ROOT / "docs").glob("*.md"))
    assert "index" in pages
    for page in pages:
        html = site / "index.html" if page == "index" else site / page / "index.html"
        assert html.is_file(), page


def test_a_broken_anchor_fails_the_build(tmp_path: Path) -> None:
    """The validation settings do what the docs test relies on: a link to a missing anchor (or page)
    in a copy of docs/ makes the strict build fail."""
    pytest.importorskip("mkdocs", reason="the `docs` extra: pip install -e '.[docs]'")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy2(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    index = tmp_path / "docs" / "index.md"
    for broken in ("[x](workflow.md#no-such-heading)", "[x](no_such_page.md)"):
        index.write_text((ROOT / "docs" / "index.md").read_text() + f"\n{broken}\n")
        res = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
        assert res.returncode != 0, broken
        assert "no-such-heading" in res.stderr or "no_such_page.md" in res.stderr, res.stderr[-2000:]


def test_the_readme_is_short() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs) -> None:
        self.ids.update(v for k, v in attrs if k == "id" and v)


def readme_doc_links() -> list[tuple[str, str]]:
    """(page under docs/, anchor or '') for every Markdown link of the README into docs/."""
    links = re.findall(r"\]\((docs/[^)\s]*)\)", README.read_text())
    out = []
    for link in links:
        path, _, anchor = link.partition("#")
        out.append((path, anchor))
    return out


def test_every_readme_link_into_docs_resolves(site: Path) -> None:
    links = readme_doc_links()
    # the README names every page of the site
    assert {p for p, _ in links} >= {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    for path, anchor in links:
        assert (ROOT / path).is_file(), f"README.md links to {path}, which does not exist"
        if anchor:
            page = Path(path).relative_to("docs").with_suffix("")
            html = site / ("index.html" if page.name == "index" else f"{page.as_posix()}/index.html")
            ids = _Ids()
            ids.feed(html.read_text())
            assert anchor in ids.ids, f"README.md links to {path}#{anchor}: no such heading on that page"


def test_the_readme_keeps_what_a_newcomer_looks_for() -> None:
    """The two commands with their measured times, the test command .ci/run runs, and where the
    numbers come from stay on the README's first page."""
    text = README.read_text()
    assert "snakemake --cores 2 all --configfile workflow/config/test.yaml" in text
    assert "snakemake --cores 2 all --config data_dir=../shared/data" in text
    assert f"```bash\n{TEST_COMMAND}\n```" in text
    assert (ROOT / ".ci" / "run").read_text().rstrip().splitlines()[-1] == TEST_COMMAND
    assert "benchmarks/README.md#bfloat16-on-the-cpu" in text
    assert "docs/results.md" in text
