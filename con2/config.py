"""The run configuration: one flat, typed dataclass plus a method-specific ``params`` mapping.

A config comes from YAML and ``key=value`` overrides; every key is checked against the fields
below (and ``params`` against the method's own parameter dataclass), so a typo fails at once with
the key's name. Budgets are plain values: the default profile sizes them for a laptop CPU, the
paper profile restores the paper's (2048 epochs, 224 px, batch 64/128/512).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from con2.errors import ConfigError

# Keys that never change a run's results: where the data live, where and how fast it runs, how
# often it checkpoints, progress output, scoring chunk sizes. Excluded from the config hash; the
# workflow sets them per machine (profile top level / --config), never per run.
RUNTIME_KEYS: tuple[str, ...] = (
    "data_dir",
    "device",
    "threads",
    "progress",
    "checkpoint_every",
    "checkpoint_seconds",
    "eval_batch_size",
    "nn_chunk",
    "compile",
)


@dataclass
class RunConfig:
    """Everything that defines one run (dataset, normal class, method, variant, seed)."""

    # data
    dataset: str = "breastmnist"
    data_dir: str = "data"
    normal_class: str | None = None  # None: the dataset's default normal class
    image_size: int = 28  # training/encoder input size (views are resized to it)
    data_size: int | None = (
        None  # resolution of the prepared data (None: image_size); e.g. 28 px MedMNIST trained at 64
    )
    split_seed: int = 0  # split seed for datasets without an official split (fixed across training seeds)
    center_crop: float = 1.0  # keep the central fraction of each side before the views (paper: 224/256 = 0.875)
    # method and its own hyperparameters (validated against the method's Params dataclass)
    method: str = "con2"
    variant: str = "default"  # free label used by the workflow's tables (e.g. "invert", "context_only")
    params: dict[str, Any] = field(default_factory=dict)
    # encoder
    encoder: str = "resnet18"
    width: int = 64  # ResNet18 stage-1 width; 64 = the paper's 512-d features
    cifar_stem_max_size: int = 64
    # optimisation (AdamW + cosine annealing per step, no warm-up, as in the paper)
    seed: int = 0
    epochs: int = 2048
    max_steps: int | None = None  # cap on optimiser steps (None: epochs decide)
    batch_size: int = 64  # N original images per step
    lr: float = 1e-3
    weight_decay: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    # SimCLR view augmentations
    crop_scale: tuple[float, float] = (0.2, 1.0)
    jitter: tuple[float, float, float, float] = (0.4, 0.4, 0.4, 0.1)
    jitter_p: float = 0.8
    grayscale_p: float = 0.2
    blur_p: float = 0.0  # Gaussian blur probability (SimCLR's strength: 0.5); kernel 10% of image_size, odd
    blur_sigma: tuple[float, float] = (0.1, 2.0)  # blur sigma drawn uniformly from this range (SimCLR's)
    # scoring
    tta: int = 40  # test-time augmentations A (0: the identity view only)
    tta_seed: int = 0  # seed of the fixed test-time views, shared by every method of a run
    # CSI's test-time reading (columns score@feature/reference/csi): this many random views per image and
    # context, drawn per image from a seed derived from tta_seed and the image's index, crop scale fixed at
    # 0.54, features averaged over the views before scoring (0: not computed)
    csi_views: int = 10
    # learning curve: score the model after these epochs (and after the last one) under every reading, into
    # the record's `curve` and curve.csv; () = no curve. It never changes the training or the final numbers.
    score_at: tuple[int, ...] = ()
    # the curve's test-time views (rounded up to a multiple of the contexts) and one CSI view per image and
    # context; None: the run's full plan (its last point is then the record's final AUROC)
    curve_views: int | None = 2
    lh_ridge: float = 1e-2  # covariance ridge for S_LH, relative to the mean eigenvalue
    nn_chunk: int = 4096  # rows per block in nearest-neighbour search (bounds memory)
    eval_batch_size: int = 256
    # runtime
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    threads: int | None = None  # torch CPU threads (None: torch's default)
    amp: bool = True  # bfloat16 autocast in training: on CUDA, and on CPUs with native bf16 (AMX / AVX512-BF16)
    channels_last: bool = True  # channels-last memory format (faster convolutions on CUDA and CPU)
    # torch.compile the model (on the 2-core CPU: 50-75 s to compile, then 10-15% slower; benchmarks/README.md)
    compile: bool = False
    checkpoint_every: int = 1  # epochs between checkpoints (0: only at the end)
    # ... and at least this many seconds between them (the last epoch's is always written): a
    # checkpoint costs ~0.3 s, which on a GPU is longer than an epoch (0: every checkpoint_every epochs)
    checkpoint_seconds: float = 60.0
    progress: bool = True

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self)))

    def config_hash(self) -> str:
        """Hash of everything that changes results (:data:`RUNTIME_KEYS` excluded)."""
        d = self.to_dict()
        for k in RUNTIME_KEYS:
            d.pop(k)
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


_FIELDS = {f.name: f for f in fields(RunConfig)}


def _coerce(key: str, value: Any, default: Any, annotation: str | None = None) -> Any:
    """Coerce ``value`` to the type of the field's default (lists to tuples, ints to floats).

    Optional fields (default ``None``) are coerced by their annotation (``int | None``,
    ``float | None``, ``str | None``); ``annotation`` defaults to the RunConfig field's.
    """
    if value is None:
        return value
    if default is None:
        if annotation is None:
            annotation = str(_FIELDS[key].type) if key in _FIELDS else ""
        kinds = {"int": 0, "float": 0.0, "str": ""}
        default = next((v for k, v in kinds.items() if annotation.startswith(k)), None)
        if default is None:
            return value
    try:
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise TypeError
            return value
        if isinstance(default, tuple) and (annotation or str(getattr(_FIELDS.get(key), "type", ""))) == _INTS:
            return _int_tuple(value)
        if isinstance(default, tuple):
            if isinstance(value, str) and default and isinstance(default[0], str):
                value = [value]  # a single name where a list of names is expected
            if not isinstance(value, (list, tuple)):
                raise TypeError
            if default and isinstance(default[0], str):
                return tuple(str(v) for v in value)
            if len(value) != len(default):
                raise TypeError
            return tuple(type(d)(v) for d, v in zip(default, value))
        if isinstance(default, float):
            return float(value)
        if isinstance(default, int):
            if isinstance(value, float) and not value.is_integer():
                raise TypeError
            return int(value)
        if isinstance(default, dict):
            if not isinstance(value, dict):
                raise TypeError
            return dict(value)
        return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"config key {key!r}: {value!r} is not a valid {type(default).__name__}") from None


_INTS = "tuple[int, ...]"


def _int_tuple(value: Any) -> tuple[int, ...]:
    """A list of integers (``tuple[int, ...]`` fields such as ``score_at``); one integer is a list of one."""
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or float(v) != int(v):
            raise TypeError
        out.append(int(v))
    return tuple(out)


_DEFAULTS = RunConfig()


def make_config(values: dict[str, Any]) -> RunConfig:
    """Build a validated ``RunConfig`` from a mapping; unknown keys raise ``ConfigError`` naming them."""
    unknown = sorted(set(values) - set(_FIELDS))
    if unknown:
        raise ConfigError(f"unknown config key(s) {unknown}; valid keys: {sorted(_FIELDS)}")
    kwargs = {k: _coerce(k, v, getattr(_DEFAULTS, k)) for k, v in values.items()}
    cfg = RunConfig(**kwargs)
    validate(cfg)
    validate_readings(cfg)
    return cfg


def validate(cfg: RunConfig) -> None:
    """Range checks that a type check cannot catch."""
    positive = ("image_size", "width", "epochs", "batch_size", "eval_batch_size", "nn_chunk")
    for key in positive:
        if getattr(cfg, key) <= 0:
            raise ConfigError(f"config key {key!r} must be > 0, got {getattr(cfg, key)}")
    smallest = min_image_size(cfg)
    if cfg.image_size < smallest:
        raise ConfigError(
            f"config key 'image_size': {cfg.image_size} px is below the {smallest} px that encoder {cfg.encoder!r} "
            f"takes (its downsampling would leave the last stage less than one pixel of image). "
            f"Fix: --set image_size={smallest} or larger (the prepared data are resized to it)"
        )
    if cfg.max_steps is not None and cfg.max_steps < 0:
        raise ConfigError(
            f"config key 'max_steps' must be >= 0 (0: evaluate the untrained encoder), got {cfg.max_steps}"
        )
    if cfg.tta < 0 or cfg.tta % 2:
        raise ConfigError(f"config key 'tta' must be an even number >= 0 (half on x, half on x^C), got {cfg.tta}")
    if not 0 < cfg.crop_scale[0] <= cfg.crop_scale[1] <= 1:
        raise ConfigError(f"config key 'crop_scale' must satisfy 0 < low <= high <= 1, got {cfg.crop_scale}")
    if cfg.channels_last and cfg.encoder.startswith("resnet18") and cfg.width < 8:
        raise ConfigError(
            f"config keys 'channels_last' and 'width': width={cfg.width} < 8 with channels_last=true aborts the "
            f"process in oneDNN's CPU backward of the 1x1 stride-2 shortcut conv (PyTorch 2.14); "
            f"set channels_last=false or width >= 8"
        )
    if not 0 < cfg.center_crop <= 1:
        raise ConfigError(
            "config key 'center_crop' must lie in (0, 1] (the paper's resize 256 / crop 224 is 0.875), got "
            f"{cfg.center_crop}"
        )
    if cfg.lh_ridge < 0:
        raise ConfigError(f"config key 'lh_ridge' must be >= 0, got {cfg.lh_ridge}")
    if not (cfg.device in ("auto", "cpu", "cuda") or cfg.device.startswith("cuda:")):
        raise ConfigError(f"config key 'device' must be auto, cpu, cuda or cuda:N, got {cfg.device!r}")


def validate_readings(cfg: RunConfig) -> None:
    """Range checks of the blur, the CSI reading and the learning curve."""
    if not 0 <= cfg.blur_p <= 1:
        raise ConfigError(f"config key 'blur_p' must lie in [0, 1], got {cfg.blur_p}")
    if not 0 < cfg.blur_sigma[0] <= cfg.blur_sigma[1]:
        raise ConfigError(f"config key 'blur_sigma' must satisfy 0 < low <= high, got {cfg.blur_sigma}")
    if cfg.csi_views < 0:
        raise ConfigError(f"config key 'csi_views' must be >= 0 (0: no CSI reading), got {cfg.csi_views}")
    bad = [e for e in cfg.score_at if e < 1]
    if bad:
        raise ConfigError(f"config key 'score_at' lists epochs {bad}; every entry must be an epoch >= 1")
    if cfg.curve_views is not None and cfg.curve_views < 0:
        raise ConfigError(
            f"config key 'curve_views' must be >= 0 (0: the identity view; null: the full plan), got {cfg.curve_views}"
        )


def min_image_size(cfg: RunConfig) -> int:
    """The smallest input size of the configured ResNet18 (its total stride: 8 with the CIFAR stem,
    32 with the ImageNet stem); 1 for timm encoders, which :func:`con2.models.check_input_size` probes."""
    if cfg.encoder not in ("resnet18", "resnet18_cifar", "resnet18_imagenet"):
        return 1
    cifar = {"resnet18_cifar": True, "resnet18_imagenet": False}.get(
        cfg.encoder, cfg.image_size <= cfg.cifar_stem_max_size
    )
    return 8 if cifar else 32


def parse_override(text: str) -> tuple[str, Any]:
    """``"key=value"`` -> ``(key, value)`` with the value parsed as YAML (``params.temperature=0.1`` nests)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like key=value")
    key, raw = text.split("=", 1)
    return key.strip(), yaml.safe_load(raw)


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> RunConfig:
    """Load a YAML config (optional) and apply ``key=value`` overrides, then validate."""
    values: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file {p} not found")
        loaded = yaml.safe_load(p.read_text()) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {p} must hold a mapping of keys to values")
        values.update(loaded)
    for text in overrides or []:
        key, value = parse_override(text)
        if key.startswith("params."):
            values.setdefault("params", {})
            values["params"] = {**values["params"], key.removeprefix("params."): value}
        else:
            values[key] = value
    return make_config(values)


def dataclass_from_params(cls: type, params: dict[str, Any], owner: str) -> Any:
    """Instantiate a method's Params dataclass, rejecting unknown keys with their names."""
    names = {f.name: f for f in fields(cls)}
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise ConfigError(f"unknown params {unknown} for method {owner!r}; valid: {sorted(names)}")
    defaults = cls()
    return cls(**{k: _coerce(f"params.{k}", v, getattr(defaults, k), str(names[k].type)) for k, v in params.items()})
