"""The whole grid's ETA (con2/workflow/eta.py) against a slow reference written here, and the filter that
prints it under Snakemake's progress (con2/workflow/console.py)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from con2.grid.plan import images_per_run, measured_scoring_ratio, views_per_image
from con2.workflow.console import GridProgress, install_grid_progress
from con2.workflow.eta import (
    PRIOR_STEPS,
    STEP_SECONDS,
    AfterRuns,
    GridEta,
    Spent,
    WeighedRun,
    after_runs,
    eta_line,
    format_duration,
    grid_eta,
    makespan,
    measured_rates,
    spent,
    weigh_runs,
)


def reference_makespan(running: list[float], queued: list[float], slots: int) -> float:
    """As a scheduler runs them: the jobs in flight hold a slot each until their seconds left are over;
    each queued job, longest first, waits for the first slot to be free and holds it for its seconds;
    the answer is when the last slot is free."""
    busy = sorted(running)[:slots] + [0.0] * max(0, slots - len(running))
    waiting = sorted(running)[slots:] + sorted(queued, reverse=True)
    while waiting:
        now = min(busy)  # the next moment a slot is free
        busy[busy.index(now)] = now + waiting.pop(0)
    return max(busy)


def reference_seconds(
    planned: list[WeighedRun], finished: dict[str, Any], slots: int, running: dict[str, float] | None = None
) -> float:
    """Each unfinished run: its training views times the training seconds per view, its scoring images
    times the scoring seconds per image, plus the mean rest per run, each over the finished runs of its
    method at its setting, else of its method, else of the finished runs of its kind (trained or not) whose
    views are known, else its own planned seconds' pace (this device's throughput), else of all finished
    runs of a method whose views are known (for a pace: the first such group with units to divide by); a
    run that trains nothing has no training part; before any run finished, its own planned seconds; less
    the seconds it has been running. Then how long the slots take for them
    (:func:`reference_makespan`). A float is a wall time, all training; a mapping a record's timing."""

    def parts(value: Any) -> tuple[float, float, float]:
        if not isinstance(value, dict):
            return float(value), 0.0, 0.0
        train = value["fit_seconds"] + value["curve_seconds"]
        return train, value["score_seconds"], max(0.0, value["wall_seconds"] - train - value["score_seconds"])

    done = [q for q in planned if q.key in finished]
    running = running or {}
    flying, queued = [], []
    for p in planned:
        if p.key in finished:
            continue
        if not done:
            assert p.prior_seconds is not None
            total = p.prior_seconds
        else:
            priced = [q for q in done if q.priced] or done
            groups = [
                [q for q in done if q.method == p.method and q.setting == p.setting],
                [q for q in done if q.method == p.method],
                [q for q in priced if q.trains == p.trains and q.priced],
            ]
            prior_train = prior_score = None
            if p.prior_seconds is not None and p.weight > 0:
                prior_train = (p.prior_seconds - p.prior_scoring) / p.weight
            if p.prior_seconds is not None and p.prior_scoring > 0 and p.score_images > 0:
                prior_score = p.prior_scoring / p.score_images

            def per_unit(
                index: int, units: str, prior: float | None, groups: list = groups, priced: list = priced
            ) -> float:
                pool = next((g for g in groups if sum(getattr(q, units) for q in g) > 0), None)
                if pool is None and prior is not None:
                    return prior
                pool = pool or priced
                n = sum(getattr(q, units) for q in pool)
                return sum(parts(finished[q.key])[index] for q in pool) / n if n > 0 else 0.0

            total = p.weight * per_unit(0, "weight", prior_train) if p.weight > 0 else 0.0
            total += p.score_images * per_unit(1, "score_images", prior_score)
            rest_pool = next((g for g in groups if g), priced)
            total += sum(parts(finished[q.key])[2] for q in rest_pool) / len(rest_pool)
        if p.key in running:
            flying.append(max(0.0, total - running[p.key]))
        else:
            queued.append(total)
    return reference_makespan(flying, queued, slots)


def grid() -> list[WeighedRun]:
    return [
        WeighedRun("a", "con2", 100.0, 4.0),
        WeighedRun("b", "con2", 300.0, 12.0),
        WeighedRun("c", "csi", 200.0, 8.0),
        WeighedRun("d", "csi", 50.0, 2.0),
        WeighedRun("e", "simclr", 80.0, 3.0),
    ]


