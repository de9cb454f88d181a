"""A stand-in external anomaly detector: cosine nearest-neighbour distance on raw pixels.

It plays the part of a program outside the harness (no torch, no registry): it writes a CSV with
``id``, ``label`` and one score column, which ``python -m con2.run.external`` turns into a run
record (see ``pixel_nn.smk`` beside this file). It is also a useful floor: on BreastMNIST raw
pixels give AUROC 70.6 (shared/data/README.md). A real external program reads its own copy of the
images, and must score the harness's test set in the harness's order (``--data-dir`` checks it):
the split is fixed by the split seed (``--set split_seed=K``, default 0), never by the training
seed, so every seed of a run scores the same test images as CON2's runs do.

    python baselines/examples/pixel_nn.py --data-dir ../shared/data --dataset breastmnist \
        --normal-class 1 --set split_seed=0 image_size=28 --out raw_scores.csv
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
from pathlib import Path

import numpy as np


def pixel_nn_scores(train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """``-max cos`` of flattened test images ``[M, ...]`` to the training images ``[n, ...]`` -> ``[M]``."""
    tr = train.reshape(len(train), -1).astype(np.float64)
    te = test.reshape(len(test), -1).astype(np.float64)
    tr /= np.linalg.norm(tr, axis=1, keepdims=True).clip(1e-12)
    te /= np.linalg.norm(te, axis=1, keepdims=True).clip(1e-12)
    return -(te @ tr.T).max(1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--normal-class", required=True)
    parser.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="data settings of the run (RunConfig keys), e.g. split_seed=0 image_size=28",
    )
    parser.add_argument("--out", required=True, help="CSV to write: index, id, label, nnd")
    args = parser.parse_args(argv)
    from con2.config import load_config  # lazy: only to get the harness's split of the images, after the arguments
    from con2.data.rundata import load_run_data  # lazy: torch and the data, after the arguments

    cfg = dataclasses.replace(
        load_config(None, args.set), dataset=args.dataset, normal_class=str(args.normal_class), data_dir=args.data_dir
    )
    data = load_run_data(cfg)
    ids = (data.manifest or {})["test_ids"]
    scores = pixel_nn_scores(np.asarray(data.train), np.asarray(data.test))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["index", "id", "label", "nnd"])
        for i, (sid, y, s) in enumerate(zip(ids, data.test_labels, scores, strict=True)):
            writer.writerow([i, sid, int(y), f"{s:.8g}"])


if __name__ == "__main__":
    main()
