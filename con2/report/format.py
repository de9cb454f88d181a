"""One table, four files: tidy CSV (numbers), Markdown, LaTeX (booktabs, "mean +- std") and HTML.

A :class:`Table` holds the formatted cells for Markdown/LaTeX/HTML and, separately, the long numeric
frame that goes to CSV, so a reader of the CSV never parses "81.7 ± 0.9" back into numbers. The
HTML file is the Markdown's table as a self-contained page (same cells, same lead and notes): the
one Snakemake's HTML report embeds (``snakemake --report``), so the report shows the rounded
numbers and every note, not the CSV.

A cell that averages runs says over what: ``"81.7 ± 0.9 [1×3]"`` is one normal class times three
seeds, ``"99.4 ± 0.8 [10×1]"`` ten normal classes times one seed (:func:`cell`, :data:`CELL_NOTE`).
Differences between shown numbers are taken from the shown (rounded) values (:func:`shown_diff`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from con2.aggregate.csv_text import csv_frame
from con2.atomic import atomic_path
from con2.faults import fault_point
from con2.text import code_block, html_text, latex_escape, markdown_text

MISSING = "–"


def mean_std(mean: float | None, std: float | None = None, digits: int = 1) -> str:
    """``"81.7 ± 0.9"``; the mean alone when there is no std; ``"–"`` when there is no mean."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return MISSING
    if std is None or (isinstance(std, float) and math.isnan(std)):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


CELL_NOTE = (
    "[c×s]: the mean over c normal classes of the mean over s seeds per class; ± is the std over seeds "
    "(c = 1) or over the c class means (c > 1); no ± with a single run."
)


def classes_by_seeds(n_classes: int, seeds_min: int, seeds_max: int | None = None) -> str:
    """``"10×1"``: normal classes × seeds per class (``"10×1-3"`` when classes had different seed counts)."""
    seeds_max = seeds_min if seeds_max is None else seeds_max
    seeds = f"{seeds_min}" if seeds_min == seeds_max else f"{seeds_min}-{seeds_max}"
    return f"{n_classes}×{seeds}"


def averaged_over(n_classes: int, seeds_min: int, seeds_max: int | None = None) -> str:
    """``"[10×1]"``: :func:`classes_by_seeds` in brackets, as a cell ends."""
    return f"[{classes_by_seeds(n_classes, seeds_min, seeds_max)}]"


def cell(
    mean: float | None,
    std: float | None,
    n_classes: int,
    seeds_min: int,
    seeds_max: int | None = None,
    digits: int = 1,
) -> str:
    """``"81.7 ± 0.9 [1×3]"``: :func:`mean_std` and what it averages; ``"–"`` when there is no mean."""
    text = mean_std(mean, std, digits)
    return text if text == MISSING or not n_classes else f"{text} {averaged_over(n_classes, seeds_min, seeds_max)}"


def with_interval(text: str, lo: float | None, hi: float | None, digits: int = 1) -> str:
    """``"57.9 ± 3.1 [1×3] (50.2–65.6)"``: a cell and its 95% interval of the mean (unchanged without one);
    the HTML page shows the interval on a second line."""
    if text == MISSING or lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return text
    return f"{text} ({lo:.{digits}f}–{hi:.{digits}f})"


_INTERVAL_HTML = re.compile(r" \((\d+(?:\.\d+)?–\d+(?:\.\d+)?)\)(†?)$")


def interval_html(cell_html: str) -> str:
    """A cell's interval (:func:`with_interval`) on a second, smaller line of the HTML page."""
    return _INTERVAL_HTML.sub(r"\2<br><small>\1</small>", cell_html)


def shown(value: float | None, digits: int = 1) -> float:
    """``value`` rounded as a table shows it (NaN for missing)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return float("nan")
    return float(f"{value:.{digits}f}")


def shown_diff(a: float | None, b: float | None, digits: int = 1) -> float:
    """``a - b`` from the shown (rounded) values, so the table's numbers add up."""
    return round(shown(a, digits) - shown(b, digits), digits)


