"""Turn an external program's per-sample scores into a standard run directory.

An external anomaly detector (any language, any framework) joins every table by leaving the same
two files a registered method leaves: ``scores.csv`` (index, label, one column per score; higher =
more anomalous) and ``record.json`` (validated against :data:`con2.records.RECORD_SCHEMA`, the one
place the schema lives). The program only has to write a CSV with a ``label`` column (1 = anomaly,
0 = normal) and one or more score columns; this module computes the AUROCs and writes the record::

    python -m baselines.external --scores raw_scores.csv --run-dir results/runs/.../seed0 \
        --dataset breastmnist --normal-class 1 --method patchcore --seed 0 --n-train 399

With ``--data-dir`` the labels are checked against the harness's own split of that dataset, so a
program that scored another test set is refused instead of joining the tables.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from con2.data import DataError
from con2.metrics import auroc
from con2.records import SCHEMA_VERSION, RecordError, write_record

RECORD, SCORES = "record.json", "scores.csv"


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
) -> dict[str, Any]:
    """Write ``scores.csv`` and a validated ``record.json`` for one external run; return the record.

    Args:
        labels: ``[M]`` test labels, 1 = anomaly, 0 = normal.
        scores: score name -> ``[M]`` per-sample scores, higher = more anomalous.
        n_train: number of normal training images the program used.
        config: the program's settings (stored, and hashed into ``config_hash``).
        timing: ``fit_seconds``, ``score_seconds``, ``wall_seconds`` (missing ones are 0).
        extras: further scalar metrics (e.g. ``silhouette``).
    """
    run_dir = Path(run_dir)
    labels = np.asarray(labels).astype(np.int64)
    if not scores:
        raise RecordError(f"{run_dir / RECORD}: no score columns given")
    for name, s in scores.items():
        if np.shape(s) != labels.shape:
            raise RecordError(f"{run_dir / RECORD}: score {name!r} has shape {np.shape(s)}, labels {labels.shape}")
    config = {"method": method, "dataset": dataset, "normal_class": normal_class, "seed": seed, **(config or {})}
    times = {"fit_seconds": 0.0, "score_seconds": 0.0, "wall_seconds": 0.0, **(timing or {})}
    record = {
        "schema_version": SCHEMA_VERSION,
        "dataset": dataset,
        "normal_class": str(normal_class),
        "method": method,
        "variant": variant,
        "seed": int(seed),
        "metrics": {"auroc": {k: auroc(labels, np.asarray(v)) for k, v in scores.items()}, **(extras or {})},
        "timing": {k: float(v) for k, v in times.items()},
        "peak_memory_mb": None,
        "n_train": int(n_train),
        "n_test": int(len(labels)),
        "n_anomalous": int(labels.sum()),
        "config": config,
        "config_hash": hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16],
        "git_commit": None,
        "device": device,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    table = pd.DataFrame({"index": np.arange(len(labels)), "label": labels, **{k: np.asarray(v) for k, v in scores.items()}})
    tmp = run_dir / (SCORES + ".tmp")
    tmp.write_text(table.to_csv(index=False))
    os.replace(tmp, run_dir / SCORES)
    write_record(record, run_dir / RECORD)  # validates; written last, so present = complete
    return record


def read_score_table(path: str | Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Read a program's CSV: a ``label`` column, optionally ``index``, the other columns scores."""
    p = Path(path)
    if not p.is_file():
        raise RecordError(f"{p}: score file not found")
    table = pd.read_csv(p)
    if "label" not in table.columns:
        raise RecordError(f"{p}: needs a 'label' column (1 = anomaly, 0 = normal); has {list(table.columns)}")
    if "index" in table.columns:
        table = table.sort_values("index")
    names = [c for c in table.columns if c not in ("index", "label")]
    if not names:
        raise RecordError(f"{p}: no score columns besides 'index' and 'label'")
    bad = [c for c in names if not pd.api.types.is_numeric_dtype(table[c])]
    if bad:
        raise RecordError(f"{p}: score column(s) {bad} are not numeric")
    return table["label"].to_numpy(), {c: table[c].to_numpy(dtype=np.float64) for c in names}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m baselines.external", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scores", required=True, help="CSV with a 'label' column and one column per score")
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--normal-class", required=True)
    parser.add_argument("--method", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--n-train", type=int, help="training images used (default: the harness's split, needs --data-dir)")
    parser.add_argument("--variant", default="default")
    parser.add_argument("--fit-seconds", type=float, default=0.0)
    parser.add_argument("--score-seconds", type=float, default=0.0)
    parser.add_argument("--config-json", help="JSON file with the program's settings, stored in the record")
    parser.add_argument("--data-dir", help="check the labels against the harness's split of the dataset")
    args = parser.parse_args(argv)
    try:
        labels, scores = read_score_table(args.scores)
        n_train = args.n_train
        if args.data_dir:
            from con2.data import load_one_class

            data = load_one_class(args.dataset, args.data_dir, args.normal_class, seed=args.seed)
            if not np.array_equal(np.asarray(data.test_labels), labels):
                raise RecordError(
                    f"{args.scores}: labels differ from the harness's {args.dataset} split (normal class "
                    f"{args.normal_class}, seed {args.seed}: {len(data.test_labels)} test images); score that test set, in order"
                )
            n_train = n_train or len(data.train)
        if not n_train:
            raise RecordError("--n-train is required without --data-dir")
        config = json.loads(Path(args.config_json).read_text()) if args.config_json else {}
        record = write_external_run(
            args.run_dir, dataset=args.dataset, normal_class=args.normal_class, method=args.method, seed=args.seed,
            labels=labels, scores=scores, n_train=n_train, variant=args.variant, config=config,
            timing={"fit_seconds": args.fit_seconds, "score_seconds": args.score_seconds,
                    "wall_seconds": args.fit_seconds + args.score_seconds},
        )
    except (RecordError, DataError, ValueError, OSError) as exc:
        print(f"baselines.external: error: {exc}", file=sys.stderr)
        return 2
    print(" ".join(f"AUROC[{k}]={v:.1f}" for k, v in record["metrics"]["auroc"].items()), "->", Path(args.run_dir) / RECORD)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
