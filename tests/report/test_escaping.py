"""Free strings escaped for where they go (issue 32 items 8-10, issue 36 point 7).

* Markdown: a record's label in a table's notes never opens a tag; a p-value "<0.001" and a
  network error read right in the raw file and rendered (checked with both Python-Markdown, what
  MkDocs uses, and markdown-it, a CommonMark renderer);
* an external record's label with '<', '`' or a control character is refused, as profile text is;
* commands printed to copy (the workflow's last lines, missing.md, the data layer's fixes): a
  ``data_dir`` with a space, ';', '$( )', '<' and '|' is one argument of the command;
* a terminal: a folder name with escape sequences is printed with them escaped.
"""

from __future__ import annotations

import csv
import html
import os
import re
import shlex
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from report_fixtures import config, inputs_of, paper, runs  # noqa: E402, F401  (fixtures)

HOSTILE_DIR = "data dir;touch $(echo PWNED)|x<y"
SCRIPT = "Lbl<script>alert(1)</script>"
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


# ------------------------------------------------------------------------------------------ rendering
class _Text(HTMLParser):
    """The tags and the text of rendered HTML, and the text of every <code> element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []
        self.codes: list[str] = []
        self._code: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        if tag == "code":
            self._code = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "code" and self._code is not None:
            self.codes.append("".join(self._code))
            self._code = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._code is not None:
            self._code.append(data)


def rendered(md: str) -> list[_Text]:
    """``md`` rendered by Python-Markdown (MkDocs) and by markdown-it (CommonMark + tables), parsed."""
    import markdown
    from markdown_it import MarkdownIt

    out = []
    for page in (
        markdown.markdown(md, extensions=["tables", "fenced_code"]),
        MarkdownIt("commonmark").enable("table").render(md),
    ):
        parsed = _Text()
        parsed.feed(page)
        out.append(parsed)
    return out


# ------------------------------------------------------------------------------------------ item 8
def test_a_label_in_the_notes_opens_no_tag(runs: pd.DataFrame, paper: pd.DataFrame, config: dict) -> None:
    """An external method's label (its record's method_card) reaches natural_summary's note on the
    normal classes each method ran: escaped there as in the cells, and still recognisable."""
    from con2.builders.method_tables import natural_summary

    ext = runs[(runs.method == "simclr") & (runs.normal_class == "airplane")].copy()
    ext["method"], ext["method_label"] = "extm", SCRIPT
    md = natural_summary(inputs_of(pd.concat([runs, ext], ignore_index=True), paper, config)).markdown()
    assert "<script" not in md and "</script" not in md, md
    note = next(line for line in md.splitlines() if "ran different normal classes" in line)
    assert "Lbl&lt;script>alert(1)&lt;/script> airplane" in note
    for page in rendered(md):
        assert "script" not in page.tags
        assert SCRIPT in "".join(page.text)  # shown as the text it is


def test_notes_escape_tags_and_entities_and_keep_code_and_plain_text() -> None:
    from con2.report.format import Table

    rest = "`x <javascript:alert(1)>`_"
    notes = [SCRIPT, "R&D &lt; x", "p <0.001, a -> b, `a < b & c`", "**bold** <http://x> <a@b.c>", rest]
    md = Table("t", "T", ["m"], [["1.0"]], pd.DataFrame(), notes).markdown()
    assert "- Lbl&lt;script>alert(1)&lt;/script>" in md
    assert "- R&D &amp;lt; x" in md  # an entity is shown as typed; a bare '&' stays readable
    assert "- p <0.001, a -> b, `a < b & c`" in md  # nothing that opens a tag: as written; code verbatim
    assert "&lt;http://x> &lt;a@b.c>" in md
    assert not re.search(r"<[A-Za-z/!?]", md), md  # no raw tag in the file, not even in code
    for page in rendered(md):
        assert set(page.tags) <= {"h3", "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "code", "strong"}
        text = "".join(page.text)
        assert SCRIPT in text and "R&D &lt; x" in text and "p <0.001, a -> b" in text and rest in text
        assert page.codes == ["a < b & c"]


def test_a_p_value_below_the_threshold_reads_right_raw_and_rendered() -> None:
    """Issue 36 point 7: comparisons' "<0.001" was written "&lt;0.001" in the Markdown file."""
    from con2.report.format import Table

    md = Table("t", "T", ["p", "label"], [["<0.001", "x|y"]], pd.DataFrame()).markdown()
    assert "| <0.001 | x\\|y |" in md
    for page in rendered(md):
        assert "<0.001" in page.text and "x|y" in page.text


