"""The paper's published numbers (and other sources' published numbers, each naming its source) and the
names that join them to ours.

``con2/resources/paper_numbers.csv`` (AUROC in percent; columns table, dataset, method,
family, context, score, auroc_mean, auroc_std; the std is empty where the paper prints a number
without one: the zero-shot rows and PANDA's) and ``paper_compute_hours.csv`` (GPU hours per
run) are copies of the spec's files. Our datasets are registry names (``breastmnist``), the
paper's are display names (``BreastMNIST``); a profile config may add names (``paper_names`` in
the config). Our methods are ``(method, score)`` pairs, the paper's are table rows (a method and
a score or ""): each method's spec says which row each of its scores is compared with (see
:mod:`con2.report.methods`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from con2.report.format import mean_std

# Table 1's rows of methods the harness does not run, and the code that produced them: each is a way
# in through docs/methods.md "(b)" (a Snakemake rule around the program, its scores turned into a record by
# `python -m con2.run.external`).
EXTERNAL_CODE: dict[str, str] = {
    "AnomalyCLIP": "github.com/zqhang/AnomalyCLIP",
    "MVFA": "github.com/MediaBrain-SJTU/MVFA-AD",
    "MediCLIP": "github.com/cnulab/MediCLIP",
}


def external_code_notes(methods: Iterable[str]) -> list[str]:
    """One note per paper-only row of :data:`EXTERNAL_CODE` among ``methods``: its code, and how to add it."""
    return [
        f"{m}: the paper's number only; its code is {EXTERNAL_CODE[m]}: add it as an external program "
        '(docs/methods.md "(b)": a Snakemake rule that runs it and `python -m con2.run.external` for the record).'
        for m in dict.fromkeys(methods)
        if m in EXTERNAL_CODE
    ]


def load_paper_numbers(path: str | Path) -> pd.DataFrame:
    """The paper's AUROC table (strings stay strings; empty context/score become "")."""
    df = pd.read_csv(path, dtype={"context": str, "score": str, "family": str})
    for col in ("context", "score", "family"):
        df[col] = df[col].fillna("")
    return df


def load_reference_numbers(path: str | Path) -> pd.DataFrame:
    """Published numbers of other sources than the paper (``con2/resources/reference_numbers.csv``: source,
    url, commit, where in it, dataset as the paper names it, method, score, auroc_mean, auroc_std, setting),
    e.g. CSI's repository's one-class CIFAR-10 means: shown beside ours and the paper's, never as the paper's."""
    df = pd.read_csv(path, dtype={"score": str, "commit": str})
    df["score"] = df["score"].fillna("")
    return df


def reference_note(references: pd.DataFrame) -> str:
    """One note naming every source of ``references`` rows: where its numbers were read (file, commit) and
    their setting."""
    parts = []
    for (source, url, commit, where), rows in references.groupby(["source", "url", "commit", "where"], sort=False):
        settings = "; ".join(dict.fromkeys(rows["setting"].astype(str)))
        parts.append(f"{source}: {url} at {str(commit)[:7]}, {where} ({settings}); its numbers as published there")
    return "Other sources: " + " | ".join(parts) + "." if parts else ""


def load_compute_hours(path: str | Path) -> pd.DataFrame:
    """The paper's GPU hours per run (method, dataset, gpu_hours_per_run)."""
    return pd.read_csv(path)


def paper_row(
    paper: pd.DataFrame, table: str | None, dataset: str, method: str, score: str = "", context: str = ""
) -> pd.Series | None:
    """The paper's row of one cell (the first that matches, in the file's order), or ``None``.

    ``score`` / ``context`` empty match any; ``table`` ``None`` searches every table.
    """
    sel = (paper["dataset"] == dataset) & (paper["method"] == method)
    if table is not None:
        sel &= paper["table"] == table
    if score:
        sel &= paper["score"].isin([score, ""])
    if context:
        sel &= paper["context"].isin([context, ""])
    hit = paper[sel]
    if hit.empty:
        return None
    if score and (hit["score"] == score).any():
        hit = hit[hit["score"] == score]
    return hit.iloc[0]


def paper_value(
    paper: pd.DataFrame, table: str | None, dataset: str, method: str, score: str = "", context: str = ""
) -> tuple[float, float] | None:
    """``(mean, std)`` of one paper cell (std NaN where the paper gives none), or ``None`` (see :func:`paper_row`)."""
    row = paper_row(paper, table, dataset, method, score, context)
    if row is None:
        return None
    return float(row["auroc_mean"]), float(row["auroc_std"]) if pd.notna(row["auroc_std"]) else float("nan")


PAPER_CELL = ["dataset", "method", "context", "score"]  # what one published number is about


def disagreement_notes(paper: pd.DataFrame, shown: pd.DataFrame, each_row_own: bool = False) -> list[str]:
    """One note per cell the paper publishes in several of its tables with different numbers, among
    the paper rows a table shows (``shown``: rows of ``paper``), e.g. CON2 (NND, invert) on
    BreastMNIST: 81.7 ± 1.4 in Table 1 and 81.7 ± 0.9 in the alternative-contexts table. A table
    keeps the number of the paper's table it shows; the note says so (``each_row_own``: a table
    that lists every table's row, the reproduction report)."""
    if shown is None or shown.empty:
        return []
    notes = []
    shown_keys = set(map(tuple, shown[PAPER_CELL].to_numpy().tolist()))
    for key, rows in paper.groupby(PAPER_CELL, sort=False):
        if tuple(key) not in shown_keys or len(rows[["auroc_mean", "auroc_std"]].drop_duplicates()) < 2:
            continue
        dataset, method, context, score = key
        what = ", ".join(x for x in (score, context) if x)
        values = "; ".join(f"{mean_std(r['auroc_mean'], r['auroc_std'])} in {r['table']}" for _, r in rows.iterrows())
        mine = shown[(shown[PAPER_CELL] == pd.Series(key, index=PAPER_CELL)).all(axis=1)]["table"]
        which = (
            "each row shows its own table's number"
            if each_row_own
            else f"this table shows {' and '.join(dict.fromkeys(mine))}'s"
        )
        notes.append(
            f"The paper's own tables disagree on {method}{f' ({what})' if what else ''} on {dataset}: {values}; "
            f"{which}."
        )
    return notes
