"""Fault hooks: a test makes a Ctrl-C or a kill arrive at a named point of the code, not at a time.

A few places call :func:`fault_point` with a point's name and what identifies the moment (an epoch,
a table). When the environment variable ``CON2_FAULT`` names that point, the hook sends the signal
it asks for, the way the real fault arrives: by default to the process's whole process group
(Ctrl-C reaches a shell's foreground group; a kill of a Snakemake run takes Snakemake and its
jobs), so a test needs no sleeps or polling to interrupt a run at the right moment. With the
variable unset or empty a hook costs one dictionary lookup.

Grammar of ``CON2_FAULT`` (one fault; fields separated by ``:``)::

    POINT[:KEY=VALUE]...

``POINT``
    one of :data:`POINTS`: ``after_checkpoint`` (the training loop, right after a checkpoint is
    written; context ``epoch``, the 1-based epoch it holds) or ``table_build`` (a table job of the
    workflow, its table built, before any of its outputs is written; context ``table``, the table's
    name) or ``table_csv_written`` (a table half-written: its CSV on disk, its Markdown, LaTeX and
    HTML not yet; context ``table``).
``signal=NAME``
    the signal: a name of the :mod:`signal` module with or without ``SIG`` (``SIGINT``, ``INT``,
    ``SIGKILL``, ``SIGTERM``...); default ``SIGINT``.
``to=group|process``
    ``group`` (default): the caller's process group (``os.killpg``); ``process``: the caller only.
any context key of ``POINT``
    the fault fires only where that context value, as a string, equals ``VALUE``
    (``after_checkpoint:epoch=2`` fires at the checkpoint of epoch 2, not the one of epoch 1).

Examples: ``after_checkpoint:epoch=1:signal=SIGINT``, ``table_build:signal=SIGKILL``. A value that
does not follow the grammar raises :class:`FaultSpecError` (a ``ValueError`` naming the variable and
the grammar) when a point is reached. Only the standard library is imported (POSIX signals).
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field

ENV = "CON2_FAULT"

#: The fault points the code calls, with the context keys each passes to :func:`fault_point`.
POINTS: dict[str, tuple[str, ...]] = {
    "after_checkpoint": ("epoch",),
    "table_build": ("table",),
    "table_csv_written": ("table",),
}

TARGETS = ("group", "process")

GRAMMAR = (
    f"{ENV}=POINT[:KEY=VALUE]... with POINT one of "
    + ", ".join(f"{p} (context: {', '.join(keys)})" for p, keys in POINTS.items())
    + "; KEY signal=SIGINT|SIGKILL|SIGTERM|... (default SIGINT), to=group|process (default group), "
    "or a context key of POINT (fire only where it equals VALUE); "
    "e.g. after_checkpoint:epoch=1:signal=SIGINT or table_build:signal=SIGKILL"
)


class FaultSpecError(ValueError):
    """``CON2_FAULT`` does not follow the grammar of this module's docstring."""


@dataclass(frozen=True)
class Fault:
    """A parsed ``CON2_FAULT``: at ``point`` (where every ``match`` item equals its context), send ``signum``."""

    point: str
    signum: signal.Signals = signal.SIGINT
    to: str = "group"
    match: dict[str, str] = field(default_factory=dict)

    def fires(self, name: str, context: dict[str, object]) -> bool:
        """Whether this fault fires at the point ``name`` reached with ``context``."""
        return name == self.point and all(str(context.get(k)) == v for k, v in self.match.items())


def _error(value: str, reason: str) -> FaultSpecError:
    return FaultSpecError(f"{ENV}={value!r}: {reason}; expected {GRAMMAR}")


def _signal(value: str, name: str) -> signal.Signals:
    upper = name.upper()
    try:
        return signal.Signals[upper if upper.startswith("SIG") else f"SIG{upper}"]
    except KeyError:
        raise _error(value, f"unknown signal {name!r}") from None


def parse(value: str) -> Fault:
    """The :class:`Fault` that ``value`` (a ``CON2_FAULT`` value) describes; :class:`FaultSpecError` if malformed."""
    point, *fields = value.strip().split(":")
    if point not in POINTS:
        raise _error(value, f"unknown fault point {point!r}")
    signum, to, match = signal.SIGINT, "group", {}
    seen: set[str] = set()
    for item in fields:
        key, eq, val = item.partition("=")
        if not eq or not key or not val:
            raise _error(value, f"{item!r} is not KEY=VALUE")
        if key in seen:
            raise _error(value, f"{key!r} given twice")
        seen.add(key)
        if key == "signal":
            signum = _signal(value, val)
        elif key == "to":
            if val not in TARGETS:
                raise _error(value, f"to={val!r} is neither group nor process")
            to = val
        elif key in POINTS[point]:
            match[key] = val
        else:
            raise _error(value, f"{key!r} is not a key of {point} (its context: {', '.join(POINTS[point])})")
    return Fault(point, signum, to, match)


def deliver(fault: Fault) -> None:
    """Send the fault's signal: to this process's group (``to=group``) or to this process alone."""
    if fault.to == "group":
        os.killpg(os.getpgrp(), fault.signum)
    else:
        os.kill(os.getpid(), fault.signum)


def fault_point(name: str, **context: object) -> None:
    """A named point where a test may inject a fault (see the module docstring); a no-op unless
    ``CON2_FAULT`` is set and names this point with a matching context."""
    value = os.environ.get(ENV)
    if not value:
        return
    if name not in POINTS:
        raise ValueError(f"internal: fault point {name!r} is not in con2.faults.POINTS")
    fault = parse(value)
    if fault.fires(name, context):
        deliver(fault)
