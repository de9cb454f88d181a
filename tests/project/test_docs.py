"""The documentation: the MkDocs site under docs/ builds with `mkdocs build --strict` (mkdocs.yml
turns a link to a missing page or anchor into an error), the README stays short, and each of its
links into docs/ reaches a page, and an anchor on it, that exists.

Then every page as rendered: each Markdown table of the source became an HTML table with all its
rows (a blank line after the `|---|` row leaves a header-only table and a paragraph of `| ... |`,
which the strict build does not see), every link of the built site and of the READMEs GitHub
renders reaches a file and an anchor that exist, every dotted Python name the docs give
(`con2.x.y`, `baselines.x`, `from con2.x import y`) imports, and every repository path they give
as a code span exists.

Needs the `docs` extra (part of `test`): mkdocs and mkdocs-material."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
README_MAX_LINES = 150  # issue 58: what it is, install, the commands, one table per dataset, links
DOC_PAGES = sorted((ROOT / "docs").glob("*.md"))
# Markdown files outside the site that GitHub renders and that name links, tables and code.
GITHUB_PAGES = [README, ROOT / "workflow" / "rules" / "methods" / "README.md"]
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


def readme_prose_numbers(text: str) -> list[str]:
    """The numbers the README prints in its prose and tables: code blocks, inline code and link targets
    left out (commands, versions, anchors are not results); ``1,424`` and ``57.7`` whole, a sign dropped."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "] ", text)
    return re.findall(r"(?<![\w.,])\d+(?:[.,]\d+)*(?![\w])", text)


def test_readme_prose_numbers_are_parsed_as_a_reader_reads_them() -> None:
    text = "CON2 57.7 ± 0.7 (+13.2, p < 0.001) took 1,401 s, `--cores 2`, [x](docs/a.md#issue-56)\n```\nepochs=32\n```"
    assert readme_prose_numbers(text) == ["57.7", "0.7", "13.2", "0.001", "1,401"]


def test_every_number_the_readme_prints_is_in_the_results_or_workflow_docs() -> None:
    """Issue 58: the README quotes, it does not measure; each number has its machine, commit and load in
    docs/results.md or docs/workflow.md, where a reader who doubts it looks."""
    sources = (ROOT / "docs/results.md").read_text() + (ROOT / "docs/workflow.md").read_text()
    missing = sorted(
        {
            n
            for n in readme_prose_numbers(README.read_text())
            if not re.search(rf"(?<![\d.,]){re.escape(n)}(?![\d])", sources)
        }
    )
    assert not missing, f"README.md prints {missing}, which neither docs/results.md nor docs/workflow.md holds"


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
            ids = RenderedPage(html.read_text()).ids
            assert anchor in ids, f"README.md links to {path}#{anchor}: no such heading on that page"


def test_the_readme_keeps_what_a_newcomer_looks_for() -> None:
    """The two commands with their measured times, the test command .ci/run runs, and where the
    numbers come from stay on the README's first page."""
    text = README.read_text()
    assert "snakemake --cores 2 all --configfile workflow/config/test.yaml" in text
    assert "snakemake --cores 2 all --configfile workflow/config/default.yaml --config data_dir=../shared/data" in text
    assert f"```bash\n{TEST_COMMAND}\n```" in text
    assert (ROOT / ".ci" / "run").read_text().rstrip().splitlines()[-1] == TEST_COMMAND
    assert "docs/results.md#where-the-numbers-come-from" in text  # every number's machine and commit, one click away


def test_the_readme_and_the_install_page_describe_the_two_installs_alike() -> None:
    """Issue 46, point 7: the two ways to install PyTorch (when each applies, the two pip lines) read the
    same on the README and on docs/install.md ("with an NVIDIA GPU" there, "or where only PyPI is
    reachable" added here, was one drifting from the other)."""

    def install(text: str) -> tuple[str, list[str]]:
        start = text.index("Two ways to install PyTorch")
        block = text.index("```bash", start)
        lines = text[block : text.index("```\n", block + 7)].splitlines()
        return " ".join(text[start:block].split()), [ln for ln in lines if "install torch" in ln]

    readme, page = install(README.read_text()), install((ROOT / "docs" / "install.md").read_text())
    assert readme == page
    assert "or where only PyPI is reachable" in readme[0] and len(readme[1]) == 2


