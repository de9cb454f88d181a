"""The paper's figures as PNG and PDF (matplotlib, Agg backend), from records and run outputs only.

* :func:`per_class_figure`: AUROC bars per normal class (the CIFAR-10 per-class figure);
* :func:`silhouette_figure`: silhouette of the context clusters per dataset and variant;
* :func:`score_runtime_figure`: S_NND vs S_LH runtime and memory as the training set grows and as
  the number of scored batches grows (from the CSV of ``workflow/scripts/score_runtime.py``);
* :func:`pca_figure`: 2-D PCA of the identity-view representations of train, normal test and
  anomalous test images in both contexts, each test image joined to its context twin;
* :func:`learning_curve_figure`: AUROC against epoch per method (headline score), mean over seeds
  with a ± std band (from the learning-curve table, :mod:`con2.builders.curves`).

Every figure builder has one signature, ``draw(inputs: ReportInputs, png, pdf)``, and reads the
fields of :class:`~con2.report.artefacts.ReportInputs` that its entry in
:data:`con2.report.artefacts.FIGURES` lists. The figures name no method: series labels come from
the table frame they draw (``label``, ``series``) or from the method specs
(:mod:`con2.report.methods`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402

from con2.atomic import atomic_path  # noqa: E402
from con2.paper_names import dataset_label  # noqa: E402
from con2.report.artefacts import MISSING_FILE, ReportInputs  # noqa: E402
from con2.report.curve_points import curve_frame  # noqa: E402
from con2.report.methods import Methods  # noqa: E402
from con2.report.notes import skipped_data  # noqa: E402
from con2.run.records import RecordError, read_record  # noqa: E402
from con2.text import mpl_text  # noqa: E402

PCA_MAX_POINTS = 300  # points per group and panel of the PCA figure (report.pca_max_points)
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


def save(fig: plt.Figure, png: str | Path, pdf: str | Path) -> None:
    """Write ``fig`` as PNG (150 dpi) and PDF, each atomically, then close it."""
    with atomic_path(Path(png)) as tmp:
        fig.savefig(tmp, dpi=150, bbox_inches="tight", format="png")
    with atomic_path(Path(pdf)) as tmp:
        fig.savefig(tmp, bbox_inches="tight", format="pdf", metadata={"CreationDate": None})
    plt.close(fig)


def legend_outside(ax: plt.Axes, **kwargs: object) -> None:
    """The legend to the right of the axes, clear of the data (``bbox_inches="tight"`` keeps it)."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8, frameon=False, **kwargs)


