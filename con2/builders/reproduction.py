"""The reproduction report: every published number next to ours, opened by the verdict.

The opening, every number from the records:

* the verdict (:func:`verdict_lines`): per method, its budget beside the paper's, how far from the
  paper it is, the readings the fidelity study tried and what stays unexplained;
* the uncertainty lines (:func:`verdict_uncertainty_lines`): whether each paper number lies inside our
  interval of the mean, and which of the paper's orderings (the reference above each method) our runs
  confirm, contradict, or cannot decide at this budget (the paired test of :mod:`con2.report.paired`);
* the budget bound (``report.bound``, :func:`con2.report.budget.bound_lines`);
* the combination line (``report.combination``, :func:`combination_lines`): whether the paper's silences
  together lift CON2 as printed (issue 33). Each reading the paper leaves open (BatchNorm statistics per
  context, SimCLR-strength views, the literal x^C bank) moved CON2 on BreastMNIST when measured alone;
  the records of their combinations say whether any of them brings CON2 above content alignment alone
  and SimCLR + kNN on the ``target`` dataset (paired over seeds, Holm over every candidate x reference
  test) without falling below CON2 as printed on the ``guard`` datasets::

    report:
      combination:
        target: breastmnist
        guard: [br35h, digits]
        reference: {label: "CON2 as printed", method: con2, variant: invert, score: nnd}
        candidates:            # rows: label, method, variant, score (a record's reading)
          - {label: "BatchNorm per context + SimCLR-strength views", method: con2, variant: bn_strength, score: nnd}
        against:
          - {label: "content alone", method: con2, variant: content_only, score: nnd}
          - {label: "SimCLR + kNN", method: simclr, variant: default, score: knn}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.cards import base_score
from con2.aggregate.score_files import ScoresSource
from con2.maths.stats import holm, t_sf
from con2.paper_names import dataset_label, dataset_names
from con2.report.artefacts import ReportInputs
from con2.report.budget import bound_lines, bound_rows, budget_of, paper_budget_text
from con2.report.curve_points import curve_points
from con2.report.format import CELL_NOTE, MISSING, Table, cell, shown, shown_diff, signed
from con2.report.methods import Methods, lacking_weights, subject_of
from con2.report.paired import compare, inside_text, p_text, paired_interval, reference_pair
from con2.report.paper import disagreement_notes, paper_value
from con2.report.select import (
    ReportCfg,
    Stat,
    headline,
    level_stats,
    lookup_stat,
    main_context,
    main_runs,
    reading_cell,
    report_block,
)


# ----------------------------------------------------------------------------- the verdict
def _fidelity_readings(
    runs: pd.DataFrame, config: Mapping[str, Any], method: str, score: str
) -> list[tuple[str, str, float]]:
    """``(label, dataset, mean)`` of every fidelity row (``report.fidelity.rows``) of ``method`` whose
    column reads ``score`` and that has runs here, on every fidelity dataset."""
    spec = (config.get("report") or {}).get("fidelity") or {}
    out = []
    for row in spec.get("rows") or []:
        if row.get("method") != method or base_score(row.get("score", "")) != score:
            continue
        for d in spec.get("datasets") or []:
            mean = reading_cell(runs, d, row)[0]
            if not np.isnan(mean):
                out.append((str(row["label"]), str(d), mean))
    return out


def _curve_text(
    runs: pd.DataFrame,
    names: Methods,
    rep: ReportCfg,
    method: str,
    score: str,
    dataset: str,
    scores: ScoresSource,
) -> str:
    """``"learning curve 55.0 (epoch 2) -> 57.7 (epoch 10)"`` of the method's main runs, or ""."""
    points, _ = curve_points(runs[(runs["method"] == method) & (runs["dataset"] == dataset)], names, rep, scores)
    points = points[points["score"] == score]
    if points["epoch"].nunique() < 2:
        return ""
    mean = points.groupby("epoch")["auroc"].mean()
    return f"learning curve {mean.iloc[0]:.1f} (epoch {mean.index[0]}) -> {mean.iloc[-1]:.1f} (epoch {mean.index[-1]})"


NOTHING_TO_COMPARE = (
    "**Verdict:** nothing to compare yet: no run of this profile matches a published number. "
    "`snakemake --cores 2 all --config data_dir=DIR` trains them (results/tables/missing.md names what is "
    "missing and how to get it)."
)


