"""``claims_<dataset>`` (issue 44): which of the paper's claims on a dataset hold at the budget of these runs.

One table per dataset of ``report.claims`` (CIFAR-10, the set the paper tuned on). Each row is a claim
the paper (or a published number beside it) makes about an ordering, tested on our runs with the
paired test of the comparisons tables (:func:`con2.report.paired.paired_over_classes`: DeLong
over the shared test images, plus the spread over seeds, averaged over normal classes), Holm-corrected
over the table's tests:

* the subject (CON2 as printed: its main variant and first score) above every other method's main
  variant (SimCLR + kNN and SSD, CSI, the raw-pixel floor): the paper's CON2 number against the other
  method's, the paper's where it prints one, else a reference source's (``references``: CSI's repository);
* the paper's order of the contexts (``report.contexts`` with a paper number on the dataset, e.g.
  flip 95.3 > invert 94.6 > equalize 91.5 on CIFAR-10): each pair, paired over classes and seeds;
* CON2 (Best) (``report.best_variant``) not below CON2 as printed, and how often its choice (the record's
  ``chosen_context``) is the context that scored best on that class here (no test: a count).

A claim **holds** when the Holm-adjusted p is at most ``report.alpha`` (0.05) and the difference has the
claimed sign; it is **reversed** when significant with the other sign; otherwise **not resolved** at this
budget, which is not "equal".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.score_files import ScoresSource
from con2.maths.stats import holm
from con2.paper_names import dataset_label, dataset_names
from con2.report.artefacts import ReportInputs
from con2.report.budget import budget_note
from con2.report.format import MISSING, Table, classes_by_seeds, signed
from con2.report.methods import Methods, Subject
from con2.report.paired import alpha, paired_over_classes
from con2.report.paper import paper_value
from con2.report.select import (
    headline,
    level_stats,
    lookup_stat,
    main_context,
    main_runs,
    report_block,
)

HOLDS, REVERSED, UNRESOLVED = "holds", "reversed", "not resolved"
COLUMNS = ["claim", "kind", "evidence", "a", "b", "a_mean", "b_mean", "diff", "lo", "hi", "p", "p_holm", "verdict", "n"]


@dataclass(frozen=True)
class Side:
    """One side of a claim: its runs (rows of the run frame, one score) and how it is named."""

    label: str
    rows: pd.DataFrame
    score: str


@dataclass(frozen=True)
class Claim:
    """``a`` above ``b``, as ``evidence`` says."""

    kind: str
    a: Side
    b: Side
    evidence: str


def _paper_text(paper: pd.DataFrame, dataset: str, method: str, score: str, context: str) -> float | None:
    got = paper_value(paper, None, dataset, method, score, context)
    return got[0] if got else None


def _reference_text(references: pd.DataFrame | None, dataset: str, method: str) -> str | None:
    if references is None or references.empty:
        return None
    hit = references[(references["dataset"] == dataset) & (references["method"] == method)]
    if hit.empty:
        return None
    r = hit.iloc[0]
    return f"{r['source']} {method} {float(r['auroc_mean']):.1f}"


def method_claims(
    runs: pd.DataFrame,
    rep: Mapping[str, Any],
    names: Methods,
    subject: Subject,
    dataset: str,
    paper: pd.DataFrame,
    references: pd.DataFrame | None,
) -> list[Claim]:
    """The subject as printed above every other method's main variant (first headline score)."""
    main = main_runs(headline(runs[runs["dataset"] == dataset]), rep)
    if subject.method is None or not subject.scores:
        return []
    s0 = subject.scores[0]
    mine = Side(
        names.pair_label(subject.method, s0), main[(main["method"] == subject.method) & (main["score"] == s0)], s0
    )
    pname = dataset_names({"report": rep}).get(dataset, dataset)
    ctx = main_context(rep, subject)
    target = names.paper_row(subject.method, s0)
    ours_paper = _paper_text(paper, pname, target[0], target[1], ctx) if target else None
    out = []
    others = sorted({m for m in main["method"] if m != subject.method}, key=lambda m: names.pair_key(m, ""))
    for m in others:
        rows = main[main["method"] == m]
        scores = [s for s in names.info(m).score_order if s in set(rows["score"])] or sorted(set(rows["score"]))
        for s in scores:
            floor = m in names.floors
            theirs = names.paper_row(m, s)
            p_other = _paper_text(paper, pname, theirs[0], theirs[1], "") if theirs else None
            ref = _reference_text(references, pname, theirs[0]) if theirs and p_other is None else None
            head = (
                f"paper {target[0] if target else names.label(subject.method)} {ours_paper:.1f}" if ours_paper else ""
            )
            if floor:
                evidence = "the floor trains nothing: every trained method must beat it"
            elif p_other is not None:
                evidence = f"{head} vs {p_other:.1f}" if head else f"paper {p_other:.1f}"
            elif ref is not None:
                evidence = f"{head} vs {ref}" if head else ref
            else:
                evidence = head or "no published number"
            other = Side(names.pair_label(m, s), rows[rows["score"] == s], s)
            out.append(Claim("method", mine, other, evidence))
    return out


