"""The experiment grid: a profile config -> the list of runs, each with its resolved config.

A *run* is one ``(dataset, normal class, method, variant, seed)`` cell; its settings are the
``run:`` block of the profile, then the dataset's ``run:`` overrides, then the variant's, with
``params`` merged key by key. Experiments name the cells: each one crosses its datasets (every
normal class the registry lists for a dataset, unless the config names some) with its methods'
variants and the seeds; a cell that several experiments share is one run.

Each run's config is resolved here, once, with :func:`con2.config.make_config` (every key checked,
defaults filled in) and without the runtime-only keys (:data:`con2.config.RUNTIME_KEYS`, set per
machine at the profile's top level). The workflow writes it to ``results/configs/<key>.yaml``
(:func:`write_run_config`) and ``con2 train --config`` reads that file: the config is parsed in
one place per process and never travels as strings.

This module also owns the workflow's path conventions (where a run's record, config, log and
benchmark live). Nothing here reads data: the caller passes the registry's ``normal_classes``.

Example:
    >>> cfg = {
    ...     "seeds": [0, 1],
    ...     "run": {"epochs": 2},
    ...     "datasets": {"digits": {"normal_classes": ["0", "1"]}},
    ...     "variants": {"invert": {"params": {"contexts": ["invert"]}}},
    ...     "experiments": {"main": {"datasets": ["digits"], "methods": {"con2": ["invert"]}}},
    ... }
    >>> runs = expand_grid(cfg, lambda name: ["0"])
    >>> [r.key for r in runs][:2]
    ['digits/0/con2/invert/seed0', 'digits/0/con2/invert/seed1']
    >>> runs[0].config["params"], runs[0].config["epochs"], runs[0].config["image_size"]
    ({'contexts': ['invert']}, 2, 28)
"""

from __future__ import annotations

import copy
import functools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from con2.config import RUNTIME_KEYS, make_config
from con2.errors import ConfigError

RUNS_ROOT = "results/runs"
CONFIGS_ROOT = "results/configs"
BENCH_ROOT = "results/benchmarks/train"
LOG_ROOT = "results/logs/train"
DATA_ROOT = "results/data"
RUN_PATTERN = "{dataset}/{normal_class}/{method}/{variant}/seed{seed}"
IDENTITY_KEYS = ("dataset", "normal_class", "method", "variant", "seed")


class GridError(ValueError):
    """The profile config names something that does not exist; the message names the key."""


@dataclass(frozen=True)
class Run:
    """One cell of the grid.

    Attributes:
        dataset, normal_class, method, variant, seed: the cell.
        settings: the profile's settings of the run (``params`` included, runtime keys excluded),
            as written in the profile.
        config: the resolved config: every :class:`~con2.config.RunConfig` key but the runtime
            ones, defaults filled in (what ``results/configs/<key>.yaml`` holds).
        experiments: the experiments that asked for this cell.
    """

    dataset: str
    normal_class: str
    method: str
    variant: str
    seed: int
    settings: dict[str, Any] = field(compare=False, hash=False)
    config: dict[str, Any] = field(compare=False, hash=False)
    experiments: tuple[str, ...] = field(default=(), compare=False, hash=False)

    @property
    def key(self) -> str:
        """``dataset/normal_class/method/variant/seed<k>``: the run's path below ``results/runs``."""
        return run_key(self.dataset, self.normal_class, self.method, self.variant, self.seed)

    @property
    def run_dir(self) -> str:
        return f"{RUNS_ROOT}/{self.key}"

    @property
    def record(self) -> str:
        return f"{self.run_dir}/record.json"

    @property
    def config_file(self) -> str:
        return f"{CONFIGS_ROOT}/{self.key}.yaml"

    @property
    def benchmark(self) -> str:
        return f"{BENCH_ROOT}/{self.key}.tsv"

    @property
    def data_size(self) -> int:
        """The size the run's data are prepared at (``data_size``, else ``image_size``)."""
        return int(self.config.get("data_size") or self.config["image_size"])

    @property
    def config_hash(self) -> str:
        return config_hash(self.config)


def run_key(dataset: str, normal_class: str, method: str, variant: str, seed: int | str) -> str:
    return RUN_PATTERN.format(dataset=dataset, normal_class=normal_class, method=method, variant=variant, seed=seed)