@pytest.mark.parametrize(
    "finished",
    [{}, {"a": 30.0}, {"a": 30.0, "c": 100.0}, {"a": 30.0, "b": 75.0, "c": 100.0, "d": 40.0}],
)
@pytest.mark.parametrize("slots", [1, 2, 3])
def test_the_eta_is_the_reference_per_method_then_overall_then_planned(finished: dict[str, float], slots: int) -> None:
    eta = grid_eta(grid(), finished, slots)
    assert eta.done == len(finished) and eta.total == 5
    assert eta.seconds_left == pytest.approx(reference_seconds(grid(), finished, slots))
    assert (eta.basis == "prior") == (not finished)


def timing(fit: float, curve: float, score: float, wall: float) -> dict[str, float]:
    return {"fit_seconds": fit, "curve_seconds": curve, "score_seconds": score, "wall_seconds": wall}


def scored_grid() -> list[WeighedRun]:
    """Training views, scoring images and settings as a grid of two datasets and two image sizes has
    them: "d*" runs on a small set that scores much more than it trains, a zero-shot method (weight 1)."""
    return [
        WeighedRun("b1", "con2", 40_000.0, 50.0, 555 * 40.0, "28px"),
        WeighedRun("b2", "con2", 40_000.0, 50.0, 555 * 40.0, "28px"),
        WeighedRun("b64", "con2", 40_000.0, 250.0, 555 * 40.0, "64px"),
        WeighedRun("d1", "con2", 4_000.0, 5.0, 1_800 * 40.0, "28px"),
        WeighedRun("d2", "con2", 4_000.0, 5.0, 1_800 * 40.0, "28px"),
        WeighedRun("s1", "simclr", 20_000.0, 20.0, 555 * 40.0, "28px"),
        WeighedRun("z1", "zero_shot", 1.0, None, 555 * 40.0, "28px"),
    ]


@pytest.mark.parametrize(
    "finished",
    [
        {"d1": timing(7.0, 1.0, 63.0, 75.0)},
        {"d1": timing(7.0, 1.0, 63.0, 75.0), "b1": timing(60.0, 10.0, 20.0, 95.0)},
        {"b64": timing(300.0, 40.0, 90.0, 440.0), "s1": timing(30.0, 5.0, 15.0, 52.0)},
        {"b1": timing(60.0, 10.0, 20.0, 88.0), "z1": timing(0.0, 0.0, 312.0, 320.0), "d2": 70.0},
    ],
)
@pytest.mark.parametrize("slots", [1, 2])
def test_training_and_scoring_are_paced_apart_per_method_and_setting(finished: dict[str, Any], slots: int) -> None:
    eta = grid_eta(scored_grid(), finished, slots)
    assert eta.seconds_left == pytest.approx(reference_seconds(scored_grid(), finished, slots))


def test_a_run_that_scores_more_than_it_trains_does_not_inflate_the_others() -> None:
    """Issue 36: the first finished run was a digits run (fit 7 s, score 63 s); weighed by training
    views alone, its wall time made every BreastMNIST run cost 10 times its training."""
    eta = grid_eta(scored_grid()[:4], {"d1": timing(7.0, 1.0, 63.0, 75.0)}, 1)
    per_view, per_image = 8.0 / 4_000, 63.0 / (1_800 * 40)
    expected = 3 * (40_000 * per_view + 555 * 40 * per_image + 4.0)
    assert eta.seconds_left == pytest.approx(expected)
    assert eta.seconds_left < 3 * 40_000 * 75.0 / 4_000 / 2  # the old estimate: over twice as long
    # a method that trains nothing still has its scoring to wait for
    zero = grid_eta(scored_grid(), {"b1": timing(60.0, 10.0, 20.0, 95.0)}, 1)
    without = grid_eta([p for p in scored_grid() if p.key != "z1"], {"b1": timing(60.0, 10.0, 20.0, 95.0)}, 1)
    assert zero.seconds_left - without.seconds_left == pytest.approx(1 * 70 / 40_000 + 20.0 + 5.0)


