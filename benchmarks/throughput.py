"""Training throughput: our batched CON2 step against a plain per-image torchvision pipeline.

Both sides train the same CON2 model (encoder + two heads, same loss) on the same images; they
differ only in how the 4N views of a batch are made:

* ours: the uint8 batch goes to the device once; contexts and SimCLR views are applied to the
  whole batch there (kornia, per-image parameters), and the model runs channels-last, as
  ``con2.engine.fit`` does;
* plain: a ``Dataset`` whose ``__getitem__`` applies a torchvision ``transforms.v2`` pipeline to one
  image at a time (context, then two random views), batched by a ``DataLoader`` (the usual
  SimCLR reference-code layout), default memory format.

Prints images per second (original images, N per step) for each and their ratio, measured in the
same process. Example::

    python benchmarks/throughput.py --width 16 --steps 10
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torchvision.transforms.v2 as T

from con2.augment import contexts_for
from con2.config import make_config
from con2.data import load_one_class
from con2.engine import select_device
from con2.losses import alpha_schedule, batch_labels, content_loss, context_loss
from con2.methods import build_method
from con2.runner import to_tensor


class PerImageViews(torch.utils.data.Dataset):
    """Per-image pipeline: returns ``[2, K, 3, S, S]`` (two views of each of K contexts) per image."""

    def __init__(self, images: torch.Tensor, size: int, context_names: list[str]) -> None:
        self.images = images
        self.contexts = contexts_for(context_names)
        self.view = T.Compose([
            T.RandomResizedCrop(size, scale=(0.2, 1.0), antialias=True),
            T.RandomHorizontalFlip(),
            T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
            T.RandomGrayscale(p=0.2),
            T.ToDtype(torch.float32, scale=True),
            T.Normalize([0.5] * 3, [0.5] * 3),
        ])

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> torch.Tensor:
        x = self.images[i : i + 1]
        x = x.expand(-1, 3, -1, -1) if x.shape[1] == 1 else x
        ctx = [fn(x)[0] for fn in self.contexts]
        return torch.stack([torch.stack([self.view(c) for c in ctx]) for _ in range(2)])


def time_ours(method, images, batch, steps, warmup, device, opt) -> float:
    n_done, t0 = 0, 0.0
    for s in range(warmup + steps):
        if s == warmup:
            t0 = time.perf_counter()
        idx = torch.randint(0, len(images), (batch,))
        out = method.training_loss(images[idx].to(device), s / (warmup + steps))
        opt.zero_grad()
        out["loss"].backward()
        opt.step()
        n_done += batch if s >= warmup else 0
    if device.type == "cuda":
        torch.cuda.synchronize()
    return n_done / (time.perf_counter() - t0)


def time_plain(method, images, batch, steps, warmup, device, opt, workers) -> float:
    ds = PerImageViews(images, method.cfg.image_size, method.context_names)
    sampler = torch.utils.data.RandomSampler(ds, replacement=True, num_samples=batch * (warmup + steps))
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, sampler=sampler, num_workers=workers, drop_last=True)
    n_done, t0 = 0, 0.0
    for s, views in enumerate(loader):  # views: [N, 2, K, 3, S, S]
        if s == warmup:
            t0 = time.perf_counter()
        n, _, k = views.shape[:3]
        x = views.permute(1, 2, 0, 3, 4, 5).reshape(2 * k * n, *views.shape[3:]).to(device)  # view, context, image
        h = method.encoder(x)
        ctx, sample = batch_labels(n, k, 2, device=h.device)
        tau = method.params.temperature
        loss = context_loss(method.context_head(h), ctx, tau) + alpha_schedule(0.5) * content_loss(method.content_head(h), sample, tau)
        opt.zero_grad()
        loss.backward()
        opt.step()
        n_done += n if s >= warmup else 0
    if device.type == "cuda":
        torch.cuda.synchronize()
    return n_done / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default="digits")
    p.add_argument("--data-dir", default="data")
    p.add_argument("--image-size", type=int, default=28)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--workers", type=int, default=0, help="DataLoader workers for the plain pipeline")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=None)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    cfg = make_config({"dataset": a.dataset, "data_dir": a.data_dir, "image_size": a.image_size, "width": a.width,
                       "batch_size": a.batch_size, "device": a.device})
    device = select_device(cfg.device)
    data = load_one_class(cfg.dataset, cfg.data_dir, size=cfg.image_size if cfg.dataset != "digits" else 28)
    images = to_tensor(data.train)
    rates = {}
    for name in ("ours", "plain"):
        torch.manual_seed(0)
        method = build_method(cfg).to(device).train()
        if name == "ours" and cfg.channels_last:
            method.to(memory_format=torch.channels_last)
        opt = torch.optim.AdamW(method.parameters(), lr=1e-3, weight_decay=1e-3)
        if name == "ours":
            rates[name] = time_ours(method, images, a.batch_size, a.steps, a.warmup, device, opt)
        else:
            rates[name] = time_plain(method, images, a.batch_size, a.steps, a.warmup, device, opt, a.workers)
    print(f"device={device} threads={torch.get_num_threads()} dataset={a.dataset} size={a.image_size} "
          f"width={a.width} N={a.batch_size} (4N={4 * a.batch_size} views/step) steps={a.steps}")
    print(f"ours  (batched on-device views): {rates['ours']:8.1f} images/s")
    print(f"plain (per-image torchvision)  : {rates['plain']:8.1f} images/s")
    print(f"ratio ours/plain: {rates['ours'] / rates['plain']:.2f}x")


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
