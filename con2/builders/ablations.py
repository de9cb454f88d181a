"""The subject's ablations (``report.subject``): its scores side by side, the loss ablation, the
context tables (alternative contexts on the medical datasets, all contexts on the natural ones)
and the number of contexts k. Each sets cells of one run family side by side, like with like
(:func:`~con2.report.select.like_with_like`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from con2.paper_names import dataset_label, dataset_names
from con2.report.artefacts import ReportInputs
from con2.report.format import CELL_NOTE, Table, cell, shown_diff, signed
from con2.report.paper import disagreement_notes, paper_row, paper_value
from con2.report.select import (
    headline,
    level_stats,
    like_with_like,
    lookup_stat,
    main_context,
    main_runs,
    ordered_datasets,
    report_block,
)


def _no_subject(name: str, title: str, columns: list[str]) -> Table:
    note = "report.subject is not set: no method to tabulate (set it to the method the paper is about)."
    return Table(name, title, columns, [], pd.DataFrame(columns=columns), [note])


def nnd_vs_lh(inputs: ReportInputs) -> Table:
    """The subject's scores side by side per dataset (its main variant: the same runs), with the
    paper's where published, and their difference when it has two."""
    runs, paper, config = headline(inputs.frame("runs")), inputs.frame("paper"), inputs.config
    subject, names = inputs.subject, inputs.names
    rep = report_block(config)
    if subject.method is None:
        return _no_subject("nnd_vs_lh", "The subject's scores side by side", ["Dataset"])
    dmap = dataset_names(config)
    sel = main_runs(runs[runs["method"] == subject.method], rep) if not runs.empty else runs
    level = level_stats(sel, ["dataset", "score"])
    scores = list(subject.scores)
    labels = [names.score_label(subject.method, s) for s in scores]
    context = main_context(rep, subject)
    datasets = ordered_datasets(list(dict.fromkeys(level["dataset"])), rep["medical"], rep["natural"])
    rows, data, shown_paper = [], [], []
    for d in datasets:
        cells, pcells, means = [], [], []
        for s in scores:
            st = lookup_stat(level, dataset=d, score=s)
            means.append(st.mean)
            target = names.paper_row(subject.method, s)
            prow = paper_row(paper, None, dmap.get(d, d), *target, context) if target else None
            shown_paper += [] if prow is None else [prow]
            pv = None if prow is None else (float(prow["auroc_mean"]), float(prow["auroc_std"]))
            cells.append(st.text())
            pcells.append(cell(*(pv or (np.nan, np.nan)), 0, 0))
            data.append(
                {
                    "dataset": d,
                    "score": s,
                    **st.columns(),
                    "paper_mean": pv[0] if pv else np.nan,
                    "paper_std": pv[1] if pv else np.nan,
                }
            )
        diff = [signed(shown_diff(means[0], means[1]))] if len(scores) == 2 else []
        rows.append([dataset_label(d), *cells, *diff, *pcells])
    frame = pd.DataFrame(
        data, columns=["dataset", "score", "ours_mean", "ours_std", "ours_n", "ours_over", "paper_mean", "paper_std"]
    )
    diff_col = [f"{labels[0]} − {labels[1]}"] if len(scores) == 2 else []
    diff_note = f" {diff_col[0]} is the difference of the shown values." if diff_col else ""
    return Table(
        "nnd_vs_lh",
        f"{subject.label}: {' vs '.join(labels)} score, AUROC (%)",
        ["Dataset", *[f"{lab} (ours)" for lab in labels], *diff_col, *[f"{lab} (paper)" for lab in labels]],
        rows,
        frame,
        [
            f"{subject.label} {subject.main_variant} runs (every score from the same runs); {CELL_NOTE}{diff_note} "
            f"Paper values: the paper's rows of these scores ({context or 'any'} context), from any of its tables.",
            *disagreement_notes(paper, pd.DataFrame(shown_paper)),
        ],
    )


