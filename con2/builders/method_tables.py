"""The method x dataset tables: Table 1 (medical) and the natural-image summary, ours beside the paper's.

Rows: our methods (main variants, the subject first) each followed by the paper's row, then the
paper-only rows; columns: the group's datasets (:func:`method_table`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from con2.paper_names import dataset_label, dataset_names
from con2.report.artefacts import ReportInputs
from con2.report.budget import budget_note
from con2.report.format import CELL_NOTE, Table, cell, shown_diff
from con2.report.methods import Methods
from con2.report.notes import absent_notes, missing_weights_notes, stale_data_notes
from con2.report.paired import floor_marks, holding_marks, mark_note
from con2.report.paper import disagreement_notes, external_code_notes, paper_value, reference_note
from con2.report.select import (
    Stat,
    classes_text,
    headline,
    level_stats,
    lookup_stat,
    main_context,
    main_runs,
    main_variant,
    ordered_datasets,
    report_block,
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
        **Stat().columns(interval=True),
        "holds": False,
        "beats_floor": False,
        "diff": np.nan,
    }


def reference_rows(references: pd.DataFrame | None, paper_datasets: list[str]) -> pd.DataFrame:
    """The rows of ``references`` (other sources' published numbers) on these datasets (the paper's names)."""
    if references is None or references.empty:
        return pd.DataFrame(columns=["source", "method", "dataset", "auroc_mean", "auroc_std"])
    return references[references["dataset"].isin(paper_datasets)]


# the columns of a method table's frame (the CSV), one row per shown number
_FRAME_COLUMNS = [
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
]

_Published = tuple[float, float] | None
"""One published ``(mean, std)``, or None where the source gives none."""


@dataclass(frozen=True)
class _Selection:
    """What one method table shows: our runs of its datasets (``ours``, their dataset-level means ``level``
    per ``(method, score)`` pair of ``pairs``), the paper table's rows (``psel``), the columns (``cols``: our
    dataset names, the paper's order first) and each of our cells' marks."""

    runs: pd.DataFrame  # the headline runs of every dataset
    paper: pd.DataFrame  # every published number
    psel: pd.DataFrame  # the numbers of the paper's table shown
    config: Mapping[str, Any]
    status: Mapping[str, Mapping[str, Any]] | None
    names: Methods
    rep: dict[str, Any]
    paper_context: str
    dmap: dict[str, str]  # our dataset name -> the paper's
    ours: pd.DataFrame
    cols: list[str]
    level: pd.DataFrame
    pairs: list[tuple[str, str]]
    marks: dict[tuple[str, str, str], str]  # † (holds after Holm)
    above_floor: dict[tuple[str, str, str], str]  # ‡ (above the floor)
    floor_note: str

    def paper_cell(self, pm: str, ps: str, d: str) -> _Published:
        """The paper's number of its row ``(pm, ps)`` on our dataset ``d`` (in the subject's main context
        where the row has a score)."""
        return paper_value(self.psel, None, self.dmap.get(d, d), pm, ps, self.paper_context if ps else "")


def _select(inputs: ReportInputs, datasets: list[str], paper_table: str | None) -> _Selection:
    """Our main runs of ``datasets``, the rows of the paper's ``paper_table``, the columns and the marks."""
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
    marks = holding_marks(ours, config, cols, scores, names)
    above_floor, floor_note = floor_marks(ours, config, cols, scores, names)
    return _Selection(
        runs=runs,
        paper=paper,
        psel=psel,
        config=config,
        status=status,
        names=names,
        rep=rep,
        paper_context=paper_context,
        dmap=dmap,
        ours=ours,
        cols=cols,
        level=level,
        pairs=pairs,
        marks=marks,
        above_floor=above_floor,
        floor_note=floor_note,
    )