# --- every page as rendered: tables, links, Python names, repository paths ---------------------

FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)")
TABLE_LINE = re.compile(r"^ {0,3}\|")
SEPARATOR = re.compile(r"^ {0,3}\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
CODE_SPAN = re.compile(r"(?<!`)`([^`]+)`(?!`)")
DOTTED_NAME = re.compile(r"(?<![\w./-])((?:con2|baselines)(?:\.[A-Za-z_]\w*)+)")
FROM_IMPORT = re.compile(r"^\s*from\s+((?:con2|baselines)(?:\.\w+)*)\s+import\s+([\w\s,]+?)\s*(?:#.*)?$")
REPO_PATH = re.compile(r"^(?:con2|baselines|workflow|benchmarks|tests|docs|\.ci)/[\w./*-]*$")
MD_LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def split_fences(text: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """The text with every fenced code block blanked out (line numbers kept), and the blocks as
    (info string, lines)."""
    prose: list[str] = []
    blocks: list[tuple[str, list[str]]] = []
    fence = ""
    for line in text.splitlines():
        m = FENCE.match(line)
        if not fence and m:
            fence = m.group(1)
            blocks.append((m.group(2), []))
            prose.append("")
        elif fence:
            if line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
                fence = ""
            else:
                blocks[-1][1].append(line)
            prose.append("")
        else:
            prose.append(line)
    return "\n".join(prose), blocks


def source_tables(text: str) -> tuple[int, int]:
    """(tables, rows) of Markdown outside code blocks: a table is a `|` row followed by a `|---|`
    separator row; its rows are every `|` line but the separators, wherever the row landed."""
    lines = split_fences(text)[0].splitlines()
    rows = [line for line in lines if TABLE_LINE.match(line) and not SEPARATOR.match(line)]
    tables = sum(
        1 for a, b in zip(lines, lines[1:]) if TABLE_LINE.match(a) and not SEPARATOR.match(a) and SEPARATOR.match(b)
    )
    return tables, len(rows)


def cells(row: str) -> int:
    """The cells of a table row as GitHub splits it: at every `|` not escaped as `\\|`."""
    return len(re.split(r"(?<!\\)\|", row.strip().removeprefix("|").removesuffix("|")))


def ragged_rows(text: str) -> list[str]:
    """The table rows outside code blocks whose cells differ in number from their table's header
    (a renderer drops the extra cells or pads the row, silently)."""
    out = []
    header = 0
    for line in split_fences(text)[0].splitlines():
        if not TABLE_LINE.match(line):
            header = 0
        elif not header:
            header = cells(line)
        elif not SEPARATOR.match(line) and cells(line) != header:
            out.append(f"{cells(line)} cells where the header has {header}: {line[:80]!r}")
    return out


class RenderedPage(HTMLParser):
    """What the checks read from one HTML page: element ids, link targets, tables and their rows
    that hold any text, and the text of every paragraph."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.tables = 0
        self.rows = 0
        self.paragraphs: list[str] = []
        self._para: list[str] | None = None
        self._row: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids.update(v for k, v in attrs if k in ("id", "name") and v)
        if tag == "a":
            self.hrefs.extend(v for k, v in attrs if k == "href" and v is not None)
        elif tag == "table":
            self.tables += 1
        elif tag == "tr":
            self._row = []
        elif tag == "p":
            self._para = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "p" and self._para is not None:
            self.paragraphs.append("".join(self._para).strip())
            self._para = None
        elif tag == "tr" and self._row is not None:
            self.rows += bool("".join(self._row).strip())  # the empty row a header-only table gets
            self._row = None

    def handle_data(self, data: str) -> None:
        for text in (self._para, self._row):
            if text is not None:
                text.append(data)


def table_problems(source: str, html: str) -> list[str]:
    """Why the source's Markdown tables did not all become HTML tables with every row; [] if they did."""
    tables, rows = source_tables(source)
    page = RenderedPage(html)
    problems = []
    if (page.tables, page.rows) != (tables, rows):
        problems.append(
            f"{tables} table(s) with {rows} row(s) in the source, {page.tables} <table> with {page.rows} <tr> rendered"
        )
    problems += [f"a table fell apart into a paragraph: {p[:80]!r}" for p in page.paragraphs if p.startswith("|")]
    return problems + ragged_rows(source)


def render_like_github(text: str) -> str:
    """HTML of a Markdown file as Python-Markdown's tables render it (as strict as GitHub's about a
    blank line inside a table)."""
    markdown = pytest.importorskip("markdown", reason="the `docs` extra: pip install -e '.[docs]'")
    return markdown.markdown(text, extensions=["tables", "fenced_code"])


def page_html(site: Path, md: Path) -> Path:
    """The built page of docs/<md>."""
    return site / "index.html" if md.stem == "index" else site / md.stem / "index.html"


def test_the_table_check_sees_a_table_that_fell_apart() -> None:
    """The check itself: a blank line after the separator row leaves a header-only <table> and a
    paragraph of `| ... |`, which it reports; the same table without it passes; a row with a cell
    too many (an unescaped `|`, which GitHub splits even in a code span) is reported too."""
    table = "| a | b |\n|---|---:|\n{gap}| 1 | 2 |\n| 3 | 4 |\n"
    text = "Intro.\n\n{table}\n```\n| in code | not a table |\n|---|---|\n```\n"
    good = text.format(table=table.format(gap=""))
    broken = text.format(table=table.format(gap="\n"))
    assert source_tables(good) == source_tables(broken) == (1, 3)
    assert table_problems(good, render_like_github(good)) == []
    assert table_problems(broken, render_like_github(broken)) == [
        "1 table(s) with 3 row(s) in the source, 1 <table> with 1 <tr> rendered",
        "a table fell apart into a paragraph: '| 1 | 2 |\\n| 3 | 4 |'",
    ]
    ragged = good.replace("| 3 | 4 |", "| 3 | `a|b` |")
    assert table_problems(ragged, render_like_github(ragged)) == ["3 cells where the header has 2: '| 3 | `a|b` |'"]
    assert ragged_rows(ragged.replace("a|b", "a\\|b")) == []


@pytest.mark.parametrize("md", DOC_PAGES, ids=lambda p: p.name)
def test_every_table_of_a_docs_page_renders(site: Path, md: Path) -> None:
    """Each Markdown table of docs/<page> is an HTML table of the built page, with all its rows."""
    assert table_problems(md.read_text(), page_html(site, md).read_text()) == [], md.name


@pytest.mark.parametrize("md", GITHUB_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_table_of_a_readme_renders(md: Path) -> None:
    """The same for the READMEs GitHub renders (only their tables are checked here)."""
    assert table_problems(md.read_text(), render_like_github(md.read_text())) == [], md.name


def test_every_link_of_the_site_resolves(site: Path) -> None:
    """Every relative link of every built page (text, tables, navigation) reaches a file of the
    site and, with a #fragment, an element with that id on it."""
    pages = {html: RenderedPage(html.read_text()) for html in site.rglob("*.html")}
    broken = []
    for html, page in pages.items():
        if html == site / "404.html":
            continue  # its links start at the server's root, wherever the site is served
        for href in page.hrefs:
            url = urlsplit(href)
            if url.scheme or url.netloc or href.startswith("javascript:"):
                continue
            target = (html.parent / unquote(url.path)).resolve() if url.path else html
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{html.relative_to(site)}: {href} (no such file)")
            elif url.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else RenderedPage(target.read_text()).ids
                if unquote(url.fragment) not in ids:
                    broken.append(f"{html.relative_to(site)}: {href} (no such anchor)")
    assert broken == []


def github_anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown file: lower case, punctuation dropped,
    each space a hyphen, a repeated heading numbered -1, -2, ..."""
    anchors: set[str] = set()
    for line in split_fences(text)[0].splitlines():
        m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            n, unique = 0, slug
            while unique in anchors:
                n += 1
                unique = f"{slug}-{n}"
            anchors.add(unique)
    return anchors


@pytest.mark.parametrize("md", GITHUB_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_of_a_readme_resolves(md: Path) -> None:
    """Every relative link of a README GitHub renders reaches a file of the repository and, with a
    #fragment into a Markdown file, a heading GitHub gives that anchor."""
    broken = []
    for link in MD_LINK.findall(split_fences(md.read_text())[0]):
        url = urlsplit(link)
        if url.scheme or url.netloc:
            continue
        target = (md.parent / unquote(url.path)).resolve() if url.path else md
        if not target.exists():
            broken.append(f"{link} (no such file)")
        elif url.fragment and target.suffix == ".md" and url.fragment not in github_anchors(target.read_text()):
            broken.append(f"{link} (no such heading)")
    assert broken == [], md.relative_to(ROOT).as_posix()


def python_names(text: str) -> set[str]:
    """The dotted Python names a Markdown file gives: `con2.x.y` / `baselines.x` in code spans,
    and `from con2.x import a, b` in its Python code blocks (as `con2.x.a`, `con2.x.b`)."""
    prose, blocks = split_fences(text)
    names = {name for span in CODE_SPAN.findall(prose) for name in DOTTED_NAME.findall(span)}
    for info, lines in blocks:
        if info in ("python", "py", ""):
            for line in lines:
                m = FROM_IMPORT.match(line)
                if m:
                    names.update(f"{m.group(1)}.{n.split()[0]}" for n in m.group(2).split(",") if n.strip())
    return names


def resolve(name: str) -> object:
    """The object a dotted name names: the longest prefix that is a module, then attributes."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        try:
            obj: object = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is None or not (module == e.name or module.startswith(e.name + ".")):
                raise  # a module that exists but imports something missing: not the docs' fault
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


def test_python_names_are_found() -> None:
    """The name finder and resolver themselves: code spans and imports are read, a missing
    attribute or module is an error."""
    text = "Call `con2.paths.NAME_PATTERN` or `python -m con2.run.external`, not `con2/paths.py`.\n\n"
    text += "```python\nfrom con2.config import make_config, RunConfig  # x\n```\n"
    assert python_names(text) == {
        "con2.paths.NAME_PATTERN",
        "con2.run.external",
        "con2.config.make_config",
        "con2.config.RunConfig",
    }
    assert resolve("con2.paths.NAME_PATTERN") is importlib.import_module("con2.paths").NAME_PATTERN
    with pytest.raises(AttributeError):
        resolve("con2.paths.no_such_name")
    with pytest.raises(AttributeError, match="no_such_module"):
        resolve("con2.no_such_module.x")


@pytest.mark.parametrize("md", DOC_PAGES + GITHUB_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_python_name_in_the_docs_exists(md: Path) -> None:
    """Every `con2.x.y` / `baselines.x` the page names imports (module) or is an attribute of one."""
    missing = []
    for name in sorted(python_names(md.read_text())):
        try:
            resolve(name)
        except (ImportError, AttributeError) as e:
            missing.append(f"{name}: {type(e).__name__}: {e}")
    assert missing == [], md.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("md", DOC_PAGES + GITHUB_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_repository_path_in_the_docs_exists(md: Path) -> None:
    """A code span that is a path of the repository (`con2/...`, `baselines/...`, `workflow/...`,
    `benchmarks/...`, `tests/...`, `docs/...`, `.ci/...`; `*` as a glob) names something that exists."""
    spans = {s.strip() for s in CODE_SPAN.findall(split_fences(md.read_text())[0])}
    missing = sorted(s for s in spans if REPO_PATH.match(s) and not any(ROOT.glob(s.rstrip("/"))))
    assert missing == [], md.relative_to(ROOT).as_posix()