def signed(value: float | None, digits: int = 1) -> str:
    """``"+1.2"`` / ``"-0.3"`` / ``"–"``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return f"{value:+.{digits}f}"


@dataclass
class Table:
    """A formatted table plus its numbers.

    Attributes:
        name: file stem (``results/tables/<name>.{csv,md,tex,html}``).
        title: caption.
        columns: header cells.
        rows: body cells (strings, already formatted).
        data: long numeric frame written to CSV.
        notes: lines printed under the table (what the numbers are, what is missing).
        midrules: body row indices before which LaTeX draws a ``\\midrule``.
        lead: lines printed between the title and the table (a one-line summary).
        empty: the one body line of a table without rows (what is missing, the command that fills it).
        code: command lines (and ``# comment`` lines) for a person to copy, printed under the notes
            verbatim (a fenced block in Markdown, ``<pre>`` in HTML): never inside a cell, where
            Markdown's escaping would change them; build each with :func:`con2.text.shell_command`.
    """

    name: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    data: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    midrules: list[int] = field(default_factory=list)
    lead: list[str] = field(default_factory=list)
    empty: str = "(no runs)"
    code: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        """The Markdown file: every free string (a record's label in a cell or a note, a path in a
        reason) escaped where it could open an HTML tag (:func:`con2.text.markdown_text`), the
        commands (:attr:`code`) in a fenced block under the notes, shown exactly as they are copied."""

        def esc(s: str) -> str:  # a cell never opens an HTML tag in a Markdown viewer, nor a new column
            return markdown_text(s, cell=True)

        lines = [f"### {markdown_text(self.title)}", ""]
        if self.lead:
            lines += [*(markdown_text(line) for line in self.lead), ""]
        lines.append("| " + " | ".join(esc(c) for c in self.columns) + " |")
        lines.append("|" + "|".join("---:" if num else "---" for num in self.numeric_columns()) + "|")
        lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in self.rows]
        if not self.rows:
            lines.append("| " + " | ".join([esc(self.empty)] + [""] * (len(self.columns) - 1)) + " |")
        if self.notes:
            lines += [""] + [markdown_text(n if n.startswith("- ") else f"- {n}") for n in self.notes]
        if self.code:
            lines += ["", *code_block(self.code)]
        return "\n".join(lines) + "\n"

    def numeric_columns(self) -> list[bool]:
        """Per column: True if every body cell is a number, "mean ± std" or missing (right-aligned)."""
        return [
            bool(self.rows) and all(_NUMBER.match(str(r[i])) or str(r[i]) == MISSING for r in self.rows)
            for i in range(len(self.columns))
        ]

    def latex(self) -> str:
        spec = "".join("r" if num else "l" for num in self.numeric_columns())
        out = [
            "% requires \\usepackage{booktabs}",
            "\\begin{table}[t]",
            "\\centering",
            f"\\caption{{{latex_escape(self.title)}}}",
            f"\\label{{tab:{self.name}}}",
            f"\\begin{{tabular}}{{{spec}}}",
            "\\toprule",
            " & ".join(latex_cell(c) for c in self.columns) + " \\\\",
            "\\midrule",
        ]
        for i, row in enumerate(self.rows):
            if i in self.midrules and i > 0:
                out.append("\\midrule")
            out.append(" & ".join(latex_cell(c) for c in row) + " \\\\")
        if not self.rows:
            out.append(f"\\multicolumn{{{len(self.columns)}}}{{l}}{{{latex_escape(self.empty)}}} \\\\")
        out += ["\\bottomrule", "\\end{tabular}"]
        if self.lead or self.notes:
            text = " ".join(latex_escape(n.removeprefix("- ")) for n in [*self.lead, *self.notes])
            out.append("\\par\\smallskip\\footnotesize " + text)
        out += [f"\\par\\texttt{{{latex_escape(line)}}}" for line in self.code]
        out.append("\\end{table}")
        return "\n".join(out) + "\n"

    def html(self) -> str:
        """A self-contained HTML page of the table: the Markdown's title, lead, cells and notes
        (``**bold**`` and ```code``` as in the Markdown), numbers right-aligned, LaTeX's midrules."""
        numeric = self.numeric_columns()

        def cells(tag: str, row: list[str]) -> str:
            return "".join(
                f"<{tag}{' class=num' if num and tag == 'td' else ''}>{interval_html(inline_html(c))}</{tag}>"
                for c, num in zip(row, numeric)
            )

        body = [
            f"<tr{' class=rule' if i in self.midrules and i > 0 else ''}>{cells('td', row)}</tr>"
            for i, row in enumerate(self.rows)
        ] or [f'<tr><td colspan="{len(self.columns)}">{inline_html(self.empty)}</td></tr>']
        notes = [n.removeprefix("- ") for n in self.notes]
        out = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{html_text(self.title)}</title>",
            f"<style>{_HTML_STYLE}</style>",
            "</head><body>",
            f"<h3>{inline_html(self.title)}</h3>",
            *html_blocks(self.lead),
            f'<table id="{html_text(self.name)}">',
            f"<thead><tr>{cells('th', self.columns)}</tr></thead>",
            "<tbody>",
            *body,
            "</tbody></table>",
            *([f'<ul class="notes">{"".join(f"<li>{inline_html(n)}</li>" for n in notes)}</ul>'] if notes else []),
            *([f"<pre><code>{chr(10).join(html_text(line) for line in self.code)}</code></pre>"] if self.code else []),
            "</body></html>",
        ]
        return "\n".join(out) + "\n"

    def write(self, csv: str | Path, md: str | Path, tex: str | Path, html_path: str | Path | None = None) -> None:
        """Write the files (CSV, Markdown, LaTeX and, given a path, HTML), each atomically (a killed
        writer leaves no partial file)."""
        with atomic_path(Path(csv)) as tmp:
            csv_frame(self.data).to_csv(tmp, index=False)
        fault_point("table_csv_written", table=self.name)  # tests: a Ctrl-C with the table half-written
        texts = [(md, self.markdown()), (tex, self.latex())]
        texts += [(html_path, self.html())] if html_path is not None else []
        for path, text in texts:
            with atomic_path(Path(path)) as tmp:
                tmp.write_text(text, encoding="utf-8")