def verdict_lines(
    runs: pd.DataFrame,
    frame: pd.DataFrame,
    config: Mapping[str, Any],
    names: Methods,
    scores: ScoresSource,
) -> list[str]:
    """The reproduction report's opening: per method (each of our scores with a paper row), the budget
    it ran at beside the paper's, how far from the paper it is, the readings the fidelity study tried
    and the best of them, and what stays unexplained. Every number comes from the records."""
    rep = report_block(config)
    if frame.empty or runs.empty:
        return []
    subject = subject_of(config, runs, names)
    context = main_context(rep, subject)
    inv_d = {v: k for k, v in dataset_names(config).items()}
    matched = frame.dropna(subset=["ours_mean"])
    matched = matched[matched["context"].isin(["", context])].drop_duplicates(subset=["ours", "dataset"])
    if matched.empty:
        return [NOTHING_TO_COMPARE]
    lines = [f"**Verdict** (the paper trained {paper_budget_text(rep)}):", ""]
    for what in sorted(dict.fromkeys(matched["ours"]), key=lambda w: names.pair_key(*w.split("/", 1))):
        m, s = what.split("/", 1)
        rows = matched[matched["ours"] == what]
        mine = main_runs(runs[runs["method"] == m], rep)
        budget = budget_of(mine, names)
        gaps = [
            f"{r['dataset']} {r['ours_mean']:.1f} vs {r['paper_mean']:.1f} ({signed(r['diff'])})"
            for _, r in rows.iterrows()
        ]
        parts = [f"- **{names.pair_label(m, s)}** at {budget.text()}: " + "; ".join(gaps) + "."]
        readings = _fidelity_readings(runs, config, m, s)
        unexplained = []
        if readings:
            tried = sorted({label for label, _, _ in readings})
            sets = sorted({dataset_label(d) for _, d, _ in readings})
            parts.append(f"Readings tried: {len(tried)} (fidelity study, {', '.join(sets)}).")
        for _, r in rows.iterrows():
            d = inv_d.get(r["dataset"], r["dataset"])
            on_d = [(label, mean) for label, ds, mean in readings if ds == d]
            paper_mean, paper_std = float(r["paper_mean"]), float(r["paper_std"])
            tolerance = paper_std if np.isfinite(paper_std) else 0.0
            if r["within_paper_std"] is True or abs(float(r["diff"])) <= tolerance:
                parts.append(f"{r['dataset']}: reproduces (within the paper's std).")
                continue
            if r.get("paper_inside") is True:  # a paper number without a std, or a wide one of ours
                parts.append(f"{r['dataset']}: reproduces (the paper's number lies inside our 95% interval).")
                continue
            if on_d:
                label, best = max(on_d, key=lambda x: x[1])
                gap = shown_diff(best, paper_mean)
                parts.append(f"Best reading on {r['dataset']}: {label!r} {best:.1f} ({signed(gap)} from the paper).")
                if abs(gap) <= tolerance or gap > 0:
                    parts.append(f"{r['dataset']}: the gap closes under that reading.")
                    continue
            curve = _curve_text(runs, names, rep, m, s, d, scores)
            unexplained.append(f"{r['dataset']} {signed(r['diff'])}" + (f" ({curve})" if curve else ""))
        if unexplained:
            cause = (
                "our budget is below the paper's, so its length and resolution are not ruled out"
                if budget.below_paper(int(rep["paper_epochs"]))
                else "at the paper's budget"
            )
            after = "after every reading tried" if readings else "(the fidelity study has not run this method)"
            parts.append(f"Unexplained {after}: {', '.join(unexplained)}; {cause}.")
        lines.append(" ".join(parts))
    return [*lines, ""]


# ----------------------------------------------------------------------------- the uncertainty lines
def interval_lines(frame: pd.DataFrame, names: Methods) -> list[str]:
    """Per matched paper number: inside or outside our 95% interval of the mean over seeds."""
    if frame.empty or "ours_lo" not in frame.columns:
        return []
    rows = frame.dropna(subset=["ours_mean"])
    if rows.empty:
        return []
    out = []
    for r in rows.to_dict("records"):
        where = inside_text(r["paper_mean"], r["ours_lo"], r["ours_hi"])
        m, _, s = str(r["ours"]).partition("/")
        what = names.pair_label(m, s) if s else str(r["ours"])
        ctx = f", {r['context']}" if r.get("context") else ""
        head = f"{what} on {r['dataset']}{ctx}: paper {r['paper_mean']:.1f}"
        if where:
            out.append(
                f"- {head} is {where} our 95% interval {r['ours_lo']:.1f} to {r['ours_hi']:.1f} ({r['ours_over']})."
            )
        else:
            out.append(f"- {head}: no interval of our mean (a single seed; each run's DeLong interval is in runs.csv).")
    out = list(dict.fromkeys(out))  # a number the paper prints in several tables: once
    return ["**Paper numbers against our 95% intervals** (t-interval of the mean over seeds):", "", *out, ""]


