"""con2.builders.figures: every figure (PNG + PDF) and what its axes and bars say."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from report_fixtures import (  # noqa: F401  (fixtures: test parameters of the same name)
    config,
    drawn,
    fake_record,
    inputs_of,
    paper,
    pca_panel,
    runs,
    score_runtime_measurements,
    write_pca_run,
)

from con2.builders.per_class import per_class as per_class_table
from con2.builders.silhouette import silhouette as silhouette_table
from con2.report.artefacts import FIGURES, ReportInputs
from con2.run.records import write_record


def test_figures_write_png_and_pdf(runs: pd.DataFrame, paper: pd.DataFrame, config: dict, tmp_path: Path) -> None:
    from con2.builders import figures as F

    per_class = per_class_table(inputs_of(runs, paper, config, dataset="cifar10")).data
    F.per_class_figure(ReportInputs(table=per_class, dataset="cifar10"), tmp_path / "a.png", tmp_path / "a.pdf")
    silhouette = silhouette_table(inputs_of(runs, paper, config)).data
    F.silhouette_figure(ReportInputs(table=silhouette), tmp_path / "b.png", tmp_path / "b.pdf")
    F.score_runtime_figure(ReportInputs(measured=score_runtime_measurements()), tmp_path / "c.png", tmp_path / "c.pdf")
    run_dir = tmp_path / "run"
    write_pca_run(run_dir)
    panels = (pca_panel("run", run_dir), pca_panel("missing", tmp_path / "nope"))
    pca = ReportInputs(config={"report": {"pca_max_points": 10}}, panels=panels)
    F.pca_figure(pca, tmp_path / "d.png", tmp_path / "d.pdf")
    for stem in "abcd":
        assert (tmp_path / f"{stem}.png").stat().st_size > 1000 and (tmp_path / f"{stem}.pdf").stat().st_size > 1000


def test_pca_axes_say_how_much_variance_each_component_explains() -> None:
    import matplotlib.pyplot as plt

    from con2.builders import figures as F

    rng = np.random.default_rng(1)
    feats = {
        f"{s}_context{c}": rng.normal(size=(n, 6)) * np.array([5, 2, 1, 1, 1, 1])
        for s, n in (("train", 40), ("test", 30))
        for c in (0, 1)
    }
    labels = np.array([0] * 20 + [1] * 10)
    fig, ax = plt.subplots()
    F.pca_panel(ax, feats, labels, "t", 50, 0)
    allx = np.concatenate(
        [feats["train_context0"], feats["train_context1"], feats["test_context0"], feats["test_context1"]]
    )
    eig = np.sort(np.linalg.eigvalsh(np.cov(allx.T)))[::-1]  # reference: eigenvalues of the covariance
    assert ax.get_xlabel() == f"PC1 ({100 * eig[0] / eig.sum():.0f}% var.)"
    assert ax.get_ylabel() == f"PC2 ({100 * eig[1] / eig.sum():.0f}% var.)"
    plt.close(fig)


def test_bars_have_error_bars_only_over_several_runs_and_a_legend_outside() -> None:
    import matplotlib.pyplot as plt

    from con2.builders import figures as F

    fig, ax = plt.subplots()
    means = np.array([[80.0, 70.0], [85.0, 75.0]])
    stds = np.array([[1.0, np.nan], [2.0, 0.5]])  # series 1: group a one run, group b two
    F.grouped_bars(ax, ["a", "b"], ["three seeds", "mixed"], means, stds, "AUROC", np.array([[3, 1], [3, 2]]))
    from matplotlib.container import BarContainer

    several, mixed = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert several.errorbar is not None
    caps = mixed.errorbar.lines[1][0].get_ydata()  # lower caps: group a's (a single run) is not drawn
    assert np.isnan(caps[0]) and caps[1] == pytest.approx(75.0 - 0.5)
    fig2, ax2 = plt.subplots()
    F.grouped_bars(ax2, ["a"], ["one seed"], np.array([[70.0]]), np.array([[np.nan]]), "AUROC", np.array([[1]]))
    assert [c for c in ax2.containers if isinstance(c, BarContainer)][0].errorbar is None
    plt.close(fig2)
    anchor = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
    assert anchor.x0 >= 1.0  # right of the axes, not over the bars
    plt.close(fig)


def test_figures_name_datasets_as_the_paper_and_say_what_each_bar_averages(
    runs: pd.DataFrame, paper: pd.DataFrame, config: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dataset names as in the paper (BreastMNIST, CIFAR10), the classes and seeds of every bar or
    line in the title, legend or on the bar, and an error bar on every bar that averages 2 or more."""
    import matplotlib.pyplot as plt
    from matplotlib.container import BarContainer

    from con2.builders import figures as F

    # silhouette: BreastMNIST 3 seeds of class 1; CIFAR10 classes airplane and cat, but the k3 and
    # context_only variants ran BreastMNIST only
    sil = silhouette_table(inputs_of(runs, paper, config)).data
    fig, texts = drawn(F.silhouette_figure, ReportInputs(table=sil), monkeypatch)
    assert "BreastMNIST\n(normal class 1)" in texts and "CIFAR10\n(normal classes airplane, cat)" in texts
    assert "breastmnist" not in " ".join(texts) and "cifar10" not in " ".join(texts)
    assert texts.count("1×3") == int((sil["dataset"] == "breastmnist").sum()) and "2×3" in texts
    assert any("each bar: mean over c normal classes × s seeds" in t for t in texts)
    ax = fig.axes[0]
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars) == sil["variant"].nunique()
    for container in bars:  # every bar here averages 2 or more (3 seeds, or 2 class means): an error bar each
        lower = np.asarray(container.errorbar.lines[1][0].get_ydata(), dtype=float)
        heights = np.array([p.get_height() for p in container.patches], dtype=float)
        assert np.isfinite(lower[np.isfinite(heights)]).all() and np.isfinite(heights).any()
    plt.close(fig)
    # drawn from the table's CSV (as the rule does): class "0" stays "0"
    csv = tmp_path / "silhouette.csv"
    sil.assign(classes=np.where(sil["dataset"] == "cifar10", "0", sil["classes"])).to_csv(csv, index=False)
    from_csv = ReportInputs.load(FIGURES["silhouette"], {"table": str(csv)}, {})
    fig, texts = drawn(F.silhouette_figure, from_csv, monkeypatch)
    assert "CIFAR10\n(normal class 0)" in texts
    plt.close(fig)
    # per class: the classes and seeds in the title
    pc = per_class_table(inputs_of(runs, paper, config, dataset="cifar10")).data
    fig, texts = drawn(F.per_class_figure, ReportInputs(table=pc, dataset="cifar10"), monkeypatch)
    assert "CIFAR10: AUROC per normal class\n(2 normal classes, 3 seeds each; error bar ± std over seeds)" in texts
    plt.close(fig)
    one_seed = pc.assign(n=1, auroc_std=np.nan)
    fig, texts = drawn(F.per_class_figure, ReportInputs(table=one_seed, dataset="cifar10"), monkeypatch)
    assert any(t.endswith("(2 normal classes, 1 seed each; one run per bar, no error bar)") for t in texts)
    plt.close(fig)
    # learning curve: the paper's name and each line's classes x seeds in the legend
    from con2.builders.curves import learning_curve

    lc = learning_curve(inputs_of(runs, paper, config)).data
    fig, texts = drawn(F.learning_curve_figure, ReportInputs(table=lc, dataset="breastmnist"), monkeypatch)
    assert any(t.startswith("BreastMNIST: AUROC during training") for t in texts)
    assert "CON2 (NND) (1 normal class × 3 seeds)" in texts
    plt.close(fig)
    # PCA: the panel title from the record (the paper's dataset name, the method's label)
    run_dir = tmp_path / "run"
    write_pca_run(run_dir)
    write_record(fake_record("breastmnist", "1", "con2", "invert", 0, {"nnd": 80.0}), run_dir / "record.json")
    pca = ReportInputs(config={"report": {"pca_max_points": 10}}, panels=(pca_panel("breastmnist ...", run_dir),))
    fig, texts = drawn(F.pca_figure, pca, monkeypatch)
    assert "BreastMNIST (normal: 1), CON2 invert, seed 0" in texts
    plt.close(fig)
