"""The names of the paper's artefacts: one Snakemake target each (no heavy imports here).

Tables go to ``results/tables/<name>.{csv,md,tex}``, figures to
``results/figures/<name>.{png,pdf}``; ``per_class_<dataset>`` exists once per dataset listed in
the profile's ``report.per_class``.
"""

from __future__ import annotations

TABLES: tuple[str, ...] = (
    "table1_medical",  # Table 1: medical AUROC, the paper's numbers beside ours
    "nnd_vs_lh",  # the subject's scores side by side (report.subject)
    "loss_ablation",  # L_Context / L_Content ablation
    "alt_contexts",  # invert / flip / equalize on the medical datasets
    "natural_summary",  # natural-image summary over normal classes
    "all_contexts",  # every context and both scores on the natural datasets
    "multi_context",  # k = 2..8 contexts
    "silhouette",  # context silhouette (table behind the figure)
    "score_runtime",  # S_NND vs S_LH timing (table behind the figure)
    "compute_cost",  # time and memory per run
    "reproduction",  # every paper number next to ours
    "fidelity",  # every reading of the paper (training settings, scoring readings) against the default
)

FIGURES: tuple[str, ...] = ("silhouette", "score_runtime", "pca_representations")

PER_CLASS_PREFIX = "per_class_"


def table_targets(per_class: list[str], root: str = "results/tables") -> list[str]:
    """Every table file (csv, md, tex) of a profile."""
    names = [*TABLES, *(f"{PER_CLASS_PREFIX}{d}" for d in per_class)]
    return [f"{root}/{n}.{ext}" for n in names for ext in ("csv", "md", "tex")]


def figure_targets(per_class: list[str], root: str = "results/figures") -> list[str]:
    """Every figure file (png, pdf) of a profile."""
    names = [*FIGURES, *(f"{PER_CLASS_PREFIX}{d}" for d in per_class)]
    return [f"{root}/{n}.{ext}" for n in names for ext in ("png", "pdf")]