def ordering_lines(
    runs: pd.DataFrame,
    paper: pd.DataFrame,
    config: Mapping[str, Any],
    names: Methods,
    scores: ScoresSource,
) -> list[str]:
    """Per dataset with a comparison: the paper's ordering of the reference and each method (its
    published means), and whether our paired test confirms it, contradicts it, or cannot decide."""
    ref = reference_pair(config, runs, names)
    if ref is None or runs.empty:
        return []
    ref_row = names.paper_row(*ref)
    if not ref_row:
        return []
    rep = report_block(config)
    ctx = main_context(rep, subject_of(config, runs, names))
    dmap = dataset_names(config)
    out = []
    for d in sorted(set(runs["dataset"])):
        pd_name = dmap.get(d, d)
        pref = paper_value(paper, None, pd_name, ref_row[0], ref_row[1], ctx if ref_row[1] else "")
        if pref is None:
            continue
        frame = compare(runs, config, d, names, scores=scores)
        for r in frame.to_dict("records"):
            target = names.paper_row(r["method"], r["score"])
            pv = (
                paper_value(paper, None, pd_name, target[0], target[1], ctx if target and target[1] else "")
                if target
                else None
            )
            if pv is None or pv[0] == pref[0]:
                continue
            ref_above = pref[0] > pv[0]
            side = "above" if ref_above else "below"
            order = f"{names.pair_label(*ref)} {side} {names.pair_label(r['method'], r['score'])}"
            paper_text = f"paper {pref[0]:.1f} vs {pv[0]:.1f}"
            if r["reason"]:
                out.append(f"- {dataset_label(d)}: {order} ({paper_text}): cannot test ({r['reason']}).")
                continue
            ours = f"ours Δ {signed(-r['diff'])} [{-r['hi']:.1f}, {-r['lo']:.1f}], Holm p {p_text(r['p_holm'])}"
            if not r["holds"]:
                word = "cannot decide at this budget"
            else:
                word = "confirm" if (r["diff"] < 0) == ref_above else "contradict"
            out.append(f"- {dataset_label(d)}: {order} ({paper_text}): our runs {word} ({ours}).")
    if not out:
        return []
    return [
        f"**The paper's orderings** ({names.pair_label(*ref)} − each method, paired over test images and seeds; "
        "the comparisons tables):",
        "",
        *out,
        "",
    ]


def verdict_uncertainty_lines(
    runs: pd.DataFrame,
    frame: pd.DataFrame,
    paper: pd.DataFrame,
    config: Mapping[str, Any],
    names: Methods,
    scores: ScoresSource,
) -> list[str]:
    """The reproduction report's uncertainty lines: :func:`interval_lines` then :func:`ordering_lines`."""
    return [*interval_lines(frame, names), *ordering_lines(runs, paper, config, names, scores)]


# ------------------------------------------------------------------ the combination line (report.combination)
ALPHA = 0.05


@dataclass(frozen=True)
class Test:
    """One paired comparison over seeds: ``candidate - against`` on one dataset."""

    candidate: str
    against: str
    diff: float  # mean of the per-seed differences, AUROC points
    low: float  # 95% t-interval of that mean (NaN with fewer than two seeds)
    high: float
    n: int  # seeds both have
    p: float  # two-sided paired t-test (NaN with fewer than two seeds or no spread)
    p_holm: float = math.nan


def seed_values(runs: pd.DataFrame, dataset: str, row: Mapping[str, Any]) -> dict[int, float]:
    """``{seed: AUROC}`` of one row's runs on one dataset (one normal class: the set's own)."""
    sel = runs[
        (runs["dataset"] == dataset)
        & (runs["method"] == row["method"])
        & (runs["variant"] == row["variant"])
        & (runs["score"] == row["score"])
    ]
    return {int(s): float(a) for s, a in zip(sel["seed"], sel["auroc"])}


def paired_p(a: Mapping[int, float], b: Mapping[int, float]) -> float:
    """Two-sided p of a paired t-test of ``b - a`` over the seeds both have (NaN: < 2 seeds or no spread)."""
    seeds = sorted(set(a) & set(b))
    diffs = np.array([b[s] - a[s] for s in seeds], dtype=float)
    if diffs.size < 2 or float(diffs.std(ddof=1)) == 0.0:
        return math.nan
    stat = float(diffs.mean()) / (float(diffs.std(ddof=1)) / math.sqrt(diffs.size))
    return 2.0 * t_sf(abs(stat), diffs.size - 1)


def paired_tests(
    runs: pd.DataFrame, dataset: str, candidates: Sequence[Mapping[str, Any]], against: Sequence[Mapping[str, Any]]
) -> list[Test]:
    """Every measured candidate against every measured reference on ``dataset``, Holm-adjusted together."""
    tests = []
    for c in candidates:
        cv = seed_values(runs, dataset, c)
        for r in against:
            rv = seed_values(runs, dataset, r)
            diff, low, high, n = paired_interval(rv, cv)
            if n:
                tests.append(Test(str(c["label"]), str(r["label"]), diff, low, high, n, paired_p(rv, cv)))
    adjusted = holm([t.p for t in tests])
    return [Test(**{**t.__dict__, "p_holm": float(q)}) for t, q in zip(tests, adjusted)]