@dataclass
class _Rows:
    """A method table as it is built: the shown ``rows``, the frame's ``data`` (one dict per number), the rows
    a rule goes above (``midrules``) and the paper's methods already shown beside ours (``used_paper``)."""

    rows: list[list[str]] = field(default_factory=list)
    data: list[dict[str, Any]] = field(default_factory=list)
    midrules: list[int] = field(default_factory=list)
    used_paper: set[str] = field(default_factory=set)

    def add_published(self, cols: list[str], method: str, shown: str, values: list[_Published], **extra: str) -> None:
        """A row of published numbers (``values``, one per column) that has no run of ours, its source shown as
        ``shown``, and its numbers in the frame (``extra``: e.g. the ``source`` other than the paper)."""
        for d, v in zip(cols, values):
            if v:
                self.data.append(
                    {**_empty_ours(d), "paper_method": method, "paper_mean": v[0], "paper_std": v[1], **extra}
                )
        self.rows.append([method, shown, *_published_cells(values)])


def _published_cells(values: list[_Published]) -> list[str]:
    """_Published numbers as cells (no seeds or classes to count)."""
    return [cell(*(v or (np.nan, np.nan)), 0, 0) for v in values]


def _add_ours(sel: _Selection, out: _Rows) -> None:
    """Each of our pairs' row, with its marks and in its frame row the paper's number and the difference,
    followed by the paper's row for that method where the paper gives a number on these columns."""
    intervals = bool(sel.rep.get("intervals"))
    for m, s in sel.pairs:
        target = sel.names.paper_row(m, s)
        published = [sel.paper_cell(*target, d) if target else None for d in sel.cols]
        cells = []
        for d, pv in zip(sel.cols, published):
            st = lookup_stat(sel.level, dataset=d, method=m, score=s)
            cells.append(
                st.text(interval=intervals) + sel.marks.get((d, m, s), "") + sel.above_floor.get((d, m, s), "")
            )
            out.data.append(
                {
                    "dataset": d,
                    "method": m,
                    "score": s,
                    "variant": main_variant(sel.rep, m),
                    **st.columns(interval=True),
                    "holds": bool(sel.marks.get((d, m, s))),
                    "beats_floor": bool(sel.above_floor.get((d, m, s))),
                    "paper_method": _paper_label(*target) if target else "",
                    "paper_mean": pv[0] if pv else np.nan,
                    "paper_std": pv[1] if pv else np.nan,
                    "diff": shown_diff(st.mean, pv[0]) if pv else np.nan,
                }
            )
        out.rows.append([sel.names.pair_label(m, s), "ours", *cells])
        if target and any(published):
            out.rows.append([_paper_label(*target), "paper", *_published_cells(published)])
            out.used_paper.add(target[0])


def _add_paper_only(sel: _Selection, out: _Rows) -> None:
    """The paper table's methods not shown beside ours, each under its family, after a rule."""
    psel, cols = sel.psel, sel.cols
    if len(psel):
        out.midrules.append(len(out.rows))
    for pm in dict.fromkeys(psel["method"]):
        if pm in out.used_paper:
            continue
        fam = psel.loc[psel["method"] == pm, "family"].iloc[0]
        values = [paper_value(psel, None, sel.dmap.get(d, d), pm) for d in cols]
        out.add_published(cols, pm, f"paper ({fam})" if fam else "paper", values)


def _add_references(sel: _Selection, shown_refs: pd.DataFrame, out: _Rows) -> None:
    """Other sources' published numbers on these columns, one row per (source, method), after a rule."""
    if not shown_refs.empty:
        out.midrules.append(len(out.rows))
    for (source, method), ref in shown_refs.groupby(["source", "method"], sort=False):
        values: list[_Published] = []
        for d in sel.cols:
            hit = ref[ref["dataset"] == sel.dmap.get(d, d)]
            values.append((float(hit["auroc_mean"].iloc[0]), float(hit["auroc_std"].iloc[0])) if len(hit) else None)
        out.add_published(sel.cols, method, source, values, source=source)


