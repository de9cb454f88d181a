"""The training budget a set of runs ran at (epochs, input sizes, encoder widths, seeds, machines)
beside the paper's, as text for Table 1's note and the reproduction verdict."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.collect import DEFAULT_ENCODER
from con2.paper_names import dataset_label
from con2.report.methods import Methods
from con2.report.select import ReportCfg

# The paper's training budget (its appendix): ResNet18 with 512-d features (width 64), 224 px inputs
# on the medical datasets, 3 seeds; its epochs are `report.paper_epochs` (2048).
PAPER_IMAGE_SIZE, PAPER_WIDTH, PAPER_SEEDS = 224, 64, 3
#: The paper's input size where it is not 224 px (the `paper` profile, workflow/config/paper.yaml, trains at these):
#: CIFAR at its own 32 px, so there only the length separates a CPU run from the paper's.
PAPER_IMAGE_SIZES: dict[str, int] = {
    "melanoma": 128,
    "cifar10": 32,
    "cifar100": 32,
    "dogs-vs-cats": 128,
    "muffin-vs-chihuahua": 128,
}


def _run_level(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run (the run frame has one per score)."""
    return runs.drop_duplicates(subset=["dataset", "normal_class", "method", "variant", "seed"])


def _usual(values: Mapping[str, Any], unit: str, names: Mapping[str, str] | None = None) -> str:
    """``"10 epochs (PANDA 15)"``: the most common value, and the keys (labelled) that differ from it."""
    shown_values = {k: v for k, v in values.items() if pd.notna(v)}
    if not shown_values:
        return f"? {unit}".strip()
    counts = pd.Series(list(shown_values.values())).value_counts()
    usual = counts.index[0]
    others = [f"{(names or {}).get(k, k)} {_num(v)}" for k, v in shown_values.items() if v != usual]
    unit = unit[:-1] if unit in ("seeds", "epochs") and usual == 1 else unit  # "1 seed", "3 seeds", "1 epoch"
    return f"{_num(usual)} {unit}".strip() + (f" ({', '.join(others)})" if others else "")


def _largest(values: Mapping[str, Any]) -> float:
    """The largest known value (NaN where none is known: methods that train nothing have no epochs)."""
    known = [float(v) for v in values.values() if pd.notna(v)]
    return max(known) if known else float("nan")


def _num(value: Any) -> str:
    return (
        str(int(value))
        if isinstance(value, (int, float, np.integer, np.floating)) and float(value).is_integer()
        else str(value)
    )


@dataclass(frozen=True)
class Budget:
    """What a set of runs trained at: epochs, input sizes, encoder widths and seeds, as text."""

    epochs: str
    image_size: str
    width: str  # "ResNet18 width 16", with the methods that train another encoder after it
    seeds: str
    max_epochs: float
    max_image_size: float

    untrained: str = ""  # methods that train nothing (an external program, a zero-shot model)
    machines: str = ""  # the CPU models / GPU names the runs ran on

    def text(self) -> str:
        on = f", on {self.machines}" if self.machines else ""
        if self.epochs.startswith("?") and self.untrained:  # nothing here was trained
            return f"no training ({self.untrained}), {self.seeds}{on}"
        trained = f"{self.epochs} at {self.image_size}, {self.width}, {self.seeds}"
        return trained + (f"; no training: {self.untrained}" if self.untrained else "") + on

    def below_paper(self, paper_epochs: int) -> bool:
        return self.max_epochs < paper_epochs or self.max_image_size < PAPER_IMAGE_SIZE


def budget_of(runs: pd.DataFrame, names: Methods) -> Budget:
    """The budget of runs (rows of the run frame): per method epochs and seeds, per dataset the input size."""
    r = _run_level(runs)
    labels = {m: names.label(m) for m in r["method"].unique()}
    steps, most_epochs = r.groupby("method")["steps"].max(), r.groupby("method")["epochs"].max()
    untrained = [m for m in labels if steps.get(m) == 0 or (pd.isna(steps.get(m)) and pd.isna(most_epochs.get(m)))]
    trained = r[~r["method"].isin(untrained)]
    epochs = trained.groupby("method")["epochs"].max().to_dict()
    sizes = trained.groupby("dataset")["image_size"].max().to_dict()
    encoders = trained["encoder"] if "encoder" in trained else pd.Series(np.nan, trained.index)  # older runs.csv
    by_method = encoders.fillna(DEFAULT_ENCODER).groupby(trained["method"]).first().to_dict()
    others = [f"{labels[m]}: {e}" for m, e in by_method.items() if e.lower() != DEFAULT_ENCODER.lower()]
    is_resnet = trained["method"].map(lambda m: by_method.get(m, DEFAULT_ENCODER).lower() == "resnet18")
    resnets = trained.loc[is_resnet.astype(bool)]
    widths = resnets.groupby("method")["width"].max().to_dict()
    seeds = r.groupby(["method", "dataset", "normal_class"])["seed"].nunique().groupby("method").max().to_dict()
    machines = sorted({str(x) for x in r["machine"].dropna()}) if "machine" in r else []
    return Budget(
        epochs=_usual(epochs, "epochs", labels),
        image_size=_usual(sizes, "px", {d: dataset_label(d) for d in sizes}),
        width=(f"{DEFAULT_ENCODER} width {_usual(widths, '', labels)}" if widths else "")
        + (f" ({'; '.join(others)})" if others else "")
        or DEFAULT_ENCODER,
        seeds=_usual(seeds, "seeds", labels),
        max_epochs=_largest(epochs),
        max_image_size=_largest(sizes),
        untrained=", ".join(untrained),  # method names (validated), not labels: a note is not escaped
        machines=", ".join(machines),
    )


def paper_budget_text(rep: ReportCfg, datasets: Iterable[str] = ()) -> str:
    """The paper's budget as text (its epochs from ``report.paper_epochs``), at the input size it used for
    ``datasets`` (224 px, the medical sets', when none is named; ``"224 px (CIFAR10 32)"`` when they differ)."""
    sizes = {d: PAPER_IMAGE_SIZES.get(d, PAPER_IMAGE_SIZE) for d in datasets} or {"": PAPER_IMAGE_SIZE}
    size = _usual(sizes, "px", {d: dataset_label(d) for d in sizes})
    width = f"ResNet18 width {PAPER_WIDTH} (512-d)"
    return f"{rep['paper_epochs']} epochs at {size}, {width}, {PAPER_SEEDS} seeds"


def budget_note(ours: pd.DataFrame, names: Methods, rep: ReportCfg) -> str:
    """The note under a table of ours beside the paper's: the budget "ours" trained at, and the paper's for the
    same datasets."""
    paper = paper_budget_text(rep, sorted(_run_level(ours)["dataset"].unique()))
    return f"Budget of ours: {budget_of(ours, names).text()}; the paper's: {paper}."