def _empty(ax: plt.Axes, text: str) -> None:
    """``text`` (lines that may name a panel's run) in the middle of an empty panel."""
    shown = "\n".join(mpl_text(line) for line in text.splitlines())
    ax.text(0.5, 0.5, shown, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def seeds_text(lo: int, hi: int) -> str:
    """``"1 seed"``, ``"3 seeds"``, ``"1-3 seeds"``."""
    span = f"{lo}" if lo == hi else f"{lo}-{hi}"
    return f"{span} seed{'' if span == '1' else 's'}"


def classes_text(n: int) -> str:
    """``"1 normal class"`` / ``"10 normal classes"``."""
    return f"{n} normal class{'' if n == 1 else 'es'}"


def _normal_classes(text: str) -> str:
    """``"normal class 0"`` / ``"normal classes 0, 1"`` / ``"10 classes"`` (the table's ``classes`` text)."""
    if text.endswith(" classes"):
        return text
    return f"normal class{'es' if ',' in text else ''} {text}"


def label_bars(ax: plt.Axes, texts: np.ndarray) -> None:
    """Write ``texts[group, series]`` (what each bar averages, ``"1×3"``) inside the foot of each bar
    of :func:`grouped_bars`, in its order; an empty text writes nothing."""
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    for j, container in enumerate(bars):
        for i, patch in enumerate(container.patches):
            if i < texts.shape[0] and j < texts.shape[1] and texts[i, j]:
                x = patch.get_x() + patch.get_width() / 2
                ax.annotate(
                    texts[i, j],
                    (x, 0),
                    xytext=(0, 2),
                    textcoords="offset points",
                    ha="center",
                    va="bottom",
                    fontsize=6,
                    rotation=90,
                    color="white" if patch.get_height() > 0 else "0.2",
                )


def grouped_bars(
    ax: plt.Axes,
    groups: Sequence[str],
    series: Sequence[str],
    means: np.ndarray,
    stds: np.ndarray,
    ylabel: str,
    counts: np.ndarray | None = None,
) -> None:
    """Bars ``means[group, series]``, one colour per series; error bars (± ``stds``) only where a bar
    averages more than one run (``counts[group, series] > 1``), none for a single run."""
    n_s = max(1, len(series))
    width = 0.8 / n_s
    x = np.arange(len(groups))
    counts = np.ones_like(means) if counts is None else counts
    for j, name in enumerate(series):
        several = (np.nan_to_num(counts[:, j], nan=0.0) > 1) & np.isfinite(stds[:, j])
        err = np.where(several, stds[:, j], np.nan) if several.any() else None  # NaN: no bar, no cap
        ax.bar(
            x + (j - (n_s - 1) / 2) * width,
            means[:, j],
            width,
            yerr=err,
            label=mpl_text(name),
            color=PALETTE[j % len(PALETTE)],
            capsize=2,
            error_kw={"elinewidth": 0.8},
        )
    ax.set_xticks(x)
    widest = max((len(line) for g in groups for line in g.splitlines()), default=0)
    tilt = widest > 6 and widest * len(groups) > 60  # long labels, many groups: tilted, else level
    shown = ["\n".join(mpl_text(line) for line in g.splitlines()) for g in groups]  # a group may take two lines
    ax.set_xticklabels(shown, rotation=45 if tilt else 0, ha="right" if tilt else "center")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    legend_outside(ax)


def per_class_figure(inputs: ReportInputs, png: str | Path, pdf: str | Path) -> None:
    """Bars of AUROC per normal class of ``inputs.dataset``; ``inputs.table`` is
    :func:`con2.builders.per_class.per_class`'s frame (its ``label`` and ``series`` columns name and order
    the bars; ``method (score)`` without them)."""
    table_data, dataset = inputs.frame("table"), inputs.dataset
    fig, ax = plt.subplots(figsize=(max(5.0, 0.6 * table_data["normal_class"].nunique() + 2), 3.2))
    if table_data.empty:
        _empty(ax, f"no runs of {dataset_label(dataset)} here (the table's notes say why)")
        ax.set_title(f"{dataset_label(dataset)}: AUROC per normal class")
    else:
        classes = list(dict.fromkeys(table_data["normal_class"]))
        ordered = table_data.sort_values("series", kind="stable") if "series" in table_data.columns else table_data
        pairs = list(dict.fromkeys(zip(ordered["method"], ordered["score"])))
        labels = {}
        if "label" in ordered.columns:
            labels = dict(zip(zip(ordered["method"], ordered["score"]), ordered["label"]))
        means = np.full((len(classes), len(pairs)), np.nan)
        stds, counts = np.full_like(means, np.nan), np.zeros_like(means)
        for r in table_data.to_dict("records"):
            i, j = classes.index(r["normal_class"]), pairs.index((r["method"], r["score"]))
            means[i, j], stds[i, j], counts[i, j] = r["auroc_mean"], r["auroc_std"], r["n"]
        series = [labels.get((m, s), f"{m} ({s})") for m, s in pairs]
        grouped_bars(ax, classes, series, means, stds, "AUROC (%)", counts)
        lo = np.nanmin(means) if np.isfinite(means).any() else 50
        ax.set_ylim(max(0, min(50, lo - 5)), 100)
        ax.axhline(50, color="0.5", lw=0.8, ls=":")
        seeds = table_data["n"].astype(int)
        over = f"{classes_text(len(classes))}, {seeds_text(seeds.min(), seeds.max())} each"
        spread = "; error bar ± std over seeds" if seeds.max() > 1 else "; one run per bar, no error bar"
        ax.set_title(f"{dataset_label(dataset)}: AUROC per normal class\n({over}{spread})", fontsize=10)
    save(fig, png, pdf)


def silhouette_figure(inputs: ReportInputs, png: str | Path, pdf: str | Path) -> None:
    """Bars of the context silhouette per dataset (x) and variant (colour); ``inputs.table``: the
    silhouette table's frame."""
    level = inputs.frame("table")
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * level["dataset"].nunique() + 3), 3.2))
    if level.empty:
        _empty(ax, "no run wrote a silhouette score")
    else:
        datasets = list(dict.fromkeys(level["dataset"]))
        labels = list(dict.fromkeys(level["variant"]))
        means = np.full((len(datasets), len(labels)), np.nan)
        stds, counts = np.full_like(means, np.nan), np.zeros_like(means)
        over = np.full(means.shape, "", dtype=object)  # what each bar averages: "c×s"
        classes: dict[str, list[str]] = {d: [] for d in datasets}  # the normal classes under each dataset
        for r in level.to_dict("records"):
            i, j = datasets.index(r["dataset"]), labels.index(r["variant"])
            means[i, j], stds[i, j], counts[i, j] = r["mean"], r["std"], r["n"]
            lo, hi = int(r["seeds_min"]), int(r["seeds_max"])
            over[i, j] = f"{int(r['n_classes'])}×{lo}" + (f"-{hi}" if hi != lo else "")
            if pd.notna(r.get("classes")) and str(r.get("classes")) not in classes[r["dataset"]]:
                classes[r["dataset"]].append(str(r["classes"]))  # read back from CSV, class 0 is the number 0
        groups = [
            dataset_label(d) + (f"\n({_normal_classes('; '.join(classes[d]))})" if classes[d] else "") for d in datasets
        ]
        grouped_bars(ax, groups, labels, means, stds, "silhouette (context labels)", counts)
        label_bars(ax, over)
        ax.axhline(0, color="0.3", lw=0.8)
        ax.set_ylim(min(-0.1, np.nanmin(means) - 0.05), 1.0)
    ax.set_title(
        "Context clusters: silhouette of the test representations\n(each bar: mean over c normal classes × s seeds, "
        "written c×s on it; error bar ± std where it averages 2 or more)",
        fontsize=9,
    )
    save(fig, png, pdf)