def record_key(path: str | Path) -> str | None:
    """The run key of a ``results/runs/<key>/record.json`` path (relative or absolute), else None."""
    parts = Path(path).parts
    if len(parts) < 7 or parts[-1] != "record.json" or not parts[-2].startswith("seed"):
        return None
    return "/".join(parts[-6:-1])


def data_marker(dataset: str, size: int) -> str:
    """The workflow's summary of one dataset prepared at one size (``prepare_data``'s output)."""
    return f"{DATA_ROOT}/{dataset}/{size}px.json"


def deep_merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``update``; nested mappings merge key by key, everything else replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def as_list(value: Any) -> list[str]:
    """A list from a YAML list, a comma-separated string (``--config only_datasets=a,b``) or nothing."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


def method_variants(experiment: Mapping[str, Any], extra_methods: Any) -> dict[str, list[str]]:
    """The experiment's ``{method: [variants]}``, with the config's extra methods if it takes them."""
    methods = {str(m): as_list(v) or ["default"] for m, v in (experiment.get("methods") or {}).items()}
    if experiment.get("extra_methods", False):
        extras = extra_methods or []
        if isinstance(extras, Mapping):
            pairs = {str(m): as_list(v) or ["default"] for m, v in extras.items()}
        else:
            pairs = {m: ["default"] for m in as_list(extras)}
        for m, vs in pairs.items():
            methods.setdefault(m, [])
            methods[m] += [v for v in vs if v not in methods[m]]
    return methods


def selected_datasets(config: Mapping[str, Any]) -> list[str]:
    """Datasets the grid may use: every configured one, or those named by ``only_datasets``."""
    names = list((config.get("datasets") or {}).keys())
    only = as_list(config.get("only_datasets"))
    unknown = [d for d in only if d not in names]
    if unknown:
        raise GridError(f"only_datasets: {unknown} not among the configured datasets {names}")
    return [d for d in names if not only or d in only]


def _no_runtime_keys(block: Mapping[str, Any] | None, where: str) -> None:
    """Runtime-only keys belong to the profile's top level (one value per machine), not to a run."""
    for key in block or {}:
        if key in RUNTIME_KEYS:
            raise GridError(
                f"{where}.{key}: {key!r} never changes a run's results (a runtime key); set it at the top level "
                f"of the profile (`{key}: ...`) or with `--config {key}=...`"
            )


@functools.lru_cache(maxsize=4096)
def _resolve(settings_json: str) -> str:
    cfg = make_config(json.loads(settings_json))
    return json.dumps({k: v for k, v in cfg.to_dict().items() if k not in RUNTIME_KEYS})


