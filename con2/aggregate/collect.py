"""Run records -> ``runs.csv``'s rows: one row per (run, score), each record checked first.

Only records are read (through :func:`con2.run.records.read_record`, which validates them and names
the file and field on failure; :func:`collect_valid_runs` leaves a bad record out with one line
naming the file, the problem and the fix, and checks each record against the run directory it
sits in and against the ``scores.csv`` beside it, :mod:`con2.aggregate.score_files`: a stored AUROC its
own scores do not give is never shown); the optional Snakemake ``benchmark:`` TSV of a run adds its
measured wall time, peak memory and CPU time (hence ``cpu_share``, how much of the CPU it asked
for the job got: about 1 when idle, lower under load). The record's ``method_card`` gives the
method's labels and paper rows and the tags its tables group runs by (``contexts``, ``n_contexts``,
``loss``; see :mod:`con2.aggregate.cards`; a record without a card gets the one its method's spec
gives its params). Every score of a record is a row (the columns: :data:`con2.aggregate.runs_csv.RUN_COLUMNS`);
``headline`` marks the plain score names (``nnd``) against extra readings (``nnd@<reading>``),
``auroc_by_kind`` holds a declared mvtec tree's AUROC per anomaly kind of that score (JSON; "" for every other
record: :func:`con2.aggregate.runs_csv.by_kind_text`), and
``in_grid`` is set by the workflow (False: a record outside the current profile's grid). Nothing here
imports torch or the training code (method specs are torch-free).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.cards import card_fields, record_card
from con2.aggregate.runs_csv import RUN_COLUMNS, RUN_KEYS, by_kind_text, is_headline
from con2.aggregate.score_files import scores_problem
from con2.paths import path_identity, run_key
from con2.run.records import RecordError, read_record
from con2.run.rundir import unfinished_rescore


def read_benchmark(path: str | Path | None) -> tuple[float, float, float]:
    """``(wall seconds, max_rss MB, CPU seconds)`` of a Snakemake benchmark TSV (last row); NaNs when absent."""
    nan = float("nan")
    if path is None or not Path(path).is_file():
        return nan, nan, nan
    try:
        row = pd.read_csv(path, sep="\t").iloc[-1]
    except (pd.errors.ParserError, pd.errors.EmptyDataError, IndexError, ValueError):
        return nan, nan, nan
    values = [pd.to_numeric(row.get(k, np.nan), errors="coerce") for k in ("s", "max_rss", "cpu_time")]
    return tuple(float(v) for v in values)  # type: ignore[return-value]


DEFAULT_ENCODER = "ResNet18"  # the encoder of every method without a params.backbone (CON2, SimCLR, CSI, ...)


def encoder_of(config: Mapping[str, Any]) -> str:
    """The encoder a run trained: its ``params.backbone`` (I-JEPA-AD's timm ViT, PANDA's ResNet), else ResNet18."""
    backbone = (config.get("params") or {}).get("backbone")
    return str(backbone) if isinstance(backbone, str) and backbone else DEFAULT_ENCODER


def machine_of(record: Mapping[str, Any]) -> str | None:
    """What a run ran on: the GPU's name on CUDA, else the CPU's model name (older records: the device)."""
    if str(record.get("device", "")).startswith("cuda"):
        return record.get("gpu") or record.get("device")
    return record.get("cpu") or record.get("device")


def cpu_share(cpu_seconds: float, wall_seconds: float, threads: float | None) -> float:
    """CPU time over wall time per thread the job was given: ~1 on an idle machine, lower under load."""
    t = float(threads) if threads and threads > 0 else 1.0
    if not (wall_seconds > 0) or np.isnan(cpu_seconds):
        return float("nan")
    return float(cpu_seconds) / (float(wall_seconds) * t)


def record_rows(
    record: Mapping[str, Any], source: str = "", benchmark: str | Path | None = None
) -> list[dict[str, Any]]:
    """One row per score of one validated record."""
    cfg = record.get("config") or {}
    card = record_card(record)
    bench_s, bench_rss, bench_cpu = read_benchmark(benchmark)
    timing = record["timing"]
    load = record.get("load_average_1min")  # optional: the system load the run was measured under
    base = {
        "dataset": record["dataset"],
        "normal_class": str(record["normal_class"]),
        "method": record["method"],
        "variant": record["variant"],
        "seed": int(record["seed"]),
        "silhouette": record["metrics"].get("silhouette"),
        "fit_seconds": timing["fit_seconds"],
        "score_seconds": timing["score_seconds"],
        "wall_seconds": timing["wall_seconds"],
        "curve_seconds": timing.get("curve_seconds", np.nan),
        "sessions": timing.get("sessions", np.nan),
        "peak_memory_mb": record.get("peak_memory_mb"),
        "bench_seconds": bench_s,
        "bench_max_rss_mb": bench_rss,
        "bench_cpu_seconds": bench_cpu,
        "cpu_share": cpu_share(bench_cpu, bench_s, cfg.get("threads")),
        "load_average": float(load) if isinstance(load, (int, float)) else np.nan,
        "epochs": record.get("epochs"),
        "steps": record.get("steps"),
        "n_train": record["n_train"],
        "n_test": record["n_test"],
        "n_anomalous": record["n_anomalous"],
        "n_val": record.get("n_val", np.nan),
        "chosen_context": str(record["metrics"].get("chosen_context") or ""),
        "data_format": (record.get("data_source") or {}).get("format") or "",
        "device": record.get("device"),
        "machine": machine_of(record),
        "threads": cfg.get("threads"),
        "image_size": cfg.get("image_size"),
        "width": cfg.get("width"),
        "encoder": encoder_of(cfg),
        "tta": cfg.get("tta"),
        "test_views": test_views_text(record["metrics"]),
        "config_hash": record["config_hash"],
        "record": source,
        "in_grid": True,
    }
    aurocs = sorted(record["metrics"]["auroc"].items())
    intervals = record["metrics"].get("auroc_ci") or {}  # absent from records older than schema version 2
    by_kind = record["metrics"].get("auroc_by_kind")  # a declared mvtec tree's: {kind: {score column: AUROC}}

    def ci(name: str, key: str) -> float:
        value = (intervals.get(name) or {}).get(key)
        return np.nan if value is None else float(value)

    return [
        {
            **base,
            **card_fields(card, name),
            "score": name,
            "headline": is_headline(name),
            "auroc": float(value),
            **{f"auroc_{k}": ci(name, k) for k in ("lo", "hi", "se")},
            "auroc_by_kind": by_kind_text(by_kind, name),
        }
        for name, value in aurocs
    ]


@dataclass(frozen=True)
class SkippedRecord:
    """A ``record.json`` that aggregation left out: the file, what is wrong with it, and the fix."""

    record: str
    problem: str
    fix: str

    def line(self) -> str:
        """The one line the aggregate log and the workflow's last lines print."""
        return f"skipped {self.record}: {self.problem}; fix: {self.fix}"


