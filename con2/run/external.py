"""Turn an external program's per-sample scores into a standard run directory.

An external anomaly detector (any language, any framework) joins every table by leaving the same
two files a registered method leaves: ``scores.csv`` (index, label, one column per score; higher =
more anomalous) and ``record.json``, built by :func:`con2.run.records.build_record` (the record builder
of registered methods too) and validated against :data:`con2.run.records.RECORD_SCHEMA`. The program
only has to write a CSV with a ``label`` column (1 = anomaly, 0 = normal), optionally an ``id``
column (the harness's sample ids), and one or more score columns::

    python -m con2.run.external --scores raw_scores.csv --run-dir results/runs/.../seed0 \
        --dataset breastmnist --normal-class 1 --method patchcore --seed 0 --data-dir ../shared/data

``--seed`` is the run's (training) seed; the test set is fixed by the split seed (``--set
split_seed=K``, default 0, the same for every training seed, as for ``con2 train``). With
``--data-dir`` the labels (and ids, if given) are checked against the harness's own split
(:func:`con2.data.rundata.load_run_data`), so a program that scored another test set is refused instead
of joining the tables, and the record stores the split's checksum.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from con2.config import load_config
from con2.data.manifest import data_source
from con2.data.rundata import load_run_data
from con2.errors import Con2Error, write_failure
from con2.run.records import RecordError, build_record
from con2.run.rundir import RECORD, SCORES, RunDir, bytes_sha256, scores_text
from con2.text import terminal_safe, unsafe_text


def write_external_run(
    run_dir: str | Path,
    *,
    dataset: str,
    normal_class: str,
    method: str,
    seed: int,
    labels: np.ndarray,
    scores: Mapping[str, np.ndarray],
    n_train: int,
    variant: str = "default",
    config: Mapping[str, Any] | None = None,
    timing: Mapping[str, float] | None = None,
    extras: Mapping[str, float] | None = None,
    device: str = "external",
    split_seed: int | None = 0,
    split_sha256: str | None = None,
    scoring: Mapping[str, Any] | None = None,
    label: str | None = None,
    score_labels: Mapping[str, str] | None = None,
    data_source: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """Write ``scores.csv`` and a validated ``record.json`` for one external run; return the record.

    Args:
        labels: ``[M]`` test labels, 1 = anomaly, 0 = normal.
        scores: score name -> ``[M]`` per-sample scores, higher = more anomalous.
        n_train: number of normal training images the program used.
        config: the program's settings (stored, and hashed into ``config_hash``).
        timing: ``fit_seconds``, ``score_seconds``, ``wall_seconds`` (missing ones are 0).
        extras: further scalar metrics (e.g. ``silhouette``).
        split_seed: the split seed of the test set scored (not the training seed).
        split_sha256: the split manifest's checksum (``data.manifest["split_sha256"]``), if known.
        scoring: per score, which reading is its headline (stored as is).
        label: the method's display name in tables (``Pixel NN``; default: its name), and
        score_labels: a score's display name (``{"nnd": "NND"}``; default: the score's name):
            stored as the record's ``method_card``, which the tables read for a method that is not
            registered with con2.
        data_source: the images' source (:func:`con2.data.manifest.data_source` of the split's manifest), if known.
    """
    config = {
        "method": method,
        "dataset": dataset,
        "normal_class": normal_class,
        "seed": seed,
        "split_seed": split_seed,
        **(config or {}),
    }
    int_labels = np.asarray(labels).astype(np.int64)
    record = build_record(
        dataset=dataset,
        normal_class=str(normal_class),
        method=method,
        variant=variant,
        seed=seed,
        labels=labels,
        scores=scores,
        n_train=n_train,
        config=config,
        split_seed=split_seed,
        split_sha256=split_sha256,
        timing=timing,
        extras=extras,
        scoring=scoring,
        device=device,
        method_card=method_card(label, score_labels, scores) if label or score_labels else None,
        data_source=data_source,
        files_sha256={SCORES: bytes_sha256(scores_text(int_labels, scores).encode())},
    )
    rd = RunDir(run_dir)
    with rd.lock():
        rd.write_scores(int_labels, scores)
        rd.write_record(record)  # written last, so present = complete
    return record


# What an external program's score column may be called: the name every table, figure and terminal line shows.
SCORE_COLUMN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}")


def read_score_table(path: str | Path) -> tuple[np.ndarray, dict[str, np.ndarray], list[str] | None]:
    """Read a program's CSV: a ``label`` column, optionally ``index`` and ``id``, the other columns scores.

    Returns ``(labels [M], {score: [M]}, ids or None)`` in ``index`` order.

    Raises:
        RecordError: no such file, no ``label`` column, no score column, a score column that is not numeric or
            whose name is no :data:`SCORE_COLUMN` (a terminal escape, Markdown, ``$\\foo$`` for matplotlib).
    """
    import pandas as pd  # lazy: pandas only when an external program's scores are read

    p = Path(path)
    if not p.is_file():
        raise RecordError(f"{p}: score file not found")
    table = pd.read_csv(p)
    if "label" not in table.columns:
        raise RecordError(f"{p}: needs a 'label' column (1 = anomaly, 0 = normal); has {list(table.columns)}")
    if "index" in table.columns:
        table = table.sort_values("index")
    names = [c for c in table.columns if c not in ("index", "label", "id")]
    if not names:
        raise RecordError(f"{p}: no score columns besides 'index', 'id' and 'label'")
    odd = [str(c) for c in names if not SCORE_COLUMN.fullmatch(str(c))]
    if odd:  # a column's name becomes a score's name in every table, figure and terminal line
        raise RecordError(
            f"{p}: score column {terminal_safe(odd[0])!r} is no score name (letters, digits and _ . + -, starting "
            f"with a letter, a digit or _, at most 64 characters). Fix: rename that column in the program's CSV"
        )
    bad = [c for c in names if not pd.api.types.is_numeric_dtype(table[c])]
    if bad:
        raise RecordError(f"{p}: score column(s) {bad} are not numeric")
    ids = table["id"].astype(str).tolist() if "id" in table.columns else None
    return table["label"].to_numpy(), {c: table[c].to_numpy(dtype=np.float64) for c in names}, ids


def method_card(label: str | None, score_labels: Mapping[str, str] | None, scores: Mapping[str, Any]) -> dict:
    """The record's ``method_card`` of an external method: its labels (as a registered spec's card)."""
    named = dict(score_labels or {})
    for option, value in [("label", label or ""), *((f"score label of {s}", v) for s, v in named.items())]:
        check_label(option, value)
    unknown = sorted(set(named) - set(scores))
    if unknown:
        raise RecordError(f"--score-label names no score column: {', '.join(unknown)}; scores: {', '.join(scores)}")
    card: dict[str, Any] = {"label": label} if label else {}
    return {**card, "score_labels": {s: named.get(s, s) for s in scores}}


def check_label(option: str, value: str) -> None:
    """Refuse a display name that could open a tag or a code span, or break a line, where it is shown
    (a table's Markdown and notes, the HTML report, a terminal), as a profile's text is refused
    (:func:`con2.grid.checks.check_profile_text`).

    Raises:
        RecordError: naming the option, the value and the character.
    """
    found = unsafe_text(value)
    if found:
        raise RecordError(
            f"{option}: {value[:80]!r} holds {found!r}: a label reaches the tables (Markdown), the report (HTML) "
            "and the terminal, so '<', '`' and control characters (line breaks, tabs) are refused. "
            "Fix: remove them from the label"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m con2.run.external", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scores", required=True, help="CSV with a 'label' column and one column per score")
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--normal-class", required=True)
    parser.add_argument("--method", required=True)
    parser.add_argument("--seed", type=int, required=True, help="the run's (training) seed; not the split seed")
    parser.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="data settings of the run (RunConfig keys), e.g. split_seed=0 image_size=28",
    )
    parser.add_argument(
        "--n-train", type=int, help="training images used (default: the harness's split, needs --data-dir)"
    )
    parser.add_argument("--variant", default="default")
    parser.add_argument("--fit-seconds", type=float, default=0.0)
    parser.add_argument("--score-seconds", type=float, default=0.0)
    parser.add_argument("--config-json", help="JSON file with the program's settings, stored in the record")
    parser.add_argument("--data-dir", help="check the labels against the harness's split of the dataset")
    parser.add_argument("--label", help="the method's display name in tables (default: --method)")
    parser.add_argument(
        "--score-label",
        nargs="*",
        default=[],
        metavar="SCORE=LABEL",
        help="a score's display name in tables, e.g. nnd=NND (default: the column's name)",
    )
    args = parser.parse_args(argv)
    try:
        for option, values in (("--label", [args.label or ""]), ("--score-label", args.score_label)):
            for value in values:
                check_label(option, value)
        labels, scores, ids = read_score_table(args.scores)
        cfg = dataclasses.replace(
            load_config(None, args.set),
            dataset=args.dataset,
            normal_class=str(args.normal_class),
            seed=args.seed,
            data_dir=args.data_dir or "data",
        )
        n_train, split_sha256, source = args.n_train, None, None
        if args.data_dir:
            data = load_run_data(cfg, verify=True)  # a new record: check the prepared cache
            manifest = data.manifest or {}
            where = (
                f"the harness's {args.dataset} split (normal class {args.normal_class}, split seed {cfg.split_seed}: "
                f"{len(data.test_labels)} test images)"
            )
            if not np.array_equal(np.asarray(data.test_labels), labels):
                raise RecordError(f"{args.scores}: labels differ from {where}; score that test set, in order")
            if ids is not None and ids != list(manifest.get("test_ids", ids)):
                raise RecordError(f"{args.scores}: ids differ from {where}; score that test set, in order")
            n_train = n_train or len(data.train)
            split_sha256 = manifest.get("split_sha256")
            source = data_source(manifest)
        if not n_train:
            raise RecordError("--n-train is required without --data-dir")
        config = json.loads(Path(args.config_json).read_text()) if args.config_json else {}
        record = write_external_run(
            args.run_dir,
            dataset=args.dataset,
            normal_class=args.normal_class,
            method=args.method,
            seed=args.seed,
            labels=labels,
            scores=scores,
            n_train=n_train,
            variant=args.variant,
            config=config,
            timing={
                "fit_seconds": args.fit_seconds,
                "score_seconds": args.score_seconds,
                "wall_seconds": args.fit_seconds + args.score_seconds,
            },
            split_seed=cfg.split_seed,
            split_sha256=split_sha256,
            label=args.label,
            score_labels=dict(item.partition("=")[::2] for item in args.score_label),
            data_source=source,
        )
    except (Con2Error, ValueError, OSError) as exc:
        message = write_failure(exc) if isinstance(exc, OSError) else None
        print(f"con2.run.external: error: {terminal_safe(str(message or exc))}", file=sys.stderr)
        return 2
    print(
        " ".join(f"AUROC[{k}]={v:.1f}" for k, v in record["metrics"]["auroc"].items()),
        "->",
        Path(args.run_dir) / RECORD,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
