"""The HTML report's landing text (workflow/report/workflow.rst, the Snakefile's `report:`): what
`snakemake --report` shows first. No browser: the text sits in the report as a JSON string
(``var workflow_desc = "...";``) that the report's script puts on its first view.

The tiny profile (workflow/config/test.yaml: digits only, so Table 1 is the natural-image summary)
is the session's ``tiny_run`` (tests/conftest.py), copied, as in tests/workflow/test_workflow_outputs.py; the
hostile label's landing is read from the session's ``labelled_reports``.
"""

from __future__ import annotations

import html as html_lib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from workflow_helpers import clone, snakemake

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
TEST_CONFIG = "workflow/config/test.yaml"

if shutil.which("snakemake") is None and subprocess.run([*SNAKEMAKE, "--version"], capture_output=True).returncode:
    pytest.skip("snakemake is not installed (pip install -e '.[workflow]')", allow_module_level=True)

DICT_REPR = re.compile(r"\{\s*'[^']*'\s*:")  # "{'image_size': 16, ...}": a Python dict as printed


def landing(report: Path) -> str:
    """The report's description, as HTML: the landing text the report opens on."""
    page = report.read_text(errors="replace")
    start = page.index("var workflow_desc = ") + len("var workflow_desc = ")
    desc, _ = json.JSONDecoder().raw_decode(page, start)
    assert isinstance(desc, str)
    return desc


def text_of(fragment: str) -> str:
    """What a reader sees of an HTML fragment: its text, tags and <style> left out, entities read."""
    fragment = re.sub(r"<style>.*?</style>", "", fragment, flags=re.S)
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", "", fragment)))


def md_text(line: str) -> str:
    """A Markdown line as its HTML page shows it: no ** or backticks."""
    return line.replace("**", "").replace("`", "").strip()


@pytest.fixture(scope="module")
def built(tiny_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny profile run end to end (the session's ``tiny_run``, copied), then its report: results/report.html."""
    wd = clone(tiny_run, tmp_path_factory.mktemp("landing") / "wd")
    res = snakemake(wd, "--report", "results/report.html", "--configfile", TEST_CONFIG)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "System Message" not in res.stderr and "(ERROR/" not in res.stderr, res.stderr[-3000:]
    return wd


def test_the_report_opens_on_table1_then_the_verdict_and_the_key_figures(built: Path) -> None:
    desc = landing(built / "results/report.html")
    text = text_of(desc)
    # the verdict: the reproduction report's opening line, right after Table 1
    lines = [line for line in (built / "results/tables/reproduction.md").read_text().splitlines() if line.strip()]
    verdict = next(line for line in lines if line.startswith("**Verdict:**"))
    assert md_text(verdict) in text
    # Table 1: the natural-image summary here (the profile has no medical dataset), its header row as cells
    md = (built / "results/tables/natural_summary.md").read_text().splitlines()
    header = next(line for line in md if line.startswith("| Method"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert "<tr>" + "".join(f"<th>{html_lib.escape(c, quote=False)}</th>" for c in cells) + "</tr>" in desc
    for note in (line for line in md if line.startswith("- ")):  # its notes: budget, seeds, ...
        assert md_text(note[2:]) in text, note
    assert 'id="reproduction"' not in desc  # the verdict only, not the 138-row comparison: a click away
    assert "javascript:app.showResultInfo('results/tables/reproduction.html')" in desc
    # the key figures: the per-class and learning-curve PNGs, inline (the report stays self-contained)
    figures = re.findall(r'aria-label="([^"]+)"[^>]*background-image: url\(\'data:image/png,', desc)
    assert figures == ["per_class_digits.png", "learning_curve_digits.png"]
    # in that order, before the page's other text and the profile: Table 1 on the first screen (issue 36)
    order = [text.index(cells[-1]), text.index(md_text(verdict)), text.index("About this report")]
    assert order == sorted(order)
    # every other result one click away: a link to each category of the menu
    for category in ("Figures", "Runs", "Tables"):
        assert f"javascript:app.showCategory('{category}')" in desc
    # the profile as a table, never a Python dict
    assert not DICT_REPR.search(text), DICT_REPR.search(text)
    assert re.search(r"<td><tt[^>]*>image_size</tt></td>\s*<td>16</td>", desc)
    assert re.search(r"<td><tt[^>]*>score_at</tt></td>\s*<td>1</td>", desc)
    # the tables' own pages bring no head or global style into the report
    assert "<head>" not in desc and "body{" not in desc and "<script" not in desc.lower()


def test_a_report_of_other_targets_says_where_the_verdict_comes_from(built: Path) -> None:
    """A report of one figure holds no table: its landing text says what builds the verdict."""
    res = snakemake(built, "--report", "partial.html", "results/figures/score_runtime.png", "--configfile", TEST_CONFIG)
    assert res.returncode == 0, res.stderr[-3000:]
    desc = landing(built / "partial.html")
    text = text_of(desc)
    assert "Verdict: not in this report: the reproduction report (results/tables/reproduction.md)" in text
    assert "snakemake --cores 2 all" in text
    assert "Natural images" not in text and "<table" not in desc.split("About this report")[0]
    assert 'class="con2-figure"' not in desc and "javascript:app.showCategory('Figures')" in desc
    assert "image_size" in text and not DICT_REPR.search(text)


def elements(fragment: str) -> dict[str, int]:
    """The script, link, image and frame elements an HTML fragment opens, and its javascript: URLs."""
    counts = {tag: len(re.findall(rf"<{tag}\b", fragment, re.I)) for tag in ("script", "a", "img", "iframe")}
    counts["javascript: in a tag"] = len(re.findall(r"<[^<>]*javascript:", fragment, re.I))
    return counts


def test_a_hostile_label_on_the_landing_is_text(labelled_reports: dict[str, Any]) -> None:
    """A record's label reaches the landing's Table 1 escaped: no element or link more than a plain one
    (the session's ``labelled_reports``, tests/conftest.py: the same record labelled plainly, then hostile)."""
    wd = labelled_reports["wd"]
    plain, hostile = landing(wd / "plain.html"), landing(wd / "hostile.html")
    assert "Plain label" in text_of(plain)
    assert elements(hostile) == elements(plain)
    assert "&lt;img src=x onerror=alert(2)&gt;" in hostile and "&lt;/script&gt;" in hostile
    assert "</script>" not in hostile and "<img" not in hostile