def context_claims(
    runs: pd.DataFrame, rep: Mapping[str, Any], subject: Subject, names: Methods, dataset: str, paper: pd.DataFrame
) -> list[Claim]:
    """The paper's order of the contexts (``report.contexts`` with a paper number here), every pair."""
    if subject.method is None or not subject.scores:
        return []
    s0 = subject.scores[0]
    target = names.paper_row(subject.method, s0)
    if not target:
        return []
    pname = dataset_names({"report": rep}).get(dataset, dataset)
    on_d = headline(runs[runs["dataset"] == dataset])
    published = []
    for ctx in rep.get("contexts") or []:
        if ctx == rep.get("best_variant"):
            continue
        value = paper_value(paper[paper["context"] == ctx], None, pname, target[0], target[1], ctx)
        rows = subject.runs(on_d, contexts=[ctx])
        if value is not None:  # a context the paper printed but we did not run stays a row: "cannot test"
            published.append((value[0], ctx, rows[rows["score"] == s0] if not rows.empty else rows))
    published.sort(key=lambda t: -t[0])
    out = []
    for i, (va, ca, ra) in enumerate(published):
        for vb, cb, rb in published[i + 1 :]:
            if va == vb:
                continue
            a = Side(f"{names.label(subject.method)} {ca}", ra, s0)
            b = Side(f"{names.label(subject.method)} {cb}", rb, s0)
            out.append(Claim("context", a, b, f"paper {ca} {va:.1f} vs {cb} {vb:.1f}"))
    return out


def best_claims(
    runs: pd.DataFrame, config: Mapping[str, Any], subject: Subject, names: Methods, dataset: str
) -> list[Claim]:
    """CON2 (Best) not below CON2 as printed (paired)."""
    rep = report_block(config)
    variant = rep.get("best_variant")
    if subject.method is None or not variant or not subject.scores:
        return []
    s0 = subject.scores[0]
    on_d = headline(runs[(runs["dataset"] == dataset) & (runs["method"] == subject.method) & (runs["score"] == s0)])
    best, main = on_d[on_d["variant"] == variant], on_d[on_d["variant"] == subject.main_variant]
    label = names.label(subject.method)
    return [
        Claim(
            "best",
            Side(f"{label} (Best)", best, s0),
            Side(f"{label} {subject.main_variant}", main, s0),
            "the paper's CON2 (Best): the context chosen per class by the two assumptions",
        )
    ]


def best_choice_line(runs: pd.DataFrame, rep: Mapping[str, Any], subject: Subject, dataset: str) -> str:
    """How often CON2 (Best)'s choice (the record's ``chosen_context``) was the context that scored best on
    the class here (the seed means of the context runs), or ""."""
    variant = rep.get("best_variant")
    if subject.method is None or not variant or not subject.scores or "chosen_context" not in runs:
        return ""
    s0 = subject.scores[0]
    on_d = headline(runs[(runs["dataset"] == dataset) & (runs["score"] == s0)])
    best = on_d[(on_d["method"] == subject.method) & (on_d["variant"] == variant)]
    contexts = [c for c in rep.get("contexts") or [] if c != variant]
    scored = pd.concat([subject.runs(on_d, contexts=[c]).assign(context=c) for c in contexts]) if contexts else None
    if best.empty or scored is None or scored.empty:
        return ""
    means = scored.groupby(["normal_class", "context"])["auroc"].mean().unstack()
    agree = 0
    picks: dict[str, int] = {}
    where: list[str] = []
    for cls, rows in best.groupby("normal_class"):
        chosen = str(rows["chosen_context"].dropna().iloc[0]) if rows["chosen_context"].notna().any() else ""
        picks[chosen] = picks.get(chosen, 0) + 1
        if cls in means.index and means.loc[cls].notna().all():
            top = str(means.loc[cls].idxmax())
            agree += int(chosen == top)
            where.append(cls)
    chose = ", ".join(f"{c or '?'} on {n}" for c, n in sorted(picks.items(), key=lambda t: -t[1]))
    return (
        f"{subject.label} (Best) chose {chose} of {best['normal_class'].nunique()} classes; its choice was "
        f"the context that scored best here ({', '.join(contexts)}, seed means) on {agree} of {len(where)}."
    )


def _side_mean(rows: pd.DataFrame) -> float:
    """The mean over normal classes of the seed means of one side's runs (non-empty)."""
    return lookup_stat(level_stats(rows, ["dataset"]), dataset=str(rows["dataset"].iloc[0])).mean


