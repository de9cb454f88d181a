"""The record builder's named steps (issue 60, item 4): what each optional section keeps, and where the
record's keys come from, pinned so that a later rearrangement of :func:`con2.run.records.build_record`
cannot change the record it writes."""

from __future__ import annotations

import numpy as np
import pytest

from con2.run import records
from con2.run.records import build_record, given_sections, json_sections, record_timing, training_fields


def test_the_optional_sections_keep_what_a_run_has_and_leave_out_what_it_has_not() -> None:
    # an empty score-file list says nothing and is left out; an empty data source is kept (the schema refuses it)
    assert given_sections(None, None, {}) == {}
    assert given_sections({}, None, None) == {"data_source": {}}
    ckpt = {"checkpoint_epoch": 1, "checkpoint_step": 2, "planned_epochs": 3, "unfinished": True}
    assert list(given_sections({"format": None, "sha256": "s"}, ckpt, {"scores.csv": "0" * 64})) == [
        "data_source",
        "rescored",
        "files_sha256",
    ]
    # the method-defined sections as JSON reads them back: a tuple as a list, an empty card kept
    assert json_sections(scoring={"s": ("mean", 1)}, method_card={}, curve=None) == {
        "scoring": {"s": ["mean", 1]},
        "method_card": {},
    }
    # of the training facts, the four the schema names; nothing of a run that did not train
    assert training_fields({"epochs": 2, "steps": 5, "lr": 0.1, "precision": "float32"}) == {
        "epochs": 2,
        "steps": 5,
        "precision": "float32",
    }
    assert training_fields(None) == {} and training_fields({}) == {}
    # times default to 0 s, sessions stay an integer, resumed a boolean
    assert record_timing({"sessions": 2.0, "resumed": True, "fit_seconds": 3}) == {
        "fit_seconds": 3.0,
        "score_seconds": 0.0,
        "wall_seconds": 0.0,
        "sessions": 2,
        "resumed": True,
    }


def test_the_record_keeps_its_key_order_across_the_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The record's keys in the order the one-function builder wrote them (record.json sorts its keys, but
    the dict a caller gets keeps this order)."""
    monkeypatch.setattr(records, "_versions", lambda: {})
    monkeypatch.setattr(records, "_git_commit", lambda: None)
    record = build_record(
        dataset="d",
        normal_class="0",
        method="m",
        variant="v",
        seed=1,
        labels=np.array([0, 0, 1, 1]),
        scores={"s": np.array([0.1, 0.4, 0.35, 0.8])},
        n_train=4,
        config={"a": 1},
        extras={"silhouette": None},
        training={"epochs": 1},
        validation={"s": np.ones(3)},
        files_sha256={"scores.csv": "0" * 64},
        scoring={"s": "mean"},
    )
    assert list(record) == [
        *("schema_version", "dataset", "normal_class", "method", "variant", "seed", "metrics", "timing"),
        *("peak_memory_mb", "n_train", "n_test", "n_anomalous", "batch_size", "split_seed", "split_sha256"),
        *("config", "config_hash", "versions", "git_commit", "device", "cpu", "created"),
        *("epochs", "n_val", "val_sha256", "files_sha256", "scoring"),
    ]
    assert list(record["metrics"]) == ["auroc", "auroc_ci", "silhouette"]
    records.validate_record(record)
