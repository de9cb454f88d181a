"""Scoring tells how far it is (issue 36, point 10: I-JEPA-AD's scoring said nothing for minutes): one
report per encoder pass, the total known from the first, and the scores the same with or without it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from con2.config import make_config
from con2.methods import build_method
from con2.methods.scoring import scoring_progress

CPU = torch.device("cpu")


def images(n: int, seed: int) -> torch.Tensor:
    return torch.randint(0, 256, (n, 1, 16, 16), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(("method", "params", "tta", "csi_views"), [("con2", {}, 4, 0), ("csi", {}, 2, 3)])
def test_scoring_reports_every_pass_in_order_and_changes_no_score(tiny, method, params, tta, csi_views) -> None:
    torch.manual_seed(0)
    m = build_method(make_config({**tiny, "method": method, "tta": tta, "csi_views": csi_views, "params": params}))
    m.eval()
    train, test = images(12, 0), images(7, 1)
    seen: list[tuple[int, int]] = []
    with scoring_progress(lambda done, total: seen.append((done, total))):
        with_progress = m.score(train, test, CPU).scores
    without = m.score(train, test, CPU).scores
    # one pass per fixed view, per CSI view in each context, and the identity pass
    total = len(m.test_views()) + len(m.test_contexts()) * csi_views + 1
    assert seen == [(i, total) for i in range(1, total + 1)]
    assert with_progress.keys() == without.keys()
    for col in without:
        np.testing.assert_array_equal(with_progress[col], without[col])


def test_no_report_outside_the_block(tiny) -> None:
    m = build_method(make_config({**tiny, "method": "con2", "tta": 2}))
    seen: list[tuple[int, int]] = []
    with scoring_progress(lambda done, total: seen.append((done, total))):
        pass
    m.score(images(6, 0), images(5, 1), CPU)
    assert seen == []


def test_the_console_line_comes_at_most_every_interval_and_never_for_the_last_pass(capsys) -> None:
    from con2.run.execute import scoring_printer

    every = scoring_printer(every_s=0.0)
    for done in range(1, 5):
        every(done, 4)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(", about")[0] for line in lines] == [f"scoring: {i} of 4 passes" for i in (1, 2, 3)]
    assert all(line.endswith(" min left") for line in lines)
    quiet = scoring_printer(every_s=3600.0)  # a scoring done within the interval says nothing
    for done in range(1, 5):
        quiet(done, 4)
    assert capsys.readouterr().out == ""
