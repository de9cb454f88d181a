"""Evaluation metrics: AUROC (anomaly = positive class) and the context silhouette."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score, silhouette_score


def auroc(labels: np.ndarray, scores: np.ndarray) -> float:
    """AUROC in percent, anomalies (label 1) positive, higher score = more anomalous."""
    labels = np.asarray(labels)
    scores = np.asarray(scores, dtype=np.float64)
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"{int((~np.isfinite(scores)).sum())} non-finite anomaly scores")
    if len(np.unique(labels)) != 2:
        raise ValueError("AUROC needs both normal (0) and anomalous (1) test samples")
    return 100.0 * float(roc_auc_score(labels, scores))


def context_silhouette(features: np.ndarray, context_labels: np.ndarray, metric: str = "cosine") -> float:
    """Silhouette score of representations ``[M, d]`` labelled by context ``[M]`` (in [-1, 1])."""
    return float(silhouette_score(np.asarray(features, dtype=np.float64), np.asarray(context_labels), metric=metric))
