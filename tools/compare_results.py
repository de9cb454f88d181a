#!/usr/bin/env python3
"""Compare two ``results/`` folders of the same profile: what a refactoring must leave unchanged.

    python tools/compare_results.py OLD/results NEW/results

Run records, checkpoints and CSV files are compared without the fields that differ between any two
runs of the same config and seed (wall-clock times, memory, load, creation time, the git commit,
package versions), other files with the checkout's own path replaced; scores,
features, learning curves and metrics must be identical (the same config and seed give the same
numbers on the same CPU); the aggregation's score bundle likewise, without the curves' seconds. Tables
(.md/.csv/.tex/.html) and figures must be byte-identical, except
those that print measured times (named in TIMED). Prints one line per difference and exits 1 if
there is any.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
from pathlib import Path

VOLATILE = {"timing", "peak_memory_mb", "created", "git_commit", "versions", "cpu"}
# CSV columns (runs.csv, curve.csv) that hold measured times, memory or load
VOLATILE_COLUMNS = ("seconds", "memory", "rss", "per_s", "cpu_share", "load_average")
# outputs that print measured seconds, so differ between any two runs
TIMED = ("compute_cost", "score_runtime", "runtime")
SKIP_DIRS = {"logs", "benchmarks", "configs"}  # logs and Snakemake benchmarks hold times; configs hold hashes only


def comparable(path: Path, root: Path) -> object:
    """What must be equal: a record without :data:`VOLATILE` (and its learning curve's seconds), a CSV
    without :data:`VOLATILE_COLUMNS`, any other file byte for byte with its checkout's path as ``ROOT``."""
    if path.name == "record.json":
        record = {k: v for k, v in json.loads(path.read_text()).items() if k not in VOLATILE}
        for point in (record.get("curve") or {}).get("points", []):
            point.pop("seconds", None)
        return record
    if path.name == "checkpoint.pt":
        return checkpoint_content(path)
    if path.name.endswith(".json.gz"):  # the aggregation's bundle: every run's score files and learning curve
        bundle = json.loads(gzip.decompress(path.read_bytes()))
        bundle.pop("csv_sha256", None)  # the sha256 of runs.csv, whose time columns differ (compared without them)
        for run in (bundle.get("runs") or {}).values():
            for point in (run.get("curve") or {}).get("points", []):
                point.pop("seconds", None)
        return bundle
    if path.suffix == ".csv" and path.parent.name != "tables":
        rows = list(csv.DictReader(io.StringIO(path.read_text())))
        return [{k: v for k, v in r.items() if not any(t in k for t in VOLATILE_COLUMNS)} for r in rows]
    return path.read_bytes().replace(str(root.resolve().parent).encode(), b"ROOT")


def checkpoint_content(path: Path) -> object:
    """A checkpoint without its ``timing`` (seconds spent so far): every tensor as bytes, every other
    value as it is, so two checkpoints of the same config and seed compare equal."""
    import torch  # lazy: only a results folder with checkpoints needs it

    def plain(value: object) -> object:
        if isinstance(value, torch.Tensor):
            return (
                str(value.dtype),
                tuple(value.shape),
                value.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes(),
            )
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items() if k != "timing"}
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return value

    return plain(torch.load(path, map_location="cpu", weights_only=False))


def main(old: Path, new: Path) -> int:
    def files(root: Path) -> set[Path]:
        return {
            p.relative_to(root)
            for p in root.rglob("*")
            if p.is_file() and not SKIP_DIRS & set(p.relative_to(root).parts) and not p.name.startswith(".")
        }

    a, b = files(old), files(new)
    problems = [f"only in {old}: {p}" for p in sorted(a - b)] + [f"only in {new}: {p}" for p in sorted(b - a)]
    same = 0
    for rel in sorted(a & b):
        if any(t in rel.name for t in TIMED) or rel.name.startswith("report"):
            continue
        if comparable(old / rel, old) != comparable(new / rel, new):
            problems.append(f"differs: {rel}")
        else:
            same += 1
    for line in problems:
        print(line)
    print(f"{same} files identical (records without {sorted(VOLATILE)}), {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