def score_runtime_figure(inputs: ReportInputs, png: str | Path, pdf: str | Path) -> None:
    """Three panels: runtime vs training-set size n, memory vs n, runtime vs number of scored batches
    (``inputs.measured``: the CSV of ``workflow/scripts/score_runtime.py``)."""
    df = inputs.frame("measured")
    names = inputs.names  # the scores' labels and colours, from the method specs
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    panels = [
        ("n_train", "seconds", "training-set size n", "scoring time (s)"),
        ("n_train", "memory_mb", "training-set size n", "model memory (MB)"),
        ("n_batches", "seconds", "scored batches", "scoring time (s)"),
    ]
    for ax, (sweep, value, xlabel, ylabel) in zip(axes, panels):
        sub = df[df["sweep"] == sweep] if not df.empty else df
        if sub.empty:
            _empty(ax, f"no {sweep} sweep")
            continue
        for score in sorted(sub["score"].unique(), key=lambda s: (names.any_score_rank(s), str(s))):
            g = sub[sub["score"] == score].groupby(sweep, as_index=False)[value].median().sort_values(sweep)
            colour = PALETTE[names.any_score_rank(score) % len(PALETTE)]
            label = mpl_text(f"S_{names.any_score_label(score)}")
            ax.plot(g[sweep], g[value], marker="o", ms=3, label=label, color=colour)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, which="both")
        legend_outside(ax)
    meta = df.iloc[0] if not df.empty else None
    if meta is not None:
        fig.suptitle(
            f"Score runtime: d = {int(meta['dim'])}, {int(meta['views'])} test-time views, batches of "
            f"{int(meta['batch_size'])}"
            f" (n = {int(meta['batches_n_train'])} for the batch sweep), {meta['device']}",
            fontsize=10,
        )
    fig.tight_layout()
    save(fig, png, pdf)


