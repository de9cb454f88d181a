"""The tables a cost plan reads: measured training throughput (``con2/resources/throughput.csv``,
or a GPU check's JSON lines), training-set sizes (the split manifests of prepared data, else
``con2/resources/train_set_sizes.csv``) and the paper's reported GPU-hours. Each is read and
checked once, with an error that names the file, the row and the fix (:mod:`con2.grid.plan` does
the arithmetic)."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from con2.atomic import write_text_atomic
from con2.errors import ConfigError
from con2.methods import all_methods
from con2.paper_names import dataset_names
from con2.resources import resource
from con2.yaml_files import read_text_file

THROUGHPUT_CSV = resource("throughput.csv")
SIZES_CSV = resource("train_set_sizes.csv")
PAPER_HOURS_CSV = resource("paper_compute_hours.csv")
THROUGHPUT_COLUMNS = (
    "device",
    "image_size",
    "width",
    "batch_size",
    "views_per_image",
    "compile",
    "images_per_s",
    "source",
)


@dataclass(frozen=True)
class Rate:
    """One measured training throughput: ``images_per_s`` images (``views_per_image`` views each)."""

    device: str
    image_size: int
    width: int
    batch_size: int
    views_per_image: int
    compile: bool
    images_per_s: float
    source: str

    @property
    def views_per_s(self) -> float:
        return self.images_per_s * self.views_per_image


def rates_from_jsonl(lines: Iterable[str], source: str) -> list[Rate]:
    """The throughput lines of a ``gpu_check.py`` / ``throughput.py`` JSON-lines file as rates."""
    out = []
    for line in lines:
        if not line.strip().startswith("{"):
            continue
        row = json.loads(line)
        if row.get("check") != "throughput" or "ours_images_per_s" not in row:
            continue
        out.append(
            Rate(
                str(row["device"]),
                int(row["image_size"]),
                int(row["width"]),
                int(row["batch_size"]),
                int(row["views_per_step"]) // int(row["batch_size"]),
                bool(row.get("compile", False)),
                float(row["ours_images_per_s"]),
                source,
            )
        )
    return out


def read_table(path: Path, columns: Sequence[str], option: str) -> list[dict[str, str]]:
    """The rows of a CSV table (at most 10 MB of UTF-8 text) that has every one of ``columns``.

    Raises:
        ConfigError: in one line naming ``option``, the file and the problem (missing, not a
            regular file, too large, not text, columns missing).
    """

    fix = f"pass {option} a CSV file with the columns {', '.join(columns)} (the default's: {option} left out)"
    text = read_text_file(path, option, fix, limit=10_000_000, kind="CSV text file")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        rows = list(reader)
    except csv.Error as exc:
        raise ConfigError(f"{option} {path} is not a CSV table ({exc}). Fix: {fix}") from None
    if missing:
        raise ConfigError(f"{option} {path} lacks the column(s) {', '.join(missing)}. Fix: {fix}")
    return rows


def table_values(path: Path, option: str, build: Callable[[dict[str, str]], Any]) -> list[Any]:
    """``build(row)`` for each row of a table read by :func:`read_table`; a value that is no number
    where one is due is a ``ConfigError`` naming the file and its line."""
    out = []
    for line, row in enumerate(rows_of(path, option), start=2):
        try:
            out.append(build(row))
        except (TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"{option} {path}, line {line}: {exc}. Fix: correct that line") from None
    return out


_TABLE_COLUMNS = {
    "--throughput": THROUGHPUT_COLUMNS,
    "--sizes": ("dataset", "normal_class", "n_train", "source"),
    "--paper-hours": ("method", "dataset", "gpu_hours_per_run"),
}


def rows_of(path: Path, option: str) -> list[dict[str, str]]:
    """The rows of the table ``option`` names (its columns: :data:`_TABLE_COLUMNS`)."""
    return read_table(path, _TABLE_COLUMNS[option], option)


def positive(row: Mapping[str, str], column: str, kind: type[int] | type[float]) -> Any:
    """``row[column]`` as a positive finite ``kind`` (a throughput's size or rate: 0 would divide by
    zero, a negative, NaN or infinite rate print nonsense hours).

    Raises:
        ValueError: naming the column and the value.
    """
    text = (row.get(column) or "").strip()
    try:
        value = kind(text)
        finite = math.isfinite(value) and value <= MAX_TABLE_VALUE  # 10**400 overflows a float: not finite
    except (ValueError, OverflowError):
        value, finite = None, False
    if value is None or not finite or value <= 0:
        what = "whole number" if kind is int else "number"
        shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
        raise ValueError(f"column {column} is {shown!r}, not a positive finite {what} of at most {MAX_TABLE_VALUE:.0e}")
    return value


# The largest size or rate a cost table may hold (images, images per second): far beyond any real one, small
# enough that the plan's arithmetic never overflows.
MAX_TABLE_VALUE = 1e15


def rate_of_row(r: Mapping[str, str]) -> Rate:
    """One row of the throughput table as a :class:`Rate`, every size and rate a positive finite number."""
    return Rate(
        r["device"],
        positive(r, "image_size", int),
        positive(r, "width", int),
        positive(r, "batch_size", int),
        positive(r, "views_per_image", int),
        r["compile"].strip().lower() == "true",
        positive(r, "images_per_s", float),
        r["source"],
    )


def read_rates(path: Path) -> list[Rate]:
    """The throughput table's rows (:func:`rate_of_row`); a bad row is a ``ConfigError`` naming its line."""
    return table_values(path, "--throughput", rate_of_row)


