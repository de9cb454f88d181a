"""The reproduction report: every published number next to ours, opened by the verdict
(:mod:`con2.report.verdict`), the uncertainty lines and the budget bound."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from con2.paper_names import dataset_names
from con2.report.artefacts import ReportInputs
from con2.report.bound import bound_rows
from con2.report.bound import verdict_lines as budget_lines
from con2.report.combination import combination_lines
from con2.report.comparisons import inside_text, verdict_uncertainty_lines
from con2.report.format import CELL_NOTE, MISSING, Table, cell, shown, shown_diff, signed
from con2.report.methods import Methods, lacking_weights, subject_of
from con2.report.paper import disagreement_notes
from con2.report.select import Stat, headline, level_stats, lookup_stat, main_runs, report_block
from con2.report.verdict import NOTHING_TO_COMPARE, verdict_lines


def _ours_for_paper_row(
    runs: pd.DataFrame, row: Mapping[str, Any], config: Mapping[str, Any], names: Methods
) -> tuple[Stat, str]:
    """Our dataset-level number for one paper row: ``(stat, what)``. A paper row with a context is
    matched by the ``contexts`` tag of the method's runs (at its main variant's loss and k), where
    they have one; otherwise by the method's main variant."""
    rep = report_block(config)
    dmap = dataset_names(config)
    mmap = names.paper_rows()
    inv_d = {v: k for k, v in dmap.items()}
    d = inv_d.get(row["dataset"])
    pm, ps, ctx = row["method"], row["score"], row["context"]
    candidates = [(m, s) for (m, s), (tm, ts) in mmap.items() if tm == pm and (ts == ps or not ts or not ps)]
    if ps:
        candidates = [c for c in candidates if mmap[c][1] in (ps, "")] or candidates
        exact = [c for c in candidates if mmap[c][1] == ps]
        candidates = exact or candidates
    if d is None or not candidates or runs.empty:
        return Stat(), ""
    m, s = candidates[0]
    view = subject_of(config, runs, names, method=m)
    if ctx and view.main_context:
        sel = view.runs(runs, contexts=[ctx])
    else:
        sel = main_runs(runs[runs["method"] == m], rep)
    sel = sel[(sel["dataset"] == d) & (sel["score"] == s)]
    if sel.empty:
        return Stat(), f"{m}/{s}"
    return lookup_stat(level_stats(sel, ["dataset"]), dataset=d), f"{m}/{s}"


