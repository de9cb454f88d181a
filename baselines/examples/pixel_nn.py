"""A stand-in external anomaly detector: cosine nearest-neighbour distance on raw pixels.

It plays the part of a program outside the harness (no torch, no registry): it writes a CSV with
a ``label`` column and one score column, which ``python -m baselines.external`` turns into a run
record (see ``pixel_nn.smk`` beside this file). It is also a useful floor: on BreastMNIST raw
pixels give AUROC 70.6 (shared/data/README.md). A real external program reads its own copy of the
images, and must score the harness's test set in the harness's order (``--data-dir`` checks it).

    python baselines/examples/pixel_nn.py --data-dir ../shared/data --dataset breastmnist \
        --normal-class 1 --seed 0 --out raw_scores.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def pixel_nn_scores(train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """``-max cos`` of flattened test images ``[M, ...]`` to the training images ``[n, ...]`` -> ``[M]``."""
    tr = train.reshape(len(train), -1).astype(np.float64)
    te = test.reshape(len(test), -1).astype(np.float64)
    tr /= np.linalg.norm(tr, axis=1, keepdims=True).clip(1e-12)
    te /= np.linalg.norm(te, axis=1, keepdims=True).clip(1e-12)
    return -(te @ tr.T).max(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--normal-class", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="CSV to write: index, label, nnd")
    args = parser.parse_args()
    from con2.data import load_one_class  # only to get the harness's split of the images

    data = load_one_class(args.dataset, args.data_dir, args.normal_class, seed=args.seed)
    scores = pixel_nn_scores(np.asarray(data.train), np.asarray(data.test))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = ["index,label,nnd"] + [f"{i},{int(y)},{s:.8g}" for i, (y, s) in enumerate(zip(data.test_labels, scores))]
    out.write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