def _mean_text(values: Mapping[int, float]) -> str:
    v = np.array(list(values.values()), dtype=float)
    spread = f" ± {v.std(ddof=1):.1f}" if v.size > 1 else ""
    return f"{v.mean():.1f}{spread} ({v.size} seed{'s' if v.size != 1 else ''})"


def _test_text(t: Test) -> str:
    interval = f" [{t.low:+.1f}, {t.high:+.1f}]" if np.isfinite(t.low) else ""
    p = f", Holm p {t.p_holm:.3f}" if np.isfinite(t.p_holm) else ", no p (too few seeds or no spread)"
    return f"{signed(t.diff)}{interval} vs {t.against}{p}"


def beats(t: Test) -> bool:
    """A candidate beats a reference when its paired mean difference is positive and Holm's p < 0.05."""
    return t.diff > 0 and np.isfinite(t.p_holm) and t.p_holm < ALPHA


def combination_lines(runs: pd.DataFrame, spec: Mapping[str, Any]) -> list[str]:
    """The verdict's combination lines (``report.combination``), or [] where no candidate was run on
    the target. Every number is read from ``runs`` (the records' long table)."""
    if not spec or runs is None or runs.empty:
        return []
    target = str(spec["target"])
    candidates, against = list(spec.get("candidates") or []), list(spec.get("against") or [])
    measured = [(c, seed_values(runs, target, c)) for c in candidates]
    measured = [(c, v) for c, v in measured if v]
    if not measured:
        return []
    tests = paired_tests(runs, target, [c for c, _ in measured], against)
    name = dataset_label(target)
    cells = []
    for c, v in measured:
        mine = [t for t in tests if t.candidate == c["label"]]
        cells.append(f"{c['label']} {_mean_text(v)}" + (": " + "; ".join(_test_text(t) for t in mine) if mine else ""))
    refs = [(r, seed_values(runs, target, r)) for r in against]
    ref_text = ", ".join(f"{r['label']} {_mean_text(v)}" for r, v in refs if v)
    lines = [f"On {name}: " + ". ".join(cells) + "." + (f" References: {ref_text}." if ref_text else "")]

    best, best_values = max(measured, key=lambda cv: float(np.mean(list(cv[1].values()))))
    mine = [t for t in tests if t.candidate == best["label"]]
    missing = [str(r["label"]) for r, v in refs if not v]
    won = bool(mine) and all(beats(t) for t in mine) and not missing
    if won:
        verdict = f"**{best['label']} brings CON2 above every reference on {name}** (Holm p < {ALPHA})"
    else:
        lost = [t.against for t in mine if not beats(t)]
        why = "; ".join(
            [f"not significantly above {', '.join(lost)}"] * bool(lost)
            + [f"{', '.join(missing)} not measured on {name}"] * bool(missing)
        )
        verdict = f"**No combination brings CON2 above every reference on {name}**: the best, {best['label']}: {why}"
    reference = spec.get("reference")
    guards = []
    for d in spec.get("guard") or []:
        if not reference:
            break
        diff, low, high, n = paired_interval(seed_values(runs, str(d), reference), seed_values(runs, str(d), best))
        if not n:
            guards.append(f"is not measured on {dataset_label(str(d))}")
            continue
        interval = f" [{low:+.1f}, {high:+.1f}]" if np.isfinite(low) else " (one seed: no interval)"
        fell = np.isfinite(high) and high < 0
        word = "falls below" if fell else "does not fall below"
        guards.append(f"{word} {reference['label']} on {dataset_label(str(d))} ({signed(diff)}{interval}, {n} seeds)")
    tail = "".join(f"; it {g}" for g in guards)
    return [*lines, verdict + tail + "."]


# ----------------------------------------------------------------------------- the table
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
                **st.columns(interval=True),
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
    """The verdict's combination line (``report.combination``, :func:`combination_lines`)."""
    spec = inputs.report.get("combination") or {}
    if not spec or inputs.runs is None:
        return []
    lines = combination_lines(inputs.runs, spec)
    return [f"**The paper's silences together** (the combination study): {' '.join(lines)}", ""] if lines else []


def bound_lead(inputs: ReportInputs) -> list[str]:
    """The verdict's bound (``report.bound``): one line per measured budget, CON2 as printed against
    content alone and SimCLR, and what no CPU can settle (:func:`con2.report.budget.bound_lines`)."""
    spec = inputs.report.get("bound") or {}
    if not spec or inputs.runs is None:
        return []
    lines = bound_lines(bound_rows(inputs.runs, inputs.gpu, spec), spec)
    return [f"**How far each budget goes** (the budget_bound table): {' '.join(lines)}"] if lines else []
