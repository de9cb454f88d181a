"""AUROC per normal class of one dataset (one table per dataset of ``report.per_class``).

A class run with several seeds has a second row, its seed-0 runs alone, and the CSV a column ``auroc_seed0``:
a newcomer's first run is seed 0, and a 3-seed mean is no number to compare it with (issue 58, item 6)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from con2.aggregate.runs_csv import summarize
from con2.paper_names import dataset_label
from con2.report.artefacts import ReportInputs
from con2.report.format import MISSING, Table, cell
from con2.report.notes import absent_notes
from con2.report.select import class_sort_key, headline, main_runs, report_block, with_best

SEED0 = 0  # the seed every grid runs first (a profile's `seeds`, default [0]): a one-seed run is this one


def seed0_aurocs(sel: pd.DataFrame) -> dict[tuple[str, str, str], float]:
    """``{(normal class, method, score): AUROC}`` of the seed-0 runs of ``sel`` (the table's runs)."""
    if sel.empty or "seed" not in sel.columns:
        return {}
    zero = sel[(pd.to_numeric(sel["seed"], errors="coerce") == SEED0) & sel["auroc"].notna()]
    return {
        (str(c), str(m), str(s)): float(a)
        for c, m, s, a in zip(*(zero[k] for k in ("normal_class", "method", "score", "auroc")))
    }


def per_class(inputs: ReportInputs) -> Table:
    """AUROC per normal class of one dataset, each method's main variant (mean ± std over seeds), and
    CON2 (Best) (``report.best_variant``) as a method of its own; under a class with several seeds, its
    seed-0 row (each seed-0 run's AUROC, ``[1×1]``), and the CSV's ``auroc_seed0``."""
    dataset = inputs.dataset
    inputs = with_best(inputs)
    runs, config, names = headline(inputs.frame("runs")), inputs.config, inputs.names
    rep = report_block(config)
    sel = main_runs(runs[runs["dataset"] == dataset], rep) if not runs.empty else runs
    summ = summarize(sel, keys=["normal_class", "method", "score"])
    pairs = sorted(dict.fromkeys(zip(summ["method"], summ["score"])), key=lambda p: names.pair_key(*p))
    classes = sorted(dict.fromkeys(summ["normal_class"]), key=class_sort_key)
    zero = seed0_aurocs(sel)
    rows = []
    for c in classes:
        cells = []
        for m, s in pairs:
            hit = summ[(summ["normal_class"] == c) & (summ["method"] == m) & (summ["score"] == s)]
            cells.append(
                cell(hit["mean"].iloc[0], hit["std"].iloc[0], 1, int(hit["n"].iloc[0])) if len(hit) else MISSING
            )
        rows.append([c, *cells])
        several = (summ["normal_class"] == c) & (summ["n"] > 1)
        seed0 = [zero.get((str(c), str(m), str(s))) for m, s in pairs]
        if several.any() and any(v is not None for v in seed0):
            rows.append([f"{c} (seed {SEED0})", *(MISSING if v is None else cell(v, None, 1, 1) for v in seed0)])
    if classes:
        last = []
        for m, s in pairs:
            g = summ[(summ["method"] == m) & (summ["score"] == s)]
            std = g["mean"].std(ddof=1) if len(g) > 1 else np.nan
            last.append(cell(g["mean"].mean(), std, len(g), int(g["n"].min()), int(g["n"].max())))
        rows.append(["mean", *last])
    seeds = sorted({int(n) for n in summ["n"]}) if not summ.empty else []
    if not seeds:
        over = "no runs"
    elif seeds == [1]:
        over = "one seed per class, so a class's cell is that run's AUROC ([1×1]) and has no ±"
    else:
        span = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
        over = (
            f"a class's cell is the mean ± std of its {span} seeds ([1×s]; the mean alone where a class has one seed)"
        )
    frame = summ.rename(columns={"mean": "auroc_mean", "std": "auroc_std"})
    frame["auroc_seed0"] = [
        zero.get((str(c), str(m), str(s)), np.nan)
        for c, m, s in zip(frame["normal_class"], frame["method"], frame["score"])
    ]
    frame.insert(0, "dataset", dataset)
    # the figure of this table reads its series' labels and order from here
    frame["label"] = [names.pair_label(m, s) for m, s in zip(frame["method"], frame["score"])]
    frame["series"] = [pairs.index((m, s)) for m, s in zip(frame["method"], frame["score"])]
    return Table(
        f"per_class_{dataset}",
        f"{dataset_label(dataset)}: AUROC (%) per normal class",
        ["Normal class", *[names.pair_label(m, s) for m, s in pairs]],
        rows,
        frame,
        [
            f"One-vs-rest: the class is normal, every other test image anomalous; {over}. Last row: the mean over the "
            "c classes a method ran, ± the std of the class means ([c×s]).",
            *(
                [
                    f"A class run with several seeds has a second row, '<class> (seed {SEED0})': each method's "
                    f"seed-{SEED0} run alone ([1×1]), what a one-seed run of that class compares with (the CSV: "
                    f"auroc_seed{SEED0})."
                ]
                if any(str(r[0]).endswith(f" (seed {SEED0})") for r in rows)
                else []
            ),
            *(absent_notes([dataset], config, inputs.status) if summ.empty else []),
        ],
    )
