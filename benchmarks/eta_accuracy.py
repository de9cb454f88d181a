"""How far the workflow's grid ETA is from the time that was really left (issue 36, point 2).

Two steps. While the workflow runs, stamp each console line with the time it was read:

    snakemake --cores 2 all ... 2>&1 | python benchmarks/eta_accuracy.py stamp > grid.log

then compare each ETA line ("con2 grid: N of M training runs done; about X left ...") with the time
actually left until the last training run finished (the line "M of M training runs done", else the
log's last line):

    python benchmarks/eta_accuracy.py report grid.log

It prints one row per ETA line (runs done, the ETA, the time actually left, the ratio) and the
largest error from the first quarter of the runs on: the acceptance of issue 36 asks for +-30%.
"at least" lines (before any run finished: a floor, the training steps alone) are listed, not scored.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

LINE = re.compile(r"con2 grid: (\d+) of (\d+) training runs done(?:; (about|at least) (.+?) left)?")
DURATION = re.compile(r"^(?:(\d+) h )?(?:(\d+) min)?(?:(\d+) s)?$")


@dataclass(frozen=True)
class EtaLine:
    """One ETA line: when it was printed (s since the epoch), runs done of total, the ETA in seconds
    (``None``: no ETA on the line) and whether it was a floor ("at least")."""

    at: float
    done: int
    total: int
    eta: float | None
    floor: bool


def duration_seconds(text: str) -> float:
    """ "2 h 02 min", "14 min", "45 s" (con2.grid.eta.format_duration's output) as seconds."""
    m = DURATION.match(text.strip())
    if not m or not any(m.groups()):
        raise ValueError(f"not a duration: {text!r}")
    h, mins, s = (int(g) if g else 0 for g in m.groups())
    return 3600.0 * h + 60.0 * mins + s


def stamp(lines: Iterable[str]) -> Iterator[str]:
    """Each line prefixed with the time it was read (seconds since the epoch, 0.1 s)."""
    for line in lines:
        yield f"{time.time():.1f} {line}"


def parse(lines: Iterable[str]) -> tuple[list[EtaLine], float | None]:
    """The ETA lines of a stamped log and the time of its last line."""
    out, last = [], None
    for raw in lines:
        head, _, rest = raw.partition(" ")
        try:
            at = float(head)
        except ValueError:
            continue
        last = at
        m = LINE.search(rest)
        if m:
            eta = duration_seconds(m.group(4)) if m.group(4) else None
            out.append(EtaLine(at, int(m.group(1)), int(m.group(2)), eta, m.group(3) == "at least"))
    return out, last


def report(lines: list[EtaLine], last: float) -> list[str]:
    """The rows and the summary line (module docstring)."""
    if not lines:
        return ["no 'con2 grid:' lines in the log"]
    total = lines[-1].total
    end = next((x.at for x in lines if x.done >= x.total), last)
    rows = [f"{'done':>9}  {'ETA':>9}  {'actual':>9}  {'ETA/actual':>10}"]
    scored = []
    for x in lines:
        actual = end - x.at
        if x.eta is None:
            rows.append(f"{x.done:>4}/{x.total:<4}  {'-':>9}  {actual:>8.0f}s  {'':>10}")
            continue
        ratio = x.eta / actual if actual > 0 else float("nan")
        tag = " (floor)" if x.floor else ""
        rows.append(f"{x.done:>4}/{x.total:<4}  {x.eta:>8.0f}s  {actual:>8.0f}s  {ratio:>10.2f}{tag}")
        if not x.floor and x.done * 4 >= x.total and actual > 0:
            scored.append(ratio)
    if scored:
        worst = max(scored, key=lambda r: abs(r - 1))
        rows.append(
            f"from the first quarter of the {total} runs on: {len(scored)} ETA line(s), ETA/actual "
            f"{min(scored):.2f} to {max(scored):.2f}, largest error {100 * (worst - 1):+.0f}%"
        )
    else:
        rows.append("no ETA line from the first quarter of the runs on")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("stamp", help="copy stdin to stdout, each line stamped with the time")
    rep = sub.add_parser("report", help="compare a stamped log's ETA lines with the time actually left")
    rep.add_argument("log", type=Path)
    args = parser.parse_args(argv)
    if args.command == "stamp":
        for line in stamp(sys.stdin):
            sys.stdout.write(line)
            sys.stdout.flush()
        return 0
    lines, last = parse(args.log.read_text(errors="replace").splitlines())
    print("\n".join(report(lines, last if last is not None else 0.0)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