@pytest.mark.parametrize("seed", range(20))
def test_the_slots_time_is_the_reference_and_within_grahams_bounds(seed: int) -> None:
    """Jobs in flight and queued on 1 to 4 slots: the time the slots take is the reference scheduler's,
    never below the longest job or the work per slot and never above the work per slot plus the
    longest job (Graham's bound for list scheduling); one slot takes the sum."""
    import random

    rng = random.Random(seed)
    slots = rng.randint(1, 4)
    running = [rng.uniform(0, 300) for _ in range(rng.randint(0, slots))]
    queued = [rng.uniform(1, 600) for _ in range(rng.randint(0, 12))]
    got = makespan(running, queued, slots)
    assert got == pytest.approx(reference_makespan(running, queued, slots))
    work, longest = sum(running) + sum(queued), max([0.0, *running, *queued])
    assert max(longest, work / slots) - 1e-9 <= got <= work / slots + longest + 1e-9
    assert makespan(running, queued, 1) == pytest.approx(work)


def test_runs_in_flight_count_what_is_left_of_them_and_the_last_run_is_not_shared() -> None:
    """Issue 36: "5 of 7 ... about 10 s left" for 6 s. The work left was divided over the slots as if
    every run started now: the two runs in flight had been running for seconds, and the last run of
    a grid has a slot to itself, not half of one."""
    runs = [WeighedRun(k, "con2", 100.0) for k in "abcde"]
    finished = {"a": 20.0}  # 0.2 s per unit: 20 s per run
    assert grid_eta(runs, finished, 2).seconds_left == pytest.approx(40.0)  # 4 runs of 20 s on 2 slots
    running = {"b": 15.0, "c": 12.0}
    eta = grid_eta(runs, finished, 2, running)
    # b ends in 5 s, c in 8 s; d then e take the slot that frees first: d from 5 to 25, e from 8 to 28
    assert eta.seconds_left == pytest.approx(28.0) == reference_seconds(runs, finished, 2, running)
    overdue = grid_eta(runs, {**finished, "b": 20.0, "c": 20.0, "d": 20.0}, 2, {"e": 45.0})
    assert overdue.seconds_left == 0  # past its estimate: nothing left of it, never negative
    last = grid_eta(runs, {**finished, "b": 20.0, "c": 20.0, "d": 20.0}, 2)
    assert last.seconds_left == pytest.approx(20.0)  # one run on two slots: its own time, not half of it


def test_a_method_of_unknown_cost_never_sets_the_pace_of_another() -> None:
    """The default profile's third line said 2,490 s for 1,332: I-JEPA-AD's ViT (325 s of scoring) set
    the pace of every method that had not finished a run yet."""
    runs = [*grid(), WeighedRun("f", "ijepa_ad", 100.0, None, priced=False)]
    with_vit = grid_eta(runs, {"a": 30.0, "f": 700.0}, 1)
    assert with_vit.seconds_left == pytest.approx(grid_eta(grid(), {"a": 30.0}, 1).seconds_left)
    assert with_vit.seconds_left == pytest.approx(reference_seconds(runs, {"a": 30.0, "f": 700.0}, 1))
    # this device's measured throughput (the planned seconds) comes before another method's pace
    alone = grid_eta(runs, {"f": 700.0}, 1)
    assert alone.seconds_left == pytest.approx(4.0 + 12.0 + 8.0 + 2.0 + 3.0)
    unmeasured = [WeighedRun(p.key, p.method, p.weight, priced=p.priced) for p in runs]
    alone = grid_eta(unmeasured, {"f": 700.0}, 1)  # the only pace there is: taken rather than none
    assert alone.seconds_left == pytest.approx(7.0 * (100 + 300 + 200 + 50 + 80))


def test_a_record_timing_becomes_its_parts() -> None:
    assert spent(timing(7.0, 1.0, 63.0, 75.0)) == Spent(8.0, 63.0, 4.0)
    assert spent(timing(7.0, 1.0, 63.0, 60.0)) == Spent(8.0, 63.0, 0.0)  # a resumed run's wall: no negative rest
    assert spent({"wall_seconds": 42.0}) == Spent(42.0)  # parts missing: the wall time is the pace
    assert spent({"wall_seconds": 42.0, "fit_seconds": "x", "score_seconds": 10.0}) == Spent(0.0, 10.0, 32.0)
    assert spent(30.0) == Spent(30.0) and spent(None) is None and spent({"fit_seconds": 5.0}) is None
    # the workflow's own clock of the job (start-up and imports included) is where the rest comes from
    assert spent({**timing(3.0, 1.0, 1.0, 6.0), "job_seconds": 14.0}) == Spent(4.0, 1.0, 9.0)
    assert spent({**timing(3.0, 1.0, 1.0, 6.0), "job_seconds": 2.0}) == Spent(4.0, 1.0, 1.0)  # never below wall