def loss_ablation(inputs: ReportInputs) -> Table:
    """The subject's loss ablation: one column per value of its runs' ``loss`` tag (the main
    variant's first, then in the order of the profile's ``variants``), every score, at its main context."""
    runs, config = headline(inputs.frame("runs")), inputs.config
    subject, names = inputs.subject, inputs.names
    rep = report_block(config)
    title = f"{subject.label} loss ablation: AUROC (%) per loss"
    if subject.method is None:
        return _no_subject("loss_ablation", title, ["Dataset", "Score"])
    context = main_context(rep, subject)
    reference = subject.reference.get("loss")
    sel = subject.runs(runs, contexts=[context] if context else None, loss=None)
    ablated: set[str] = set()
    if not sel.empty:
        sel = sel.assign(loss=subject.losses(sel)).dropna(subset=["loss"])
        ablated = set(sel.loc[sel["loss"] != reference, "dataset"])
        sel = sel[sel["dataset"].isin(ablated)]
    # the main variant's loss first, then the others in the order the profile lists their variants
    rank = {v: i for i, v in enumerate(config.get("variants") or {})}
    seen = sorted(zip(sel.get("variant", []), sel.get("loss", [])), key=lambda vl: (rank.get(vl[0], len(rank)), vl[0]))
    losses = [x for x in dict.fromkeys([reference, *(loss for _, loss in seen)]) if x is not None]
    sel, like_notes = like_with_like(sel, "loss", "loss")
    level = level_stats(sel, ["dataset", "loss", "score"])
    rows, data = [], []
    for d in ordered_datasets(sorted(ablated), rep["medical"], rep["natural"]):
        for s in subject.scores:
            cells = []
            for loss in losses:
                st = lookup_stat(level, dataset=d, loss=loss, score=s)
                cells.append(st.text())
                data.append({"dataset": d, "score": s, "loss": loss, **st.columns(prefix="")})
            rows.append([dataset_label(d), names.score_label(subject.method, s), *cells])
    frame = pd.DataFrame(data, columns=["dataset", "score", "loss", "mean", "std", "n", "over"])
    return Table(
        "loss_ablation",
        title,
        ["Dataset", "Score", *[f"loss: {str(x).replace('_', ' ')}" for x in losses]],
        rows,
        frame,
        [
            f"{subject.label} runs with context {context or 'any'}, one column per value of their loss tag "
            f"({reference} is the main variant's). Only datasets with at least one run of another loss are listed. "
            f"{CELL_NOTE}",
            *like_notes,
        ],
    )


def context_table(inputs: ReportInputs, name: str, title: str, datasets: list[str], paper_table: str) -> Table:
    """Rows (dataset, score, source); columns the subject's contexts (like with like per dataset).

    Columns: ``report.contexts``, else every context the subject's runs have (its main one first);
    ``{scores}`` in ``title`` becomes its score labels.
    """
    runs, paper, config = headline(inputs.frame("runs")), inputs.frame("paper"), inputs.config
    subject, names = inputs.subject, inputs.names
    rep = report_block(config)
    if subject.method is None:
        return _no_subject(name, title.format(scores="every score"), ["Dataset", "Score", "Source"])
    dmap = dataset_names(config)
    labels = [names.score_label(subject.method, s) for s in subject.scores]
    sel = subject.runs(runs)
    present = sorted({str(c) for c in sel["contexts"].dropna()}) if not sel.empty else []
    first = main_context(rep, subject)
    contexts = [str(c) for c in rep.get("contexts") or [first, *(c for c in present if c != first)] if c]
    sel = sel[sel["contexts"].isin(contexts) & sel["dataset"].isin(datasets)] if not sel.empty else sel
    sel, like_notes = like_with_like(sel, "contexts", "context")
    level = level_stats(sel, ["dataset", "contexts", "score"])
    psel = paper[paper["table"] == paper_table]
    inv_d = {v: k for k, v in dmap.items()}
    shown_ds = ordered_datasets(
        list(
            dict.fromkeys(
                [*level["dataset"], *[inv_d.get(d, d) for d in psel["dataset"] if inv_d.get(d, d) in datasets]]
            )
        ),
        datasets,
    )
    rows: list[list[str]] = []
    data: list[dict[str, Any]] = []
    midrules: list[int] = []
    for d in shown_ds:
        midrules.append(len(rows))
        for s, label in zip(subject.scores, labels):
            ours, theirs, have_paper = [], [], False
            target = names.paper_row(subject.method, s)
            for c in contexts:
                st = lookup_stat(level, dataset=d, contexts=c, score=s)
                pv = paper_value(psel, None, dmap.get(d, d), *target, c) if target else None
                have_paper |= pv is not None
                ours.append(st.text())
                theirs.append(cell(*(pv or (np.nan, np.nan)), 0, 0))
                data.append(
                    {
                        "dataset": d,
                        "score": s,
                        "context": c,
                        **st.columns(),
                        "paper_mean": pv[0] if pv else np.nan,
                        "paper_std": pv[1] if pv else np.nan,
                        "diff": shown_diff(st.mean, pv[0]) if pv else np.nan,
                    }
                )
            rows.append([dataset_label(d), label, "ours", *ours])
            if have_paper:
                rows.append([dataset_label(d), label, "paper", *theirs])
    frame = pd.DataFrame(
        data,
        columns=[
            "dataset",
            "score",
            "context",
            "ours_mean",
            "ours_std",
            "ours_n",
            "ours_over",
            "paper_mean",
            "paper_std",
            "diff",
        ],
    )
    loss = subject.reference.get("loss")
    return Table(
        name,
        title.format(scores=" and ".join(labels)),
        ["Dataset", "Score", "Source", *contexts],
        rows,
        frame,
        [
            f"{subject.label} with one context each (the runs' contexts tag{f', loss {loss}' if loss else ''}); "
            f"AUROC (%), mean ± std; {CELL_NOTE} Per dataset, every context column averages the same normal classes.",
            *like_notes,
            *disagreement_notes(
                paper, psel[psel["dataset"].isin([dmap.get(d, d) for d in shown_ds]) & psel["context"].isin(contexts)]
            ),
        ],
        midrules,
    )