def _fix_broken(path: str) -> str:
    return (
        f"delete it (rm {shlex.quote(path)}) and run the same command again: a run of the profile's grid "
        "is re-scored from its checkpoint (or retrained), any other is dropped"
    )


def _fix_unfinished(path: str) -> str:
    folder = shlex.quote(str(Path(path).parent))
    return (
        f"finish its training: delete the record (rm {shlex.quote(path)}) and run the same command again, or run "
        f"con2 train --run-dir {folder} with its configuration (both resume from its checkpoint)"
    )


def _fix_misplaced(path: str) -> str:
    folder = shlex.quote(str(Path(path).parent))
    return f"move its folder out of results/runs (mv {folder} elsewhere) or delete it: a copy is not a run"


def link_on_path(path: str | Path, runs_root: str | Path | None = None) -> Path | None:
    """The folder nearest the record among those its run key spells (``seed<k>`` up to ``<dataset>``,
    and only those inside ``runs_root`` where given) that is a symbolic link, or None: a record
    reached through it belongs to the link's target."""
    root = os.path.abspath(runs_root) if runs_root is not None else None
    for folder in list(Path(path).parents)[:5]:
        if root is not None and not os.path.abspath(folder).startswith(root + os.sep):
            break
        if folder.is_symlink():
            return folder
    return None


def _fix_link(link: Path) -> str:
    return (
        f"remove the link itself (rm {shlex.quote(str(link))}): a link, not a run; its target and the run "
        "there are left as they are"
    )


def skip(path: str, problem: str, fix: str, runs_root: str | Path | None = None) -> SkippedRecord:
    """A :class:`SkippedRecord`; for a record reached through a linked folder (:func:`link_on_path`)
    the fix removes the link, never the target's files (a fix that moved or deleted the folder
    would take the real run)."""
    link = link_on_path(path, runs_root)
    return SkippedRecord(path, problem, _fix_link(link) if link else fix)


