"""AUROC per normal class of one dataset (one table per dataset of ``report.per_class``)."""

from __future__ import annotations

import numpy as np

from con2.aggregate.runs_csv import summarize
from con2.paper_names import dataset_label
from con2.report.artefacts import ReportInputs
from con2.report.format import MISSING, Table, cell
from con2.report.select import absent_notes, class_sort_key, headline, main_runs, report_block, with_best


def per_class(inputs: ReportInputs) -> Table:
    """AUROC per normal class of one dataset, each method's main variant (mean ± std over seeds), and
    CON2 (Best) (``report.best_variant``) as a method of its own."""
    dataset = inputs.dataset
    inputs = with_best(inputs)
    runs, config, names = headline(inputs.frame("runs")), inputs.config, inputs.names
    rep = report_block(config)
    sel = main_runs(runs[runs["dataset"] == dataset], rep) if not runs.empty else runs
    summ = summarize(sel, keys=["normal_class", "method", "score"])
    pairs = sorted(dict.fromkeys(zip(summ["method"], summ["score"])), key=lambda p: names.pair_key(*p))
    classes = sorted(dict.fromkeys(summ["normal_class"]), key=class_sort_key)
    rows = []
    for c in classes:
        cells = []
        for m, s in pairs:
            hit = summ[(summ["normal_class"] == c) & (summ["method"] == m) & (summ["score"] == s)]
            cells.append(
                cell(hit["mean"].iloc[0], hit["std"].iloc[0], 1, int(hit["n"].iloc[0])) if len(hit) else MISSING
            )
        rows.append([c, *cells])
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
            *(absent_notes([dataset], config, inputs.status) if summ.empty else []),
        ],
    )
