"""The cost of a profile before it starts: ``con2 plan --configfile workflow/config/paper.yaml``.

Per experiment of the profile and in total: the training runs, the training images they process
and the estimated GPU-hours on one device, beside the paper's reported GPU-hours. The arithmetic
is pure functions of the profile's runs (:func:`con2.grid.experiments.expand_grid`), a table of
training-set sizes and a table of measured throughput; the command reads those and prints.

- images of a run = epochs x steps per epoch x batch size where the engine drops each epoch's last
  partial batch (``drop_last``, the default), epochs x training images where it keeps it, capped at
  ``max_steps`` steps (:func:`con2.training.steps.steps_per_epoch`, the engine's own count, torch-free);
- views of a run = images x views per image (encoder passes per training image: CON2 2 per
  context, SimCLR 2, CSI 8, UniCon-HA 8 per aggregated stage, counted as whole passes);
- GPU-hours = views / the measured views per second of (device, resolution, width, batch) from
  ``con2/resources/throughput.csv`` (the training step alone: no data preparation, scoring
  or checkpoints). A setting without its own measurement takes the same device's measurement at
  the nearest resolution (then the nearest width, then batch), scaled by pixels (views/s x
  measured px^2 / px^2) and by width (x measured width^2 / width^2: a ResNet's FLOPs); the batch
  size is not scaled. Each estimate says how it was obtained.
- training-set sizes come from the split manifests of prepared data where present (the data
  cache under ``data_dir``), else from ``con2/resources/train_set_sizes.csv`` (its sources).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from con2.config import dataclass_from_params
from con2.data import default_data_dir
from con2.errors import ConfigError
from con2.grid.checks import GridError
from con2.grid.cost_tables import (
    PAPER_HOURS_CSV,
    SIZES_CSV,
    THROUGHPUT_CSV,
    Rate,
    paper_hours_per_run,
    read_rates,
    read_sizes,
    train_sizes,
)
from con2.grid.experiments import drop_runs_without_weights, expand_grid
from con2.methods import all_methods
from con2.text import terminal_safe
from con2.training.steps import steps_per_epoch

DEFAULT_PROFILE = Path("workflow/config/default.yaml")  # the checkout's default profile, from its root


@dataclass(frozen=True)
class Estimate:
    """Views per second for one (image size, width, batch) and how it was obtained."""

    views_per_s: float
    how: str


@dataclass(frozen=True)
class RunCost:
    """One run of the grid, costed (``hours`` ``None``: views per image unknown for its method)."""

    key: str
    experiments: tuple[str, ...]
    dataset: str
    method: str
    n_train: int
    epochs: int
    images: int
    views: int | None
    hours: float | None
    paper_hours: float | None


# ----------------------------------------------------------------------------------------- arithmetic
def images_per_run(
    n_train: int, batch_size: int, epochs: int, max_steps: int | None = None, drop_last: bool = True
) -> int:
    """Training images one run processes in ``epochs x steps per epoch`` steps, capped at ``max_steps``
    steps (0: a method that trains nothing, e.g. the floors and the zero-shot baselines): ``batch_size`` a
    step, but the last step of an epoch that keeps its partial batch (``drop_last`` false) takes the
    images left (an epoch: ``n_train`` images)."""
    per_epoch = steps_per_epoch(n_train, batch_size, drop_last)
    steps = epochs * per_epoch
    steps = steps if max_steps is None else min(steps, max(0, int(max_steps)))
    epoch_images = per_epoch * batch_size if drop_last else n_train
    full, rest = divmod(steps, per_epoch)
    return full * epoch_images + min(rest * batch_size, epoch_images)


def views_per_image(method: str, params: Mapping[str, Any]) -> int | None:
    """Encoder passes per training image per step, as the method's spec prices them
    (:attr:`con2.methods.MethodSpec.views_per_image`); ``None`` where its spec does not (PANDA's
    ResNet152, which the ResNet18 throughput does not describe) or no method has that name."""
    specs = all_methods()
    return specs[method].training_views(params) if method in specs else None


def scoring_views(method: str, params: Mapping[str, Any], tta: int) -> int:
    """Test-time views per image a run's scoring pass encodes: the run's ``tta`` views (0: the identity view
    alone, 1), except for a method whose ``Params`` has a boolean ``tta`` set false: one identity view (the
    convention of the cards that score untrained: the floors, PANDA, CLIP-AD, I-JEPA zero-shot; e.g.
    ``baselines/floors_spec.py``). An unknown method or params: the run's ``tta``."""
    views = max(1, int(tta))
    spec = all_methods().get(method)
    if spec is None:
        return views
    try:
        own = getattr(dataclass_from_params(spec.Params, dict(params), spec.name), "tta", None)
    except (ConfigError, TypeError):
        return views
    return 1 if own is False else views


