"""The whole grid's ETA (con2/grid/eta.py) against a slow reference written here, and the filter that
prints it under Snakemake's progress (con2/grid/console.py)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from con2.grid.console import GridProgress, install_grid_progress
from con2.grid.eta import GridEta, PlannedRun, eta_line, format_duration, grid_eta, measured_rates, weigh_runs
from con2.grid.plan import images_per_run, views_per_image


def reference_seconds(planned: list[PlannedRun], finished: dict[str, float], slots: int) -> float:
    """Each unfinished run: its weight times the seconds per weight unit of the finished runs of its
    method, else of all finished runs, else its own planned seconds; the sum over the job slots."""
    total = 0.0
    for p in planned:
        if p.key in finished:
            continue
        same = [q for q in planned if q.key in finished and q.method == p.method]
        pool = same or [q for q in planned if q.key in finished]
        if pool:
            total += p.weight * sum(finished[q.key] for q in pool) / sum(q.weight for q in pool)
        else:
            assert p.prior_seconds is not None
            total += p.prior_seconds
    return total / slots


def grid() -> list[PlannedRun]:
    return [
        PlannedRun("a", "con2", 100.0, 4.0),
        PlannedRun("b", "con2", 300.0, 12.0),
        PlannedRun("c", "csi", 200.0, 8.0),
        PlannedRun("d", "csi", 50.0, 2.0),
        PlannedRun("e", "simclr", 80.0, 3.0),
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


def test_before_any_run_a_run_without_planned_seconds_adds_nothing_to_the_floor() -> None:
    runs = [*grid(), PlannedRun("f", "own_rule_method", 500.0)]  # views per image unknown: no planned seconds
    eta = grid_eta(runs, {}, 2)
    assert eta.basis == "prior" and eta.seconds_left == pytest.approx((4 + 12 + 8 + 2 + 3) / 2)
    # once a run of another method finished, it gets the overall pace like every other
    eta = grid_eta(runs, {"a": 30.0}, 1)
    assert eta.seconds_left == pytest.approx(reference_seconds(grid(), {"a": 30.0}, 1) + 500 * 0.3)


def test_without_a_measured_device_the_eta_waits_for_the_first_run_and_ends_at_zero() -> None:
    unmeasured = [PlannedRun(p.key, p.method, p.weight) for p in grid()]
    eta = grid_eta(unmeasured, {}, 2)
    assert eta.seconds_left is None and "once a training run has finished" in eta_line(eta, 2)
    # one finished run: the others follow its pace; a record without timing counts as done, unmeasured
    eta = grid_eta(unmeasured, {"a": 50.0, "e": None}, 1)
    assert eta.done == 2 and eta.seconds_left == pytest.approx(0.5 * (300 + 200 + 50))
    assert "about 5 min left (1 at a time; from the pace of the 1 finished run)" in eta_line(eta, 1)
    done = grid_eta(unmeasured, dict.fromkeys("abcde", 1.0), 2)
    assert done.seconds_left == 0 and eta_line(done, 2) == "con2 grid: 5 of 5 training runs done"


def test_the_line_says_what_the_estimate_rests_on() -> None:
    prior = eta_line(GridEta(0, 42, 1234.0, "prior"), 2)
    assert prior.startswith("con2 grid: 0 of 42 training runs done; at least 21 min left (2 at a time: the training")
    paced = eta_line(GridEta(12, 42, 7300.0, "the pace of the 12 finished runs"), 2)
    assert paced == (
        "con2 grid: 12 of 42 training runs done; about 2 h 02 min left (2 at a time; from the pace of the 12 "
        "finished runs)"
    )
    assert [format_duration(s) for s in (0.4, 59.4, 89, 3599, 3600, 36000)] == [
        "0 s", "59 s", "1 min", "1 h 00 min", "1 h 00 min", "10 h 00 min"
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
    # the measured row: 207.7 images/s of 4 views each at 28 px, width 16, batch 64
    assert weights["c"].prior_seconds == pytest.approx(images * 4 / (207.7 * 4))
    assert weights["x"].weight == pytest.approx((images * 4 + images * 2 + images) / 3)  # unknown size: the mean
    assert all(p.prior_seconds is None for p in weigh_runs(runs[:2], None, "Intel Xeon").values())
    assert measured_rates("NVIDIA H200 NVL") and not measured_rates("Intel(R) Xeon(R) Platinum 8481C")


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
    broken = install_grid_progress(logger, lambda: 1 / 0)  # an ETA never stops the workflow
    logger.info(None, extra={"event": progress})
    assert broken.last == "con2 grid: no ETA (ZeroDivisionError: division by zero)"
