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
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from con2.errors import ConfigError
from con2.yaml_files import read_yaml_mapping, safe_yaml, yaml_problem

DEFAULT_DATA_DIR = "data"  # the data folder when none is given (con2.data.default_data_dir: $CON2_DATA_DIR first)

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

# Keys that change only how a trained model is scored: `con2 evaluate --set` may change these (and
# the runtime keys a scoring pass uses, :data:`EVALUATE_RUNTIME_KEYS`); anything else would describe
# another model than the checkpoint holds. A method adds its own scoring-only ``params`` by listing
# them in its spec's ``scoring_params``.
SCORING_KEYS: tuple[str, ...] = ("tta", "tta_seed", "csi_views", "lh_ridge", "nn_chunk", "eval_batch_size")
EVALUATE_RUNTIME_KEYS: tuple[str, ...] = ("data_dir", "device", "threads", "progress")

# The training recipe's keys added after runs were recorded (the optimiser, its warm-up, the last partial batch:
# what CSI's authors train with). Each is left out of RunConfig.to_dict() while it holds its default, so out of the
# config hash, of a run's config file and of a checkpoint's stored config: every run configured before these keys
# existed keeps its hash (its results folder) and its config file's text (the workflow's run_config job reruns, and
# its run retrains, when that text changes). :func:`config_diff` reads a missing one as its default.
OMITTED_AT_DEFAULT: tuple[str, ...] = (
    "optimizer",
    "momentum",
    "trust_coefficient",
    "warmup",
    "warmup_factor",
    "drop_last",
)
# The optimisers of `optimizer` (con2.training.engine.make_optimizer builds them).
OPTIMIZERS: tuple[str, ...] = ("adamw", "lars")

# Bounds that keep a typo from running for hours (see validate): at most MAX_TTA test-time views
# (the paper uses 40); seeds are numpy seeds (0 .. 2**32 - 1).
MAX_TTA = 1024
# The most epochs and optimiser steps a run may ask for (the paper's longest is 2048 epochs): beyond, a typo
# (10**400) overflows the cost plan's arithmetic instead of meaning anything.
MAX_EPOCHS = 1_000_000
MAX_STEPS = 10**12
MAX_SEED = 2**32 - 1
# The largest image side: prepared data hold every image at this size in memory (digits at 1024 px
# took 5.7 GB), and the paper's largest is 224 px.
MAX_IMAGE_SIZE = 512
# The widest ResNet18 (stage-1 channels): its parameters grow with width^2, so width 100000 asks the allocator
# for hundreds of GB; 256 is 4x the paper's 64 (~180 M parameters).
MAX_WIDTH = 256
# The most torch CPU threads (more than any machine's cores; each thread reserves a stack).
MAX_THREADS = 512
# The largest layer size a method's ``params.*_dim`` / ``params.*_width`` may ask for (a projection
# head's output: the paper's 128; 8192 x a 2048-d feature is 16 M parameters).
MAX_LAYER_SIZE = 8192
# An encoder name: ``resnet18``, ``resnet18_cifar``, ``resnet18_imagenet`` or a timm model name
# (``vit_tiny_patch16_224``, ``resnet50.a1_in1k``): letters, digits, '_', '.' and '-', matched in full.
ENCODER_REGEX = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}"
RESNET_ENCODERS = ("resnet18", "resnet18_cifar", "resnet18_imagenet")