def alt_contexts(inputs: ReportInputs) -> Table:
    """Alternative context augmentations (invert / flip / equalize) on the medical datasets."""
    runs, rep = inputs.frame("runs"), report_block(inputs.config)
    natural = set(rep["natural"])
    present = [d for d in dict.fromkeys(runs["dataset"]) if d not in natural] if not runs.empty else []
    datasets = list(dict.fromkeys([*rep["medical"], *present]))
    return context_table(
        inputs,
        "alt_contexts",
        "Alternative context augmentations on the medical datasets: AUROC (%)",
        datasets,
        "table_alt_contexts",
    )


def all_contexts(inputs: ReportInputs) -> Table:
    """All context augmentations and every score on the natural-image datasets."""
    return context_table(
        inputs,
        "all_contexts",
        "All context augmentations on the natural-image datasets: AUROC (%), {scores}",
        list(report_block(inputs.config)["natural"]),
        "table_all_contexts_natural",
    )


def multi_context(inputs: ReportInputs) -> Table:
    """The multiple-context ablation: AUROC against the number of contexts k of the subject's runs
    (the main variant's k and context, and every run with a larger k)."""
    runs, config = headline(inputs.frame("runs")), inputs.config
    subject, names = inputs.subject, inputs.names
    rep = report_block(config)
    title = f"Multiple contexts: {subject.label} AUROC (%) against the number of contexts k"
    if subject.method is None:
        return _no_subject("multi_context", title, ["Dataset", "Score"])
    ref_k = subject.reference.get("n_contexts")
    ref_k = float(ref_k) if isinstance(ref_k, (int, float)) and not pd.isna(ref_k) else np.nan
    context = main_context(rep, subject)
    sel = subject.runs(runs, k=None)
    if not sel.empty:
        sel = sel[(sel["contexts"] == context) | (sel["n_contexts"] > ref_k)]
        multi = set(sel.loc[sel["n_contexts"] > ref_k, "dataset"])
        sel = sel[sel["dataset"].isin(multi)]
    sel, like_notes = like_with_like(sel, "n_contexts", "k")
    level = level_stats(sel, ["dataset", "n_contexts", "score"])
    ks = sorted({int(k) for k in level["n_contexts"]}) if not level.empty else ([int(ref_k)] if ref_k == ref_k else [])
    rows, data = [], []
    for d in ordered_datasets(list(dict.fromkeys(level["dataset"])), rep["medical"], rep["natural"]):
        for s in subject.scores:
            cells = []
            for k in ks:
                st = lookup_stat(level, dataset=d, n_contexts=float(k), score=s)
                cells.append(st.text())
                data.append({"dataset": d, "score": s, "k": k, **st.columns(prefix="")})
            rows.append([dataset_label(d), names.score_label(subject.method, s), *cells])
    frame = pd.DataFrame(data, columns=["dataset", "score", "k", "mean", "std", "n", "over"])
    base = f"k = {int(ref_k)} is the main variant ({context})" if ref_k == ref_k else "k: the runs' n_contexts tag"
    return Table(
        "multi_context",
        title,
        ["Dataset", "Score", *[f"k = {k}" for k in ks]],
        rows,
        frame,
        [
            f"k: the number of contexts of the {subject.label} runs (their n_contexts tag, the identity included); "
            f"{base}. Only datasets with a run of larger k are listed. {CELL_NOTE}",
            *like_notes,
        ],
    )
