"""The training budget a set of runs ran at (epochs, input sizes, encoder widths, seeds, machines)
beside the paper's, as text for Table 1's note and the reproduction verdict; and how far each measured
budget goes (``report.bound``, :func:`bound_rows`): the rows of the ``budget_bound`` table and the
verdict's lines on them (:func:`bound_lines`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.collect import DEFAULT_ENCODER
from con2.paper_names import dataset_label
from con2.report.format import mean_std, signed
from con2.report.methods import Methods
from con2.report.paired import paired_interval
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


# ----------------------------------------------------------------------------- the bound (report.bound)
ROLES = (("con2", "CON2 as printed", "nnd"), ("content", "content alone", "nnd"), ("simclr", "SimCLR + kNN", "knn"))


def _record_seeds(runs: pd.DataFrame, dataset: str, variant: str, method: str, score: str) -> dict[int, float]:
    sel = runs[
        (runs["dataset"] == dataset)
        & (runs["method"] == method)
        & (runs["variant"] == variant)
        & (runs["score"] == score)
    ]
    return {int(s): float(a) for s, a in zip(sel["seed"], sel["auroc"])}


def _gpu_seeds(gpu: pd.DataFrame, spec: Mapping[str, Any], setting: str) -> dict[int, float]:
    if gpu is None or gpu.empty:
        return {}
    sel = gpu[
        (gpu["setting"] == setting)
        & (gpu["epochs"] == int(spec.get("epochs", 0)))
        & (gpu["image_size"] == int(spec.get("image_size", 224)))
        & (gpu["data_size"] == int(spec.get("data_size", 28)))
    ]
    return {int(s): float(a) for s, a in zip(sel["seed"], sel["auroc"])}


def _machines(runs: pd.DataFrame, dataset: str, variants: Sequence[str]) -> str:
    """The machines (CPU model names, or devices) the runs of these variants ran on (runs.csv's ``machine``)."""
    sel = runs[(runs["dataset"] == dataset) & (runs["variant"].isin(list(variants)))]
    column = "machine" if "machine" in sel else "device"
    names = {str(m) for m in sel[column].dropna().unique()} if column in sel else set()
    return ", ".join(sorted(names)) or "?"


def bound_rows(runs: pd.DataFrame, gpu: pd.DataFrame | None, spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per budget of ``spec`` with any measurement: the three methods' per-seed AUROCs,
    their means and stds, and the paired differences (content - CON2, SimCLR - CON2)."""
    dataset = str(spec.get("dataset") or "breastmnist")
    out = []
    budgets = [(b, "cpu") for b in spec.get("budgets") or []] + [(b, "gpu") for b in spec.get("gpu") or []]
    for budget, kind in budgets:
        seeds: dict[str, dict[int, float]] = {}
        for role, _, score in ROLES:
            if role not in budget:
                seeds[role] = {}
            elif kind == "cpu":
                method = "simclr" if role == "simclr" else "con2"
                seeds[role] = _record_seeds(runs, dataset, str(budget[role]), method, score)
            else:
                seeds[role] = _gpu_seeds(gpu, budget, str(budget[role]))
        if not any(seeds.values()):
            continue
        row: dict[str, Any] = {"budget": str(budget["label"]), "source": kind, "dataset": dataset}
        for role, _, _ in ROLES:
            vals = np.array(list(seeds[role].values()), dtype=float)
            row[f"{role}_mean"] = float(vals.mean()) if vals.size else math.nan
            row[f"{role}_std"] = float(vals.std(ddof=1)) if vals.size > 1 else math.nan
            row[f"{role}_seeds"] = int(vals.size)
        for role in ("content", "simclr"):
            mean, low, high, n = paired_interval(seeds["con2"], seeds[role])
            row.update({f"{role}_minus_con2": mean, f"{role}_low": low, f"{role}_high": high, f"{role}_pairs": n})
        if kind == "cpu":
            row["machine"] = _machines(runs, dataset, [str(budget[r]) for r, _, _ in ROLES if r in budget])
        else:
            files = gpu["file"].unique() if gpu is not None and not gpu.empty else []
            row["machine"] = ", ".join(sorted({f.split("_")[0] for f in files})) or "gpu"
        out.append(row)
    return out


def bound_lines(rows: Sequence[Mapping[str, Any]], spec: Mapping[str, Any]) -> list[str]:
    """One sentence per budget measured, and what no CPU can settle."""
    lines = []
    for r in rows:
        if math.isnan(r["con2_mean"]):
            lines.append(f"{r['budget']} ({r['machine']}): CON2 as printed not measured yet.")
            continue
        said = f"{r['budget']} ({r['machine']}): CON2 as printed {mean_std(r['con2_mean'], r['con2_std'])}"
        for role, name, _ in ROLES[1:]:
            diff, low, high, pairs = (r[f"{role}_minus_con2"], r[f"{role}_low"], r[f"{role}_high"], r[f"{role}_pairs"])
            if math.isnan(diff):
                continue
            if not math.isnan(low) and (low > 0 or high < 0):  # the interval excludes 0
                said += f"; {name} {'above' if low > 0 else 'below'} it by {abs(diff):.1f} (95% interval over seeds)"
            else:
                said += f"; {name} {signed(round(diff, 1))}, not decided at {pairs} paired seed(s)"
        lines.append(said + ".")
    unsettled = spec.get("unsettled")
    gpu_labels = {r["budget"] for r in rows if r["source"] == "gpu"}
    missing = [b["label"] for b in spec.get("gpu") or [] if b["label"] not in gpu_labels]
    if unsettled and missing:
        lines.append(
            f"Not measured: {', '.join(missing)}. What no CPU can settle is {unsettled}: "
            "`bash benchmarks/gpu_call.sh` on one GPU."
        )
    return lines