_HTML_STYLE = (
    "body{font-family:system-ui,sans-serif;font-size:14px;margin:1em;color:#222}"
    "table{border-collapse:collapse;margin:0.5em 0}"
    "th,td{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left;white-space:nowrap}"
    "th{border-bottom:2px solid #444}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.rule td{border-top:2px solid #888}ul.notes{font-size:12px;color:#444;max-width:60em}"
    "code{font-size:12px;background:#f4f4f4}"
)


def inline_html(text: str) -> str:
    """Escape ``text`` for HTML (:func:`con2.text.html_text`) and turn the Markdown marks the tables use
    (``**bold**``, ```code```) into tags."""
    s = html_text(text)
    s = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", s)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", s)


def html_blocks(lines: list[str]) -> list[str]:
    """Markdown lines as HTML blocks: runs of ``- item`` lines as one list, other lines as paragraphs."""
    out: list[str] = []
    items: list[str] = []
    for line in [*lines, ""]:
        if line.startswith("- "):
            items.append(f"<li>{inline_html(line[2:])}</li>")
            continue
        if items:
            out.append(f"<ul>{''.join(items)}</ul>")
            items = []
        if line.strip():
            out.append(f"<p>{inline_html(line)}</p>")
    return out


_NUMBER = re.compile(
    r"^([+-]?\d+(\.\d+)?(e[+-]?\d+)?( ± \d+(\.\d+)?)?)( \[\d+×\d+(-\d+)?\])?"
    r"(?P<ci> \(\d+(\.\d+)?–\d+(\.\d+)?\))?(?P<mark>†)?$"
)


def latex_cell(text: str) -> str:
    """A body cell: numbers in math mode (``$81.7 \\pm 0.9$``, then ``[c×s]`` small), text escaped."""
    s = str(text)
    m = _NUMBER.match(s)
    if m:
        number = "$" + m.group(1).replace(" ± ", r" \pm ") + "$"
        number += r" {\scriptsize " + m.group(6).strip().replace("×", r"$\times$") + "}" if m.group(6) else ""
        number += r" {\scriptsize " + m.group("ci").strip().replace("–", "--") + "}" if m.group("ci") else ""
        return number + (r"\textsuperscript{\dag}" if m.group("mark") else "")
    return latex_escape(s)
