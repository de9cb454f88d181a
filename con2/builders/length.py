"""The length study (``report.scopes.length_curve``, ``length_claims``): every method's curve per normal
class, and the paper's claims tested after the last epoch.

A length study trains each method long (CIFAR-10: 128 epochs on two classes) and scores it after the
epochs of ``score_at`` on the curve's cheap test views (:mod:`con2.run.curve`). Two tables read its runs:

* ``length_curve``: one row per normal class and series (method, variant, score), then the mean over
  the classes; the columns are the scored epochs and the finished run's own AUROC (its own test views,
  as every other table). A floor (``report.floors``: nothing trained, no curve) is a row with its final
  AUROC only, which the figure draws as a line. ``report.curve_scores`` names the scores drawn per method
  (``{simclr: [knn, ssd]}``; default: the method's first headline score). Each series carries the number
  published for it (the paper's, else a reference source's), the test views its final AUROC used, and what
  its runs cost (each record's training, curve and final-scoring seconds; a note sums the study's).
* ``length_claims``: the claims of ``report.length_claims`` (``{a: con2/flip_length128, b:
  csi/length128}``: a above b, each ``method/variant[/score]``), after the last epoch: per class the
  paired difference with its DeLong interval, over the classes the paired test of the comparisons
  tables (:func:`con2.report.paired.paired_over_classes`), Holm over the table's tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.runs_csv import RUN_KEYS, dataset_level, summarize
from con2.aggregate.score_files import ScoresSource
from con2.errors import ConfigError
from con2.maths.stats import holm
from con2.paper_names import dataset_label, dataset_names
from con2.report.artefacts import ReportInputs
from con2.report.curve_points import curve_rows, primary_score
from con2.report.format import CELL_NOTE, MISSING, Table, cell, classes_by_seeds, signed
from con2.report.methods import Methods, Subject
from con2.report.paired import alpha, paired_over_classes
from con2.report.paper import paper_value
from con2.report.select import headline, main_runs, ordered_datasets, report_block

LENGTH_SCOPE = "length_curve"  # the report.scopes key whose experiments are the length study
CLAIMS_SCOPE = "length_claims"  # the same study's runs, for its claims table (a scope per table, as every study)
FINAL = "final (own test views)"
COLUMNS = [
    "dataset",
    "normal_class",  # "" on the rows of the mean over classes
    "method",
    "variant",
    "score",
    "label",
    "epoch",  # NaN on a floor's one row (nothing trained, no curve)
    "mean",
    "std",
    "n",
    "n_classes",
    "seeds_min",
    "seeds_max",
    "final",  # the finished runs' own AUROC (their own test views)
    "test_views",  # the test views of that final AUROC
    "published",  # the number published for the series (the paper's, else a reference source's), NaN if none
    "published_by",
    "fit_seconds",  # the series' training steps: its class's run (mean over seeds); a mean row: summed over classes
    "curve_seconds",  # its learning curve's scoring, the same way
    "score_seconds",  # its final scoring, the same way
    "sessions",  # the most training sessions one of its runs took
]
TIMES = ["fit_seconds", "curve_seconds", "score_seconds"]
TIME = "hours: train + curve + final score"


def curve_scores(rep: Mapping[str, Any], names: Methods, method: str, present: list[str]) -> list[str]:
    """The scores the length study draws for ``method``: ``report.curve_scores[method]`` where set (SimCLR's
    kNN and SSD), else its first headline score."""
    wanted = (rep.get("curve_scores") or {}).get(method)
    if wanted:
        return [s for s in wanted if s in present]
    return [primary_score(names, method, present)]


def study_runs(inputs: ReportInputs) -> pd.DataFrame:
    """The headline rows of the study's runs: every variant but the main ones, and the floors' runs."""
    rep, names = report_block(inputs.config), inputs.names
    runs = headline(inputs.frame("runs"))
    if runs.empty:
        return runs
    floors = runs["method"].isin(names.floors)
    main = runs.index.isin(main_runs(runs, rep).index)
    return runs[floors | ~main]


def test_views(rows: pd.DataFrame) -> str:
    """How many test views the final AUROC of ``rows`` (one series' runs) used: the run frame's ``test_views``
    (what the method says of its own scoring, e.g. CSI's "40 views (10 samples x 4 rotations, features
    averaged)"), else its ``tta`` (``"4 views"``; tta 0: the identity view)."""
    if "test_views" in rows and rows["test_views"].notna().any() and str(rows["test_views"].dropna().iloc[0]):
        return str(rows["test_views"].dropna().iloc[0])
    tta = int(rows["tta"].dropna().iloc[0]) if "tta" in rows and rows["tta"].notna().any() else 0
    return f"{max(tta, 1)} view{'s' if tta > 1 else ''}"


def published(
    inputs: ReportInputs, subject: Subject, dataset: str, method: str, score: str, rows: pd.DataFrame
) -> tuple[float, str] | None:
    """The number published for a series on ``dataset`` and who published it: the paper's (the subject by its
    runs' context, on the main loss only), else a reference source's (CSI's repository); ``None`` if none."""
    names, paper = inputs.names, inputs.frame("paper")
    pname = dataset_names(inputs.config).get(dataset, dataset)
    target = names.paper_row(method, score)
    if target is None:
        return None
    if method == subject.method:
        ctx = str(rows["contexts"].iloc[0]) if "contexts" in rows and rows["contexts"].notna().any() else ""
        main_loss = subject.reference.get("loss")
        if not ctx or (main_loss is not None and (subject.losses(rows) != main_loss).any()):
            return None
        got = paper_value(paper[paper["context"] == ctx], None, pname, target[0], target[1], ctx)
        return (got[0], f"paper, {ctx}") if got else None
    got = paper_value(paper, None, pname, target[0], target[1], "")
    if got:
        return got[0], "paper"
    refs = inputs.references
    if refs is not None and not refs.empty:
        hit = refs[(refs["dataset"] == pname) & (refs["method"] == target[0])]
        if not hit.empty:
            return float(hit.iloc[0]["auroc_mean"]), str(hit.iloc[0]["source"])
    return None


def series_time(rows: pd.DataFrame) -> dict[str, float]:
    """What one series' runs (``rows``: one row per run) cost: per class the mean over its seeds of each of
    :data:`TIMES`, summed over the classes (on a class's row: that class's), and the most ``sessions`` a run
    took; NaN where no record keeps the time (a curve's, in a record older than issue 32)."""
    per_class = rows.groupby(rows["normal_class"].astype(str))[TIMES].mean()
    spent = {k: float(per_class[k].sum(min_count=1)) for k in TIMES}
    sessions = pd.to_numeric(rows["sessions"], errors="coerce").max()
    return {**spent, "sessions": float(sessions)}


def time_text(spent: Mapping[str, float], summed: bool) -> str:
    """The time cell: ``8.20 + 0.87 + 0.02 (6 sessions)`` in hours (a missing part "–"), ``total`` before a sum
    over classes; the sessions where a run was resumed."""

    text = " + ".join(_hours(spent[k], 2) for k in TIMES)
    sessions = spent["sessions"]
    resumed = f" ({int(sessions)} sessions)" if not summed and not np.isnan(sessions) and sessions > 1 else ""
    return f"{'total ' if summed else ''}{text}{resumed}"


def study_time(finals: pd.DataFrame) -> str:
    """The note on the whole study's time: its runs (one per record), their hours and machines."""
    runs = finals.drop_duplicates(RUN_KEYS)  # one row per run (SimCLR's two scores are one run)
    if runs.empty:
        return ""
    spent = {k: float(runs[k].sum(min_count=1)) for k in TIMES}
    parts = ", ".join(
        f"{_hours(spent[k], 1)} h of {what}" for k, what in zip(TIMES, ("training", "curve scoring", "final scoring"))
    )
    machines = runs["machine"].fillna("unknown").astype(str).value_counts()
    on = "; ".join(f"{m} ({n} run{'s' if n > 1 else ''})" for m, n in machines.items())
    return (
        f"Time ({TIME}, each record's timing): on a class's row its run's (the mean over seeds), on a mean row "
        f"('total') the sum over the classes. The study's {len(runs)} runs: {parts}, on {on}. A resumed run's "
        "times add up its sessions, each beside whatever else the machine ran: a cost, not a pace."
    )


def _hours(seconds: float, digits: int) -> str:
    """``seconds`` in hours to ``digits`` decimals; :data:`MISSING` where no record kept the time (NaN)."""
    return MISSING if np.isnan(seconds) else f"{seconds / 3600:.{digits}f}"


def _stats(frame: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """Per ``keys`` (with dataset), the mean over classes of the seed means of ``value`` (:func:`dataset_level`)."""
    return dataset_level(summarize(frame, value, [*keys, "normal_class"]), keys)


def length_curve(inputs: ReportInputs) -> Table:
    """``length_curve``: rows dataset x (each normal class, then the mean over classes) x series; columns the
    scored epochs and the finished runs' own AUROC (:data:`FINAL`)."""
    rep, names, subject = report_block(inputs.config), inputs.names, inputs.subject
    scoped = LENGTH_SCOPE in (rep.get("scopes") or {})
    runs = study_runs(inputs) if scoped else headline(inputs.frame("runs")).iloc[0:0]
    floors = runs[runs["method"].isin(names.floors)] if not runs.empty else runs
    trained = runs.drop(index=floors.index) if not runs.empty else runs
    points, unreadable = curve_rows(trained, names, inputs.score_source(), lambda m, s: curve_scores(rep, names, m, s))
    picked = set(zip(points["method"], points["variant"], points["score"]))
    floor_rows = floors[floors.apply(lambda r: r["score"] == primary_score(names, r["method"], [r["score"]]), axis=1)]
    finals = pd.concat(
        [
            trained[trained.apply(lambda r: (r["method"], r["variant"], r["score"]) in picked, axis=1)]
            if not trained.empty
            else trained,
            floor_rows,
        ]
    )
    series_keys = ["dataset", "method", "variant", "score"]
    epochs = sorted({int(e) for e in points["epoch"]})
    data: list[dict[str, Any]] = []
    body: list[list[str]] = []
    datasets = ordered_datasets(list(dict.fromkeys(finals["dataset"])), rep["medical"], rep["natural"])
    for d in datasets:
        on_d = finals[finals["dataset"] == d]
        pts = points[points["dataset"] == d]
        classes = sorted({str(c) for c in on_d["normal_class"]})
        series = sorted(
            dict.fromkeys(zip(on_d["method"], on_d["variant"], on_d["score"])),
            key=lambda t: (names.pair_key(t[0], t[2]), t[1]),
        )
        groups: list[str] = [*classes, *([""] if len(classes) > 1 else [])]
        for group in groups:
            for m, v, s in series:
                rows = on_d[(on_d["method"] == m) & (on_d["variant"] == v) & (on_d["score"] == s)]
                curve = pts[(pts["method"] == m) & (pts["variant"] == v) & (pts["score"] == s)]
                if group:
                    rows, curve = (
                        rows[rows["normal_class"].astype(str) == group],
                        curve[curve["normal_class"].astype(str) == group],
                    )
                if rows.empty:
                    continue
                final = _stats(rows, series_keys, "auroc").iloc[0]
                pub = published(inputs, subject, d, m, s, rows)
                views = test_views(rows)
                label = f"{names.pair_label(m, s)}, {v}"
                spent = series_time(rows)
                level = _stats(curve, [*series_keys, "epoch"], "auroc") if not curve.empty else None
                cells = []
                for e in epochs:
                    hit = level[level["epoch"] == e] if level is not None else None
                    if hit is None or hit.empty:
                        cells.append(MISSING)
                        continue
                    r = hit.iloc[0]
                    cells.append(
                        cell(r["mean"], r["std"], int(r["n_classes"]), int(r["seeds_min"]), int(r["seeds_max"]))
                    )
                    data.append(_row(d, group, m, v, s, label, e, r, final, views, pub, spent))
                if level is None:  # a floor: its final AUROC only
                    data.append(_row(d, group, m, v, s, label, np.nan, final, final, views, pub, spent))
                final_text = cell(
                    final["mean"],
                    final["std"],
                    int(final["n_classes"]),
                    int(final["seeds_min"]),
                    int(final["seeds_max"]),
                )
                body.append(
                    [
                        dataset_label(d),
                        group or f"mean of {len(classes)}",
                        label,
                        *cells,
                        f"{final_text} ({views})",
                        f"{pub[0]:.1f} ({pub[1]})" if pub else MISSING,
                        time_text(spent, summed=not group),
                    ]
                )
    notes = [
        "AUROC (%) after each scored epoch (config score_at) of the length study's runs (report.scopes.length_curve: "
        f"trained by `snakemake studies` or by naming this table), mean ± std; {CELL_NOTE} Every epoch column uses "
        f"the curve's cheap test views (config curve_views); '{FINAL}' is the finished runs' own AUROC on the test "
        "views it names, as every other table shows it. A floor trains nothing: its final AUROC only. Published: "
        "the paper's mean over the dataset's classes for the series (CON2 by its context), else a reference "
        "source's; a class's own number is not published.",
    ]
    if len(points):
        views_of = points.groupby(["method", "variant"])["views"].agg(lambda v: ", ".join(sorted(set(v))))
        notes.append("Curve points: " + "; ".join(f"{names.label(m)} {v}: {w}" for (m, v), w in views_of.items()) + ".")
    if body:
        notes.append(study_time(finals))
    if unreadable:
        notes.append(f"{len(unreadable)} record(s) listed in runs.csv could not be read: {', '.join(unreadable[:3])}.")
    if not scoped:
        notes.append("This profile has no length study (report.scopes.length_curve names none).")
    elif not body:
        notes.append(
            "No record of the length study yet: `snakemake --cores 2 results/tables/length_curve.md` trains it."
        )
    header = ["Dataset", "Normal class", "Method", *[f"epoch {e}" for e in epochs], FINAL, "published", TIME]
    return Table(
        LENGTH_SCOPE,
        "Length study: AUROC (%) after each scored epoch of the long runs",
        header,
        body,
        pd.DataFrame(data, columns=COLUMNS),
        notes,
    )


def _row(
    d: str,
    group: str,
    m: str,
    v: str,
    s: str,
    label: str,
    epoch: float,
    r: Any,
    final: Any,
    views: str,
    pub: Any,
    spent: Mapping[str, float],
) -> dict[str, Any]:
    return {
        "dataset": d,
        "normal_class": group,
        "method": m,
        "variant": v,
        "score": s,
        "label": label,
        "epoch": epoch,
        **{k: r[k] for k in ("mean", "std", "n", "n_classes", "seeds_min", "seeds_max")},
        "final": final["mean"],
        "test_views": views,
        "published": pub[0] if pub else np.nan,
        "published_by": pub[1] if pub else "",
        **spent,
    }


@dataclass(frozen=True)
class Side:
    """One side of a length claim: ``method/variant[/score]``."""

    method: str
    variant: str
    score: str

    @classmethod
    def parse(cls, text: Any, names: Methods, runs: pd.DataFrame) -> Side:
        parts = str(text).split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise ConfigError(
                f"report.length_claims: {text!r} is not method/variant[/score]. Fix: e.g. con2/flip_length128 "
                "or simclr/length128/ssd"
            )
        method, variant = parts[0], parts[1]
        present = sorted({str(s) for s in runs.loc[runs["method"] == method, "score"]}) if not runs.empty else []
        score = parts[2] if len(parts) == 3 else (primary_score(names, method, present) if present else "")
        return cls(method, variant, score)

    def rows(self, runs: pd.DataFrame) -> pd.DataFrame:
        if runs.empty:
            return runs
        return runs[(runs["method"] == self.method) & (runs["variant"] == self.variant) & (runs["score"] == self.score)]

    def label(self, names: Methods) -> str:
        return f"{names.pair_label(self.method, self.score)} {self.variant}"


CLAIM_COLUMNS = [
    "claim",
    "a",
    "b",
    "normal_class",
    "a_mean",
    "b_mean",
    "diff",
    "lo",
    "hi",
    "p",
    "p_holm",
    "verdict",
    "n",
]
HOLDS, REVERSED, UNRESOLVED = "holds", "reversed", "not resolved"


def length_claims(inputs: ReportInputs) -> Table:
    """``length_claims``: each claim of ``report.length_claims`` after the study's last epoch, per class and over
    the classes (paired, DeLong; Holm over the over-classes tests)."""
    rep, names = report_block(inputs.config), inputs.names
    claims = rep.get("length_claims") or []
    scoped = CLAIMS_SCOPE in (rep.get("scopes") or {})
    runs = study_runs(inputs) if scoped else headline(inputs.frame("runs")).iloc[0:0]
    scores = inputs.score_source()
    rows: list[dict[str, Any]] = []
    for claim in claims:
        if not isinstance(claim, Mapping) or set(claim) - {"a", "b"} or not {"a", "b"} <= set(claim):
            raise ConfigError(f"report.length_claims: {claim!r} must be {{a: method/variant, b: method/variant}}")
        a, b = (Side.parse(claim[k], names, runs) for k in ("a", "b"))
        sides = pd.concat([a.rows(runs), b.rows(runs)])
        on = ordered_datasets(list(dict.fromkeys(sides["dataset"])), rep["medical"], rep["natural"]) or [""]
        for d in on:
            rows.extend(_claim_rows(a, b, runs[runs["dataset"] == d] if d else runs, d, names, scores))
    frame = pd.DataFrame(rows, columns=[*CLAIM_COLUMNS, "reason"])
    over = (frame["normal_class"] == "") & frame["p"].notna() if len(frame) else pd.Series(dtype=bool)
    frame["p_holm"] = np.nan
    if over.any():
        frame.loc[over, "p_holm"] = holm(frame.loc[over, "p"].to_numpy(dtype=np.float64))
    a_ = alpha(inputs.config)

    def verdict(r: Mapping[str, Any]) -> str:
        if r["reason"]:
            return f"cannot test: {r['reason']}"
        if r["normal_class"]:
            return ""  # one class: its interval, no verdict (the verdict is over the classes, Holm-corrected)
        if r["p_holm"] <= a_:
            return HOLDS if r["diff"] > 0 else REVERSED
        return UNRESOLVED

    frame["verdict"] = [verdict(r) for r in frame.to_dict("records")]
    body = [
        [
            r["claim"] if not r["normal_class"] else "",
            r["normal_class"] or "over the classes",
            f"{r['a_mean']:.1f} vs {r['b_mean']:.1f}"
            if np.isfinite(r["a_mean"]) and np.isfinite(r["b_mean"])
            else MISSING,
            f"{signed(r['diff'])} ({r['lo']:.1f} to {r['hi']:.1f})" if np.isfinite(r["diff"]) else MISSING,
            _p(r["p_holm"]) if not r["normal_class"] else "",
            r["verdict"],
            r["n"] or MISSING,
        ]
        for r in _claim_order(frame).to_dict("records")
    ]
    tested = frame[(frame["normal_class"] == "") & (frame["reason"] == "")]
    counts = {v: int((tested["verdict"] == v).sum()) for v in (HOLDS, REVERSED, UNRESOLVED)}
    epochs = _last_epochs(runs)
    lead = (
        [
            f"**After {epochs}: {counts[HOLDS]} of {len(tested)} claims hold, {counts[REVERSED]} reversed, "
            f"{counts[UNRESOLVED]} not resolved.**"
        ]
        if len(tested)
        else []
    )
    notes = [
        "Each claim: the first side above the second, after the length study's last epoch (the finished runs' own "
        "AUROC %). Per class: the paired difference on the same test images (DeLong 95% interval; with several seeds "
        "the spread over seeds too); over the classes: the classes averaged, their variances summed (the test of the "
        "comparisons tables).",
        f"Holds: Holm-adjusted p ≤ {a_:g} over the {int(over.sum()) if len(frame) else 0} over-the-classes tests "
        "of this table with the claimed sign; reversed: significant with the other; not resolved: neither "
        "(not 'equal').",
    ]
    if not claims:
        notes.append("This profile names no claim (report.length_claims).")
    elif not scoped:
        notes.append("This profile has no length study for its claims (report.scopes.length_claims names none).")
    return Table(
        CLAIMS_SCOPE,
        "The paper's claims after the length study's last epoch",
        ["Claim", "Normal class", "Ours", "Δ (95% interval)", "p (Holm)", "Verdict", "Paired"],
        body,
        frame,
        notes,
        lead=lead,
    )


def _claim_rows(
    a: Side, b: Side, runs: pd.DataFrame, dataset: str, names: Methods, scores: ScoresSource
) -> list[dict[str, Any]]:
    """One claim on one dataset: a row per normal class both sides ran, then the row over those classes."""
    a_rows, b_rows = a.rows(runs), b.rows(runs)
    text = f"{a.label(names)} above {b.label(names)}" + (f" ({dataset_label(dataset)})" if dataset else "")
    shared = sorted(set(map(str, a_rows["normal_class"])) & set(map(str, b_rows["normal_class"])))
    missing = [s.label(names) for s, r in ((a, a_rows), (b, b_rows)) if r.empty]
    reason = f"no run of {' nor of '.join(missing)}" if missing else "no normal class both sides ran"
    out: list[dict[str, Any]] = []
    for group in [*shared, ""]:
        ra = a_rows[a_rows["normal_class"].astype(str).isin([group] if group else shared)]
        rb = b_rows[b_rows["normal_class"].astype(str).isin([group] if group else shared)]
        res: dict[str, Any] = paired_over_classes(rb, ra, b.score, a.score, scores) if shared else {"reason": reason}
        out.append(
            {
                "claim": text,
                "a": a.label(names),
                "b": b.label(names),
                "normal_class": group,
                "a_mean": _mean(ra),
                "b_mean": _mean(rb),
                **{k: res.get(k, np.nan) for k in ("diff", "lo", "hi", "p")},
                "n": classes_by_seeds(res["n_classes"], res["seeds_min"], res["n_seeds"])
                if res.get("n_classes")
                else "",
                "reason": res.get("reason", ""),
            }
        )
    return out


def _claim_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Each claim's over-the-classes row first, then its classes (the table reads top-down)."""
    if frame.empty:
        return frame
    order = frame.assign(_claim=pd.factorize(frame["claim"])[0], _cls=frame["normal_class"] != "")
    return order.sort_values(["_claim", "_cls", "normal_class"], kind="stable").drop(columns=["_claim", "_cls"])


def _mean(rows: pd.DataFrame) -> float:
    """The mean over normal classes of the seed means of ``rows`` (NaN when empty)."""
    if rows.empty:
        return float("nan")
    return float(rows.groupby("normal_class")["auroc"].mean().mean())


def _last_epochs(runs: pd.DataFrame) -> str:
    """``"128 epochs"``: the study's run lengths (the records' epochs), ``"the last epoch"`` when unknown."""
    if runs.empty or "epochs" not in runs:
        return "the last epoch"
    got = sorted({int(e) for e in runs["epochs"].dropna() if e > 0})
    return f"{', '.join(map(str, got))} epochs" if got else "the last epoch"


def _p(p: float) -> str:
    if p is None or not np.isfinite(p):
        return MISSING
    return "<0.001" if p < 0.001 else f"{p:.3f}"