def resolve_config(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The full config of a run's settings, runtime keys excluded (raises ``ConfigError`` naming a key)."""
    return json.loads(_resolve(json.dumps(dict(settings), sort_keys=True)))


def config_hash(config: Mapping[str, Any]) -> str:
    """:meth:`RunConfig.config_hash` of a resolved config."""
    return make_config(dict(config)).config_hash()


def expand_grid(config: Mapping[str, Any], normal_classes: Callable[[str], Iterable[str]]) -> list[Run]:
    """All runs of a profile config, in a stable order (experiment, dataset, class, method, variant, seed).

    Args:
        config: the validated profile config (``seeds``, ``run``, ``datasets``, ``variants``,
            ``experiments``, optional ``extra_methods`` and ``only_datasets``).
        normal_classes: the registry's normal classes of a dataset (used where the dataset's
            ``normal_classes`` is missing or ``all``).

    Raises:
        GridError: an experiment names an unknown dataset or variant, a class list is empty, a run
            block holds a runtime key, or a run's config is invalid (the message names the key and
            where it is set).
    """
    datasets_cfg = config.get("datasets") or {}
    variants_cfg = {"default": {}, **(config.get("variants") or {})}
    base_run = config.get("run") or {}
    _no_runtime_keys(base_run, "run")
    for name, dcfg in datasets_cfg.items():
        _no_runtime_keys((dcfg or {}).get("run"), f"datasets.{name}.run")
    for name, vcfg in variants_cfg.items():
        _no_runtime_keys(vcfg, f"variants.{name}")
    keep = set(selected_datasets(config))
    runs: dict[str, Run] = {}
    for exp_name, exp in (config.get("experiments") or {}).items():
        seeds = [int(s) for s in exp.get("seeds", config.get("seeds", [0]))]
        for dataset in as_list(exp.get("datasets")):
            if dataset not in datasets_cfg:
                raise GridError(f"experiments.{exp_name}.datasets: {dataset!r} is not a key of `datasets`")
            if dataset not in keep:
                continue
            dcfg = datasets_cfg[dataset] or {}
            classes = dcfg.get("normal_classes", "all")
            classes = list(normal_classes(dataset)) if classes in ("all", None) else as_list(classes)
            if "normal_classes" in exp:
                restrict = as_list(exp["normal_classes"])
                classes = [c for c in classes if c in restrict] if restrict != ["all"] else classes
            if not classes:
                raise GridError(f"datasets.{dataset}.normal_classes: no normal class to run")
            for method, variants in method_variants(exp, config.get("extra_methods")).items():
                for variant in variants:
                    if variant not in variants_cfg:
                        raise GridError(
                            f"experiments.{exp_name}.methods.{method}: variant {variant!r} is not a key of `variants`"
                        )
                    settings = deep_merge(deep_merge(base_run, dcfg.get("run") or {}), variants_cfg[variant] or {})
                    for cls in classes:
                        for seed in seeds:
                            key = run_key(dataset, str(cls), method, variant, seed)
                            if key in runs:
                                old = runs[key]
                                runs[key] = Run(*_ident(old), old.settings, old.config, (*old.experiments, exp_name))
                                continue
                            full = {**settings, "dataset": dataset, "normal_class": str(cls), "method": method}
                            full.update(variant=variant, seed=seed)
                            try:
                                resolved = resolve_config(full)
                            except ConfigError as exc:
                                raise GridError(
                                    f"dataset {dataset!r}, method {method!r}, variant {variant!r}: {exc} (set in "
                                    f"`run:`, `datasets.{dataset}.run` or `variants.{variant}`)"
                                ) from None
                            runs[key] = Run(dataset, str(cls), method, variant, seed, full, resolved, (exp_name,))
    return list(runs.values())


def _ident(run: Run) -> tuple[str, str, str, str, int]:
    return run.dataset, run.normal_class, run.method, run.variant, run.seed


def data_targets(runs: Iterable[Run]) -> list[tuple[str, int]]:
    """Distinct ``(dataset, data size)`` pairs the runs need prepared (sorted)."""
    return sorted({(r.dataset, r.data_size) for r in runs})


def count_by_method(runs: Iterable[Run]) -> Counter[str]:
    """Number of runs per method."""
    return Counter(r.method for r in runs)


def run_index(runs: Iterable[Run]) -> dict[str, Run]:
    """Runs by key (``dataset/class/method/variant/seedK``)."""
    return {r.key: r for r in runs}


def check_method(config: Mapping[str, Any]) -> None:
    """Check the run's method and its ``params`` through the method's spec (torch-free): unknown
    keys, values the method refuses, ``tta`` against its contexts, pretrained files it needs.
    Runs that differ only in seed or normal class are checked once.

    Raises:
        ConfigError: naming the key (an unknown ``params`` key, a value the method refuses).
    """
    shared = {k: v for k, v in config.items() if k not in ("seed", "normal_class")}
    _check_method(json.dumps(shared, sort_keys=True))


@functools.lru_cache(maxsize=1024)
def _check_method(config_json: str) -> None:
    from con2.methods import validate_run

    validate_run(make_config(json.loads(config_json)))


def write_run_config(path: str | Path, config: Mapping[str, Any], check: bool = True) -> None:
    """Validate a resolved run config (``check``: its method too) and write it as YAML, atomically."""
    from con2.atomic import atomic_path

    cfg = make_config(dict(config))
    if check:
        check_method(config)
    values = {k: v for k, v in cfg.to_dict().items() if k not in RUNTIME_KEYS}
    text = "# resolved by con2.experiments for the workflow; read by `con2 train --config`\n"
    text += yaml.safe_dump(values, sort_keys=False)
    with atomic_path(Path(path)) as tmp:
        tmp.write_text(text)


def read_run_config(path: str | Path) -> dict[str, Any] | None:
    """The mapping in a file written by :func:`write_run_config` (None if unreadable)."""
    try:
        values = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return None
    return values if isinstance(values, dict) else None