@pytest.mark.parametrize("label", [SCRIPT, "a`b", "two\nlines", "tab\there", "esc\x1b[2J"])
@pytest.mark.parametrize("option", ["--label", "--score-label"])
def test_an_external_label_that_could_open_a_tag_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str, option: str
) -> None:
    from con2.run.external import main as external_main

    scores = tmp_path / "scores.csv"
    pd.DataFrame({"label": [0, 1, 0, 1], "nnd": [0.1, 0.9, 0.2, 0.8]}).to_csv(scores, index=False)
    argv = ["--scores", str(scores), "--run-dir", str(tmp_path / "run"), "--dataset", "digits"]
    argv += ["--normal-class", "0", "--method", "extm", "--seed", "0", "--n-train", "10"]
    argv += [option, label if option == "--label" else f"nnd={label}"]
    assert external_main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"con2.run.external: error: {option}: "), err
    assert "Fix: " in err and "holds" in err
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------------ item 9
def _marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """The data check of BreastMNIST at 28 px in HOSTILE_DIR (empty, no download): skipped."""
    from con2.workflow.status import check_dataset

    monkeypatch.chdir(tmp_path)
    (tmp_path / HOSTILE_DIR).mkdir()
    marker = check_dataset("breastmnist", 28, HOSTILE_DIR, download=False)
    assert marker["status"] == "skipped"
    return marker


def _commands(text: str) -> list[str]:
    """The ``con2 data get`` commands quoted in backticks in ``text``."""
    return re.findall(r"`(con2 data get [^`]*)`", text)


GET = ["con2", "data", "get", "breastmnist"]


def test_the_workflow_s_last_lines_quote_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from con2.paths import data_marker
    from con2.workflow.status import closing_lines

    marker = _marker(tmp_path, monkeypatch)
    path = Path(data_marker("breastmnist", 28))
    path.parent.mkdir(parents=True)
    import json

    path.write_text(json.dumps(marker))
    lines = closing_lines([("breastmnist", 28)], {"data_dir": HOSTILE_DIR}, "none.csv")
    fix = next(line for line in lines if line.strip().startswith("fix: "))
    command = fix.strip().removeprefix("fix: ").split("   (then run")[0]
    assert shlex.split(command) == [*GET, "--data-dir", HOSTILE_DIR, "--size", "28"]
    reason = next(line for line in lines if line.startswith("  breastmnist (28 px): "))
    (argv,) = [shlex.split(c) for c in _commands(reason)]  # the data layer's fix names the folder absolute
    assert argv[:-1] == [*GET, "--size", "28", "--data-dir"] and Path(argv[-1]) == tmp_path / HOSTILE_DIR


def test_missing_md_shows_the_command_to_copy_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from con2.builders.missing import missing
    from con2.report.artefacts import ReportInputs

    marker = _marker(tmp_path, monkeypatch)
    marker["fix"] = f"con2 data get breastmnist --data-dir {HOSTILE_DIR} --size 28"  # as main's markers stored it
    table = missing(ReportInputs(config={"report": {}}, status={"breastmnist/28": marker}))
    md = table.markdown()
    expected = [*GET, "--data-dir", HOSTILE_DIR, "--size", "28"]
    for page in rendered(md):
        commands = [line for code in page.codes for line in code.splitlines() if line.startswith("con2 data get")]
        assert [shlex.split(c) for c in commands] == [expected], (md, page.codes)
        assert "&" not in "".join(page.codes)
    assert "(1)" in table.rows[0][2]
    page_html = table.html()
    assert html.escape(shlex.join(expected), quote=False) in page_html


