"""Free text made safe for where it goes: one function per destination.

Strings the project did not write (a ``data_dir``, a folder or file name, a record's label, an
external program's score-column name, a rule file's comment, an exception's message) reach these
places, each with its own danger, and pass the one function of that place:

* a command printed for a person to copy (:func:`shell_command`): every word quoted with
  :func:`shlex.quote`, so a ``data_dir`` with a space, ``;`` or ``$( )`` stays one argument;
* a terminal or a log (:func:`terminal_safe`): control characters (``ESC``, ``BEL``, C1, bidi
  overrides, and the line break itself) shown as ``\\x1b``-style escapes, so a folder name can
  neither retitle or clear the terminal nor forge a line of its own;
* Markdown (:func:`markdown_text`, :func:`code_span`, :func:`code_block`): only what could open an
  HTML tag, an autolink, an entity or a link (``[l](javascript:...)``) is escaped (``<script``
  becomes ``&lt;script``, ``](`` becomes ``\\](``, while ``p <0.001`` and ``a -> b`` stay as written,
  so the raw file reads right as well as the rendered one); code spans are kept verbatim;
* LaTeX (:func:`latex_escape`): every special character escaped, control characters shown;
* a CSV cell (:func:`csv_cell`, undone by :func:`csv_value` where con2 reads its own CSV back): a cell
  a spreadsheet would run as a formula (``=HYPERLINK(...)``, ``+``, ``-``, ``@``) gets a leading
  ``'``, control characters are shown;
* HTML (:func:`html_text`): ``&``, ``<``, ``>`` and quotes as entities, control characters shown;
* a matplotlib figure (:func:`mpl_text`): ``$`` escaped (``$\\foo$`` was mathtext, and a
  traceback), control characters shown.

:data:`UNSAFE_TEXT` is what a profile's strings and an external record's labels may not hold.
Standard library only (the lowest layer).
"""

from __future__ import annotations

import html
import io
import re
import shlex
from typing import TextIO, cast

__all__ = [
    "UNSAFE_TEXT",
    "code_block",
    "code_span",
    "csv_cell",
    "csv_value",
    "exception_text",
    "html_text",
    "latex_escape",
    "markdown_text",
    "mpl_text",
    "shell_command",
    "terminal_safe",
    "unsafe_text",
]

# Characters no string of a profile (nor an external record's label) may hold: every value reaches a
# rule's params (Snakemake's HTML report embeds them as JSON in a <script> element), a table's notes
# or the report's text (reST, where `...`_ is a link): '<' (an HTML tag, '</script>'), '`' (reST
# links, Markdown code) and control characters (a line break in a name, a title, a log line).
# ('>' alone opens nothing: "0->1" stays.)
UNSAFE_TEXT = re.compile(r"[<`\x00-\x1f\x7f]")


def unsafe_text(value: str) -> str | None:
    """The first :data:`UNSAFE_TEXT` character of ``value``, or None."""
    found = UNSAFE_TEXT.search(value)
    return found.group() if found else None


def shell_command(*argv: object) -> str:
    """``argv`` as one shell command line to copy, each word quoted where it needs it
    (``con2 data get breastmnist --data-dir 'data dir;x'``)."""
    return shlex.join(str(a) for a in argv)


# C0 controls (the line break among them), DEL, C1 controls, and the Unicode marks that reorder or hide text
# or break a line (U+2028, U+2029).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def _escape_control(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """One line of ``text`` for a terminal or a log: every control character, the line break included,
    written as an escape (``\\x1b``, ``\\x0a``, ``\\u202e``), so a name cannot move the cursor, set the title,
    clear the screen or start a line of its own (a forged ``SKIPPED`` line), and still reads as the name it
    is. Text of several lines is printed line by line, each through this function."""
    return _CONTROL.sub(_escape_control, str(text))


class EscapingWriter(io.TextIOBase):
    """A text stream writing through :func:`terminal_safe` line by line, its line breaks kept: what a run, a
    script or a library prints into a log or onto a terminal reads as the text it is (a run folder or a data
    folder named with ESC or U+202E cannot move the cursor or forge a line). Wraps ``stream``."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.stream.write("\n".join(terminal_safe(part) for part in str(text).split("\n")))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:  # the wrapped stream's (a child process's output, faulthandler, a tty check)
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()


def escaping(stream: TextIO) -> TextIO:
    """``stream`` behind an :class:`EscapingWriter`, typed as the text stream it stands in for."""
    return cast(TextIO, EscapingWriter(stream))


