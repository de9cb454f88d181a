"""The whole grid's ETA in the workflow's progress (issue 27, point 3; issue 36, point 2).

Snakemake prints "N of M steps (x%) done" and each `con2 train` job its own ETA; neither says when
the grid will be done. A run's time has three parts, and each is weighed by what drives it:

- training (``timing.fit_seconds`` + ``curve_seconds``): its planned training views (`con2 plan`'s
  arithmetic: images per run x encoder passes per image); none for a run that trains nothing (a floor,
  a zero-shot method: ``max_steps: 0``);
- scoring (``score_seconds``): its scoring images, (training + test images) x the test-time views it
  encodes (``tta``; one for a card whose ``params.tta`` is false: the floors,
  :func:`con2.grid.plan.scoring_views`): a digits run fits in 7 s and scores for 63 s;

both in units of a view at 28 px and width 16 (:func:`view_cost`), so the pace of the 16 px
digits runs, which finish first, prices the 28 px BreastMNIST runs;
- the rest of the job's time (process start-up and imports, data loading, model set-up): one per run;
  the job's time is the workflow's own clock from the job's start to its record (``job_seconds``),
  where it was seen start, else the record's ``wall_seconds`` (which starts after the imports: a
  test-profile run's 3 s of wall time took 10 s as a job).

Each run not yet finished costs

    training views x training pace + scoring images x scoring pace + rest

where each pace is measured on the finished runs (their records' ``timing``) of the same method at the
same image size where there are such, else of the same method, else of the finished runs of the same
kind (trained, or scored untrained: a floor's 14-24 s never priced a CON2 run, nor a CON2 run's 200 s of
scoring a floor: issue 58, item 3, where the ETA was 4x off) whose views are known, else the prior
below, else of all finished runs whose views are known (I-JEPA-AD's ViT, 325 s of scoring where a
ResNet takes 48, never prices another method). A
run in flight costs what is left of it (its cost less the seconds since its job started, never below
0). The seconds left are the time the parallel job slots take for these (:func:`makespan`): the runs
in flight first, then the others, the longest first as the workflow's priorities start them, each on
the slot that frees first; not the sum over the slots, which gave the last run of a grid half a slot
and a run that had run for minutes its whole cost again. Before
any run has finished, each run's planned seconds stand in: its training views at this device's
measured throughput (``con2/resources/throughput.csv``, as `con2 plan` reads it) plus its scoring
views at that throughput times the measured cost of a scoring view against a training view
(:func:`con2.grid.plan.measured_scoring_ratio`: the median over the benchmarks' committed records of
this kind of device, ``benchmarks/measured/**/record.json``; 0.69 on the CPU records at 9a00bcd and
04996fb), nothing for the start-up, so "at least"; nothing for a run whose views per image are
unknown, where this device was measured; elsewhere the line says an ETA follows the first finished run.
A method whose views per image are unknown (I-JEPA-AD's ViT, a baseline with its own rule) cannot be
priced from the others (I-JEPA-AD's one run took 688 s where a ResNet pace said 30 s): its runs are left out of the sum
and named on the line until one of them has finished. The arithmetic is pure; the workflow
(:class:`con2.workflow.progress.ProgressLine`) gathers the runs and prints :func:`eta_line` after each finished
training job.

The steps after the runs (the aggregation, then the tables and figures: :class:`AfterRuns`) wait for
the last run: the line counts them too, the grid's aggregation first and the others on the slots,
each at the mean time of those finished in this invocation (with the prior :data:`STEP_SECONDS`), so
the ETA is the time until the workflow ends, not until its last training run (issue 46, point 3: the
test profile's table steps were 88 s of its 340 s, and its last line promised "about 8 s left" for
more than a minute). Once every run is done the line goes on with what those steps have left.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from con2.grid.cost_tables import SIZES_CSV, THROUGHPUT_CSV, Rate, held_out_sizes, read_rates, read_sizes, train_sizes
from con2.grid.plan import (
    device_matches,
    estimate_rate,
    images_per_run,
    measured_scoring_ratio,
    precision_of,
    scoring_views,
    setting_of,
    sized_runs,
    views_per_image,
)

__all__ = [
    "AfterRuns",
    "GridEta",
    "WeighedRun",
    "STEP_SECONDS",
    "Spent",
    "after_runs",
    "after_text",
    "device_kind",
    "eta_line",
    "format_duration",
    "grid_eta",
    "job_priority",
    "makespan",
    "pace_seconds",
    "weighed_run",
    "spent",
    "weigh_runs",
]


@dataclass(frozen=True)
class WeighedRun:
    """One run of the grid: its key, method, weight (planned training views: 0 for a run that trains
    nothing), planned seconds at this device's measured throughput, training and scoring (``None``: not
    measured here), scoring images ((training + test images) x the test-time views it encodes), setting
    (its image size: paces are shared within it), whether it trains (``trains``: a floor or a zero-shot
    method does not, and is priced by its own kind) and ``prior_scoring``, the part of ``prior_seconds``
    that is its scoring."""

    key: str
    method: str
    weight: float
    prior_seconds: float | None = None
    score_images: float = 0.0
    setting: str = ""
    priced: bool = True  # False: its views per image are unknown, its cost is its own method's pace only
    trains: bool = True
    prior_scoring: float = 0.0


@dataclass(frozen=True)
class Spent:
    """A finished run's seconds: ``train`` (fit and learning curve), ``score`` and ``rest`` (the job's
    time, else the wall time, minus both: start-up, data loading, model set-up)."""

    train: float
    score: float = 0.0
    rest: float = 0.0


# A step after the runs (the aggregation, a table, a figure: a `script:` job, mostly Python's start-up and
# imports) before one has finished in this invocation: measured on an idle 2-core Xeon with AMX-BF16 (the
# idle machine the training throughput is measured on) at 49df3e4, 74 such steps of the test profile and
# of the README's first CIFAR-10 command: median 0.7-0.9 s, mean 1.2 s. Under load 3-5 they took 4.5 s each
# (at 9470743), a prior that made the idle test profile's ETA 3-5 times the time left after its runs; a
# loaded machine's own steps correct it within a few (each finished one counts as much as the prior's half).
STEP_SECONDS = 1.2
PRIOR_STEPS = 2  # the prior counts as this many finished steps: one quick table (1.8 s) does not halve the rest
AFTER_WORDS = "aggregation, tables, figures"


@dataclass(frozen=True)
class AfterRuns:
    """The steps after the training runs in this invocation (the aggregation, then the tables and
    figures that read it): ``total`` of them, ``left`` not done yet, ``serial`` of those the grid's
    aggregation, which runs before the others, and ``pace``, the seconds of a step: the mean of the
    ``paced`` finished ones with :data:`STEP_SECONDS` counted as :data:`PRIOR_STEPS` of them."""

    total: int = 0
    left: int = 0
    serial: int = 0
    pace: float = STEP_SECONDS
    paced: int = 0

    def seconds(self, slots: int) -> float:
        """Their time: the serial ones one after another, then the others on ``slots`` (:func:`makespan`)."""
        serial = min(self.serial, self.left)
        return serial * self.pace + makespan([], [self.pace] * (self.left - serial), slots)


def after_runs(total: int, left: int, serial: int, durations: Sequence[float]) -> AfterRuns:
    """:class:`AfterRuns` of ``total`` steps, ``left`` to go (``serial`` of them first, one at a time), paced by
    the ``durations`` (seconds) of the finished ones whose start was seen, with the prior
    :data:`STEP_SECONDS` counted as :data:`PRIOR_STEPS` of them (none: the prior alone)."""
    times = [d for d in durations if math.isfinite(d) and d >= 0]
    pace = (sum(times) + PRIOR_STEPS * STEP_SECONDS) / (len(times) + PRIOR_STEPS)
    return AfterRuns(total, left, serial, pace, len(times))


@dataclass(frozen=True)
class GridEta:
    """Where the grid stands: ``done`` of ``total`` runs, ``seconds_left`` (``None``: no basis yet; the
    steps after the runs included), what the estimate rests on (``basis``: a few words, or "prior"
    before any run finished), the runs left out of it (``unpriced``: {method: runs}, methods whose cost
    is not known yet; ``unpriced_kind``: runs that train where only floors have finished and this device
    has no measured throughput) and the steps after the runs (``after``)."""

    done: int
    total: int
    seconds_left: float | None
    basis: str
    unpriced: Mapping[str, int] = field(default_factory=dict)
    after: AfterRuns = AfterRuns()
    unpriced_kind: int = 0


REFERENCE_SIZE, REFERENCE_WIDTH = 28, 16  # a view of this size and width costs 1 unit
# A view's cost grows as the image side to this power. Measured on the 2-core EPYC (default profile,
# issue 36): from 16 to 28 px (x1.75 side, x3.1 pixels) a training view cost x1.5 and a scoring
# image x1.3: small images do not fill a CPU's vector units, so the pixel count (power 2, `con2
# plan`'s scaling, right for large images on a GPU) priced the BreastMNIST runs at twice their time,
# and no scaling (power 0) at two thirds of it.
SIZE_POWER = 1.0


def view_cost(config: Mapping[str, Any]) -> float:
    """The cost of one view of a run (``config``: its resolved RunConfig as a mapping) relative to a view
    at 28 px through a width-16 encoder: ``(side / 28) ** SIZE_POWER x (width / 16) ** 2`` (1 where
    either is not stated)."""
    size = float(config.get("image_size") or REFERENCE_SIZE)
    width = float(config.get("width") or REFERENCE_WIDTH)
    return (size / REFERENCE_SIZE) ** SIZE_POWER * (width / REFERENCE_WIDTH) ** 2


def weighed_run(
    key: str,
    method: str,
    config: Mapping[str, Any],
    n_train: int,
    views_per_s: float | None = None,
    n_test: int | None = None,
    scoring_ratio: float | None = None,
) -> WeighedRun:
    """A run of the grid weighed by its planned training views and scoring images, each times
    :func:`view_cost` (``config``: its resolved RunConfig as a mapping, with ``epochs``, ``batch_size``,
    ``tta``, ``image_size``, ``width`` and ``params``; ``n_train``/``n_test``: its training and test
    images, ``n_test`` ``None``: unknown, taken as ``n_train``; ``views_per_s``: this device's measured
    throughput at the run's setting, if any; ``scoring_ratio``: a scoring view's cost in training views
    on this kind of device, :func:`con2.grid.plan.measured_scoring_ratio`, ``None``: its scoring is left
    out of the planned seconds). A run that trains nothing (no training images: ``max_steps: 0``, the
    floors) weighs 0 training views and is priced by its scoring alone."""
    images = images_per_run(
        n_train,
        int(config["batch_size"]),
        int(config["epochs"]),
        config.get("max_steps"),
        bool(config.get("drop_last", True)),
    )
    params = config.get("params") or {}
    trains = images > 0
    views = views_per_image(method, params) if trains else 0
    planned_views = float(images * views) if views is not None else float(images)
    scored = (n_train + (n_train if n_test is None else n_test)) * scoring_views(
        method, params, int(config.get("tta") or 0)
    )
    prior, prior_scoring = None, 0.0
    if views is not None and views_per_s:
        prior_scoring = scored * scoring_ratio / views_per_s if scoring_ratio else 0.0
        prior = planned_views / views_per_s + prior_scoring
    cost = view_cost(config)
    setting = f"{config.get('image_size', '')}px"
    return WeighedRun(
        key, method, planned_views * cost, prior, scored * cost, setting, views is not None, trains, prior_scoring
    )


def measured_rates(device: str) -> list[Rate]:
    """The throughput table's rows measured on ``device``, matched by model and, for a CPU, by how it
    trains (:func:`con2.grid.plan.device_matches`: ``AMD EPYC 7B13 (float32)`` is not the row
    ``AMD EPYC (1 thread(s); bf16 autocast)``); none if this device was never measured (then the ETA
    waits for the first finished run)."""
    rows = [r for r in read_rates(THROUGHPUT_CSV) if device_matches(r.device, device)]
    return [r for r in rows if not r.compile] or rows


def device_kind(device: str) -> str:
    """``cpu`` for a CPU's name as the throughput table writes it (its precision in brackets,
    :func:`con2.grid.plan.precision_of`: ``AMD EPYC (1 thread(s); bf16 autocast)``), else ``cuda`` (a GPU's
    name from nvidia-smi): the ``device`` of the records a scoring ratio is read from."""
    return "cpu" if precision_of(device) else "cuda"


def weigh_runs(runs: Sequence[Any], data_dir: Path | None, device: str | None) -> dict[str, WeighedRun]:
    """{run key: WeighedRun} of ``runs`` (:class:`con2.grid.experiments.Run`), sized as `con2 plan`
    sizes them (split manifests under ``data_dir``, else the sizes table); a run of a dataset of unknown
    size weighs as the mean of the others that train (0 where it trains nothing) and scores their mean.
    ``device``: the name this device's throughput was measured under (a CPU's model name, a GPU's name), or
    ``None``."""
    table = read_sizes(SIZES_CSV)
    known, _ = sized_runs(runs, table, data_dir)
    n_train, _ = train_sizes(known, table, data_dir) if known else ({}, {})
    n_test = held_out_sizes(known, data_dir)
    rates = measured_rates(device) if device else []
    ratio = measured_scoring_ratio(device_kind(rates[0].device)) if rates else None
    out: dict[str, WeighedRun] = {}
    for run in known:
        cfg = run.config
        views_per_s = estimate_rate(rates, *setting_of(cfg)).views_per_s if rates else None
        key = (run.dataset, run.normal_class)
        out[run.key] = weighed_run(
            run.key, run.method, cfg, n_train[key], views_per_s, n_test.get(key), ratio.ratio if ratio else None
        )
    trained = [p.weight for p in out.values() if p.trains]
    mean = sum(trained) / len(trained) if trained else 1.0
    scored = sum(p.score_images for p in out.values()) / len(out) if out else 0.0
    for run in runs:  # a run that trains nothing (max_steps 0: a floor) weighs no training views there either
        trains = run.config.get("max_steps") != 0
        out.setdefault(
            run.key, WeighedRun(run.key, run.method, mean if trains else 0.0, score_images=scored, trains=trains)
        )
    return out


def job_priority(p: WeighedRun) -> int:
    """The Snakemake priority of ``p``'s training job: a run whose cost the ETA cannot price from the others
    first, so that its pace is known early: a method whose views per image are unknown (I-JEPA-AD's ViT) and a
    run that trains nothing (a floor: 14-24 s of scoring on CIFAR-10, docs/results.md, which no trained run's
    pace describes; last in the grid, two floors were priced at 3 min 50 s with 1 min 03 s left, issue 58,
    item 3); then the larger runs (training views plus scoring images) first, so the grid does not end on one
    long job with a slot idle."""
    if not p.priced or not p.trains:
        return 1000
    return int(round(10 * math.log10(1.0 + p.weight + p.score_images)))


def pace_seconds(value: Any) -> float | None:
    """A finished run's ``wall_seconds`` as a pace, or ``None`` where it is none: missing, not a number, zero,
    negative or not finite (a damaged or hand-edited record; "about 0 s left" would rest on it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def spent(timing: Any) -> Spent | None:
    """A finished run's record ``timing`` (or its wall seconds alone, all counted as training) as
    :class:`Spent`; ``None`` where its wall seconds are no pace (:func:`pace_seconds`). A part that
    is missing or no number counts as 0; the rest is never negative. ``timing["job_seconds"]``
    (added by the workflow, not a record field): the job's own time, which the rest is taken from."""
    if not isinstance(timing, Mapping):
        wall = pace_seconds(timing)
        return None if wall is None else Spent(wall)
    wall = pace_seconds(timing.get("wall_seconds"))
    if wall is None:
        return None
    job = max(wall, pace_seconds(timing.get("job_seconds")) or 0.0)
    train = sum(pace_seconds(timing.get(k)) or 0.0 for k in ("fit_seconds", "curve_seconds"))
    score = pace_seconds(timing.get("score_seconds")) or 0.0
    if train + score == 0:
        return Spent(job)  # a record without its parts: its time is the pace, as before
    return Spent(train, score, max(0.0, job - train - score))


def makespan(running: Sequence[float], queued: Sequence[float], slots: int) -> float:
    """Seconds until the last of the jobs ends when ``slots`` run at a time: ``running``, the seconds
    left of the jobs in flight (each holds a slot from now), then ``queued`` (each job's seconds), the
    longest first (the workflow's priorities), each to the slot that frees first (Snakemake starts a
    job as soon as a slot is free)."""
    n, flying = max(1, slots), sorted(running)
    free = flying[:n] + [0.0] * (n - len(flying[:n]))  # when each slot frees
    heapq.heapify(free)
    for seconds in [*flying[n:], *sorted(queued, reverse=True)]:  # more in flight than slots: queued first
        heapq.heappush(free, heapq.heappop(free) + seconds)
    return max(free)


def grid_eta(
    planned: Sequence[WeighedRun],
    finished: Mapping[str, Any],
    slots: int,
    running: Mapping[str, float] | None = None,
    after: AfterRuns = AfterRuns(),
) -> GridEta:
    """The ETA of ``planned`` with ``finished`` ({run key: its record's ``timing`` mapping, its wall
    seconds, or ``None`` for a record without them}) done, ``slots`` jobs at a time and ``running``
    ({run key: seconds since its job started}) in flight (module docstring), then the steps ``after``
    the runs. A run whose wall seconds are no pace (:func:`spent`) counts as done and sets no pace."""
    by_key = {p.key: p for p in planned}
    measured = {k: s for k, v in finished.items() if k in by_key and (s := spent(v)) is not None}
    done = [by_key[k] for k in measured]
    left = [p for p in planned if p.key not in finished]
    n_done = len(planned) - len(left)
    if not done and left and sum(p.prior_seconds or 0.0 for p in left) <= 0:
        return GridEta(n_done, len(planned), None, "an ETA once a training run has finished", after=after)

    # the pace of a method whose views are unknown (I-JEPA-AD's ViT: 325 s of scoring where a ResNet
    # takes 48) is its own, never another method's
    comparable = [q for q in done if q.priced] or done

    def pools(p: WeighedRun) -> tuple[list[list[WeighedRun]], list[WeighedRun]]:
        """The finished runs whose pace ``p`` takes: same method and setting, same method, the same kind
        (trained or not) and priced; then, after the prior, all priced."""
        same = [q for q in done if q.method == p.method]
        kind = [q for q in comparable if q.trains == p.trains and q.priced]
        return [[q for q in same if q.setting == p.setting], same, kind], comparable

    def prior_pace(p: WeighedRun, part: str) -> float | None:
        """Seconds per unit of ``part`` from ``p``'s planned seconds (this device's measured throughput)."""
        if p.prior_seconds is None:
            return None
        if part == "train":
            return (p.prior_seconds - p.prior_scoring) / p.weight if p.weight > 0 else None
        return p.prior_scoring / p.score_images if p.prior_scoring > 0 and p.score_images > 0 else None

    def pace(p: WeighedRun, part: str, units: str) -> float:
        own, last = pools(p)
        for pool in own:
            n = sum(getattr(q, units) for q in pool)
            if n > 0:
                return sum(getattr(measured[q.key], part) for q in pool) / n
        prior = prior_pace(p, part)
        if prior is not None:
            from_prior.add(p.key)
            return prior
        n = sum(getattr(q, units) for q in last)
        return sum(getattr(measured[q.key], part) for q in last) / n if n > 0 else 0.0

    def rest(p: WeighedRun) -> float:
        own, last = pools(p)
        pool = next((pool for pool in own if pool), last)
        return sum(measured[q.key].rest for q in pool) / len(pool)

    def seconds(p: WeighedRun) -> float:
        if not done:
            return float(p.prior_seconds or 0.0)
        training = p.weight * pace(p, "train", "weight") if p.weight > 0 else 0.0
        return training + p.score_images * pace(p, "score", "score_images") + rest(p)

    from_prior: set[str] = set()  # runs priced (in part) at this device's throughput: no run of their kind yet
    finished_methods = {p.method for p in done}
    unpriced: dict[str, int] = {}
    flying, queued = [], []
    elapsed = running or {}
    kinds_done = {q.trains for q in comparable if q.priced}
    unpriced_kind = 0
    for p in left:
        if done and not p.priced and p.method not in finished_methods:
            unpriced[p.method] = unpriced.get(p.method, 0) + 1  # no pace of its own yet: named, not guessed
        elif kinds_done and p.priced and p.prior_seconds is None and p.trains not in kinds_done:
            # a run that trains where only floors have finished (nor the reverse), on a device without a measured
            # throughput: a floor's scoring pace says nothing of its training (issue 58: 3 min 40 s said, 12 left)
            unpriced_kind += 1
        elif p.key in elapsed:
            flying.append(max(0.0, seconds(p) - elapsed[p.key]))
        else:
            queued.append(seconds(p))
    # "prior": the training and scoring at this device's throughput (no start-up or data loading)
    basis = "prior" if not done else f"the pace of the {len(done)} finished run{'s' if len(done) != 1 else ''}"
    if done and from_prior:
        basis += f" and, for {len(from_prior)} of a kind none has finished, this device's measured throughput"
    total = makespan(flying, queued, slots) + after.seconds(slots)  # the steps after the runs wait for them all
    return GridEta(n_done, len(planned), total, basis, unpriced, after, unpriced_kind)


def format_duration(seconds: float) -> str:
    """``seconds`` as "45 s", "4 min 30 s" (under 10 min: to 10 s, so the last minutes are not off by half
    a minute in two), "12 min", "3 h 05 min"."""
    if seconds < 60:
        return f"{max(0, round(seconds))} s"
    if seconds < 595:
        tens = round(seconds / 10)
        return f"{tens // 6} min {10 * (tens % 6):02d} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def after_text(after: AfterRuns, slots: int) -> str:
    """What the ETA counts after the runs, for the line: "+ 27 steps after the runs (aggregation, tables,
    figures): 20 s at 1.5 s each (from the 3 finished)" (empty without such steps)."""
    if not after.left:
        return ""
    pace = f"from the {after.paced} finished" if after.paced else "a prior until one finishes"
    return (
        f"+ {after.left} step{'s' if after.left != 1 else ''} after the runs ({AFTER_WORDS}): "
        f"{format_duration(after.seconds(slots))} at {after.pace:.1f} s each ({pace})"
    )


def eta_line(eta: GridEta, slots: int, unmeasured: str = "") -> str:
    """One console line: "con2 grid: 12 of 42 training runs done; about 14 min left (2 at a time;
    from the pace of the 12 finished runs; + 27 steps after the runs (...): 1 min 00 s at ...)";
    once every run is done, the time the steps after them take; ``unmeasured``: why there is no
    estimate before the first finished run (this device has no measured throughput)."""
    head = f"con2 grid: {eta.done} of {eta.total} training runs done"
    after = after_text(eta.after, slots)
    if eta.done >= eta.total:
        if not after or eta.seconds_left is None:
            return head
        return f"{head}; about {format_duration(eta.seconds_left)} left ({slots} at a time; {after})"
    if eta.seconds_left is None:
        return f"{head}; {eta.basis}" + (f" ({unmeasured})" if unmeasured else "")
    after = f"; {after}" if after else ""
    if eta.basis == "prior":  # before any run finished: the training steps at this device's measured throughput
        return (
            f"{head}; at least {format_duration(eta.seconds_left)} left ({slots} at a time: training and scoring "
            f"at this device's measured throughput, no start-up; the pace of the finished runs from the first one "
            f"on{after})"
        )
    plus = ""
    if eta.unpriced:
        runs = ", ".join(f"{n} {m} run{'s' if n != 1 else ''}" for m, n in sorted(eta.unpriced.items()))
        plus = f"; plus {runs}, priced once one of its method has finished"
    if eta.unpriced_kind:
        n = eta.unpriced_kind
        plus += f"; plus {n} run{'s' if n != 1 else ''} that train{'s' if n == 1 else ''}, priced once one has finished"
    return f"{head}; about {format_duration(eta.seconds_left)} left ({slots} at a time; from {eta.basis}{plus}{after})"
