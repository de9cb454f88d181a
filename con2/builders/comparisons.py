"""``comparisons_<dataset>`` (one per dataset of ``report.comparisons``): each method's main variant
(every headline score) against a reference (``report.compare_to``: ``method`` or ``method/score``,
default the subject's first score, e.g. CON2 (NND)), as the difference of AUROCs (method −
reference, percent) with a 95% interval, a two-sided p-value and whether it holds after Holm's
correction over the table's comparisons (``report.alpha``, default 0.05).

The paired test on the same test images, and what a row's reason means, is :mod:`con2.report.paired`.
"""

from __future__ import annotations

from con2.paper_names import dataset_label
from con2.report.artefacts import ReportInputs
from con2.report.format import MISSING, Table, classes_by_seeds, signed
from con2.report.paired import alpha, compare, p_text, reference_pair


def comparisons(inputs: ReportInputs) -> Table:
    """``comparisons_<dataset>``: each method against the reference on the same test images."""
    runs, config, dataset, names = inputs.frame("runs"), inputs.config, inputs.dataset, inputs.names
    ref = reference_pair(config, runs, names)
    frame = compare(runs, config, dataset, names, scores=inputs.score_source())
    a = alpha(config)
    ref_label = names.pair_label(*ref) if ref else "(no reference)"
    rows = []
    for r in frame.to_dict("records"):
        over = classes_by_seeds(r["n_classes"], r["seeds_min"], r["n_seeds"]) if r["n_classes"] else MISSING
        if r["reason"]:
            rows.append(
                [names.pair_label(r["method"], r["score"]), MISSING, MISSING, MISSING, MISSING, r["reason"], over]
            )
            continue
        verdict = ("yes: above" if r["diff"] > 0 else "yes: below") if r["holds"] else "no"
        rows.append(
            [
                names.pair_label(r["method"], r["score"]),
                signed(r["diff"]),
                f"{r['lo']:.1f} to {r['hi']:.1f}",
                p_text(r["p"]),
                p_text(r["p_holm"]),
                verdict,
                over,
            ]
        )
    notes = [
        f"Δ: AUROC (%) of the method minus {ref_label} (`report.compare_to`), each method's main variant, on the "
        "same test images and seeds (paired by normal class and seed; a run's images matched by scores.csv's index "
        "and labels); the mean over seeds (and over classes where several). A method whose one run trained "
        "nothing (its record's steps: 0; a floor) is that run paired with every seed of the other, whatever its "
        "name, as its identical runs on every seed would be.",
        "95% interval and two-sided p by DeLong's paired test: the variance over test images of the seed-mean "
        "difference (every seed of both methods scores the same images; their correlation is counted), plus the "
        "variance of the per-seed differences over seeds / seeds (training randomness; none with one seed).",
        f"Holds: Holm-adjusted p ≤ {a:g} over the {int(frame['p'].notna().sum())} comparisons of this table "
        f"(`report.alpha`); 'no' is not 'equal': the difference is not resolved at this budget. Paired: classes × "
        "seeds.",
    ]
    if len(frame) and frame["n_classes"].max() > 1:
        notes.append(
            "Several normal classes: their differences are averaged and their variances summed as if independent "
            "(the one-vs-rest tasks share test images: an approximation)."
        )
    if ref and not frame.empty and frame["reason"].ne("").all():
        notes.append("No comparison could be made: each row says why.")
    title = f"Paired comparisons on {dataset_label(dataset)}: each method against {ref_label}"
    header = ["Method", f"Δ vs {ref_label}", "95% interval", "p", "p (Holm)", "Holds", "Paired"]
    return Table(f"comparisons_{dataset}", title, header, rows, frame, notes)
