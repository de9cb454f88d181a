"""The method x dataset tables: Table 1 (medical) and the natural-image summary, ours beside the paper's.

Rows: our methods (main variants, the subject first) each followed by the paper's row, then the
paper-only rows; columns: the group's datasets (:func:`method_table`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from con2.paper_names import dataset_label, dataset_names
from con2.report.artefacts import ReportInputs
from con2.report.budget import budget_note
from con2.report.comparisons import floor_marks, holding_marks, mark_note
from con2.report.format import CELL_NOTE, Table, cell, shown_diff
from con2.report.methods import Methods
from con2.report.paper import disagreement_notes, external_code_notes, paper_value, reference_note
from con2.report.select import (
    absent_notes,
    classes_text,
    headline,
    level_stats,
    lookup_stat,
    main_context,
    main_runs,
    main_variant,
    missing_weights_notes,
    ordered_datasets,
    report_block,
    stale_data_notes,
    with_best,
)


def _paper_label(pm: str, ps: str) -> str:
    return f"{pm} ({ps})" if ps else pm


EASY_WITHIN = 2.0  # a floor this close to 100 leaves no room to rank methods


def floor_notes(level: pd.DataFrame, pairs: list[tuple[str, str]], names: Methods, cols: list[str]) -> list[str]:
    """One line per dataset whose floor (``report.floors``, no training) is not beaten by any other method's
    mean, or lies within :data:`EASY_WITHIN` points of 100 (the dataset cannot rank methods)."""
    notes = []
    for d in cols:
        means = [(lookup_stat(level, dataset=d, method=m, score=s).mean, m, s) for m, s in pairs]
        floor = [x for x in means if x[1] in names.floors and np.isfinite(x[0])]
        others = [x for x in means if x[1] not in names.floors and np.isfinite(x[0])]
        if not floor:
            continue
        top_floor = max(floor)
        label = names.pair_label(top_floor[1], top_floor[2])
        if top_floor[0] >= 100.0 - EASY_WITHIN:
            notes.append(
                f"{dataset_label(d)}: too easy to rank methods: the floor ({label}, no training) scores "
                f"{top_floor[0]:.1f}, within {EASY_WITHIN:g} points of 100."
            )
        elif others and max(others)[0] <= top_floor[0]:
            best = max(others)
            notes.append(
                f"{dataset_label(d)}: floor not beaten: the best other method, {names.pair_label(best[1], best[2])} "
                f"{best[0]:.1f}, is not above the floor ({label}, no training) {top_floor[0]:.1f}."
            )
    return notes


def _empty_ours(dataset: str) -> dict[str, Any]:
    """A CSV row of a published number that has no run of ours (a paper-only or another source's row)."""
    return {
        "dataset": dataset,
        "method": "",
        "score": "",
        "variant": "",
        "ours_mean": np.nan,
        "ours_std": np.nan,
        "ours_n": 0,
        "ours_over": "",
        "ours_lo": np.nan,
        "ours_hi": np.nan,
        "holds": False,
        "beats_floor": False,
        "diff": np.nan,
    }


def reference_rows(references: pd.DataFrame | None, paper_datasets: list[str]) -> pd.DataFrame:
    """The rows of ``references`` (other sources' published numbers) on these datasets (the paper's names)."""
    if references is None or references.empty:
        return pd.DataFrame(columns=["source", "method", "dataset", "auroc_mean", "auroc_std"])
    return references[references["dataset"].isin(paper_datasets)]


def method_table(
    inputs: ReportInputs,
    name: str,
    title: str,
    datasets: list[str],
    paper_table: str | None,
    references: pd.DataFrame | None = None,
) -> Table:
    """Rows: our methods (main variants, the subject first) each followed by the paper's row; then
    paper-only rows; then other sources' published numbers on these datasets (``references``: each row
    names its source, e.g. CSI's repository), never mixed with the paper's.

    Columns: the group's datasets (the paper's order first). Numbers are dataset-level means; each
    of our cells says over how many normal classes and seeds, and a note names every column whose
    methods ran different classes (compare those across rows in ``per_class_<dataset>``). A method
    of the profile's experiments that has no run because its pretrained weights are missing is
    named in a note with how to get them, and a dataset without runs with why (:func:`absent_notes`).
    """
    runs, paper, config, status = headline(inputs.frame("runs")), inputs.frame("paper"), inputs.config, inputs.status
    scores, names = inputs.score_source(), inputs.names
    rep = report_block(config)
    paper_context = main_context(rep, inputs.subject)
    dmap = dataset_names(config)
    inv_d = {v: k for k, v in dmap.items()}
    psel = paper[paper["table"] == paper_table] if paper_table else paper.iloc[0:0]
    paper_ds = [inv_d.get(d, d) for d in dict.fromkeys(psel["dataset"])]
    ours = main_runs(runs[runs["dataset"].isin(datasets)], rep) if not runs.empty else runs
    cols = ordered_datasets(list(dict.fromkeys([*paper_ds, *datasets])), paper_ds, datasets)
    level = level_stats(ours, ["dataset", "method", "score"])
    pairs = sorted(dict.fromkeys(zip(level["method"], level["score"])), key=lambda p: names.pair_key(*p))
    rows, data, midrules, used_paper = [], [], [], set()
    intervals = bool(rep.get("intervals"))
    marks = holding_marks(ours, config, cols, scores, names)
    above_floor, floor_note = floor_marks(ours, config, cols, scores, names)

    def paper_cell(pm: str, ps: str, d: str) -> tuple[float, float] | None:
        return paper_value(psel, None, dmap.get(d, d), pm, ps, paper_context if ps else "")

    for m, s in pairs:
        cells = []
        target = names.paper_row(m, s)
        for d in cols:
            st = lookup_stat(level, dataset=d, method=m, score=s)
            pv = paper_cell(*target, d) if target else None
            cells.append(st.text(interval=intervals) + marks.get((d, m, s), "") + above_floor.get((d, m, s), ""))
            data.append(
                {
                    "dataset": d,
                    "method": m,
                    "score": s,
                    "variant": main_variant(rep, m),
                    "ours_mean": st.mean,
                    "ours_std": st.std,
                    "ours_n": st.n,
                    "ours_over": st.over,
                    "ours_lo": st.lo,
                    "ours_hi": st.hi,
                    "holds": bool(marks.get((d, m, s))),
                    "beats_floor": bool(above_floor.get((d, m, s))),
                    "paper_method": _paper_label(*target) if target else "",
                    "paper_mean": pv[0] if pv else np.nan,
                    "paper_std": pv[1] if pv else np.nan,
                    "diff": shown_diff(st.mean, pv[0]) if pv else np.nan,
                }
            )
        rows.append([names.pair_label(m, s), "ours", *cells])
        if target and any(paper_cell(*target, d) for d in cols):
            rows.append(
                [
                    _paper_label(*target),
                    "paper",
                    *[cell(*(paper_cell(*target, d) or (np.nan, np.nan)), 0, 0) for d in cols],
                ]
            )
            used_paper.add(target[0])
    if len(psel):
        midrules.append(len(rows))
    for pm in dict.fromkeys(psel["method"]):
        if pm in used_paper:
            continue
        fam = psel.loc[psel["method"] == pm, "family"].iloc[0]
        cells = []
        for d in cols:
            pv = paper_value(psel, None, dmap.get(d, d), pm)
            cells.append(cell(*(pv or (np.nan, np.nan)), 0, 0))
            if pv:
                data.append({**_empty_ours(d), "paper_method": pm, "paper_mean": pv[0], "paper_std": pv[1]})
        rows.append([pm, f"paper ({fam})" if fam else "paper", *cells])
    shown_refs = reference_rows(references, [dmap.get(d, d) for d in cols])
    if not shown_refs.empty:
        midrules.append(len(rows))
    for (source, method), ref in shown_refs.groupby(["source", "method"], sort=False):
        cells = []
        for d in cols:
            hit = ref[ref["dataset"] == dmap.get(d, d)]
            mean, std = (
                (float(hit["auroc_mean"].iloc[0]), float(hit["auroc_std"].iloc[0])) if len(hit) else (np.nan, np.nan)
            )
            cells.append(cell(mean, std, 0, 0))
            if len(hit):
                data.append(
                    {**_empty_ours(d), "paper_method": method, "paper_mean": mean, "paper_std": std, "source": source}
                )
        rows.append([method, source, *cells])
    notes = [
        f"AUROC (%), mean ± std; {CELL_NOTE} Paper: as published (3 seeds; over every normal class).",
        "Ours use each method's main variant "
        f"({', '.join(f'{m}: {main_variant(rep, m)}' for m in dict.fromkeys(m for m, _ in pairs)) or 'none run'}).",
    ]
    if not ours.empty:
        notes.append(budget_note(ours, names, rep))
    if intervals:
        notes.append("(a–b): the 95% t-interval of our mean over seeds (report.intervals; none with one seed).")
    if marks:
        notes.append(mark_note(config, ours, names))
    if floor_note:
        notes.append(floor_note)
    for d in cols:
        classes = {
            m: frozenset(ours.loc[(ours["dataset"] == d) & (ours["method"] == m), "normal_class"]) for m, _ in pairs
        }
        classes = {m: c for m, c in classes.items() if c}
        if len(set(classes.values())) > 1:
            spread = "; ".join(f"{names.label(m)} {classes_text(list(c))}" for m, c in classes.items())
            notes.append(
                f"{dataset_label(d)}: the methods ran different normal classes ({spread}): compare them per class in "
                f"per_class_{d} (where that table exists), not across these rows."
            )
    notes += floor_notes(level, pairs, names, cols)
    if "pneumoniamnist" in cols and "pneumonia" in cols:  # two columns a reader takes for one
        notes.append(
            "PneumoniaMNIST (ours) is MedMNIST's 28 px version of the chest X-rays behind the paper's Pneumonia "
            "(Kaggle's originals, 224 px), with MedMNIST's own split: not the paper's test set, so its own column."
        )
    notes += absent_notes([d for d in cols if d not in set(ours["dataset"])], config, status)
    notes += stale_data_notes([d for d in cols if d in set(ours["dataset"])], status)
    notes += missing_weights_notes(config, runs, cols, names)
    notes += external_code_notes(m for m in psel["method"] if m not in used_paper)
    notes += disagreement_notes(paper, psel[psel["dataset"].isin([dmap.get(d, d) for d in cols])])
    if not shown_refs.empty:
        notes.append(reference_note(shown_refs))
    frame = pd.DataFrame(
        [{"source": "paper", **row} for row in data],  # the published number's source: the paper, unless named
        columns=[
            "dataset",
            "method",
            "score",
            "variant",
            "ours_mean",
            "ours_std",
            "ours_n",
            "ours_over",
            "ours_lo",
            "ours_hi",
            "holds",
            "paper_method",
            "paper_mean",
            "paper_std",
            "diff",
            "source",
        ],
    )
    return Table(name, title, ["Method", "Source", *[dataset_label(d) for d in cols]], rows, frame, notes, midrules)


def table1_medical(inputs: ReportInputs) -> Table:
    """Table 1: AUROC on the medical datasets, every method, the paper's numbers beside ours."""
    return method_table(
        inputs,
        "table1_medical",
        "Medical anomaly detection: AUROC (%), ours beside the paper's Table 1",
        list(report_block(inputs.config)["medical"]),
        "table1_medical",
    )


def natural_summary(inputs: ReportInputs) -> Table:
    """Natural-image summary: AUROC per dataset (mean over normal classes), the paper's beside ours
    (and CON2 (Best), ``report.best_variant``, as a row of its own), then other sources' published
    numbers (``references``: CSI's repository's SimCLR, Rot+Trans and CSI on CIFAR-10)."""
    inputs = with_best(inputs)
    return method_table(
        inputs,
        "natural_summary",
        "Natural images: AUROC (%) averaged over normal classes, ours beside the paper's",
        list(report_block(inputs.config)["natural"]),
        "table_all_contexts_natural",
        inputs.references,
    )
