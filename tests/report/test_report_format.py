"""con2.report.format: cells, Markdown, LaTeX and HTML of a table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from report_fixtures import config, inputs_of, paper, runs  # noqa: F401  (fixtures: test parameters of the same name)

from con2.builders.method_tables import table1_medical
from con2.report.format import Table, latex_cell, mean_std
from con2.report.tables import build_table


def test_formatting() -> None:
    assert mean_std(81.66, 0.94) == "81.7 ± 0.9"
    assert mean_std(81.66, float("nan")) == "81.7"
    assert mean_std(float("nan")) == "–"
    assert latex_cell("81.7 ± 0.9") == "$81.7 \\pm 0.9$"
    assert latex_cell("vehicles_1") == "vehicles\\_1"
    t = Table("x", "T", ["A", "B"], [["a_b", "1.0 ± 0.1"]], pd.DataFrame())
    assert "\\begin{tabular}{lr}" in t.latex() and "| A | B |" in t.markdown()


def test_the_html_of_a_table_is_its_markdown_rendered_rounded_with_every_note(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict, tmp_path: Path
) -> None:
    """The HTML the report embeds has the Markdown's cells (rounded, "mean ± std [c×s]"), its lead
    and every note (budget, seeds, weights, skipped data), never the CSV's unrounded numbers."""
    import html as H
    import re

    table = build_table("reproduction", inputs_of(runs, paper, config))
    out = [tmp_path / f"reproduction.{ext}" for ext in ("csv", "md", "tex", "html")]
    table.write(*out)
    page = out[3].read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page
    text = H.unescape(re.sub(r"<[^>]+>", "", page))
    for row in table.rows:
        assert "".join(row) in text.replace("\n", ""), row  # every cell as the Markdown shows it, in order
    for line in [*table.notes, *[ln for ln in table.lead if ln]]:
        assert line.removeprefix("- ").replace("**", "") in text, line
    assert "<strong>Verdict</strong>" in page  # the lead's Markdown bold as HTML
    raw = table.data["ours_mean"].dropna().iloc[0]
    assert repr(float(raw)) not in page and f"{raw:.1f}" in page  # rounded as in the Markdown
    t1 = table1_medical(inputs_of(runs, paper, config))
    t1_page = t1.html()
    budget = next(n for n in t1.notes if n.startswith("Budget of ours:"))
    assert H.escape(budget, quote=False) in t1_page and "63.9</td>" in t1_page
    assert t1_page.count("<tr class=rule>") == 1  # the rule between our rows and the paper-only rows
