"""Evaluation metrics: AUROC (anomaly = positive class) with its DeLong interval, and the context silhouette."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from sklearn.metrics import roc_auc_score, silhouette_score

from con2.maths.stats import auroc_interval


def auroc(labels: np.ndarray, scores: np.ndarray) -> float:
    """AUROC in percent, anomalies (label 1) positive, higher score = more anomalous."""
    labels = np.asarray(labels)
    scores = np.asarray(scores, dtype=np.float64)
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"{int((~np.isfinite(scores)).sum())} non-finite anomaly scores")
    if len(np.unique(labels)) != 2:
        raise ValueError("AUROC needs both normal (0) and anomalous (1) test samples")
    return 100.0 * float(roc_auc_score(labels, scores))


def auroc_intervals(labels: np.ndarray, scores: Mapping[str, np.ndarray]) -> dict[str, dict[str, float | None]]:
    """Per score column its 95% DeLong interval and standard error in percent (``{"lo", "hi", "se"}``,
    :func:`con2.maths.stats.auroc_interval`), ``None`` where undefined (fewer than two test images of a
    class): what a record stores as ``metrics.auroc_ci`` beside :func:`auroc`.

    Args:
        labels: ``[M]`` test labels, 1 = anomaly. scores: column -> ``[M]`` scores, higher = more anomalous.
    """

    out: dict[str, dict[str, float | None]] = {}
    for name, s in scores.items():
        ci = auroc_interval(np.asarray(labels), np.asarray(s, dtype=np.float64)).percent()
        out[name] = {k: (float(v) if np.isfinite(v) else None) for k, v in ci.items()}
    return out


def context_silhouette(features: np.ndarray, context_labels: np.ndarray, metric: str = "cosine") -> float:
    """Silhouette score of representations ``[M, d]`` labelled by context ``[M]`` (in [-1, 1])."""
    return float(silhouette_score(np.asarray(features, dtype=np.float64), np.asarray(context_labels), metric=metric))