def test_no_planned_seconds_is_no_eta_rather_than_at_least_0_s() -> None:
    """The test profile opened with "at least 0 s left": runs planned at 0 s are no basis."""
    runs = [WeighedRun("a", "con2", 10.0, 0.0), WeighedRun("b", "simclr", 10.0, 0.0)]
    eta = grid_eta(runs, {}, 2)
    assert eta.seconds_left is None and "at least" not in eta_line(eta, 2)


def test_before_any_run_a_run_without_planned_seconds_adds_nothing_to_the_floor() -> None:
    runs = [*grid(), WeighedRun("f", "own_rule_method", 500.0)]  # views per image unknown: no planned seconds
    eta = grid_eta(runs, {}, 2)
    # 2 slots, longest first: 12 then 3 on one (15 s), 8, 4 and 2 on the other (14 s)
    assert eta.basis == "prior" and eta.seconds_left == pytest.approx(15.0)
    # once a run of another method finished, it gets the overall pace like every other
    eta = grid_eta(runs, {"a": 30.0}, 1)
    assert eta.seconds_left == pytest.approx(reference_seconds(grid(), {"a": 30.0}, 1) + 500 * 0.3)


def test_a_method_of_unknown_cost_is_named_not_priced_until_one_of_its_runs_finished() -> None:
    """I-JEPA-AD's ViT took 688 s where a ResNet pace said 30 s: a run whose views per image are
    unknown is left out of the sum and named on the line until its own method has a pace."""
    runs = [
        *grid(),
        WeighedRun("f", "ijepa_ad", 500.0, None, 100.0, priced=False),
        WeighedRun("g", "ijepa_ad", 500.0, None, 100.0, priced=False),
    ]
    eta = grid_eta(runs, {"a": 30.0}, 1)
    assert eta.seconds_left == pytest.approx(reference_seconds(grid(), {"a": 30.0}, 1))
    assert eta.unpriced == {"ijepa_ad": 2}
    assert eta_line(eta, 1).endswith(
        "from the pace of the 1 finished run; plus 2 ijepa_ad runs, priced once one of its method has finished)"
    )
    paced = grid_eta(runs, {"a": 30.0, "f": 250.0}, 1)  # its own pace now: 0.5 s per unit
    assert paced.unpriced == {} and paced.seconds_left == pytest.approx(
        reference_seconds(runs, {"a": 30.0, "f": 250.0}, 1)
    )


def test_without_a_measured_device_the_eta_waits_for_the_first_run_and_ends_at_zero() -> None:
    unmeasured = [WeighedRun(p.key, p.method, p.weight) for p in grid()]
    eta = grid_eta(unmeasured, {}, 2)
    assert eta.seconds_left is None and "once a training run has finished" in eta_line(eta, 2)
    # one finished run: the others follow its pace; a record without timing counts as done, unmeasured
    eta = grid_eta(unmeasured, {"a": 50.0, "e": None}, 1)
    assert eta.done == 2 and eta.seconds_left == pytest.approx(0.5 * (300 + 200 + 50))
    assert "about 4 min 40 s left (1 at a time; from the pace of the 1 finished run)" in eta_line(eta, 1)
    done = grid_eta(unmeasured, dict.fromkeys("abcde", 1.0), 2)
    assert done.seconds_left == 0 and eta_line(done, 2) == "con2 grid: 5 of 5 training runs done"


def test_the_line_says_what_the_estimate_rests_on() -> None:
    prior = eta_line(GridEta(0, 42, 1234.0, "prior"), 2)
    assert prior.startswith(
        "con2 grid: 0 of 42 training runs done; at least 21 min left (2 at a time: training and scoring at this "
        "device's measured throughput, no start-up;"
    )
    paced = eta_line(GridEta(12, 42, 7300.0, "the pace of the 12 finished runs"), 2)
    assert paced == (
        "con2 grid: 12 of 42 training runs done; about 2 h 02 min left (2 at a time; from the pace of the 12 "
        "finished runs)"
    )
    assert [format_duration(s) for s in (0.4, 59.4, 60, 89, 274, 594, 596, 3599, 3600, 36000)] == [
        "0 s", "59 s", "1 min 00 s", "1 min 30 s", "4 min 30 s", "9 min 50 s", "10 min", "1 h 00 min",
        "1 h 00 min", "10 h 00 min",
    ]  # fmt: skip


