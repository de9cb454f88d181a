"""A run's method card: how its method is labelled and which of the paper's rows each score joins.

Every record carries a ``method_card`` (written by the run from its method's spec: ``label``,
``score_labels``, ``paper_rows``, ``compute_name`` and the ``tags`` its tables group runs by:
``contexts``, ``n_contexts``, ``loss``); a record written before cards existed gets the card its
method's spec gives its params (:func:`spec_card`). The aggregation turns each score of a card into
the run frame's :data:`CARD_COLUMNS` (:func:`card_fields`); the report reads those columns back when a
method is not registered where it builds (:mod:`con2.report.methods`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from con2.config import dataclass_from_params
from con2.errors import ConfigError
from con2.methods import all_methods

CARD_COLUMNS = ("method_label", "score_label", "paper_method", "paper_score", "compute_name")


def base_score(score: str) -> str:
    """``nnd`` of ``nnd@encoder/original`` (a reading of the same runs)."""
    return str(score).split("@")[0]


def registered_specs() -> dict[str, Any]:
    """Every registered method's spec by name (torch-free; empty if the registry cannot be read)."""
    return all_methods()


def spec_card(method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``method_card`` a record of ``method`` with ``params`` would carry (the weights left out),
    from the registered spec; ``{}`` for a method not registered here. Params the spec refuses
    (an older record) give no tags."""
    spec = registered_specs().get(method)
    if spec is None:
        return {}
    try:
        tags = dict(spec.tags(dataclass_from_params(spec.Params, dict(params or {}), method))) if spec.tags else {}
    except (ConfigError, TypeError, ValueError):
        tags = {}
    return {
        "label": spec.label or spec.name,
        "score_labels": {s: spec.score_labels.get(s, s) for s in spec.score_names},
        "paper_rows": {s: list(r) for s, r in spec.paper_rows.items()},
        "compute_name": spec.compute_name,
        "tags": tags,
    }


def record_card(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record's ``method_card``; for a record written before cards existed, the card its method's
    spec gives its config's ``params`` (:func:`spec_card`)."""
    card = record.get("method_card")
    if isinstance(card, Mapping):
        return dict(card)
    return spec_card(str(record["method"]), (record.get("config") or {}).get("params"))


def card_fields(card: Mapping[str, Any], score: str) -> dict[str, Any]:
    """The run-frame columns of one score of a run: its tags and :data:`CARD_COLUMNS`."""
    tags = card.get("tags") or {}
    labels = card.get("score_labels") or {}
    base = base_score(score)
    row = (card.get("paper_rows") or {}).get(score) if base == score else None
    n = tags.get("n_contexts")
    return {
        "contexts": tags.get("contexts"),
        "n_contexts": float(n) if isinstance(n, (int, float)) else np.nan,
        "loss": tags.get("loss"),
        "method_label": card.get("label"),
        "score_label": labels.get(score) or (labels[base] + score[len(base) :] if base in labels else None),
        "paper_method": row[0] if row else None,
        "paper_score": row[1] if row else None,
        "compute_name": card.get("compute_name"),
    }
