"""One hostile corpus through every destination of untrusted text (issue 47, items 8-10 and its acceptance).

Labels, score-column names, folder and file names and rule comments reach six places, and each place
has one escaping function in :mod:`con2.text`: a terminal or log (``terminal_safe``), Markdown
(``markdown_text``), LaTeX (``latex_escape``), a CSV cell (``csv_cell``, read back by ``csv_value``),
HTML (``html_text``) and a matplotlib figure (``mpl_text``). Each function is checked against the
corpus with what that place makes of the result (a Markdown and an HTML parser, the csv module,
matplotlib drawing it); then records carrying the corpus as labels and score columns go through the
aggregation's CSV, the tables' four files, the per-class figure, ``con2 metrics``, the aggregation's log
lines and the workflow's last lines.
"""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_escaping import rendered

from con2.text import csv_cell, csv_value, html_text, latex_escape, markdown_text, mpl_text, terminal_safe

CORPUS = [
    "<script>alert(1)</script>",
    "[l](javascript:alert(1))",
    "![i](http://example.invalid/x.png)",
    '=HYPERLINK("http://example.invalid","click")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A2)",
    "$\\foo$",
    "50% & #_{x}^~\\",
    "a|b",
    "`code`",
    "**bold**",
    "esc\x1b[2J\x1b]0;TITLE\x07",
    "two\nlines\rthree",
    "tab\there",
    "bidi\u202eevil",
    "&lt;entity",
    "'quoted' \"double\"",
    "\\x1b written out",
]
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
ALLOWED_TAGS = {"h3", "p", "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "code", "strong"}


# ----------------------------------------------------------------------------------- one function each
@pytest.mark.parametrize("text", CORPUS)
def test_terminal(text: str) -> None:
    shown = terminal_safe(text)
    assert not CONTROL.search(shown) and "\n" not in shown
    assert shown == text or "\\x" in shown or "\\u" in shown


@pytest.mark.parametrize("text", CORPUS)
def test_markdown(text: str) -> None:
    in_cell, in_note = markdown_text(text, cell=True), markdown_text(text)
    assert not CONTROL.search(in_cell + in_note)
    md = f"| m |\n|---|\n| {in_cell} |\n\n- {in_note}\n"
    assert not re.search(r"<[A-Za-z/!?]", md)
    for page in rendered(md):
        assert set(page.tags) <= ALLOWED_TAGS, (text, page.tags)  # no a, img, script: no link, no tag
        assert len([t for t in page.tags if t == "tr"]) == 2 and page.tags.count("li") == 1  # no forged row or item


_LATEX_ESCAPES = re.compile(r"\\(?:[&%$#_{}]|textasciitilde\{\}|textasciicircum\{\}|textbackslash\{\})|\$\\pm\$")


@pytest.mark.parametrize("text", CORPUS)
def test_latex(text: str) -> None:
    tex = latex_escape(text)
    bare = _LATEX_ESCAPES.sub("", tex)
    assert not re.search(r"[&%$#_{}~^\\]", bare), (text, tex)  # every special character escaped
    assert not CONTROL.search(tex) and "\n" not in tex


@pytest.mark.parametrize("text", CORPUS)
def test_csv(text: str) -> None:
    buffer = io.StringIO()
    csv.writer(buffer).writerow([csv_cell(text), "x"])
    (cell, _), *_ = csv.reader(io.StringIO(buffer.getvalue()))
    assert buffer.getvalue().count("\n") == 1 and not CONTROL.search(cell)
    assert not cell.startswith(("=", "+", "-", "@")) or re.fullmatch(r"[+-]?\d+(\.\d*)?", cell)
    assert csv_value(cell) == text  # con2 reads back what it wrote


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.mark.parametrize("text", CORPUS)
def test_html(text: str) -> None:
    parsed = _Tags()
    parsed.feed(f'<p title="{html_text(text)}">{html_text(text)}</p>')
    assert parsed.tags == ["p"] and "".join(parsed.text) == terminal_safe(text)


def test_matplotlib_draws_every_member_as_text(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    shown = [mpl_text(t) for t in CORPUS]
    ax.bar(range(len(shown)), np.ones(len(shown)), label=shown[7])
    ax.set_xticks(range(len(shown)))
    ax.set_xticklabels(shown)
    ax.set_title(shown[7])
    ax.legend()
    fig.savefig(tmp_path / "f.png")  # "$\foo$" unescaped: ValueError from mathtext (an unknown symbol)
    plt.close(fig)
    assert all("\n" not in s and not CONTROL.search(s) for s in shown)


# ----------------------------------------------------------------------------------- the routes
LABEL = "[l](javascript:alert(1)) =HYPERLINK(1) $\\foo$ esc\x1b[2J"
COLUMNS = ["nnd", "x$\\foo$", "=cmd", "[c](javascript:x)", "e\x1b]0;T\x07", "two\nlines"]


@pytest.fixture
def hostile_runs(tmp_path: Path) -> tuple[pd.DataFrame, list[Path]]:
    """Three seeds of an external method whose record (written by hand: the external program's own checks
    would refuse these names) carries the corpus as its label and score columns; the frame as the tables read
    it, after runs.csv was written and read back."""
    from con2.aggregate.collect import collect_valid_runs
    from con2.aggregate.csv_text import csv_frame
    from con2.aggregate.runs_csv import load_runs
    from con2.run.records import build_record, write_record

    rng = np.random.default_rng(0)
    labels = np.array([0] * 20 + [1] * 20)
    paths = []
    for seed in range(3):
        scores = {c: rng.normal(size=40) + labels * (i + 1) * 0.3 for i, c in enumerate(COLUMNS)}
        record = build_record(
            dataset="breastmnist", normal_class="1", method="extm", variant="default", seed=seed, labels=labels,
            scores=scores, n_train=50, config={}, method_card={"label": LABEL, "score_labels": {c: c for c in COLUMNS}},
        )  # fmt: skip
        path = tmp_path / "results" / "runs" / "breastmnist" / "1" / "extm" / "default" / f"seed{seed}" / "record.json"
        write_record(record, path)
        pd.DataFrame({"index": np.arange(40), "label": labels, **scores}).to_csv(
            path.parent / "scores.csv", index=False
        )
        paths.append(path)
    frame, skipped = collect_valid_runs(paths)
    assert not skipped
    csv_frame(frame).to_csv(tmp_path / "runs.csv", index=False)
    return load_runs(tmp_path / "runs.csv"), paths


def test_runs_csv_reads_back_the_names_it_wrote(hostile_runs, tmp_path: Path) -> None:
    runs, _ = hostile_runs
    assert set(runs["score"]) == set(COLUMNS) and set(runs["method_label"]) == {LABEL}
    for row in csv.reader(open(tmp_path / "runs.csv", newline="")):
        assert not any(CONTROL.search(c) or (c[:1] in "=+@" and c) for c in row), row


def test_the_tables_four_files_and_the_figure(hostile_runs, tmp_path: Path) -> None:
    from con2.aggregate.csv_text import from_csv_frame
    from con2.report.artefacts import ReportInputs
    from con2.report.figures import per_class_figure
    from con2.report.tables import build_table

    runs, _ = hostile_runs
    config = {"report": {"per_class": ["breastmnist"]}}
    table = build_table("per_class", ReportInputs(config=config, runs=runs, dataset="breastmnist"))
    assert any("javascript" in c for c in table.columns), "the label never reached the table: nothing was tested"
    out = {ext: tmp_path / f"t.{ext}" for ext in ("csv", "md", "tex", "html")}
    table.write(out["csv"], out["md"], out["tex"], out["html"])
    md, tex, page = (out[e].read_text() for e in ("md", "tex", "html"))
    assert not re.search(r"<[A-Za-z/!?]|(?<!\\)\]\(", md), md  # no tag, no link
    assert not CONTROL.search((md + tex + page).replace("\n", ""))
    for parsed in rendered(md):
        assert set(parsed.tags) <= ALLOWED_TAGS
    html_tags = _Tags()
    html_tags.feed(page)
    assert set(html_tags.tags) <= {*ALLOWED_TAGS, "html", "head", "meta", "title", "style", "body", "small", "br"}
    assert "\\$\\textbackslash{}foo\\$" in tex and "$\\foo$" not in tex
    for row in csv.reader(open(out["csv"], newline="")):
        assert not any(c[:1] in "=+@" and c for c in row), row
    frame = from_csv_frame(pd.read_csv(out["csv"], dtype={"normal_class": str}))
    assert LABEL in " ".join(frame["label"])  # the figure reads the labels back as they were
    per_class_figure(
        ReportInputs(config=config, table=frame, dataset="breastmnist"), tmp_path / "f.png", tmp_path / "f.pdf"
    )
    assert (tmp_path / "f.png").stat().st_size > 0


def test_con2_metrics_prints_one_line_per_thing(hostile_runs, tmp_path: Path, capsys) -> None:
    from con2.cli.main import main

    _, paths = hostile_runs
    folder = paths[0].parent.with_name("seed0\nFAKE LINE\x1b[2J")
    paths[0].parent.rename(folder)
    main(["metrics", str(folder)])
    out = capsys.readouterr().out
    assert not CONTROL.search(out.replace("\n", "")), out
    assert not any(line.startswith("FAKE LINE") for line in out.splitlines())
    assert len(out.splitlines()) == 1 + len(COLUMNS)  # the run's line, then one per score column


def test_the_aggregation_log_and_the_last_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record in a folder named with a line break and escapes: skipped (no run key), named on one line in
    the log, in skipped.csv (as the aggregation writes it) and in the workflow's last lines."""
    from con2.aggregate.collect import collect_valid_runs
    from con2.aggregate.csv_text import csv_frame
    from con2.grid.status import closing_lines

    monkeypatch.chdir(tmp_path)
    record = Path("results/runs/breastmnist/1/extm/default") / "seed0\nSKIPPED forged\x1b]0;T\x07" / "record.json"
    record.parent.mkdir(parents=True)
    record.write_text("{}")
    _, skipped = collect_valid_runs([str(record)], runs_root="results/runs")
    log = [terminal_safe(s.line()) for s in skipped]  # what aggregate.py prints to results/logs/aggregate.log
    assert len(log) == 1 and not CONTROL.search(log[0]) and "\n" not in log[0]
    import os

    frame = pd.DataFrame(
        [(s.record, os.stat(s.record).st_mtime_ns, s.problem, s.fix) for s in skipped],
        columns=["record", "mtime_ns", "problem", "fix"],
    )
    csv_frame(frame).to_csv(tmp_path / "skipped.csv", index=False)
    text = (tmp_path / "skipped.csv").read_text()
    assert not CONTROL.search(text.replace("\n", "")) and text.count("\n") == 2
    pd.DataFrame({"record": [], "in_grid": []}).to_csv(tmp_path / "runs.csv", index=False)
    lines = closing_lines([], {"data_dir": "data"}, tmp_path / "runs.csv", skipped_files=[tmp_path / "skipped.csv"])
    shown = "\n".join(lines)
    assert "seed0\\x0aSKIPPED forged\\x1b]0;T\\x07" in shown, shown  # named, as one line
    assert not any(line.lstrip().startswith("SKIPPED forged") for line in lines)
    assert not CONTROL.search(shown.replace("\n", ""))


@pytest.mark.parametrize("column", [c for c in COLUMNS if c != "nnd"] + ["<script>", "a b"])
def test_an_external_program_s_odd_score_column_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str
) -> None:
    """Item 8: an external program's CSV header is where a score's name comes from; one that is no score name
    is refused in one line (escaped), and nothing is written."""
    from con2.run.external import main as external_main

    scores = tmp_path / "scores.csv"
    pd.DataFrame({"label": [0, 1] * 5, column: np.linspace(0, 1, 10)}).to_csv(scores, index=False)
    argv = ["--scores", str(scores), "--run-dir", str(tmp_path / "run"), "--dataset", "digits"]
    argv += ["--normal-class", "0", "--method", "extm", "--seed", "0", "--n-train", "10"]
    assert external_main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is no score name" in err and "Fix: rename that column" in err, err
    assert not CONTROL.search(err.replace("\n", "")) and not (tmp_path / "run").exists()
