"""Free text made safe for where it goes: a shell, a terminal, Markdown.

Strings the project did not write (a ``data_dir``, a folder name, a record's label, an exception's
message) reach three places, each with its own danger:

* a command printed for a person to copy (:func:`shell_command`): every word quoted with
  :func:`shlex.quote`, so a ``data_dir`` with a space, ``;`` or ``$( )`` stays one argument;
* a terminal (:func:`terminal_safe`): control characters (``ESC``, ``BEL``, C1, bidi overrides)
  shown as ``\\x1b``-style escapes, so a folder name cannot retitle or clear the terminal;
* Markdown (:func:`markdown_text`, :func:`code_span`, :func:`code_block`): only what could open an
  HTML tag, an autolink or an entity is escaped (``<script`` becomes ``&lt;script``, while
  ``p <0.001`` and ``a -> b`` stay as written, so the raw file reads right as well as the rendered
  one); code spans are kept verbatim, as their text is never HTML.

:data:`UNSAFE_TEXT` is what a profile's strings and an external record's labels may not hold.
Standard library only (the lowest layer).
"""

from __future__ import annotations

import re
import shlex

__all__ = [
    "UNSAFE_TEXT",
    "code_block",
    "code_span",
    "exception_text",
    "markdown_text",
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


# C0 controls but the line break, DEL, C1 controls, and the Unicode marks that reorder or hide text.
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def terminal_safe(text: str) -> str:
    """``text`` with every control character but the line break written as an escape (``\\x1b``,
    ``\\x07``, ``\\u202e``), so a name printed to a terminal cannot move the cursor, set the title or
    clear the screen, and still reads as the name it is."""

    def escape(m: re.Match[str]) -> str:
        code = ord(m.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _CONTROL.sub(escape, str(text))


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


def _markdown_plain(text: str) -> str:
    return _OPENS.sub("&lt;", _ENTITY.sub("&amp;", text))


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