def claims(inputs: ReportInputs) -> Table:
    """``claims_<dataset>``: each claim, the paper's evidence, our paired difference and whether it holds."""
    runs, paper, config, dataset = inputs.frame("runs"), inputs.frame("paper"), inputs.config, inputs.dataset
    rep = report_block(config)
    subject, names = inputs.subject, inputs.names
    scores: ScoresSource = inputs.score_source()
    found = [
        *method_claims(runs, rep, names, subject, dataset, paper, inputs.references),
        *context_claims(runs, rep, subject, names, dataset, paper),
        *best_claims(runs, config, subject, names, dataset),
    ]
    rows: list[dict[str, Any]] = []
    for c in found:
        shared = set(c.a.rows["normal_class"]) & set(c.b.rows["normal_class"])
        a_rows, b_rows = (side.rows[side.rows["normal_class"].isin(shared)] for side in (c.a, c.b))
        if c.a.rows.empty or c.b.rows.empty:
            res: dict[str, Any] = {"reason": "no runs of one side"}
        elif not shared:
            res = {"reason": "no normal class both sides ran"}
        else:
            res = paired_over_classes(b_rows, a_rows, c.b.score, c.a.score, scores)
        rows.append(
            {
                "claim": f"{c.a.label} above {c.b.label}",
                "kind": c.kind,
                "evidence": c.evidence,
                "a": c.a.label,
                "b": c.b.label,
                "a_mean": _side_mean(a_rows) if shared else np.nan,  # on the classes the test pairs
                "b_mean": _side_mean(b_rows) if shared else np.nan,
                **{k: res.get(k, np.nan) for k in ("diff", "lo", "hi", "p")},
                "n": (
                    classes_by_seeds(res["n_classes"], res["seeds_min"], res["n_seeds"]) if res.get("n_classes") else ""
                ),
                "reason": res.get("reason", ""),
            }
        )
    frame = pd.DataFrame(rows, columns=[*COLUMNS, "reason"])
    frame["p_holm"] = holm(frame["p"].to_numpy(dtype=np.float64)) if len(frame) else []
    a_ = alpha(config)

    def verdict(r: Mapping[str, Any]) -> str:
        if r["reason"]:
            return f"cannot test: {r['reason']}"
        if r["p_holm"] <= a_:
            return HOLDS if r["diff"] > 0 else REVERSED
        return UNRESOLVED

    frame["verdict"] = [verdict(r) for r in frame.to_dict("records")]
    body = [
        [
            r["claim"],
            r["evidence"],
            f"{r['a_mean']:.1f} vs {r['b_mean']:.1f}"
            if np.isfinite(r["a_mean"]) and np.isfinite(r["b_mean"])
            else MISSING,
            f"{signed(r['diff'])} ({r['lo']:.1f} to {r['hi']:.1f})" if np.isfinite(r["diff"]) else MISSING,
            _p(r["p_holm"]),
            r["verdict"],
            r["n"] or MISSING,
        ]
        for r in frame.to_dict("records")
    ]
    counts = {v: int((frame["verdict"] == v).sum()) for v in (HOLDS, REVERSED, UNRESOLVED)}
    tested = frame[frame["reason"] == ""]
    lead = (
        [
            f"**{dataset_label(dataset)}: {counts[HOLDS]} of {len(tested)} claims hold at this budget, "
            f"{counts[REVERSED]} reversed, {counts[UNRESOLVED]} not resolved.**"
        ]
        if len(tested)
        else []
    )
    ours = main_runs(headline(runs[runs["dataset"] == dataset]), rep)
    notes = [
        "Ours: the mean over the normal classes both sides ran (Paired: classes × seeds) of the seed means "
        "(AUROC %). Δ: the paired difference "
        "(first side minus second) on the same test images and seeds, with its 95% interval (DeLong over the images "
        "plus the spread over seeds; classes averaged): the test of the comparisons tables.",
        f"Holds: Holm-adjusted p ≤ {a_:g} over the {int(frame['p'].notna().sum())} tests of this table with the "
        "claimed sign; reversed: significant with the other; not resolved: neither, at this budget (not 'equal').",
    ]
    if not ours.empty:
        notes.append(budget_note(ours, names, rep))
    if line := best_choice_line(runs, rep, subject, dataset):
        notes.append(line)
    return Table(
        f"claims_{dataset}",
        f"The paper's claims on {dataset_label(dataset)}, tested on our runs",
        ["Claim", "Published", "Ours", "Δ (95% interval)", "p (Holm)", "Verdict", "Paired"],
        body,
        frame,
        notes,
        lead=lead,
    )


def _p(p: float) -> str:
    if p is None or not np.isfinite(p):
        return MISSING
    return "<0.001" if p < 0.001 else f"{p:.3f}"
