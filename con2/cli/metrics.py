"""``con2 metrics``: a finished run's operating points from its ``scores.csv``, without retraining or
re-scoring (:mod:`con2.maths.operating`): average precision with its interval, the sensitivity at
95% specificity, the false-positive rate at 95% true-positive rate (FPR@95TPR) and, where the run
scored normal validation images (``validation_scores.csv``), the test rates of the threshold set on
them, per score column. Records of any schema version work: only
the scores are read. Both score files are checked against the sha256 their record keeps (``files_sha256``,
since issue 47): a file that is not the one its run wrote gives no number (issue 57, item 3).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from con2.errors import ConfigError
from con2.text import shell_command, terminal_safe

RECORD = "record.json"


def run_metrics(run_dir: Path, scores: list[str] | None = None) -> dict[str, Any]:
    """``{column: operating points}`` of one run directory, checked against its record.

    Raises:
        ValueError: naming the run and what is wrong (no record, a record that does not validate, no
            or a disagreeing ``scores.csv``, a ``validation_scores.csv`` that is not the file its run wrote,
            an unknown score column).
    """
    from con2.aggregate.score_files import (  # lazy: pandas, as above
        expected_of_record,
        read_run_scores,
        read_validation_scores,
        scores_file,
        validation_not_written,
    )
    from con2.maths.metrics import auroc  # lazy: scikit-learn and scipy only when the command runs
    from con2.maths.operating import operating_points  # lazy: scipy, as above
    from con2.run.records import RecordError, read_record  # lazy: jsonschema, as above

    record_path = run_dir / RECORD
    try:
        record = read_record(record_path)
    except RecordError as exc:
        raise ValueError(str(exc)) from None
    got = read_run_scores(record_path, expected_of_record(record))
    if got.frame is None:
        raise ValueError(f"{scores_file(record_path)} {got.problem}" if got.found else f"{run_dir}: {got.problem}")
    edited = validation_not_written(record, record_path)
    if edited:  # its threshold would move every validation-threshold number: none is printed from it
        rescore = shell_command("con2", "evaluate", "--run-dir", run_dir)
        raise ValueError(
            f"{edited}. Fix: restore the file its run wrote (from a backup of {run_dir}), or re-score the run "
            f"(`{rescore}`: new score files, and a record keeping their sha256)"
        )
    frame = got.frame
    columns = [c for c in frame.columns if c != "label"]
    unknown = [c for c in scores or [] if c not in columns]
    if unknown:
        raise ValueError(f"{run_dir}: no score column {', '.join(map(repr, unknown))}; it has {', '.join(columns)}")
    labels = frame["label"].to_numpy()
    out = {}
    for column in scores or columns:
        values = frame[column].to_numpy(dtype=np.float64)
        validation, why = read_validation_scores(record_path, column, record.get("n_val"))
        out[column] = {"auroc": auroc(labels, values), **operating_points(labels, values, validation)}
        if validation is None and record.get("n_val"):  # the run scored validation images: say why there is no line
            out[column]["validation_problem"] = why
    return out


def _text(run: str, metrics: dict[str, Any]) -> list[str]:
    lines = [f"{run}:"]
    for column, m in metrics.items():
        ap, at, fpr = m["ap"], m["at_specificity"], m["fpr_at_tpr"]
        lines.append(
            f"  {column}: AUROC {m['auroc']:.1f}  AP {ap['ap']:.1f} [{ap['lo']:.1f}, {ap['hi']:.1f}]  "
            f"sensitivity {at['sensitivity']:.1f} at specificity {at['specificity']:.1f} "
            f"(test threshold {at['threshold']:.4g})  FPR {fpr['fpr']:.1f} [{fpr['fpr_lo']:.1f}, {fpr['fpr_hi']:.1f}] "
            f"at TPR {fpr['tpr']:.1f}"
        )
        val = m.get("from_validation")
        if m.get("validation_problem"):
            lines.append(f"    at the validation threshold: not computed ({m['validation_problem']})")
        if val:
            lines.append(
                f"    at the validation threshold {val['threshold']:.4g}: sensitivity {val['sensitivity']:.1f} "
                f"[{val['sensitivity_lo']:.1f}, {val['sensitivity_hi']:.1f}], specificity {val['specificity']:.1f} "
                f"[{val['specificity_lo']:.1f}, {val['specificity_hi']:.1f}]"
            )
    return lines


def cmd_metrics(args: argparse.Namespace) -> int:
    """Print each run's operating points; the runs it could not fill are named at the end (exit 1).

    ``--score nnd lh RUN`` takes every word after it as a column, the run folder too: a word that names a folder
    is a run folder, wherever it stands.

    Raises:
        ConfigError: no run folder given.
    """
    runs = [*args.run_dir, *(s for s in args.score if Path(s).is_dir())]
    columns = [s for s in args.score if not Path(s).is_dir()]
    if not runs:
        raise ConfigError(
            "con2 metrics: no run folder given. Fix: con2 metrics RUN [RUN ...] [--score COLUMN ...] (a run folder "
            "holds record.json and scores.csv)"
        )
    done: dict[str, Any] = {}
    failed: dict[str, str] = {}
    for run in runs:
        try:
            done[run] = run_metrics(Path(run), columns or None)
        except ValueError as exc:
            failed[run] = str(exc)
    if args.json:
        print(json.dumps({"runs": done, "not_filled": failed}, indent=2, allow_nan=False, default=float))
    else:  # a run folder's and a score column's names are anyone's text: each line through terminal_safe
        lines = [line for run, metrics in done.items() for line in _text(run, metrics)]
        lines += [f"not filled: {run}: {why}" for run, why in failed.items()]
        print("\n".join(terminal_safe(line) for line in lines))
    return 1 if failed else 0


def add_metrics_subcommand(sub: argparse._SubParsersAction) -> None:
    """Wire ``con2 metrics`` into the main CLI's sub-commands."""
    p = sub.add_parser(
        "metrics",
        help="a finished run's AUROC, average precision and sensitivity at 95%% specificity from its scores.csv "
        "(no retraining; records of any version)",
    )
    p.add_argument("run_dir", nargs="*", help="run directories (each holding record.json and scores.csv)")
    p.add_argument("--score", nargs="*", default=[], metavar="COLUMN", help="score columns (default: every one)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the lines")
    p.set_defaults(func=cmd_metrics)