@dataclass
class RunConfig:
    """Everything that defines one run (dataset, normal class, method, variant, seed)."""

    # data
    dataset: str = "breastmnist"
    data_dir: str = DEFAULT_DATA_DIR
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
    # optimisation: by default AdamW + cosine annealing per step, no warm-up, full batches only, as in the paper;
    # CSI's authors' recipe (alinlab/CSI common/common.py lines 39-54, common/train.py lines 107-124):
    # optimizer=lars lr=0.1 weight_decay=1e-6 warmup=0.01 (10 of 1000 epochs) warmup_factor=10 drop_last=false
    seed: int = 0
    epochs: int = 2048
    max_steps: int | None = None  # cap on optimiser steps (None: epochs decide)
    batch_size: int = 64  # N original images per step
    lr: float = 1e-3  # the optimiser's base learning rate (AdamW's or LARS's)
    weight_decay: float = 1e-3  # AdamW's decoupled decay; LARS's L2 term, applied inside its trust ratio
    betas: tuple[float, float] = (0.9, 0.999)  # AdamW's
    optimizer: str = "adamw"  # adamw | lars (timm's Lars: SGD with momentum and a per-tensor trust ratio)
    momentum: float = 0.9  # LARS's SGD momentum (AdamW has betas)
    trust_coefficient: float = 0.001  # LARS's trust coefficient
    # the learning rate rises linearly from lr to lr * warmup_factor over this fraction of the run's optimiser
    # steps, then falls on a cosine from lr * warmup_factor (0 and 1: the plain cosine from lr to 0)
    warmup: float = 0.0
    warmup_factor: float = 1.0
    drop_last: bool = True  # drop each epoch's last partial batch (BatchNorm sees equal batches); false: keep it
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
    # context; None: the run's own test views (its last point is then the record's final AUROC)
    curve_views: int | None = 2
    lh_ridge: float = 1e-2  # covariance ridge for S_LH, relative to the mean eigenvalue
    nn_chunk: int = 4096  # rows per block in nearest-neighbour search (bounds memory)
    eval_batch_size: int = 256
    # runtime
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    threads: int | None = None  # CPU threads of torch and of the BLAS NumPy calls (None: their defaults)
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
        """Every key as a plain JSON value, but the :data:`OMITTED_AT_DEFAULT` keys that hold their default."""
        d = json.loads(json.dumps(dataclasses.asdict(self)))
        for k in OMITTED_AT_DEFAULT:
            if d[k] == _FIELDS[k].default:
                d.pop(k)
        return d

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
    ``float | None``, ``str | None``); ``annotation`` defaults to the RunConfig field's. A boolean
    is never a number or a name (YAML reads ``true``, ``yes``, ``no``, ``on`` as booleans), and a
    number must be finite.
    """
    if value is None:
        return value
    declared = default
    if default is None:
        if annotation is None:
            annotation = str(_FIELDS[key].type) if key in _FIELDS else ""
        kinds = {"int": 0, "float": 0.0, "str": ""}
        default = next((v for k, v in kinds.items() if annotation.startswith(k)), None)
        if default is None:
            return value
    kind = type(default).__name__
    words = {"int": "whole number", "float": "number", "str": "text", "tuple": "list", "dict": "mapping"}
    fix = f"Fix: write a {words.get(kind, kind)}" + (f" (the default is {declared!r})" if declared is not None else "")
    try:
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise TypeError
            return value
        if isinstance(value, bool) and isinstance(default, (int, float, str)):
            hint = (
                " (YAML reads yes/no/on/off/true/false as booleans: quote a name, e.g. 'no')" if kind == "str" else ""
            )
            raise ConfigError(f"config key {key!r}: {value!r} is a boolean, not a valid {kind}{hint}. {fix}")
        if isinstance(default, tuple) and (annotation or str(getattr(_FIELDS.get(key), "type", ""))) == _INTS:
            return _int_tuple(value)
        if isinstance(default, tuple):
            if isinstance(value, str) and default and isinstance(default[0], str):
                value = [value]  # a single name where a list of names is expected
            if not isinstance(value, (list, tuple)):
                raise TypeError
            if default and isinstance(default[0], str):
                return tuple(_element(key, v, "") for v in value)
            if len(value) != len(default):
                raise TypeError
            return tuple(_element(key, v, d) for d, v in zip(default, value))
        if isinstance(default, float):
            number = float(value)
            if not math.isfinite(number):
                raise ConfigError(f"config key {key!r}: {value!r} is not a finite number. {fix}")
            return number
        if isinstance(default, int):
            if isinstance(value, float) and not value.is_integer():
                raise TypeError
            return int(value)
        if isinstance(default, dict):
            if not isinstance(value, dict):
                raise TypeError
            return dict(value)
        if isinstance(value, (list, tuple, dict)):
            raise TypeError
        return str(value)
    except (TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"config key {key!r}: {value!r} is not a valid {kind}. {fix}") from None


def _element(key: str, value: Any, default: Any) -> Any:
    """One element of a tuple value (its errors become the whole tuple's: ``TypeError``)."""
    try:
        return _coerce(key, value, default)
    except ConfigError:
        raise TypeError from None


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
    unknown = sorted(set(values) - set(_FIELDS), key=str)
    if unknown:
        raise ConfigError(f"unknown config key(s) {unknown}; valid keys: {sorted(_FIELDS)}")
    kwargs = {k: _coerce(k, v, getattr(_DEFAULTS, k)) for k, v in values.items()}
    cfg = RunConfig(**kwargs)
    validate(cfg)
    validate_readings(cfg)
    return cfg


def validate(cfg: RunConfig) -> None:
    """Range checks that a type check cannot catch; the message names the key, the range and the fix."""

    def out_of_range(key: str, rule: str, fix: str) -> ConfigError:
        got = repr(getattr(cfg, key))
        got = got if len(got) <= 40 else f"{got[:20]}... ({len(got)} characters)"
        return ConfigError(f"config key {key!r} must be {rule}, got {got}. Fix: {fix}")

    if re.fullmatch(ENCODER_REGEX, cfg.encoder) is None:
        raise ConfigError(
            f"config key 'encoder': {cfg.encoder!r} is not an encoder name (letters, digits, '_', '.' or '-'). "
            f"Fix: --set encoder=resnet18, or a timm model name (timm.list_models())"
        )
    positive = ("image_size", "width", "epochs", "batch_size", "eval_batch_size", "nn_chunk")
    for key in positive:
        if getattr(cfg, key) <= 0:
            raise ConfigError(f"config key {key!r} must be > 0, got {getattr(cfg, key)}")
    if cfg.data_size is not None and cfg.data_size <= 0:
        raise out_of_range("data_size", "> 0 (or null: image_size)", "--set data_size=28 (MedMNIST) or drop the key")
    if cfg.width > MAX_WIDTH:
        raise out_of_range(
            "width",
            f"at most {MAX_WIDTH} (the ResNet's parameters grow with width^2; the paper's is 64)",
            "--set width=64 (the paper's) or smaller",
        )
    if cfg.threads is not None and cfg.threads > MAX_THREADS:
        raise out_of_range(
            "threads", f"at most {MAX_THREADS} (torch CPU threads)", "--set threads=N with N the cores to use"
        )
    for key in ("image_size", "data_size"):
        if (getattr(cfg, key) or 0) > MAX_IMAGE_SIZE:
            raise out_of_range(
                key,
                f"at most {MAX_IMAGE_SIZE} px (every image is held in memory at this size; the paper's largest is 224)",
                f"--set {key}=224 or smaller",
            )
    smallest = min_image_size(cfg)
    if cfg.image_size < smallest:
        raise ConfigError(
            f"config key 'image_size': {cfg.image_size} px is below the {smallest} px that encoder {cfg.encoder!r} "
            f"takes (its downsampling would leave the last stage less than one pixel of image). "
            f"Fix: --set image_size={smallest} or larger (the prepared data are resized to it)"
        )
    if cfg.epochs > MAX_EPOCHS:
        raise out_of_range("epochs", f"at most {MAX_EPOCHS:,} (the paper's is 2048)", "--set epochs=2048 or fewer")
    if cfg.max_steps is not None and cfg.max_steps > MAX_STEPS:
        raise out_of_range("max_steps", f"at most {MAX_STEPS:,} (or null: epochs decide)", "drop the key")
    if cfg.max_steps is not None and cfg.max_steps < 0:
        raise ConfigError(
            f"config key 'max_steps' must be >= 0 (0: evaluate the untrained encoder), got {cfg.max_steps}"
        )
    if cfg.tta < 0 or cfg.tta % 2:
        raise ConfigError(f"config key 'tta' must be an even number >= 0 (half on x, half on x^C), got {cfg.tta}")
    if cfg.tta > MAX_TTA:
        raise out_of_range(
            "tta",
            f"at most {MAX_TTA} (every view is one encoder pass over the training and test images)",
            "--set tta=40 (the paper's)",
        )
    for key in ("seed", "split_seed", "tta_seed"):
        if not 0 <= getattr(cfg, key) <= MAX_SEED:
            raise out_of_range(key, f"in 0..{MAX_SEED} (a numpy seed)", f"--set {key}=0")
    if not cfg.lr > 0:
        raise out_of_range(
            "lr", "> 0 (the optimiser's base learning rate)", "--set lr=0.001 (the paper's, AdamW) or 0.1 (CSI's, LARS)"
        )
    if cfg.weight_decay < 0:
        raise out_of_range("weight_decay", ">= 0", "--set weight_decay=0.001 (the paper's; 0: none)")
    if not all(0 <= b < 1 for b in cfg.betas):
        raise out_of_range("betas", "two numbers in [0, 1)", "--set betas=[0.9,0.999] (AdamW's default)")
    validate_optimizer(cfg)
    if not 0 < cfg.crop_scale[0] <= cfg.crop_scale[1] <= 1:
        raise ConfigError(f"config key 'crop_scale' must satisfy 0 < low <= high <= 1, got {cfg.crop_scale}")
    for key in ("jitter_p", "grayscale_p"):
        if not 0 <= getattr(cfg, key) <= 1:
            default = getattr(_DEFAULTS, key)
            raise out_of_range(key, "a probability in [0, 1]", f"--set {key}={default} (SimCLR's)")
    if min(cfg.jitter[:3]) < 0 or not 0 <= cfg.jitter[3] <= 0.5:
        raise out_of_range(
            "jitter",
            "[brightness, contrast, saturation, hue] with the first three >= 0 and hue in [0, 0.5] "
            "(torchvision's ColorJitter)",
            "--set jitter=[0.4,0.4,0.4,0.1] (SimCLR's)",
        )
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
        raise out_of_range("lh_ridge", ">= 0 (relative to the mean eigenvalue)", "--set lh_ridge=0.01 (the default)")
    if cfg.threads is not None and cfg.threads < 1:
        raise out_of_range("threads", ">= 1 (or null: torch's default)", "--set threads=1, or drop the key")
    if cfg.checkpoint_every < 0:
        raise out_of_range("checkpoint_every", ">= 0 epochs (0: only at the end)", "--set checkpoint_every=1")
    if cfg.checkpoint_seconds < 0:
        raise out_of_range("checkpoint_seconds", ">= 0 seconds", "--set checkpoint_seconds=60")
    if not (cfg.device in ("auto", "cpu", "cuda") or cfg.device.startswith("cuda:")):
        raise ConfigError(f"config key 'device' must be auto, cpu, cuda or cuda:N, got {cfg.device!r}")


def validate_optimizer(cfg: RunConfig) -> None:
    """Range checks of the optimiser and its schedule (:data:`OPTIMIZERS`, LARS's keys, the warm-up)."""
    if cfg.optimizer not in OPTIMIZERS:
        raise ConfigError(
            f"config key 'optimizer' must be one of {', '.join(OPTIMIZERS)}, got {cfg.optimizer!r}. "
            f"Fix: --set optimizer=adamw (the paper's) or optimizer=lars (CSI's)"
        )
    if not 0 <= cfg.momentum < 1:
        raise ConfigError(
            f"config key 'momentum' must lie in [0, 1) (LARS's SGD momentum), got {cfg.momentum}. "
            f"Fix: --set momentum=0.9 (CSI's)"
        )
    if not cfg.trust_coefficient > 0:
        raise ConfigError(
            f"config key 'trust_coefficient' must be > 0 (LARS's trust coefficient), got {cfg.trust_coefficient}. "
            f"Fix: --set trust_coefficient=0.001 (CSI's)"
        )
    if not 0 <= cfg.warmup < 1:
        raise ConfigError(
            f"config key 'warmup' must lie in [0, 1) (a fraction of the run's optimiser steps), got {cfg.warmup}. "
            f"Fix: --set warmup=0.01 (CSI's 10 of 1000 epochs), or 0: none"
        )
    if not cfg.warmup_factor >= 1:
        raise ConfigError(
            f"config key 'warmup_factor' must be >= 1 (the warm-up's peak learning rate over lr), got "
            f"{cfg.warmup_factor}. Fix: --set warmup_factor=10 (CSI's), or 1: none"
        )


def validate_readings(cfg: RunConfig) -> None:
    """Range checks of the blur, the CSI reading and the learning curve."""
    if not 0 <= cfg.blur_p <= 1:
        raise ConfigError(f"config key 'blur_p' must lie in [0, 1], got {cfg.blur_p}")
    if not 0 < cfg.blur_sigma[0] <= cfg.blur_sigma[1]:
        raise ConfigError(f"config key 'blur_sigma' must satisfy 0 < low <= high, got {cfg.blur_sigma}")
    if cfg.csi_views < 0:
        raise ConfigError(f"config key 'csi_views' must be >= 0 (0: no CSI reading), got {cfg.csi_views}")
    if cfg.csi_views > MAX_TTA:  # each is one encoder pass over every image at scoring: refused before training
        raise ConfigError(
            f"config key 'csi_views' must be at most {MAX_TTA} (each view is one encoder pass over the training and "
            f"test images per context), got {cfg.csi_views}. Fix: --set csi_views=10 (the default)"
        )
    bad = [e for e in cfg.score_at if e < 1]
    if bad:
        raise ConfigError(f"config key 'score_at' lists epochs {bad}; every entry must be an epoch >= 1")
    if cfg.curve_views is not None and cfg.curve_views < 0:
        raise ConfigError(
            "config key 'curve_views' must be >= 0 (0: the identity view; null: the run's own test views), "
            f"got {cfg.curve_views}"
        )


def unknown_encoder(name: str) -> str | None:
    """Why ``name`` is no encoder :func:`con2.training.models.build_encoder` can build, or None if it is one
    (``resnet18`` and its stems without an import; any other name is asked of timm)."""
    if name in RESNET_ENCODERS:
        return None
    if re.fullmatch(ENCODER_REGEX, name) is None:
        return f"{name!r} is not an encoder name (letters, digits, '_', '.' or '-')"
    try:
        import timm  # lazy: timm (and torch) only where a non-ResNet encoder name is checked
    except ImportError:  # pragma: no cover - timm is a dependency of the methods that use it
        return f"{name!r} is not resnet18 and timm is not installed"
    if not timm.is_model(name):
        return f"{name!r} is neither resnet18 nor a timm model name"
    return None


def min_image_size(cfg: RunConfig) -> int:
    """The smallest input size of the configured ResNet18 (its total stride: 8 with the CIFAR stem,
    32 with the ImageNet stem); 1 for timm encoders, which :func:`con2.training.models.check_input_size` probes."""
    if cfg.encoder not in RESNET_ENCODERS:
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
    try:
        return key.strip(), safe_yaml(
            raw, f"override {key.strip()}=...", "write the value itself, e.g. params.contexts=[flip]"
        )
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"override {text!r}: the value is not valid YAML ({yaml_problem(exc)}). Fix: write a plain YAML "
            f"value, e.g. epochs=8, crop_scale=[0.2,1.0], params.contexts=[flip], or quote a text: data_dir='my [data]'"
        ) from None


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> RunConfig:
    """Load a YAML config (optional) and apply ``key=value`` overrides, then validate."""
    values: dict[str, Any] = {}
    if path is not None:
        values.update(read_yaml_mapping(path))
    for text in overrides or []:
        key, value = parse_override(text)
        if key.startswith("params."):
            params = values.get("params") or {}
            if not isinstance(params, dict):
                raise ConfigError(f"config key 'params': {params!r} is not a valid dict")
            values["params"] = {**params, key.removeprefix("params."): value}
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
    values = {k: _coerce(f"params.{k}", v, getattr(defaults, k), str(names[k].type)) for k, v in params.items()}
    for key, value in values.items():
        check_layer_size(key, value)
    return cls(**values)