def reproduction(inputs: ReportInputs) -> Table:
    """Every published number next to ours and the difference (ours − paper, from the shown values)."""
    runs, paper, config = inputs.frame("runs"), inputs.frame("paper"), inputs.config
    runs, names = headline(runs), inputs.names
    lacking = {m for m, _ in lacking_weights(config, runs, None, names)}  # methods left out for want of their weights
    needs_weights = {row[0] for (m, _), row in names.paper_rows().items() if m in lacking}
    data, rows = [], []
    inv_d = {v: k for k, v in dataset_names(config).items()}
    ran = set(runs["dataset"]) if not runs.empty else set()
    elsewhere: dict[str, int] = {}  # paper dataset -> its numbers, for datasets with no run here: CSV only
    not_run: dict[str, int] = {}  # paper method -> its numbers on datasets run here, for methods not run: CSV only
    for r in paper.to_dict("records"):
        st, what = _ours_for_paper_row(runs, r, config, names)
        pstd = r["auroc_std"] if pd.notna(r["auroc_std"]) else np.nan
        diff = shown_diff(st.mean, r["auroc_mean"])
        within = bool(abs(diff) <= shown(pstd)) if pd.notna(diff) and pd.notna(pstd) else None
        inside = inside_text(r["auroc_mean"], st.lo, st.hi)  # the paper's number against our 95% interval
        data.append(
            {
                **{k: r[k] for k in ("table", "dataset", "method", "family", "context", "score")},
                "paper_mean": r["auroc_mean"],
                "paper_std": pstd,
                "ours": what,
                "ours_mean": st.mean,
                "ours_std": st.std,
                "ours_n": st.n,
                "ours_over": st.over,
                "ours_lo": st.lo,
                "ours_hi": st.hi,
                "diff": diff,
                "within_paper_std": within,
                "paper_inside": {"inside": True, "outside": False}.get(inside),
            }
        )
        note = "not run" if pd.isna(st.mean) else ("n/a" if not what else ("within std" if within else ""))
        note = ", ".join(x for x in (note, f"paper {inside} our CI" if inside else "") if x)
        note = (
            "needs weights (results/tables/missing.md)" if pd.isna(st.mean) and r["method"] in needs_weights else note
        )
        if inv_d.get(r["dataset"], r["dataset"]) not in ran:
            elsewhere[r["dataset"]] = elsewhere.get(r["dataset"], 0) + 1
            continue
        if note == "not run":  # a method this profile does not run: a count under the table, not a row
            not_run[r["method"]] = not_run.get(r["method"], 0) + 1
            continue
        rows.append(
            [
                r["table"],
                r["dataset"],
                r["method"],
                r["context"] or MISSING,
                r["score"] or MISSING,
                cell(r["auroc_mean"], pstd, 0, 0),
                st.text(interval=bool(report_block(config).get("intervals"))),
                signed(diff),
                note,
            ]
        )
    frame = pd.DataFrame(data)
    matched = frame.dropna(subset=["ours_mean"]) if not frame.empty else frame
    with_std = matched.dropna(subset=["paper_std"]) if not matched.empty else matched
    n_within = int(with_std["within_paper_std"].sum()) if not with_std.empty else 0
    lead = [
        f"**Summary: {len(matched)} of {len(frame)} published numbers have a counterpart in these runs; "
        f"{n_within} of the {len(with_std)} of those with a published std are within it** "
        "(|ours − paper| ≤ paper std, on the shown values)."
        if len(matched)
        else f"**Summary: none of the {len(frame)} published numbers has a counterpart in these runs yet.**"
    ]
    scores = inputs.score_source()
    verdict = verdict_lines(inputs.frame("runs"), frame, config, names, scores)  # every reading's column
    lead = [
        *(verdict or ([] if len(matched) else [NOTHING_TO_COMPARE])),
        *verdict_uncertainty_lines(runs, frame, paper, config, names, scores),  # inside/outside, the orderings
        *bound_lead(inputs),  # how far each measured budget goes (report.bound)
        *combination_lead(inputs),  # the paper's silences together (report.combination)
        *lead,
    ]
    if elsewhere:
        listed = ", ".join(f"{d} {n}" for d, n in elsewhere.items())
        notes_elsewhere = [
            f"Not listed: the {sum(elsewhere.values())} published numbers on datasets this profile has no run of "
            f"({listed}); every one is in reproduction.csv."
        ]
    else:
        notes_elsewhere = []
    if not_run:
        notes_elsewhere.append(
            f"Not listed: the {sum(not_run.values())} published numbers of methods this profile does not run "
            f"({', '.join(sorted(not_run))}) on its datasets; every one is in reproduction.csv."
        )
    notes = [
        *notes_elsewhere,
        f"{CELL_NOTE} Differences and 'within std' use the shown (rounded) values. A paper number without a std "
        "(zero-shot rows, PANDA's) is printed alone and has no 'within std'.",
        "'paper inside/outside our CI': the published mean against the 95% t-interval of our mean over seeds "
        "(ours_lo, ours_hi in the CSV; none with one seed).",
        *disagreement_notes(paper, paper, each_row_own=True),
    ]
    if len(matched):
        notes.append(
            f"Mean difference {matched['diff'].mean():+.1f}, mean absolute difference "
            f"{matched['diff'].abs().mean():.1f} "
            "AUROC points (ours − paper). Budgets differ unless the paper profile ran: see the compute table."
        )
    return Table(
        "reproduction",
        "Reproduction report: every published AUROC (%) next to ours",
        ["Table", "Dataset", "Method", "Context", "Score", "Paper", "Ours", "Ours − paper", "Note"],
        rows,
        frame,
        notes,
        lead=lead,
    )


def combination_lead(inputs: ReportInputs) -> list[str]:
    """The verdict's combination line (``report.combination``, :mod:`con2.report.combination`)."""
    spec = inputs.report.get("combination") or {}
    if not spec or inputs.runs is None:
        return []
    lines = combination_lines(inputs.runs, spec)
    return [f"**The paper's silences together** (the combination study): {' '.join(lines)}", ""] if lines else []


def bound_lead(inputs: ReportInputs) -> list[str]:
    """The verdict's bound (``report.bound``): one line per measured budget, CON2 as printed against
    content alone and SimCLR, and what no CPU can settle (:mod:`con2.report.bound`)."""
    spec = inputs.report.get("bound") or {}
    if not spec or inputs.runs is None:
        return []
    lines = budget_lines(bound_rows(inputs.runs, inputs.gpu, spec), spec)
    return [f"**How far each budget goes** (the budget_bound table): {' '.join(lines)}"] if lines else []