# A '<' that could open an HTML tag, a closing tag, a comment, a declaration or an autolink (a scheme
# or an e-mail address): a letter, '/', '!' or '?' after it, or anything up to a '@' before the next
# '>' or space. "<0.001", "< 5" and "a <- b" open nothing.
_OPENS = re.compile(r"<(?=[A-Za-z/!?]|[^\s<>]*@)")
# An '&' that starts a character reference ("&lt;", "&#60;", "&#x3c;"); "R&D" and "a & b" do not.
_ENTITY = re.compile(r"&(?=#[0-9]{1,7};|#[xX][0-9A-Fa-f]{1,6};|[A-Za-z][A-Za-z0-9]{0,31};)")
# A code span as Markdown reads it: a run of backticks (not escaped) closed by a run of the same length.
_CODE_SPAN = re.compile(r"(?<![`\\])(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)


def markdown_text(text: str, cell: bool = False) -> str:
    """``text`` (which may hold ``**bold**`` and code spans) for a Markdown file: a '<' that could open
    a tag and an '&' that starts an entity written as entities, everything else as it is; code spans
    verbatim (Markdown shows their text as is), except one holding what would be a tag in the raw
    file (a label's ```x <javascript:...>```): shown as text, its backticks escaped. ``cell``: a
    table cell, whose '|' (also in a code span) is escaped as ``\\|``."""
    out, at = [], 0
    s = str(text)
    for m in _CODE_SPAN.finditer(s):
        span = m.group()
        if _OPENS.search(m.group(2)):  # no raw tag in the file, not even inside code
            span = _markdown_plain(span).replace("`", "\\`")
        out += [_markdown_plain(s[at : m.start()]), span]
        at = m.end()
    out.append(_markdown_plain(s[at:]))
    joined = "".join(out)
    return joined.replace("|", "\\|") if cell else joined


# A ']' that closes a link's text before its target or reference ("[l](javascript:...)", "![i](...)",
# "[l][ref]"): escaped, the brackets then read as themselves. "[1×3] (50.2–65.6)" opens nothing.
_LINK = re.compile(r"\](?=[(\[])")


def _markdown_plain(text: str) -> str:
    return _LINK.sub(r"\\]", _OPENS.sub("&lt;", _ENTITY.sub("&amp;", _CONTROL.sub(_escape_control, text))))


def code_span(text: str) -> str:
    """``text`` as one Markdown code span that shows exactly ``text`` (delimited by more backticks
    than any run inside it)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code_block(lines: list[str], language: str = "sh") -> list[str]:
    """``lines`` as a fenced Markdown code block that shows them exactly (a fence longer than any
    run of backticks inside)."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{language}", *lines, fence]


def exception_text(exc: BaseException) -> str:
    """An exception's message for a person: a network error's reason without urllib's
    ``<urlopen error ...>`` wrapper (whose angle brackets read as an HTML tag in Markdown)."""
    text = str(exc)
    reason = getattr(exc, "reason", None)
    if text.startswith("<urlopen error ") and reason is not None:
        return f"urlopen error: {reason}"
    return text


_LATEX_SPECIAL = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
}


def latex_escape(text: str) -> str:
    """``text`` for LaTeX: control characters shown (:func:`terminal_safe`), then every special character
    escaped; ``±`` becomes ``$\\pm$`` and the en dash ``--``."""
    s = "".join(_LATEX_SPECIAL.get(ch, ch) for ch in terminal_safe(text))
    return s.replace("±", r"$\pm$").replace("–", "--").replace("−", "-")


# What a spreadsheet runs as a formula at the start of a cell (OWASP's list), and the quote that marks one
# neutralised; a plain number ("-0.5", "+3") is a number, left as it is.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_cell(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet shows and never runs, and that reads as one line: a cell starting
    with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (``=HYPERLINK(...)``) gets a leading ``'`` (as
    does one already starting with ``'``), plain numbers excepted; a backslash is doubled and control
    characters are written as escapes (``\\x1b``; ``cat`` of the file reaches a terminal). Exactly undone by
    :func:`csv_value`, so con2 reads back the names it wrote (a record's path, a label)."""
    s = _CONTROL.sub(_escape_control, str(text).replace("\\", "\\\\"))
    return "'" + s if s.startswith(_FORMULA_START) and not _NUMBER.fullmatch(s) else s


_CSV_ESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2}|u[0-9a-f]{4})")


def csv_value(cell: str) -> str:
    """The text a :func:`csv_cell` was made from: its formula quote removed, its escapes decoded."""
    s = str(cell)
    s = s[1:] if s.startswith("'") and s[1:].startswith(_FORMULA_START) else s
    return _CSV_ESCAPE.sub(lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1)[1:], 16)), s)


def html_text(text: str) -> str:
    """``text`` for HTML (element text, or the value of an attribute in double quotes, as con2 writes them):
    ``&``, ``<``, ``>`` and ``"`` as entities (an apostrophe stays, as prose reads), control characters shown
    (:func:`terminal_safe`)."""
    return html.escape(terminal_safe(text), quote=False).replace('"', "&quot;")


def mpl_text(text: str) -> str:
    """``text`` for a matplotlib label, title or tick: ``$`` escaped (``$\\foo$`` would be parsed as mathtext,
    and an unknown command is a traceback), control characters shown (:func:`terminal_safe`)."""
    return terminal_safe(text).replace("$", r"\$")