def _reading_notes(sel: _Selection) -> list[str]:
    """How to read the cells: the unit, the variants, the budget, the intervals and the marks."""
    ours, rep, names = sel.ours, sel.rep, sel.names
    notes = [
        f"AUROC (%), mean ± std; {CELL_NOTE} Paper: as published (3 seeds; over every normal class).",
        "Ours use each method's main variant "
        f"({', '.join(f'{m}: {main_variant(rep, m)}' for m in dict.fromkeys(m for m, _ in sel.pairs)) or 'none run'}).",
    ]
    if not ours.empty:
        notes.append(budget_note(ours, names, rep))
    if bool(rep.get("intervals")):
        notes.append("(a–b): the 95% t-interval of our mean over seeds (report.intervals; none with one seed).")
    if sel.marks:
        notes.append(mark_note(sel.config, ours, names))
    if sel.floor_note:
        notes.append(sel.floor_note)
    return notes


def _class_notes(sel: _Selection) -> list[str]:
    """One line per column whose methods ran different normal classes."""
    notes = []
    for d in sel.cols:
        classes = {
            m: frozenset(sel.ours.loc[(sel.ours["dataset"] == d) & (sel.ours["method"] == m), "normal_class"])
            for m, _ in sel.pairs
        }
        classes = {m: c for m, c in classes.items() if c}
        if len(set(classes.values())) > 1:
            spread = "; ".join(f"{sel.names.label(m)} {classes_text(list(c))}" for m, c in classes.items())
            notes.append(
                f"{dataset_label(d)}: the methods ran different normal classes ({spread}): compare them per class in "
                f"per_class_{d} (where that table exists), not across these rows."
            )
    return notes


def _column_notes(sel: _Selection, used_paper: set[str], shown_refs: pd.DataFrame) -> list[str]:
    """What the columns and rows hold besides the numbers: floors, a column a reader takes for another, the
    datasets without runs or on stale data, missing weights, the paper's rows and other sources."""
    cols, psel, dmap = sel.cols, sel.psel, sel.dmap
    notes = floor_notes(sel.level, sel.pairs, sel.names, cols)
    if "pneumoniamnist" in cols and "pneumonia" in cols:  # two columns a reader takes for one
        notes.append(
            "PneumoniaMNIST (ours) is MedMNIST's 28 px version of the chest X-rays behind the paper's Pneumonia "
            "(Kaggle's originals, 224 px), with MedMNIST's own split: not the paper's test set, so its own column."
        )
    notes += absent_notes([d for d in cols if d not in set(sel.ours["dataset"])], sel.config, sel.status)
    notes += stale_data_notes([d for d in cols if d in set(sel.ours["dataset"])], sel.status)
    notes += missing_weights_notes(sel.config, sel.runs, cols, sel.names)
    notes += external_code_notes(m for m in psel["method"] if m not in used_paper)
    notes += disagreement_notes(sel.paper, psel[psel["dataset"].isin([dmap.get(d, d) for d in cols])])
    if not shown_refs.empty:
        notes.append(reference_note(shown_refs))
    return notes


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
    named in a note with how to get them, and a dataset without runs with why (:func:`~con2.report.notes.absent_notes`).
    """
    sel = _select(inputs, datasets, paper_table)
    out = _Rows()
    _add_ours(sel, out)
    _add_paper_only(sel, out)
    shown_refs = reference_rows(references, [sel.dmap.get(d, d) for d in sel.cols])
    _add_references(sel, shown_refs, out)
    notes = _reading_notes(sel) + _class_notes(sel) + _column_notes(sel, out.used_paper, shown_refs)
    frame = pd.DataFrame(
        [{"source": "paper", **row} for row in out.data],  # the published number's source: the paper, unless named
        columns=_FRAME_COLUMNS,
    )
    header = ["Method", "Source", *[dataset_label(d) for d in sel.cols]]
    return Table(name, title, header, out.rows, frame, notes, out.midrules)


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