def run(key: str, method: str, dataset: str, **config: object) -> SimpleNamespace:
    cfg = {"epochs": 10, "batch_size": 64, "image_size": 28, "width": 16, "params": {}, **config}
    return SimpleNamespace(key=key, method=method, dataset=dataset, normal_class="1", data_size=28, config=cfg)


def test_runs_are_weighed_by_their_planned_views_and_the_device_throughput() -> None:
    runs = [
        run("c", "con2", "breastmnist", params={"contexts": ["invert"]}),
        run("s", "simclr", "breastmnist"),
        run("u", "own_rule_method", "breastmnist"),
        run("x", "con2", "no_such_dataset"),
    ]
    n = 399  # breastmnist class 1's training images in con2/resources/train_set_sizes.csv
    weights = weigh_runs(runs, None, "AMD EPYC 9B14")  # a longer model name than the table's row
    images = images_per_run(n, 64, 10)
    assert weights["c"].weight == images * views_per_image("con2", {"contexts": ["invert"]}) == images * 4
    assert weights["s"].weight == images * 2
    assert weights["u"].weight == images and weights["u"].prior_seconds is None  # views unknown: its images
    assert not weights["u"].priced and weights["c"].priced
    # the measured row: 207.7 images/s of 4 views each at 28 px, width 16, batch 64; scoring (no tta: one view
    # of the 399 training and, without a manifest, 399 test images) at the CPU records' scoring-view cost
    ratio = measured_scoring_ratio("cpu")
    assert ratio is not None and 0.3 < ratio.ratio < 1.5 and ratio.records >= 4
    scoring = (399 + 399) * ratio.ratio / (207.7 * 4)
    assert weights["c"].prior_scoring == pytest.approx(scoring)
    assert weights["c"].prior_seconds == pytest.approx(images * 4 / (207.7 * 4) + scoring)
    assert weights["x"].weight == pytest.approx((images * 4 + images * 2 + images) / 3)  # unknown size: the mean
    assert all(p.prior_seconds is None for p in weigh_runs(runs[:2], None, "Intel Xeon").values())
    assert measured_rates("NVIDIA H200 NVL") and not measured_rates("Intel(R) Xeon(R) Platinum 8481C")


def test_runs_are_weighed_by_their_scoring_images_from_the_split_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scoring images: (training + test images) x test-time views; the test images from the prepared
    split's manifest, else taken as the training images (the sizes table has no test sizes)."""
    from con2.data.cache import cache_dir
    from con2.data.manifest import manifest_filename

    monkeypatch.setenv("CON2_CACHE_DIR", str(tmp_path / "cache"))
    runs = [run("c", "con2", "breastmnist", tta=40), run("s", "simclr", "breastmnist", tta=1)]
    unprepared = weigh_runs(runs, tmp_path, None)
    assert unprepared["c"].score_images == (399 + 399) * 40 and unprepared["s"].score_images == 399 + 399
    assert unprepared["c"].setting == "28px"
    folder = cache_dir(tmp_path, "breastmnist", 28) / "splits"
    folder.mkdir(parents=True)
    (folder / manifest_filename("1", 3)).write_text(json.dumps({"n_train": 390, "n_test": 156}))
    prepared = weigh_runs(runs, tmp_path, None)
    assert prepared["c"].score_images == (390 + 156) * 40 and prepared["s"].score_images == 390 + 156


