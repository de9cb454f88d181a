"""Contrastive losses as pure tensor functions.

Everything is one instance-discrimination term (the "L_out" form of supervised contrastive loss,
Khosla et al. 2020, eq. 2): for an anchor z_i and a positive z_j,

    l(i, j) = -log( exp(s_ij / tau) / sum_{k != i} exp(s_ik / tau) ),   s = cosine similarity,

averaged over every ordered positive pair (i, j), i != j. Which pairs are positive is given by a
label vector: same label = positive. With the context as label this is CON2's L_Context
(normaliser 4N(2N-1) for N images, 2 contexts, 2 views); with the sample identity as label it is
L_Content (normaliser 12N) and, with two views, SimCLR's NT-Xent.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def label_contrastive_loss(z: Tensor, labels: Tensor, temperature: float) -> Tensor:
    """Mean instance-discrimination loss over all ordered positive pairs.

    Args:
        z: ``[M, d]`` projections (normalised here; computed in fp32 even under autocast).
        labels: ``[M]`` integer labels; ``i != j`` with equal labels form a positive pair.
        temperature: tau > 0.

    Returns:
        Scalar: sum over positive pairs of l(i, j), divided by the number of positive pairs.
    """
    if z.ndim != 2 or labels.shape != (z.shape[0],):
        raise ValueError(f"expected z [M, d] and labels [M], got {tuple(z.shape)} and {tuple(labels.shape)}")
    with torch.autocast(device_type=z.device.type, enabled=False):  # autocast would run z @ z.T in bf16
        z = F.normalize(z.float(), dim=1)
        logits = z @ z.T / temperature
    eye = torch.eye(len(z), dtype=torch.bool, device=z.device)
    logits = logits.masked_fill(eye, float("-inf"))
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    positives = (labels[:, None] == labels[None, :]) & ~eye
    n_pairs = positives.sum()
    # Checked on the host only where that costs no device synchronisation; on a GPU no pairs give
    # 0 / 0 = NaN, which the training loop's non-finite check reports.
    if n_pairs.device.type == "cpu" and n_pairs == 0:
        raise ValueError("no positive pairs: every label occurs once")
    return -(log_prob.masked_fill(~positives, 0.0).sum()) / n_pairs


def batch_labels(
    n_images: int, n_contexts: int, n_views: int, device: torch.device | None = None
) -> tuple[Tensor, Tensor]:
    """Context and sample labels of a CON2 batch laid out view-major, then context, then image.

    The batch holds ``n_views * n_contexts * n_images`` rows: row
    ``v * (K * N) + c * N + i`` is view ``v`` of image ``i`` in context ``c``.

    Returns:
        ``(context_labels [V*K*N], sample_labels [V*N*K])``: the context index, and the image index.
    """
    idx = torch.arange(n_views * n_contexts * n_images, device=device)
    return (idx // n_images) % n_contexts, idx % n_images


def context_loss(z_context: Tensor, context_labels: Tensor, temperature: float) -> Tensor:
    """L_Context: projections of the same context attract, other contexts repel. ``z_context``: ``[M, d]``."""
    return label_contrastive_loss(z_context, context_labels, temperature)


def content_loss(z_content: Tensor, sample_labels: Tensor, temperature: float) -> Tensor:
    """L_Content: all views of one image, in every context, are mutual positives. ``z_content``: ``[M, d]``."""
    return label_contrastive_loss(z_content, sample_labels, temperature)


def nt_xent(z1: Tensor, z2: Tensor, temperature: float) -> Tensor:
    """SimCLR's NT-Xent over two views ``[N, d]`` each (each image's other view is its positive)."""
    n = z1.shape[0]
    labels = torch.arange(n, device=z1.device).repeat(2)
    return label_contrastive_loss(torch.cat([z1, z2]), labels, temperature)


def alpha_schedule(progress: float, start: float = 0.0, end: float = 1.0) -> float:
    """Linear annealing of the content weight alpha from ``start`` to ``end`` as progress goes 0 -> 1."""
    p = min(max(progress, 0.0), 1.0)
    return start + (end - start) * p
