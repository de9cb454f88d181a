"""Encoders chosen by name, and the SimCLR-style projection heads.

``resnet18`` is a randomly initialised ResNet18 (timm's implementation) without its classifier,
with a configurable width (64 = the paper's 512-d output) and a stem chosen by input size: the
CIFAR stem (3x3 stride-1 conv, no max-pool) up to ``cifar_stem_max_size`` pixels, the standard
ImageNet stem above. Any other name is passed to ``timm.create_model`` (random initialisation,
no classifier).
"""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import nn

from con2.errors import ConfigError


def _resnet18(width: int, cifar_stem: bool) -> nn.Module:
    """ResNet18 with stage widths (w, 2w, 4w, 8w); timm's stem is fixed at 64 channels, so it is rebuilt."""
    from timm.models.resnet import BasicBlock, ResNet  # lazy: timm (1-2 s to import) only when an encoder is built

    # typed as a Module: timm's ResNet infers conv1/maxpool as Sequential (its first assignment), a Conv2d
    # or Identity is as valid there
    model: nn.Module = ResNet(
        block=BasicBlock,  # type: ignore[arg-type]  # timm annotates `block` as an instance; it takes the class
        layers=(2, 2, 2, 2),
        num_classes=0,
        channels=(width, 2 * width, 4 * width, 8 * width),
        zero_init_last=False,  # torchvision's ResNet18 default (zero_init_residual=False), as the paper used
    )
    if cifar_stem:
        model.conv1 = nn.Conv2d(3, width, kernel_size=3, stride=1, padding=1, bias=False)
        model.maxpool = nn.Identity()
    elif width != 64:
        model.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
    if width != 64:
        model.bn1 = nn.BatchNorm2d(width)
        first = cast(BasicBlock, cast(nn.Sequential, model.layer1)[0])  # added by add_module: untyped
        first.conv1 = nn.Conv2d(width, width, kernel_size=3, stride=1, padding=1, bias=False)
        first.downsample = None
    return model


def build_encoder(name: str, image_size: int, width: int = 64, cifar_stem_max_size: int = 64) -> nn.Module:
    """Build encoder ``name`` for square RGB inputs of ``image_size`` pixels.

    Returns a module mapping ``[B, 3, S, S]`` to ``[B, d]`` with ``d`` stored as ``out_dim``.
    Raises ``ConfigError`` for an unknown name or an input size the encoder cannot take.
    """
    if name in ("resnet18", "resnet18_cifar", "resnet18_imagenet"):
        cifar = {"resnet18_cifar": True, "resnet18_imagenet": False}.get(name, image_size <= cifar_stem_max_size)
        model = _resnet18(width, cifar)
    else:
        import timm  # lazy: timm (1-2 s to import) only when an encoder is built

        if not timm.is_model(name):
            raise ConfigError(
                f"unknown encoder {name!r}: use 'resnet18' (width-configurable) or a timm model name "
                f"(see timm.list_models(), e.g. 'resnet50', 'vit_tiny_patch16_224')"
            )
        kwargs: dict[str, Any] = {"img_size": image_size} if "vit" in name or "deit" in name else {}
        try:
            model = timm.create_model(name, pretrained=False, num_classes=0, **kwargs)
        except TypeError:
            model = timm.create_model(name, pretrained=False, num_classes=0)
    check_input_size(model, name, image_size)
    # torch types Module attributes as Tensor | Module; out_dim is a plain int (read it with encoder_dim)
    model.out_dim = int(cast(int, model.num_features))  # type: ignore[assignment]
    return model


def encoder_dim(encoder: nn.Module) -> int:
    """The output size ``d`` of an encoder that stores it as ``out_dim`` (see :func:`build_encoder`)."""
    return cast(int, encoder.out_dim)  # torch types Module attributes as Tensor | Module


def check_input_size(model: nn.Module, name: str, image_size: int) -> None:
    """Run one dummy forward pass; raise ``ConfigError`` naming the size if the encoder rejects it."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = model(torch.zeros(1, 3, image_size, image_size))
        if out.ndim != 2:
            raise ConfigError(f"encoder {name!r} returned shape {tuple(out.shape)}, expected [B, d]")
    except (RuntimeError, ValueError, AssertionError) as exc:
        raise ConfigError(
            f"image_size={image_size} is not accepted by encoder {name!r} ({str(exc).splitlines()[0]}); "
            f"Fix: --set image_size=... with a size it takes (e.g. its native one), or another --set encoder=..."
        ) from exc
    finally:
        model.train(was_training)


def projection_head(in_dim: int, hidden_dim: int | None = None, out_dim: int = 128) -> nn.Sequential:
    """SimCLR's MLP head: ``Linear(in, hidden) - ReLU - Linear(hidden, out)``; ``[B, in] -> [B, out]``."""
    hidden = hidden_dim or in_dim
    return nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, out_dim))
