"""CON2 and its self-supervised baselines side by side on one dataset, beside the paper's numbers.

Runs every (method, seed) through ``con2.runner.run`` with one shared budget (same config, seeds,
test-time views), skips runs whose record already exists, then prints mean +- std AUROC over
seeds per method/score with the paper's BreastMNIST numbers (Table 1) beside them::

    python benchmarks/compare_methods.py --data-dir ../shared/data --seeds 0 1 2 \
        --set epochs=64 width=32 --results results/compare_breastmnist

``--set KEY=VALUE`` applies to every method; ``--set METHOD:KEY=VALUE`` only to one (e.g.
``csi:params.samples=5``). A run directory is ``RESULTS/METHOD/seedS``; an unfinished run resumes
from its checkpoint, and a finished run whose config differs from the requested one is refused
(use a new ``--results`` folder).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from con2.config import RunConfig, load_config
from con2.records import read_record
from con2.runner import RECORD, run

# (row label, method, score, paper mean, paper std): BreastMNIST, Table 1 of Ryser et al. 2025.
ROWS: list[tuple[str, str, str, float | None, float | None]] = [
    ("SimCLR (+kNN)", "simclr", "knn", 74.7, 3.1),
    ("SSD", "simclr", "ssd", 44.6, 4.3),
    ("CSI", "csi", "csi", 77.3, 0.5),
    ("CON2 (S_NND)", "con2", "nnd", 81.7, 1.4),
    ("CON2 (S_LH)", "con2", "lh", None, None),
]
PAPER_DATASET = "breastmnist"


def method_overrides(sets: list[str], method: str) -> list[str]:
    """The ``--set`` entries that apply to ``method``: unscoped ones and ``method:``-scoped ones."""
    out = []
    for text in sets:
        scope, sep, rest = text.partition(":")
        if sep and "=" not in scope:
            if scope == method:
                out.append(rest)
        else:
            out.append(text)
    return out


def config_for(args: argparse.Namespace, method: str, seed: int) -> RunConfig:
    base = [f"dataset={args.dataset}", f"data_dir={args.data_dir}", f"method={method}", f"seed={seed}"]
    if args.normal_class is not None:
        base.append(f"normal_class={args.normal_class}")
    return load_config(args.config, base + method_overrides(args.set, method))


def run_all(args: argparse.Namespace) -> dict[tuple[str, int], dict[str, Any]]:
    """Run (or reuse) every method x seed; return the records."""
    records = {}
    for method in args.methods:
        for seed in args.seeds:
            cfg = config_for(args, method, seed)
            run_dir = Path(args.results) / method / f"seed{seed}"
            if (run_dir / RECORD).is_file():
                record = read_record(run_dir / RECORD)
                if record["config_hash"] != cfg.config_hash():
                    sys.exit(
                        f"{run_dir / RECORD} was written with another config (hash {record['config_hash']} != "
                        f"{cfg.config_hash()}); use another --results folder or delete that run"
                    )
                print(f"[skip] {method} seed {seed}: record exists", flush=True)
            else:
                t0 = time.perf_counter()
                print(f"[run]  {method} seed {seed} -> {run_dir}", flush=True)
                record = run(cfg, run_dir)
                aurocs = ", ".join(f"{k}={v:.1f}" for k, v in record["metrics"]["auroc"].items())
                print(f"       {aurocs} ({time.perf_counter() - t0:.0f}s)", flush=True)
            records[(method, seed)] = record
    return records


def mean_std(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}"


def table(records: dict[tuple[str, int], dict[str, Any]], methods: list[str], seeds: list[int], dataset: str) -> str:
    """Markdown table: method/score, our AUROC mean ± std over seeds, the paper's number, fit time."""
    paper = dataset == PAPER_DATASET
    lines = [
        f"| method | score | AUROC (ours, {len(seeds)} seed{'s' * (len(seeds) > 1)}) | paper{'' if paper else ' (BreastMNIST only)'} | fit s/run |",
        "|---|---|---|---|---|",
    ]
    rows = [r for r in ROWS if r[1] in methods]
    known = {(r[1], r[2]) for r in rows}
    for (method, _seed), record in sorted(records.items()):  # other methods and scores: no paper number
        for score in record["metrics"]["auroc"]:
            if (method, score) not in known:
                known.add((method, score))
                rows.append((method, method, score, None, None))
    for label, method, score, p_mean, p_std in rows:
        runs = [records[(method, s)] for s in seeds if (method, s) in records]
        values = [r["metrics"]["auroc"][score] for r in runs if score in r["metrics"]["auroc"]]
        fit = statistics.mean(r["timing"]["fit_seconds"] for r in runs) if runs else float("nan")
        ref = f"{p_mean:.1f} ± {p_std:.1f}" if (paper and p_mean is not None) else "-"
        lines.append(f"| {label} | {method}/{score} | {mean_std(values)} | {ref} | {fit:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--dataset", default=PAPER_DATASET)
    parser.add_argument("--normal-class", default=None, help="default: the dataset's (BreastMNIST: 1 = normal/benign)")
    parser.add_argument("--methods", nargs="+", default=["con2", "simclr", "csi"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--config", help="YAML run config applied to every method before --set")
    parser.add_argument("--set", nargs="*", default=[], metavar="[METHOD:]KEY=VALUE")
    parser.add_argument("--results", default="results/compare_methods")
    parser.add_argument("--out", help="also write the Markdown table here")
    args = parser.parse_args(argv)
    records = run_all(args)
    text = table(records, args.methods, args.seeds, args.dataset)
    example = next(iter(records.values()))["config"]
    header = (
        f"{args.dataset} (normal class {next(iter(records.values()))['normal_class']}, test split), seeds {args.seeds}; "
        f"shared budget: epochs={example['epochs']} max_steps={example['max_steps']} batch_size={example['batch_size']} "
        f"image_size={example['image_size']} width={example['width']} tta={example['tta']}; std over seeds (n-1)"
    )
    print()
    print(header)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(header + "\n\n" + text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
