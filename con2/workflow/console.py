"""What the Snakemake workflow prints: short rerun reasons (issue 27, point 13).

Snakemake compares a rule's params with those of the last execution through ``repr()`` and, when
they differ, prints every differing value in full ("Params have changed since last execution: Union
of exclusive params ... before: {...} now: {...}"); a profile-sized dict made lines of thousands of
characters. :func:`hashed` wraps such a value so that its ``repr()`` is a label and a short hash of
the full ``repr()``: the param changes exactly when the value's ``repr()`` does (the same reruns as
before), its line names the param in a few words, and the job still gets the whole value (a
real ``dict``/``list``; ``str()`` and pickling, what ``script:`` jobs use, are unchanged).

Snakemake also lists every file of a reason ("Input files updated by another job: ...", 70 files
for the target `all`). :class:`ShortReasons`, a logging filter installed by
``workflow/rules/common.smk``, keeps the first few files of each part of a job's ``Reason:`` and
counts the rest, and a dry run's closing "Reasons:" block (every rule per reason: one per table
and figure; also its "Rules with provenance triggered jobs") names the first few rules of each
reason. It touches only the ``reason`` field of job-info records (Snakemake's logger-plugin
interface) and these blocks' text, never which jobs run.

:class:`GridProgress`, installed by the Snakefile's ``onstart``, follows each of Snakemake's
"N of M steps (x%) done" records with the grid's ETA line (:mod:`con2.workflow.eta`) when a training
run has finished since the last one it printed, and notes when each job started (its job-info
record), so the ETA knows a job's whole time, the process's start-up and imports included.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Callable

from con2.text import terminal_safe

__all__ = [
    "GridProgress",
    "HashedDict",
    "HashedList",
    "ShortReasons",
    "hashed",
    "install_grid_progress",
    "install_short_reasons",
]

REASON_FILES = 3  # files of one reason part shown; the others are counted
REASON_PART_CHARS = 300  # a part without a file list (a param's repr) is cut here
REASON_RULES = 6  # rules of one reason shown in a dry run's closing "Reasons:" block
PROVENANCE = "Rules with provenance triggered jobs: "


def digest(text: str) -> str:
    """A short, stable hash of ``text`` (12 hex digits of its SHA-256)."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class HashedDict(dict):
    """A ``dict`` param that Snakemake compares and prints as ``<label hash>``."""

    label = "value"

    def __repr__(self) -> str:
        return f"<{self.label} {digest(dict.__repr__(self))}>"

    __str__ = dict.__repr__  # formatted into a command: the full value, as a plain dict


class HashedList(list):
    """A ``list`` param that Snakemake compares and prints as ``<label hash>``."""

    label = "value"

    def __repr__(self) -> str:
        return f"<{self.label} {digest(list.__repr__(self))}>"

    __str__ = list.__repr__


def hashed(value: dict | list, label: str) -> HashedDict | HashedList:
    """``value`` (a dict or a list) as a param compared and printed by a short hash of its ``repr()``."""
    out = HashedDict(value) if isinstance(value, dict) else HashedList(value)
    out.label = label
    return out


_FILE_LIST = re.compile(r"^(?P<head>[^:]+: )(?P<files>.*)$", re.S)


def short_reason(reason: str, files: int = REASON_FILES, chars: int = REASON_PART_CHARS) -> str:
    """``reason`` (Snakemake's "A: f1, f2, ...; B: ...") with each part's list cut to ``files`` items
    ("(+N more)") and any part cut to ``chars`` characters."""
    parts = []
    for part in reason.split("; "):
        m = _FILE_LIST.match(part)
        if m and ", " in m["files"] and not m["head"].startswith("Params"):
            items = m["files"].split(", ")
            if len(items) > files:
                part = f"{m['head']}{', '.join(items[:files])} (+{len(items) - files} more)"
        if len(part) > chars:
            part = part[: chars - 3] + "..."
        parts.append(part)
    return "; ".join(parts)


def short_reasons_block(msg: str, rules: int = REASON_RULES) -> str:
    """A dry run's "Reasons:" block with each line of rule names cut to ``rules`` names."""
    lines = []
    for line in msg.split("\n"):
        names = line.strip().split(", ")
        if line.startswith("        ") and len(names) > rules:
            line = f"        {', '.join(names[:rules])} (+{len(names) - rules} more)"
        lines.append(line)
    return "\n".join(lines)


class ShortReasons(logging.Filter):
    """Shortens the ``reason`` of Snakemake's job-info log records (see :func:`short_reason`) and a dry
    run's "Reasons:" block (:func:`short_reasons_block`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        reason = getattr(record, "reason", None)
        if isinstance(reason, str) and len(reason) > REASON_PART_CHARS // 2:
            record.reason = short_reason(reason)
        if isinstance(record.msg, str) and not record.args:
            if record.msg.startswith("Reasons:\n"):
                record.msg = short_reasons_block(record.msg)
            elif record.msg.startswith(PROVENANCE):  # a dry run's "Rules with provenance triggered jobs: a b c ..."
                names = record.msg[len(PROVENANCE) :].split()
                if len(names) > REASON_RULES:
                    record.msg = f"{PROVENANCE}{' '.join(names[:REASON_RULES])} (+{len(names) - REASON_RULES} more)\n"
        return True


def install_short_reasons(logger: logging.Logger) -> None:
    """Add :class:`ShortReasons` to Snakemake's logger once (a Snakefile may be read more than once)."""
    if not any(isinstance(f, ShortReasons) for f in logger.filters):
        logger.addFilter(ShortReasons())


def event_name(record: logging.LogRecord) -> str:
    """The Snakemake log event of ``record`` ("progress", "job_info", ...), lower case; "" for none."""
    event = getattr(record, "event", None)
    return "" if event is None else str(getattr(event, "value", event)).lower()


class GridProgress(logging.Filter):
    """After each progress record (Snakemake's ``event`` "progress"), logs ``line()`` on the same
    logger when it differs from the last line logged (a step that finished no training run adds
    nothing). ``line`` returns ``None`` for nothing to say; an error in it is never Snakemake's.
    ``started``: filled with {output file: time.time() when its job started} from job-info records."""

    def __init__(
        self, logger: logging.Logger, line: Callable[[], str | None], started: dict[str, float] | None = None
    ) -> None:
        super().__init__()
        self.logger, self.line = logger, line
        self.last: str | None = None
        self.started: dict[str, float] = {} if started is None else started

    def filter(self, record: logging.LogRecord) -> bool:
        event = event_name(record)
        if event == "job_info":
            now = time.time()
            for name in getattr(record, "output", None) or ():
                self.started[str(name).split(" (")[0]] = now  # "path (temp)": Snakemake's annotations cut
        if event == "progress":
            try:
                text = self.line()
            except Exception as exc:  # an ETA must never stop a workflow
                text = f"con2 grid: no ETA ({type(exc).__name__}: {exc})"
            if text and text != self.last:
                self.last = text
                self.logger.info(terminal_safe(text))  # a device or method name from a file: shown escaped
        return True


def install_grid_progress(
    logger: logging.Logger, line: Callable[[], str | None], started: dict[str, float] | None = None
) -> GridProgress:
    """Add a :class:`GridProgress` printing ``line()`` to ``logger`` (replacing an earlier one), noting job
    starts in ``started``."""
    for f in [f for f in logger.filters if isinstance(f, GridProgress)]:
        logger.removeFilter(f)
    progress = GridProgress(logger, line, started)
    logger.addFilter(progress)
    return progress