# The scoring-to-training cost ratio below is read from these records (issue 58, item 3): finished runs
# committed with the benchmarks (con2-bench checkout only; an installed wheel has none, and then no scoring is
# priced before a run has finished).
MEASURED_RECORDS = Path(__file__).resolve().parents[2] / "benchmarks" / "measured"


@dataclass(frozen=True)
class ScoringRatio:
    """What a scoring view costs against a training view on one kind of device (``cpu`` or ``cuda``): the
    median over ``records`` finished runs of (score seconds per scoring view) / (fit seconds per training
    view), and where they are (``source``)."""

    ratio: float
    records: int
    source: str


def record_scoring_ratio(record: Mapping[str, Any]) -> float | None:
    """One finished run's (score seconds / scoring views) / (fit seconds / training views): scoring views
    :func:`scoring_views` x (training + test images), training views :func:`images_per_run` x
    :func:`views_per_image`, both as its ``config`` has them; ``None`` where it trained nothing, lacks a
    part or its method's views are unknown."""
    try:
        cfg, timing = record["config"], record["timing"]
        fit, score = float(timing["fit_seconds"]), float(timing["score_seconds"])
        n_train, n_test = int(record["n_train"]), int(record["n_test"])
        images = images_per_run(
            n_train, int(cfg["batch_size"]), int(cfg["epochs"]), cfg.get("max_steps"), bool(cfg.get("drop_last", True))
        )
        per_image = views_per_image(str(record["method"]), cfg.get("params") or {})
        scored = (n_train + n_test) * scoring_views(str(record["method"]), cfg.get("params") or {}, int(cfg["tta"]))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if not per_image or images <= 0 or fit <= 0 or score <= 0 or not math.isfinite(fit + score):
        return None
    return (score / scored) / (fit / (images * per_image))


def scoring_ratio(records: Iterable[Mapping[str, Any]], device_kind: str, source: str = "") -> ScoringRatio | None:
    """:class:`ScoringRatio` of the ``records`` trained on ``device_kind`` (their ``device``: ``cpu``,
    ``cuda``): the median of :func:`record_scoring_ratio`; ``None`` without one."""
    ratios = sorted(
        r for rec in records if rec.get("device") == device_kind and (r := record_scoring_ratio(rec)) is not None
    )
    if not ratios:
        return None
    mid = len(ratios) // 2
    median = ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2
    return ScoringRatio(median, len(ratios), source)


_RATIOS: dict[tuple[Path, str], ScoringRatio | None] = {}


def measured_scoring_ratio(device_kind: str, folder: Path = MEASURED_RECORDS) -> ScoringRatio | None:
    """:func:`scoring_ratio` of the ``record.json`` files under ``folder`` (default: the benchmarks'
    committed records, :data:`MEASURED_RECORDS`) for ``device_kind``, read once; ``None`` without any (an
    install without the checkout, or no such record)."""
    key = (folder, device_kind)
    if key not in _RATIOS:
        records = []
        for path in sorted(folder.glob("**/record.json")) if folder.is_dir() else []:
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                records.append(data)
        _RATIOS[key] = scoring_ratio(records, device_kind, str(folder))
    return _RATIOS[key]