def write_rates(rates: Iterable[Rate], path: Path) -> None:
    """The throughput table (CSV, one measured setting per line)."""

    lines = [",".join(THROUGHPUT_COLUMNS)]
    for r in rates:
        lines.append(
            f"{r.device},{r.image_size},{r.width},{r.batch_size},{r.views_per_image},{str(r.compile).lower()},"
            f"{r.images_per_s:.1f},{r.source}"
        )
    write_text_atomic(path, "\n".join(lines) + "\n")


def read_sizes(path: Path) -> dict[tuple[str, str], tuple[int, str]]:
    """``{(dataset, normal_class or '*'): (n_train, source)}`` from the sizes table."""
    pairs = table_values(
        path, "--sizes", lambda r: ((r["dataset"], r["normal_class"]), (positive(r, "n_train", int), r["source"]))
    )
    return dict(pairs)


def manifest_counts(data_dir: Path, dataset: str, normal_class: str, size: int) -> tuple[int, int | None] | None:
    """``(n_train, n_test)`` of a prepared split's manifest (prepared cache of ``data_dir``'s data, any seed;
    ``n_test`` ``None`` where the manifest lacks it), or ``None`` without a readable manifest."""
    from con2.data.cache import cache_dir  # lazy: numpy and PIL only when a data folder is read for its sizes
    from con2.data.manifest import manifest_filename  # lazy: numpy only when a data folder is read for its sizes

    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    folder = cache_dir(data_dir, dataset, size) / "splits"
    stem = manifest_filename(normal_class, 0).rsplit("__seed", 1)[0]
    for path in sorted(folder.glob(f"{stem}__seed*.json")):
        try:
            manifest = json.loads(path.read_text())
            n_train = count(manifest["n_train"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if n_train is not None:
            return n_train, count(manifest.get("n_test"))
    return None  # no manifest, or a damaged one (n_train null, text, 0): the sizes table stands in


def manifest_size(data_dir: Path, dataset: str, normal_class: str, size: int) -> int | None:
    """``n_train`` of a prepared split's manifest (prepared cache of ``data_dir``'s data, any seed), or ``None``."""
    counts = manifest_counts(data_dir, dataset, normal_class, size)
    return counts[0] if counts else None


def held_out_sizes(runs: Iterable[Any], data_dir: Path | None) -> dict[tuple[str, str], int]:
    """Test-set size of every (dataset, normal class) of ``runs`` whose prepared split manifest says it
    (the sizes table has none)."""
    out: dict[tuple[str, str], int] = {}
    for run in runs:
        key = (run.dataset, run.normal_class)
        if data_dir is None or key in out:
            continue
        counts = manifest_counts(data_dir, *key, run.data_size)
        if counts and counts[1] is not None:
            out[key] = counts[1]
    return out


def train_sizes(
    runs: Iterable[Any], table: Mapping[tuple[str, str], tuple[int, str]], data_dir: Path | None
) -> tuple[dict[tuple[str, str], int], dict[str, str]]:
    """Training-set size of every (dataset, normal class) of ``runs`` and where each came from.

    Raises:
        ConfigError: a dataset in neither a manifest nor the table (names the table to extend).
    """
    sizes: dict[tuple[str, str], int] = {}
    where: dict[str, str] = {}
    for run in runs:
        key = (run.dataset, run.normal_class)
        if key in sizes:
            continue
        found = manifest_size(data_dir, *key, run.data_size) if data_dir is not None else None
        if found is not None:
            sizes[key], where[run.dataset] = found, "split manifest of the prepared data"
            continue
        hit = table.get(key) or table.get((run.dataset, "*"))
        if hit is None:
            raise ConfigError(
                f"no training-set size for {run.dataset} class {run.normal_class}: prepare the data "
                f"(`con2 data get {run.dataset}`) or add a line to {SIZES_CSV}"
            )
        sizes[key] = hit[0]
        where.setdefault(run.dataset, hit[1])
    return sizes, where


def paper_hours_per_run(
    path: Path, runs: Iterable[Any], config: Mapping[str, Any] | None = None
) -> dict[tuple[str, str], float]:
    """``{(method, dataset): GPU-hours per run}`` from the paper's compute table, joined by the
    methods' ``compute_name`` and the datasets' paper names (the profile's ``paper_names`` too)."""

    pairs = table_values(
        path, "--paper-hours", lambda r: ((r["method"], r["dataset"]), positive(r, "gpu_hours_per_run", float))
    )
    table = dict(pairs)
    specs, names = all_methods(), dataset_names(config)
    out = {}
    for run in runs:
        spec = specs.get(run.method)
        value = table.get((getattr(spec, "compute_name", None), names.get(run.dataset, run.dataset)))
        if value is not None:
            out[(run.method, run.dataset)] = value
    return out