def pca_2d(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project rows of ``x [n, d]`` on their first two principal components.

    Returns:
        ``(points [n, 2], explained [2])``: the projections and the fraction of the total variance
        each component explains.
    """
    x = np.asarray(x, dtype=np.float64)
    centred = x - x.mean(0)
    _, sv, vt = np.linalg.svd(centred, full_matrices=False)
    comps = vt[:2]
    var = sv**2
    explained = var[:2] / var.sum() if var.sum() > 0 else np.zeros(min(2, len(var)))
    if comps.shape[0] < 2:
        comps = np.vstack([comps, np.zeros_like(comps)])
        explained = np.append(explained, 0.0)
    return centred @ comps.T, explained


def pca_panel(
    ax: plt.Axes, features: dict[str, np.ndarray], labels: np.ndarray, title: str, max_points: int, seed: int
) -> None:
    """One PCA panel: train (grey), normal test (blue), anomalous test (red); circles context 0,
    triangles context 1; a line from each shown test image to its context twin."""
    rng = np.random.default_rng(seed)
    tr0, tr1 = features["train_context0"], features["train_context1"]
    te0, te1 = features["test_context0"], features["test_context1"]
    emb, explained = pca_2d(np.concatenate([tr0, tr1, te0, te1]).astype(np.float32))
    n_tr, n_te = len(tr0), len(te0)
    p_tr0, p_tr1 = emb[:n_tr], emb[n_tr : 2 * n_tr]
    p_te0, p_te1 = emb[2 * n_tr : 2 * n_tr + n_te], emb[2 * n_tr + n_te :]
    tr_idx = rng.choice(n_tr, size=min(n_tr, max_points), replace=False)
    shown = []
    for lab in (0, 1):
        idx = np.flatnonzero(labels == lab)
        shown.append(rng.choice(idx, size=min(len(idx), max_points // 2), replace=False) if len(idx) else idx)
    ax.scatter(p_tr0[tr_idx, 0], p_tr0[tr_idx, 1], s=5, c="0.7", marker="o", label="train, context 0", linewidths=0)
    ax.scatter(p_tr1[tr_idx, 0], p_tr1[tr_idx, 1], s=6, c="0.7", marker="^", label="train, context 1", linewidths=0)
    for idx, colour, name in ((shown[0], "#1f77b4", "normal test"), (shown[1], "#d62728", "anomalous test")):
        if len(idx) == 0:
            continue
        for i in idx:
            ax.plot([p_te0[i, 0], p_te1[i, 0]], [p_te0[i, 1], p_te1[i, 1]], color=colour, lw=0.3, alpha=0.35)
        ax.scatter(p_te0[idx, 0], p_te0[idx, 1], s=8, c=colour, marker="o", label=f"{name}, context 0", linewidths=0)
        ax.scatter(p_te1[idx, 0], p_te1[idx, 1], s=10, c=colour, marker="^", label=f"{name}, context 1", linewidths=0)
    ax.set_title(mpl_text(title), fontsize=9)
    ax.set_xlabel(f"PC1 ({100 * explained[0]:.0f}% var.)")
    ax.set_ylabel(f"PC2 ({100 * explained[1]:.0f}% var.)")
    ax.tick_params(labelsize=7)


def panel_title(record: Path, fallback: str, names: Methods) -> str:
    """``"BreastMNIST (normal: 1), CON2 invert, seed 0"`` from the run's ``record`` (the paper's dataset
    name, the method's label in ``names``, e.g. ``ReportInputs.names``), or ``fallback`` when the record
    cannot be read."""
    try:
        rec = read_record(record)
    except (RecordError, OSError):
        return fallback
    label = names.label(rec["method"])
    return (
        f"{dataset_label(rec['dataset'])} (normal: {rec['normal_class']}), {label} {rec['variant']}, seed {rec['seed']}"
    )


def pca_figure(inputs: ReportInputs, png: str | Path, pdf: str | Path, seed: int = 0) -> None:
    """PCA panels, one per ``inputs.panels`` entry (:class:`~con2.report.artefacts.PcaPanel`: a run's
    record, features and scores files), at most ``report.pca_max_points`` (default 300) training and
    test points each.

    The only figure that reads run outputs besides records: the representations (``features.npz``,
    ``[n, d]`` per split and context) and the test labels (``scores.csv``) are too large for a
    record, so they stay in the run directory beside it. The caller picks the runs and names their
    files (the workflow: the subject's main variant, ``ArtefactRules.pca_panels`` in
    ``con2/workflow/artefact_rules.py``); this opens those files and no other.
    """
    panels, max_points = inputs.panels, int(inputs.report.get("pca_max_points", PCA_MAX_POINTS))
    n = max(1, len(panels))
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 4.0), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        feats_path, scores_path = Path(panel.features), Path(panel.scores)
        if not feats_path.is_file() or not scores_path.is_file():
            _empty(ax, f"{panel.title}:\nno features.npz / scores.csv")
            continue
        with np.load(feats_path) as z:
            feats = {k: z[k].astype(np.float32) for k in z.files}
        if not all(k in feats for k in ("train_context0", "train_context1", "test_context0", "test_context1")):
            _empty(ax, f"{panel.title}:\nfeatures lack two contexts")
            continue
        labels = pd.read_csv(scores_path)["label"].to_numpy()
        pca_panel(ax, feats, labels, panel_title(Path(panel.record), panel.title, inputs.names), max_points, seed)
    if not panels:
        _empty(axes[0][0], "no run of report.subject selected for the PCA figure")
    fig.suptitle("Representations (PCA): each test image joined to its context-augmented twin", fontsize=10)
    fig.tight_layout()
    handles, labels_ = axes[0][0].get_legend_handles_labels()
    if handles:  # below the panels, clear of the data (tight_layout first, so it does not squeeze them)
        fig.legend(handles, labels_, loc="upper center", ncol=3, fontsize=8, frameon=False, bbox_to_anchor=(0.5, 0.0))
    save(fig, png, pdf)


def no_curve(inputs: ReportInputs) -> str:
    """Why the learning-curve figure of ``inputs.dataset`` has no point: its data were missing (the
    data status, ``inputs.status``, says it was skipped) or no run of it scored during training
    (config ``score_at``)."""
    label = dataset_label(inputs.dataset)
    if inputs.dataset in skipped_data(inputs.status):
        return f"no learning curve of {label}: its data are missing\n(how to get them: {MISSING_FILE})"
    return f"no learning curve of {label} (config score_at)"


def learning_curve_figure(inputs: ReportInputs, png: str | Path, pdf: str | Path) -> None:
    """AUROC against training epoch on ``inputs.dataset``, one line per method (its main variant and
    headline score) with a ± std band where a point averages several seeds; ``inputs.table`` is
    :func:`con2.builders.curves.learning_curve`'s frame. A log-2 epoch axis when the epochs span a
    factor of 16 or more (the paper profile's 64..2048)."""
    series = curve_frame(inputs.frame("table"), inputs.dataset)
    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    if not series:
        _empty(ax, no_curve(inputs))
    else:
        for j, (label, g) in enumerate(series.items()):
            colour = PALETTE[j % len(PALETTE)]
            x, y = g["epoch"].to_numpy(float), g["mean"].to_numpy(float)
            lo, hi = int(g["seeds_min"].min()), int(g["seeds_max"].max())
            counts = f"{classes_text(int(g['n_classes'].max()))} × {seeds_text(lo, hi)}"
            ax.plot(x, y, marker="o", ms=3, color=colour, label=mpl_text(f"{label} ({counts})"))
            band = (g["n"].to_numpy(float) > 1) & np.isfinite(g["std"].to_numpy(float))
            if band.any():
                sd = np.where(band, g["std"].to_numpy(float), 0.0)
                ax.fill_between(x, y - sd, y + sd, color=colour, alpha=0.15, linewidth=0)
        epochs = np.concatenate([g["epoch"].to_numpy(float) for g in series.values()])
        if epochs.min() > 0 and epochs.max() / epochs.min() >= 16:
            ax.set_xscale("log", base=2)
        ax.axhline(50, color="0.5", lw=0.8, ls=":")
        ax.set_xlabel("epoch")
        ax.set_ylabel("AUROC (%)")
        ax.grid(alpha=0.3)
        legend_outside(ax)
    ax.set_title(
        f"{dataset_label(inputs.dataset)}: AUROC during training\n(mean over the classes × seeds in the legend; "
        "band ± std where a point averages 2 or more)",
        fontsize=9,
    )
    save(fig, png, pdf)


def length_curve_figure(inputs: ReportInputs, png: str | Path, pdf: str | Path) -> None:
    """The length study on ``inputs.dataset``: one panel per normal class, AUROC against epoch (log-2 axis) for
    every series of :func:`con2.builders.length.length_curve`'s frame (``inputs.table``), the finished run's own
    AUROC as an open marker at its last epoch, a floor (nothing trained) as a dotted line, and each series'
    published number (the paper's mean over the classes, else a reference source's) as a dashed line in its
    colour at the right edge."""
    frame = inputs.frame("table")
    sub = frame[(frame["dataset"] == inputs.dataset)] if len(frame) else frame
    classes = sorted({str(c) for c in sub["normal_class"].fillna("") if str(c)}) if len(sub) else []
    fig, axes = plt.subplots(1, max(1, len(classes)), figsize=(4.6 * max(1, len(classes)) + 2.4, 3.6), squeeze=False)
    if not classes:
        _empty(axes[0][0], no_curve(inputs))
    colours = (
        {label: PALETTE[j % len(PALETTE)] for j, label in enumerate(dict.fromkeys(sub["label"]))} if len(sub) else {}
    )
    for ax, cls in zip(axes[0], classes):
        rows = sub[sub["normal_class"].fillna("").astype(str) == cls]
        for label, g in rows.groupby("label", sort=False):
            colour = colours[label]
            curve = g.dropna(subset=["epoch"]).sort_values("epoch")
            final, pub = float(g["final"].iloc[0]), g["published"].dropna()
            if curve.empty:  # a floor: nothing trained
                ax.axhline(final, color=colour, lw=1.2, ls=":", label=mpl_text(f"{label} (nothing trained)"))
            else:
                x, y = curve["epoch"].to_numpy(float), curve["mean"].to_numpy(float)
                ax.plot(
                    x, y, marker="o", ms=3, color=colour, label=mpl_text(f"{label}; ○ final, {g['test_views'].iloc[0]}")
                )
                ax.plot([x[-1]], [final], marker="o", ms=7, mfc="none", color=colour, ls="none")
            if len(pub):
                ax.axhline(float(pub.iloc[0]), color=colour, lw=0.9, ls="--", alpha=0.7)
        ax.set_xscale("log", base=2)
        ax.axhline(50, color="0.5", lw=0.8, ls=":")
        ax.set_xlabel("epoch (log scale)")
        ax.set_ylabel("AUROC (%)")
        ax.set_title(mpl_text(f"{dataset_label(inputs.dataset)}, normal class {cls}"), fontsize=9)
        ax.grid(alpha=0.3)
    if classes:
        legend_outside(axes[0][-1])
    fig.suptitle(
        "Length study: AUROC after each scored epoch on the curve's cheap test views, one run per point;\n"
        "dashed: the published mean over the dataset's classes (paper, else a reference source); dotted: a floor",
        fontsize=9,
    )
    fig.tight_layout()
    save(fig, png, pdf)