def path_problem(record: Mapping[str, Any], path: str | Path, runs_root: str | Path | None = None) -> str | None:
    """Why a valid record may not be aggregated from ``path``, or None.

    A record counts as the run its own fields name (dataset, normal class, method, variant, seed)
    only from the folder those fields spell, ``<runs_root>/<dataset>/<class>/<method>/<variant>/
    seed<k>/record.json``: a copied folder (``seed0.bak``, or ``seed0`` copied to ``seed7``) is not
    another seed. With ``runs_root`` every path must have that shape; without it only paths that
    have it are checked against the record.
    """
    ident = path_identity(path)
    full = Path(os.path.abspath(path))
    inside = runs_root is not None and len(full.parents) > 5 and full.parents[5] == Path(os.path.abspath(runs_root))
    if runs_root is not None and (ident is None or not inside):
        return f"its folder is not a run directory <dataset>/<class>/<method>/<variant>/seed<k> of {runs_root}"
    if ident is None:
        return None
    own = {k: record[k] if k == "seed" else str(record[k]) for k in ident}
    if own != ident:
        return f"the record is run {run_key(**own)} but sits in {run_key(**ident)}"
    return None


def read_run_record(path: str | Path, runs_root: str | Path | None = None) -> dict[str, Any]:
    """:func:`~con2.run.records.read_record` plus :func:`path_problem`: ``RecordError`` naming the file."""
    rec = read_record(path)
    problem = path_problem(rec, path, runs_root)
    if problem:
        raise RecordError(f"{path}: {problem}")
    return rec


def collect_runs(
    records: Iterable[str | Path],
    benchmarks: Mapping[str, str | Path] | None = None,
    runs_root: str | Path | None = None,
) -> pd.DataFrame:
    """Read every record (validated, and checked against its path: :func:`path_problem`) into one
    tidy frame with :data:`RUN_COLUMNS`; the first bad record raises ``RecordError`` naming it.

    Args:
        records: paths of ``record.json`` files.
        benchmarks: optional ``{record path: benchmark TSV path}``.
        runs_root: the folder every record must sit in as ``<run key>/record.json`` (None: only
            paths of that shape are checked).
    """
    frame, skipped = collect_valid_runs(records, benchmarks, runs_root)
    if skipped:
        raise RecordError(f"{skipped[0].record}: {skipped[0].problem}")
    return frame


def collect_valid_runs(
    records: Iterable[str | Path],
    benchmarks: Mapping[str, str | Path] | None = None,
    runs_root: str | Path | None = None,
) -> tuple[pd.DataFrame, list[SkippedRecord]]:
    """As :func:`collect_runs`, but a bad record (missing, unreadable, binary, not JSON, against the
    schema, a NaN metric, a path that disagrees with its fields, a re-scoring of an unfinished checkpoint
    (:func:`con2.run.rundir.unfinished_rescore`: not the run's numbers), a ``scores.csv`` beside it that is
    malformed or disagrees with it: :func:`con2.aggregate.score_files.scores_problem`) is left out and
    returned with what is wrong and the fix (through a linked folder: remove the link, :func:`skip`),
    so one record never stops the aggregation of the others.

    Returns:
        ``(frame, skipped)``: the tidy frame of the good records and one :class:`SkippedRecord` per bad one.
    """
    rows: list[dict[str, Any]] = []
    skipped: list[SkippedRecord] = []
    for path in records:
        try:
            rec = read_record(path)
        except RecordError as exc:
            problem = str(exc).removeprefix(f"{path}: ")
            skipped.append(skip(str(path), problem, _fix_broken(str(path)), runs_root))
            continue
        misplaced = path_problem(rec, path, runs_root)
        if misplaced:
            skipped.append(skip(str(path), misplaced, _fix_misplaced(str(path)), runs_root))
            continue
        unfinished = unfinished_rescore(rec)
        if unfinished:
            skipped.append(skip(str(path), f"{unfinished}: not the finished run's numbers", _fix_unfinished(str(path))))
            continue
        bad_scores = scores_problem(rec, path)
        if bad_scores:
            skipped.append(skip(str(path), bad_scores, _fix_broken(str(path)), runs_root))
            continue
        rows += record_rows(rec, str(path), (benchmarks or {}).get(str(path)))
    df = pd.DataFrame(rows, columns=RUN_COLUMNS)
    return df.sort_values([*RUN_KEYS, "score"], kind="stable").reset_index(drop=True), skipped


def test_views_text(metrics: Mapping[str, Any]) -> str:
    """What a method's record says of the test views behind its headline score (``metrics.test_views`` and
    ``test_views_averaged``, CSI's: ``"40 views, features averaged"``); "" where it says nothing (the run's
    ``tta`` then tells)."""
    views = metrics.get("test_views")
    if not isinstance(views, int) or isinstance(views, bool):
        return ""
    averaged = metrics.get("test_views_averaged")
    return f"{views} views" + (f", {averaged} averaged" if isinstance(averaged, str) and averaged else "")