def estimate_rate(rates: Sequence[Rate], image_size: int, width: int, batch_size: int) -> Estimate:
    """Views/s for a setting from measured ``rates`` (one device): the exact measurement, else the
    nearest resolution (log-ratio), width and batch, scaled by pixels and width squared.

    Raises:
        ConfigError: no rate at all.
    """
    if not rates:
        raise ConfigError("no throughput measurement to estimate from")

    def distance(r: Rate) -> tuple[float, float, float]:
        return (
            abs(math.log(r.image_size / image_size)),
            abs(math.log(r.width / width)),
            abs(math.log(r.batch_size / batch_size)),
        )

    best = min(rates, key=distance)
    scale = (best.image_size / image_size) ** 2 * (best.width / width) ** 2
    if (best.image_size, best.width, best.batch_size) == (image_size, width, batch_size):
        return Estimate(best.views_per_s, f"measured ({best.source})")
    parts = [f"{best.image_size} px"]
    if best.image_size != image_size:
        parts.append(f"x ({best.image_size}/{image_size})^2 pixels")
    if best.width != width:
        parts.append(f"x ({best.width}/{width})^2 width")
    if best.batch_size != batch_size:
        parts.append(f"(measured at N = {best.batch_size})")
    return Estimate(best.views_per_s * scale, "from " + " ".join(parts))


def setting_of(config: Mapping[str, Any]) -> tuple[int, int, int]:
    """``(image_size, width, batch_size)`` of a resolved run config: what a throughput is measured at."""
    return int(config["image_size"]), int(config["width"]), int(config["batch_size"])


def hours(views: int, views_per_s: float) -> float:
    """GPU-hours to process ``views`` at ``views_per_s``."""
    return views / views_per_s / 3600.0


@dataclass(frozen=True)
class Totals:
    """Totals of a set of runs (one experiment, or all unique runs)."""

    name: str
    runs: int
    images: int
    views: int
    hours: float
    runs_without_estimate: int
    paper_hours: float
    runs_with_paper_hours: int
    hours_on_paper_runs: float  # our estimate over the runs the paper gives hours for


def totals_of(name: str, costs: Iterable[RunCost]) -> Totals:
    """Sums over ``costs`` (runs without an estimate or a paper number are counted, not summed)."""
    costs = list(costs)
    estimated = [c for c in costs if c.hours is not None]
    with_paper = [c for c in costs if c.paper_hours is not None]
    return Totals(
        name,
        len(costs),
        sum(c.images for c in costs),
        sum(c.views or 0 for c in estimated),
        sum(c.hours or 0.0 for c in estimated),
        len(costs) - len(estimated),
        sum(c.paper_hours or 0.0 for c in with_paper),
        len(with_paper),
        sum(c.hours or 0.0 for c in with_paper),
    )


def per_experiment(costs: Sequence[RunCost]) -> list[Totals]:
    """The totals of each experiment (a run two experiments ask for counts in both), then the total
    over unique runs."""
    names = list(dict.fromkeys(e for c in costs for e in c.experiments))
    return [totals_of(n, (c for c in costs if n in c.experiments)) for n in names] + [totals_of("total", costs)]


def cost_runs(
    runs: Iterable[Any],
    n_train: Mapping[tuple[str, str], int],
    rate_of: Mapping[tuple[int, int, int], Estimate],
    paper_hours: Mapping[tuple[str, str], float],
) -> list[RunCost]:
    """Cost every run: ``runs`` are :class:`con2.grid.experiments.Run` (``config`` holds ``epochs``,
    ``batch_size``, ``image_size``, ``width``, ``params``); ``n_train[(dataset, normal_class)]``;
    ``rate_of[(image_size, width, batch_size)]``; ``paper_hours[(method, dataset)]`` per run."""
    out = []
    for run in runs:
        cfg = run.config
        n = n_train[(run.dataset, run.normal_class)]
        images = images_per_run(
            n, int(cfg["batch_size"]), int(cfg["epochs"]), cfg.get("max_steps"), bool(cfg.get("drop_last", True))
        )
        vpi = views_per_image(run.method, cfg.get("params") or {})
        views = 0 if images == 0 else None if vpi is None else images * vpi
        rate = rate_of[setting_of(cfg)]
        out.append(
            RunCost(
                run.key,
                tuple(run.experiments),
                run.dataset,
                run.method,
                n,
                int(cfg["epochs"]),
                images,
                views,
                None if views is None else hours(views, rate.views_per_s),
                paper_hours.get((run.method, run.dataset)),
            )
        )
    return out