def check_layer_size(key: str, value: Any) -> None:
    """Refuse a method's ``params.<name>_dim`` or ``params.<name>_width`` above :data:`MAX_LAYER_SIZE` (a
    projection of 100,000,000 outputs asks the allocator for hundreds of GB before the first step).

    Raises:
        ConfigError: naming the key, the bound and the fix.
    """
    sized = key.endswith(("_dim", "_width"))
    if sized and isinstance(value, int) and not isinstance(value, bool) and value > MAX_LAYER_SIZE:
        raise ConfigError(
            f"config key 'params.{key}' must be at most {MAX_LAYER_SIZE} (a layer's size: its weights are "
            f"allocated before training), got {value}. Fix: --set params.{key}=128 (the paper's projection) or smaller"
        )


def config_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``["lr: 0.001 -> 0.01", "params.temperature: 0.5 -> 0.2", ...]`` over the keys that change results (an
    :data:`OMITTED_AT_DEFAULT` key missing from a mapping reads as its default)."""

    def flat(d: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: _FIELDS[k].default for k in OMITTED_AT_DEFAULT}  # what to_dict leaves out
        out.update({k: v for k, v in d.items() if k not in RUNTIME_KEYS and k != "params"})
        out.update({f"params.{k}": v for k, v in (d.get("params") or {}).items()})
        return out

    a, b = flat(old), flat(new)
    missing = "(unset)"
    return [f"{k}: {a.get(k, missing)} -> {b.get(k, missing)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
