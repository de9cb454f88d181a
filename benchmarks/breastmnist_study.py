"""CON2 on the real BreastMNIST (28 px, normal = label 1, test split): the numbers of the core issue.

Runs through ``con2.run.runner.run`` into ``--out`` (one run directory each; finished runs are reused,
interrupted ones resume) and prints:

1. AUROC of S_NND and S_LH, mean ± std over seeds, at the given budget, beside the paper's 81.7
   and the raw-pixel floor (70.6, recomputed here);
2. the silhouette of test representations labelled by context;
3. the same models scored with the identity view only (no test-time augmentation);
4. with ``--curve E1 E2 ...``: a learning curve for seed 0 at those epoch budgets.

Example (the default profile's budget)::

    python benchmarks/breastmnist_study.py --data-dir ../shared/data --seeds 0 1 2 \
        --set width=16 epochs=30 --curve 8 32 128 512
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np
import torch

from con2.config import load_config
from con2.data import load_one_class
from con2.maths.metrics import auroc
from con2.maths.scores import nnd_scores
from con2.report.paper import load_paper_numbers, paper_value
from con2.run.records import read_record
from con2.run.runner import RECORD, rescore, run

PAPER_NUMBERS = Path(__file__).resolve().parents[1] / "con2" / "resources" / "paper_numbers.csv"


def paper_con2() -> float:
    """The paper's CON2 (NND, invert) on BreastMNIST, from the paper-numbers table."""
    hit = paper_value(load_paper_numbers(PAPER_NUMBERS), "table1_medical", "BreastMNIST", "CON2", "NND", "invert")
    assert hit is not None, f"no CON2 BreastMNIST row in {PAPER_NUMBERS}"
    return hit[0]


def raw_pixel_floor(data_dir: str) -> float:
    data = load_one_class("breastmnist", data_dir, size=28)
    flat = lambda a: torch.tensor(a.reshape(len(a), -1), dtype=torch.float64)
    return auroc(data.test_labels, nnd_scores(flat(data.test), flat(data.train)).numpy())


def one(cfg_overrides: list[str], run_dir: Path, no_tta: bool = False) -> dict:
    if (run_dir / RECORD).exists():
        return read_record(run_dir / RECORD)
    cfg = load_config(None, cfg_overrides)
    return rescore(cfg, run_dir) if no_tta else run(cfg, run_dir)  # no_tta: the trained model scored again


def fmt(values: list[float]) -> str:
    return f"{np.mean(values):5.1f} ± {np.std(values):4.1f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", default="../shared/data")
    p.add_argument("--out", default="results/studies/breastmnist")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--set", nargs="*", default=[], help="RunConfig overrides for every run (the budget)")
    p.add_argument("--curve", type=int, nargs="*", default=[], help="epoch budgets for the seed-0 learning curve")
    a = p.parse_args()
    base = ["dataset=breastmnist", f"data_dir={Path(a.data_dir).resolve()}", "image_size=28", "progress=false", *a.set]
    tag = "_".join(s.replace("=", "-").replace(".", "") for s in a.set) or "default"
    out = Path(a.out) / tag

    rows: dict[str, list[float]] = {
        "nnd": [],
        "lh": [],
        "silhouette": [],
        "nnd_no_tta": [],
        "lh_no_tta": [],
        "fit_s": [],
    }
    for seed in a.seeds:
        rec = one([*base, f"seed={seed}"], out / f"seed{seed}")
        notta_dir = out / f"seed{seed}_no_tta"
        if not (notta_dir / RECORD).exists():
            notta_dir.mkdir(parents=True, exist_ok=True)
            shutil.copy2(out / f"seed{seed}" / "checkpoint.pt", notta_dir / "checkpoint.pt")
        rec0 = one([*base, f"seed={seed}", "tta=0"], notta_dir, no_tta=True)
        rows["nnd"].append(rec["metrics"]["auroc"]["nnd"])
        rows["lh"].append(rec["metrics"]["auroc"]["lh"])
        rows["silhouette"].append(rec["metrics"]["silhouette"])
        rows["nnd_no_tta"].append(rec0["metrics"]["auroc"]["nnd"])
        rows["lh_no_tta"].append(rec0["metrics"]["auroc"]["lh"])
        rows["fit_s"].append(rec["timing"]["fit_seconds"] + rec["timing"]["score_seconds"])
        print(
            f"seed {seed}: NND {rows['nnd'][-1]:.1f}  LH {rows['lh'][-1]:.1f}  silhouette "
            f"{rows['silhouette'][-1]:.3f}  "
            f"no-TTA NND {rows['nnd_no_tta'][-1]:.1f}  ({rows['fit_s'][-1]:.0f} s)",
            flush=True,
        )

    floor = raw_pixel_floor(a.data_dir)
    print(f"\nBreastMNIST, CON2 (invert), budget: {' '.join(a.set) or 'RunConfig defaults'}; seeds {a.seeds}")
    print("| score | ours (mean ± std) | paper | raw-pixel floor |")
    print("|---|---|---|---|")
    paper = paper_con2()
    print(f"| S_NND, {load_config(None, base).tta} TTA | {fmt(rows['nnd'])} | {paper} | {floor:.1f} |")
    print(f"| S_LH, {load_config(None, base).tta} TTA | {fmt(rows['lh'])} | {paper} | {floor:.1f} |")
    print(f"| S_NND, identity view | {fmt(rows['nnd_no_tta'])} | | |")
    print(f"| S_LH, identity view | {fmt(rows['lh_no_tta'])} | | |")
    print(f"silhouette (test, by context): {np.mean(rows['silhouette']):.3f} ± {np.std(rows['silhouette']):.3f}")
    print(f"wall time per run (train + score): {np.mean(rows['fit_s']):.0f} s")

    if a.curve:
        print("\nLearning curve (seed 0):")
        print("| epochs | S_NND | S_LH | silhouette | train+score s |")
        print("|---|---|---|---|---|")
        for epochs in a.curve:
            rec = one([*base, "seed=0", f"epochs={epochs}"], Path(a.out) / "curve" / f"{tag}_epochs{epochs}")
            m = rec["metrics"]
            print(
                f"| {epochs} | {m['auroc']['nnd']:.1f} | {m['auroc']['lh']:.1f} | {m['silhouette']:.3f} | "
                f"{rec['timing']['fit_seconds'] + rec['timing']['score_seconds']:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