# ----------------------------------------------------------------------------------------- output
def hours_text(h: float) -> str:
    """Hours with the digits a small number needs (two significant: ``0.00064``, ``0.031``), two
    decimals up to 10 and one from 10 on."""
    if h == 0:
        return "0"
    if h < 0.1:
        return f"{h:.{1 - math.floor(math.log10(h))}f}"
    return f"{h:,.2f}" if h < 10 else f"{h:,.1f}"


def format_plan(totals: Sequence[Totals], device: str, studies: Collection[str] = ()) -> list[str]:
    """The table ``con2 plan`` prints: per experiment and in total, our runs, images, views and
    hours on ``device``, then, over the runs the paper gives hours for, our hours beside the paper's.
    Experiments of ``studies`` (``report.scopes``: not in ``all``) are marked ``*``."""
    width = max([16, *(len(s.name) + 2 for s in totals)])
    hours_head = f"hours ({device})"
    head = (
        f"{'experiment':<{width}} {'runs':>6} {'images':>14} {'views':>15} {hours_head:>18}"
        f"   {'runs the paper costs: hours ours / paper':>42}"
    )
    lines = [head, "-" * len(head)]
    for s in totals:
        ours = hours_text(s.hours) + (f" (+{s.runs_without_estimate} n/a)" if s.runs_without_estimate else "")
        paper = "-"
        if s.runs_with_paper_hours:
            paper = f"{s.runs_with_paper_hours} runs: {hours_text(s.hours_on_paper_runs)} / {s.paper_hours:,.0f}"
        if s.name in ("all", "total") and not lines[-1].startswith("-"):
            lines.append("-" * len(head))  # one rule above the sums
        name = f"{s.name} *" if s.name in studies else s.name
        lines.append(f"{name:<{width}} {s.runs:>6,} {s.images:>14,} {s.views:>15,} {ours:>18}   {paper:>42}")
    if any(s.name in studies for s in totals):
        lines.append(
            "* a study (report.scopes): not in `snakemake all`; `snakemake studies` or naming its table trains it. "
            "all: the runs `snakemake all` trains"
        )
    return lines


PRECISIONS = ("bf16 autocast", "float32")  # how a CPU row of the throughput table trained


def precision_of(name: str) -> str | None:
    """The precision a device name states in its parenthesised details (a CPU's), or None."""
    details = name.partition(" (")[2].lower()
    return next((p for p in PRECISIONS if p in details), None)


def device_matches(row: str, device: str) -> bool:
    """Whether a throughput row's device is ``device``: the names without their parenthesised details
    contain one another (case-insensitively: ``AMD EPYC`` and ``AMD EPYC 9B14``), and where both state a
    precision (``bf16 autocast`` / ``float32``) it is the same: a CPU is matched by model and flags."""
    a, b = row.split(" (")[0].lower().strip(), device.split(" (")[0].lower().strip()
    if not a or not b or not (a in b or b in a):
        return False
    pa, pb = precision_of(row), precision_of(device)
    return pa is None or pb is None or pa == pb


def device_rates(rates: Sequence[Rate], device: str, compile: bool) -> list[Rate]:
    """The measured rates of one device (name matched case-insensitively as a substring), with
    ``compile`` as the profile has it where both were measured.

    Raises:
        ConfigError: nothing measured on that device (the message lists what was).
    """
    hits = [r for r in rates if device.lower() in r.device.lower() or device_matches(r.device, device)]
    if not hits:
        known = sorted({r.device for r in rates})
        raise ConfigError(f"no throughput measured on a device matching {device!r}; measured: {', '.join(known)}")
    same = [r for r in hits if r.compile == compile]
    return same or hits


