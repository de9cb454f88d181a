"""The silhouette of the test representations labelled by context, per dataset and variant (the
table behind the silhouette figure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from con2.paper_names import dataset_label
from con2.report.artefacts import ReportInputs
from con2.report.format import CELL_NOTE, Table
from con2.report.methods import Methods
from con2.report.select import (
    classes_text,
    level_stats,
    like_with_like,
    lookup_stat,
    ordered_datasets,
    report_block,
)


def variant_label(row: Mapping[str, Any], names: Methods, plain_loss: Any = None) -> str:
    """``CON2 invert``, ``CON2 k4``, ``CON2 invert (context only)``, ``SimCLR default``...: the method's
    label, its contexts tag (else the variant) and its loss tag unless it is ``plain_loss``."""
    ctx = row.get("contexts")
    ctx = ctx if isinstance(ctx, str) and ctx else row["variant"]
    loss = row.get("loss")
    extra = f" ({str(loss).replace('_', ' ')})" if isinstance(loss, str) and loss not in (plain_loss, "") else ""
    return f"{names.label(row['method'])} {ctx}{extra}"


STUDIES_NOTE = "Runs that only the studies train (report.scopes) are not shown: their tables are the studies'."


def study_only(config: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The (method, variant) pairs that only the studies (the experiments of ``report.scopes``) train: a
    128-epoch run beside the grid's 5-epoch ones has the same contexts, and its own tables."""
    experiments = config.get("experiments") or {}
    scoped = {e for names in (report_block(config).get("scopes") or {}).values() for e in names or []}

    def pairs(names: set[str]) -> set[tuple[str, str]]:
        methods = [(experiments.get(e) or {}).get("methods") or {} for e in names]
        return {(m, v) for ms in methods if isinstance(ms, Mapping) for m, vs in ms.items() for v in vs or []}

    return pairs(scoped) - pairs(set(experiments) - scoped)


def silhouette(inputs: ReportInputs) -> Table:
    """Silhouette of the test representations labelled by context, per dataset and variant (like with like)."""
    runs, config = inputs.frame("runs"), inputs.config
    rep = report_block(config)
    subject, names = inputs.subject, inputs.names
    sel = runs.dropna(subset=["silhouette"]) if not runs.empty else runs
    studies = study_only(config)
    if not sel.empty and studies:  # the grid's budget only: a study's runs are in its own tables
        sel = sel[[(m, v) not in studies for m, v in zip(sel["method"], sel["variant"])]]
    if not sel.empty:
        sel = sel.drop_duplicates(subset=["dataset", "normal_class", "method", "variant", "seed"]).copy()
        plain = subject.reference.get("loss")
        sel["label"] = [
            variant_label(r, names, plain if r["method"] == subject.method else None) for r in sel.to_dict("records")
        ]
    else:
        sel = sel.assign(label=pd.Series(dtype=str))
    sel, like_notes = like_with_like(sel, "label", "variant")
    empty = pd.DataFrame(columns=["dataset", "label", "mean", "std", "n", "n_classes", "seeds_min", "seeds_max"])
    level = level_stats(sel, ["dataset", "label"], "silhouette") if not sel.empty else empty
    # which normal classes each bar of the figure averages (like with like may keep only some)
    classes = sel.groupby(["dataset", "label"])["normal_class"].agg(lambda c: classes_text(list(set(c))))
    level = level.assign(
        classes=[classes.get((d, lab), "") for d, lab in zip(level["dataset"], level["label"])] if len(level) else []
    )
    labels = sorted(dict.fromkeys(level["label"]), key=lambda s: (0 if "(" not in s else 1, s))
    datasets = ordered_datasets(list(dict.fromkeys(level["dataset"])), rep["medical"], rep["natural"])
    rows = []
    for d in datasets:
        rows.append([dataset_label(d), *[lookup_stat(level, dataset=d, label=lab).text(digits=3) for lab in labels]])
    return Table(
        "silhouette",
        "Silhouette score of the representations labelled by context (both contexts of every test image)",
        ["Dataset", *labels],
        rows,
        level.rename(columns={"label": "variant"}),
        [
            "Cosine silhouette in [-1, 1] of the identity-view encoder outputs; mean ± std; "
            f"{CELL_NOTE} Per dataset, every variant averages the same normal classes. High = the context clusters "
            "exist.",
            *([STUDIES_NOTE] if studies else []),
            *like_notes,
        ],
    )
