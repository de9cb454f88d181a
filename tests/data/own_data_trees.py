"""Small image trees of the three layouts a profile may declare (issue 59; tests/data/test_own_folder.py,
tests/workflow/test_own_data_workflow.py, docs/own_data.md's worked example).

Normal images are smooth noise of one hue; anomalies are the same with a drawn shape on top: a dark bar or a
red cross (plain to see) or a small, faint disc (easy to miss), so the per-kind AUROCs of an mvtec tree differ.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

SIDE = 40


def image(rng: np.random.Generator, kind: str = "", side: int = SIDE, hue: int = 0) -> Image.Image:
    """One RGB ``side`` x ``side`` image: a soft gradient of ``hue`` with noise; ``kind`` draws a shape on it
    (``bar``, ``disc``: small and faint, ``cross``; ``""``: none)."""
    y, x = np.mgrid[0:side, 0:side] / side
    base = np.stack([0.5 + 0.3 * np.sin(3 * x + hue), 0.5 + 0.3 * np.cos(2 * y + hue), 0.5 + 0.2 * x * y], -1)
    arr = np.clip(base + rng.normal(0, 0.05, base.shape), 0, 1)
    img = Image.fromarray((arr * 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(img)
    a, b = (int(v) for v in rng.integers(4, side // 2, 2))
    if kind == "bar":
        draw.rectangle((a, b, a + side // 3, b + 4), fill=(20, 20, 20))
    elif kind == "disc":  # small and faint: the kind a method may miss
        r = side // 10
        colour = tuple(int(v) + 25 for v in np.asarray(img)[b, a])
        draw.ellipse((a, b, a + r, b + r), fill=colour)
    elif kind == "cross":
        draw.line((a, b, a + 10, b + 10), fill=(200, 0, 0), width=3)
        draw.line((a + 10, b, a, b + 10), fill=(200, 0, 0), width=3)
    return img


def write_images(
    folder: Path, n: int, rng: np.random.Generator, kind: str = "", hue: int = 0, side: int = SIDE
) -> None:
    """``n`` PNG images ``000.png ...`` into ``folder`` (created)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        image(rng, kind, side, hue).save(folder / f"{i:03d}.png")


def mvtec_tree(root: Path, n_train: int = 24, n_good: int = 6, n_kind: int = 6, seed: int = 0) -> Path:
    """``root/train/good``, ``root/test/good``, ``root/test/{bar,disc}`` (layout ``mvtec``) and a ``ground_truth``."""
    rng = np.random.default_rng(seed)
    write_images(root / "train" / "good", n_train, rng)
    write_images(root / "test" / "good", n_good, rng)
    for kind in ("bar", "disc"):
        write_images(root / "test" / kind, n_kind, rng, kind)
    (root / "ground_truth" / "bar").mkdir(parents=True)  # MVTec's masks: no class, ignored
    return root


def normal_anomalous_tree(root: Path, n_normal: int = 30, n_anomalous: int = 8, seed: int = 1) -> Path:
    """``root/normal`` and ``root/anomalous`` (layout ``normal_anomalous``)."""
    rng = np.random.default_rng(seed)
    write_images(root / "normal", n_normal, rng)
    write_images(root / "anomalous", n_anomalous, rng, "cross")
    return root


def class_folders_tree(
    root: Path, classes: tuple[str, ...] = ("plain", "barred", "dotted"), n: int = 30, seed: int = 2
) -> Path:
    """``root/<class>/`` for each class (layout ``class_folders``, no split of its own): one hue and shape each."""
    rng = np.random.default_rng(seed)
    shapes = ("", "bar", "disc", "cross")
    for i, cls in enumerate(classes):
        write_images(root / cls, n, rng, shapes[i % len(shapes)], hue=i)
    return root