def plan_lines(
    config: Mapping[str, Any],
    device: str = "h200",
    throughput: Path = THROUGHPUT_CSV,
    sizes: Path = SIZES_CSV,
    paper: Path = PAPER_HOURS_CSV,
    data_dir: Path | None = None,
) -> list[str]:
    """Everything ``con2 plan`` prints for a profile config (reads the three tables, and the split
    manifests of prepared data under ``data_dir``: default the profile's, else $CON2_DATA_DIR or
    ./data, as the workflow has it), each line escaped for a terminal (:func:`con2.text.terminal_safe`:
    a throughput table's device name may hold a line break or an escape sequence)."""
    from con2.data import normal_classes  # lazy: numpy and PIL: the data layer loads only when a profile is planned
    from con2.data.profile_datasets import register_profile_datasets  # lazy: the data layer, as above

    try:
        # the datasets the profile declares by folder, as the workflow registers them before it expands the grid
        # (relative folders under --data-dir where given): a declared folder was "unknown dataset" here
        register_profile_datasets({**config, "data_dir": str(data_dir)} if data_dir is not None else config)
        grid = expand_grid(config, normal_classes)
    except GridError as exc:
        raise ConfigError(f"invalid profile: {exc}") from None
    rates = device_rates(read_rates(throughput), device, bool(config.get("compile", False)))
    runs, missing = drop_runs_without_weights(grid)  # as the workflow leaves them out: they cannot start here
    no_weights = Counter(f"{r.method}/{r.variant}" for r in grid if f"{r.method}/{r.variant}" in missing)
    if data_dir is None:
        data_dir = Path(config.get("data_dir") or default_data_dir())
    table, found_in = read_sizes(sizes), data_dir if data_dir.is_dir() else None
    runs, left_out = sized_runs(runs, table, found_in)
    if not runs:
        raise ConfigError("nothing to plan: " + "; ".join(left_out.values()))
    n_train, where = train_sizes(runs, table, found_in)
    settings = sorted({setting_of(r.config) for r in runs})
    rate_of = {s: estimate_rate(rates, *s) for s in settings}
    costs = cost_runs(runs, n_train, rate_of, paper_hours_per_run(paper, runs, config))
    name = rates[0].device
    lines = [f"{len(costs):,} training runs on one {name} (throughput: {throughput.name}; compile={rates[0].compile})"]
    scopes = (config.get("report") or {}).get("scopes") or {}
    studies = {e for exps in scopes.values() for e in exps or []}
    totals = per_experiment(costs)
    in_all = [c for c in costs if set(c.experiments) - studies]
    if studies and len(in_all) < len(costs):
        totals.insert(-1, totals_of("all", in_all))
    lines += format_plan(totals, name.split(" (")[0], studies)
    lines.append("")
    lines.append("views/s per (image size, width, batch):")
    for s in settings:
        rate = rate_of[s]
        lines.append(f"  {s[0]:>4} px  width {s[1]:>3}  N = {s[2]:>4}: {rate.views_per_s:>10,.0f}  {rate.how}")
    lines.append("training images per run (normal class):")
    for dataset in dict.fromkeys(r.dataset for r in runs):
        ns = sorted({n for (d, _), n in n_train.items() if d == dataset})
        shown = f"{ns[0]:,}" if len(ns) == 1 else f"{ns[0]:,}-{ns[-1]:,}"
        lines.append(f"  {dataset:<20} {shown:>11}  {where[dataset]}")
    lines.append(
        f"hours: training steps alone at the rate measured on {name} (no scoring, data preparation or checkpoints); "
        "paper: the paper's GPU hours per run (its compute table, medical datasets) summed over the runs it covers"
    )
    for dataset, why in left_out.items():  # as the workflow skips a dataset it cannot have
        lines.append(f"left out: {dataset} ({why})")
    for key, why in missing.items():
        lines.append(f"left out: {no_weights[key]} run(s) of {key}, as `snakemake all` leaves them out ({why})")
    return [terminal_safe(line) for line in lines]  # the tables' text (a device's name) is anyone's: one line each


def sized_runs(
    runs: Sequence[Any], table: Mapping[tuple[str, str], tuple[int, str]], data_dir: Path | None
) -> tuple[list[Any], dict[str, str]]:
    """The runs of datasets whose training-set sizes are known, and ``{dataset: why}`` for the rest
    (no prepared data and no line in the sizes table): planned without them, as the workflow skips
    a dataset it cannot have."""
    kept, left_out = [], {}
    for dataset in dict.fromkeys(r.dataset for r in runs):
        group = [r for r in runs if r.dataset == dataset]
        try:
            train_sizes(group, table, data_dir)
        except ConfigError as exc:
            left_out[dataset] = str(exc)
            continue
        kept += group
    return kept, left_out