def test_the_filter_prints_the_line_under_progress_once_per_change() -> None:
    logger = logging.getLogger("con2-test-progress")
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(str(getattr(record, "event", "")) + ":" + str(record.msg))

    logger.addHandler(Keep())
    logger.setLevel(logging.INFO)
    lines = iter(["run 1 done", "run 1 done", "run 2 done"])
    first = install_grid_progress(logger, lambda: next(lines))
    second = install_grid_progress(logger, lambda: next(lines))  # replaces the first: never two lines
    assert [f for f in logger.filters if isinstance(f, GridProgress)] == [second] and first is not second
    progress = SimpleNamespace(value="progress")
    for done in range(3):
        logger.info(None, extra={"event": progress, "done": done})
    logger.info("other")  # not a progress record: nothing added
    assert seen == [":run 1 done", f"{progress}:None", f"{progress}:None", ":run 2 done", f"{progress}:None", ":other"]
    started: dict[str, float] = {}
    noting = install_grid_progress(logger, lambda: None, started)
    job_info = SimpleNamespace(value="job_info")
    logger.info("job", extra={"event": job_info, "output": ["results/runs/a/record.json", "b.csv (temp)"]})
    assert set(started) == {"results/runs/a/record.json", "b.csv"} and noting.started is started
    broken = install_grid_progress(logger, lambda: 1 / 0)  # an ETA never stops the workflow
    logger.info(None, extra={"event": progress})
    assert broken.last == "con2 grid: no ETA (ZeroDivisionError: division by zero)"


def test_the_eta_counts_the_steps_after_the_runs_and_goes_on_once_every_run_is_done() -> None:
    """Issue 46, point 3: the test profile's table steps took 88 s of its 340 s, and its last line promised
    "about 8 s left" for more than a minute. The steps after the runs (the aggregation, one at a time,
    then the tables and figures on the slots) are added to the runs' time, at the mean time of those
    finished, else at STEP_SECONDS; once every run is done the line says what they have left."""
    runs = [WeighedRun(k, "con2", 100.0) for k in "abc"]
    prior = after_runs(total=9, left=9, serial=1, durations=[])
    assert prior.pace == STEP_SECONDS and prior.paced == 0
    # 1 aggregation, then 8 steps on 2 slots: 4 rounds
    assert prior.seconds(2) == pytest.approx(STEP_SECONDS * (1 + 4))
    paced = after_runs(total=9, left=5, serial=0, durations=[2.0, 4.0, float("nan")])
    pace = (2.0 + 4.0 + PRIOR_STEPS * STEP_SECONDS) / (2 + PRIOR_STEPS)  # the prior counts as PRIOR_STEPS steps
    assert paced.pace == pytest.approx(pace) and paced.paced == 2
    assert paced.seconds(2) == pytest.approx(pace * 3)  # 5 steps on 2 slots: 3 rounds
    without = grid_eta(runs, {"a": 20.0}, 2)
    eta = grid_eta(runs, {"a": 20.0}, 2, after=prior)
    assert eta.seconds_left == pytest.approx(without.seconds_left + prior.seconds(2))
    line = eta_line(eta, 2)
    assert line.startswith("con2 grid: 1 of 3 training runs done; about ") and line.endswith(
        f"+ 9 steps after the runs (aggregation, tables, figures): {format_duration(prior.seconds(2))} at "
        f"{STEP_SECONDS:.1f} s each (a prior until one finishes))"
    ), line
    # every run done: the steps after them are what is left, and the line goes on
    done = grid_eta(runs, dict.fromkeys("abc", 20.0), 2, after=paced)
    assert done.seconds_left == pytest.approx(pace * 3)
    left = format_duration(pace * 3)
    assert eta_line(done, 2) == (
        f"con2 grid: 3 of 3 training runs done; about {left} left (2 at a time; + 5 steps after the runs "
        f"(aggregation, tables, figures): {left} at {pace:.1f} s each (from the 2 finished))"
    )
    over = grid_eta(runs, dict.fromkeys("abc", 20.0), 2, after=AfterRuns(total=9, left=0))
    assert eta_line(over, 2) == "con2 grid: 3 of 3 training runs done"  # nothing left: the last line


def test_without_a_measured_device_the_line_says_which_device_has_no_throughput() -> None:
    """Issue 46, point 7: on a CPU named "Intel(R) Xeon(R) Processor" (a VM's generic name) no throughput
    row matches, so the first ETA waits for a finished run: the line says why, naming the device."""
    eta = grid_eta([WeighedRun("a", "con2", 100.0)], {}, 2)
    why = "this device, Intel(R) Xeon(R) Processor (bf16 autocast), has no row in con2/resources/throughput.csv"
    assert (
        eta_line(eta, 2, why)
        == f"con2 grid: 0 of 1 training runs done; an ETA once a training run has finished ({why})"
    )