@pytest.mark.parametrize("source", ["medmnist", "cifar", "kaggle", "kaggle_credentials", "imagenet30"])
def test_the_data_layer_s_fixes_quote_the_data_dir(source: str) -> None:
    data_dir = Path(HOSTILE_DIR)
    if source == "medmnist":
        from con2.data.medmnist_source import get_fix

        text, name = get_fix("breastmnist", 28, data_dir), "breastmnist"
    elif source == "cifar":
        from con2.data.cifar_source import get_fix as cifar_fix

        text, name = cifar_fix("cifar10", data_dir), "cifar10"
    elif source.startswith("kaggle"):
        from con2.data import kaggle_source as K

        name = sorted(K.SPECS)[0]
        spec = K.SPECS[name]
        if source == "kaggle_credentials":
            text = K.credentials_help(name, spec, data_dir)
        else:
            text = K.how_to_get(name, data_dir) + K._manual_fix(name, spec, data_dir)
    else:
        from con2.data.imagenet30_source import instructions

        text, name = instructions(data_dir), "imagenet30"
    commands = _commands(text)
    assert commands
    for command in commands:
        argv = shlex.split(command)
        assert argv[:4] == ["con2", "data", "get", name] and argv[argv.index("--data-dir") + 1] == HOSTILE_DIR
    for command in re.findall(r"`((?:kaggle|python|pip) [^`]*)`", text):
        words = shlex.split(command)
        assert not any(w in (";", "|") or w.startswith("$(") for w in words), command
        assert any(HOSTILE_DIR in w for w in words), command


def test_a_network_error_reads_without_a_tag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 36 point 7: missing.md showed "(&lt;urlopen error ... >)"."""
    import urllib.error

    from con2.builders.missing import missing
    from con2.data import medmnist_source as M
    from con2.data.base import DataError
    from con2.report.artefacts import ReportInputs

    def offline(url: str, dest: Path, progress: bool = True) -> None:
        raise urllib.error.URLError(OSError(-3, "Temporary failure in name resolution"))

    monkeypatch.setattr(M, "_fetch_url", offline)
    with pytest.raises(DataError) as info:
        M.download_npz("breastmnist", 28, tmp_path)
    assert "<urlopen" not in str(info.value) and "Temporary failure in name resolution" in str(info.value)
    marker = {"dataset": "breastmnist", "size": 28, "status": "skipped", "reason": str(info.value)}
    md = missing(ReportInputs(config={"report": {}}, status={"breastmnist/28": marker})).markdown()
    assert "&lt;" not in md and "&amp;" not in md


# ------------------------------------------------------------------------------------------ item 10
def test_a_folder_name_with_terminal_escapes_is_printed_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from con2.workflow.status import closing_lines

    monkeypatch.chdir(tmp_path)
    folder = "x\x1b]0;TITLE\x07\x1b[2J"
    record = Path("results/runs/digits/0") / folder / "record.json"
    record.parent.mkdir(parents=True)
    record.write_text("{}")
    skipped = tmp_path / "skipped.csv"
    with open(skipped, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["record", "mtime_ns", "problem", "fix"])
        w.writerow([str(record), os.stat(record).st_mtime_ns, f"in {folder}: not a run", f"rm -r {folder}"])
    runs_csv = tmp_path / "runs.csv"
    pd.DataFrame({"record": [f"results/runs/{folder}/r.json"], "in_grid": [False]}).to_csv(runs_csv, index=False)
    lines = closing_lines([], {"data_dir": "data"}, runs_csv, skipped_files=[skipped])
    text = "\n".join(lines)
    assert not CONTROL.search(text), repr(text)
    assert "x\\x1b]0;TITLE\\x07\\x1b[2J" in text  # the name, recognisable


def test_terminal_safe_escapes_controls_only() -> None:
    from con2.text import terminal_safe

    # the line break too (issue 47, item 9): a name with one forged a line of its own in the last lines
    assert terminal_safe("a\tb\nc\x1b[2J\x9b\u202e") == "a\\x09b\\x0ac\\x1b[2J\\x9b\\u202e"
    assert terminal_safe("plain ± é 中") == "plain ± é 中"
    assert np.all(
        [not CONTROL.search(terminal_safe(chr(i))) and "\n" not in terminal_safe(chr(i)) for i in range(0x2000)]
    )


def test_the_run_directory_fixes_quote_the_path(tmp_path: Path) -> None:
    """A run directory's refusals (a lock that is a link or no file) print the ``rm`` to copy, quoted."""
    from con2.run.lock import _not_a_lock, link_refusal

    folder = tmp_path / HOSTILE_DIR
    folder.mkdir()
    link = folder / ".lock"
    link.symlink_to(tmp_path / "victim")
    for message, argv in (
        (str(link_refusal(link)), ["rm", str(link)]),
        (str(_not_a_lock(folder / ".lock", "a folder")), ["rm", "-r", str(folder / ".lock")]),
    ):
        (command,) = re.findall(r"`(rm [^`]*)`", message)
        assert shlex.split(command) == argv, message
