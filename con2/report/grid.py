"""The experiment grid: a profile config -> the list of runs, as a pure function.

A *run* is one ``(dataset, normal class, method, variant, seed)`` cell; its settings are the
``run:`` block of the profile, then the dataset's ``run:`` overrides, then the variant's, with
``params`` merged key by key. Experiments name the cells: each one crosses its datasets (every
normal class the registry lists for a dataset, unless the config names some) with its methods'
variants and the seeds; a cell that several experiments share is one run. The Snakefile builds
its DAG from :func:`expand_grid` and the workflow tests count jobs with it.

Nothing here reads files or imports the data layer: the caller passes the registry's
``normal_classes`` function (and, optionally, which datasets are present).

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
    >>> runs[0].settings["params"], runs[0].settings["epochs"]
    ({'contexts': ['invert']}, 2)
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

RUNS_ROOT = "results/runs"
BENCH_ROOT = "results/benchmarks/train"
LOG_ROOT = "results/logs/train"
RUNTIME_KEYS = ("data_dir", "device", "threads")  # set by the workflow at run time, never per run
IDENTITY_KEYS = ("dataset", "normal_class", "method", "variant", "seed")


class GridError(ValueError):
    """The profile config names something that does not exist; the message names the key."""


@dataclass(frozen=True)
class Run:
    """One cell of the grid.

    Attributes:
        dataset, normal_class, method, variant, seed: the cell.
        settings: resolved RunConfig keys (``params`` included, runtime keys excluded).
        experiments: the experiments that asked for this cell.
    """

    dataset: str
    normal_class: str
    method: str
    variant: str
    seed: int
    settings: dict[str, Any] = field(compare=False, hash=False)
    experiments: tuple[str, ...] = field(default=(), compare=False, hash=False)

    @property
    def key(self) -> str:
        """``dataset/normal_class/method/variant/seed<k>``: the run's path below ``results/runs``."""
        return f"{self.dataset}/{self.normal_class}/{self.method}/{self.variant}/seed{self.seed}"

    @property
    def run_dir(self) -> str:
        return f"{RUNS_ROOT}/{self.key}"

    @property
    def record(self) -> str:
        return f"{self.run_dir}/record.json"

    @property
    def benchmark(self) -> str:
        return f"{BENCH_ROOT}/{self.key}.tsv"

    @property
    def image_size(self) -> int | None:
        size = self.settings.get("image_size")
        return int(size) if size is not None else None

    def overrides(self) -> list[str]:
        """``con2 train --set`` arguments: ``key=value`` with values as JSON (which YAML parses back).

        Nested ``params`` become ``params.name=value``; the list is sorted so it is stable.
        """
        out = []
        for key, value in sorted(self.settings.items()):
            if key == "params":
                out += [f"params.{k}={json.dumps(v)}" for k, v in sorted(value.items())]
            else:
                out.append(f"{key}={json.dumps(value)}")
        return out


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


def expand_grid(
    config: Mapping[str, Any],
    normal_classes: Callable[[str], Iterable[str]],
    available: Callable[[str], bool] | None = None,
) -> list[Run]:
    """All runs of a profile config, in a stable order (experiment, dataset, class, method, variant, seed).

    Args:
        config: the validated profile config (``seeds``, ``run``, ``datasets``, ``variants``,
            ``experiments``, optional ``extra_methods`` and ``only_datasets``).
        normal_classes: the registry's normal classes of a dataset (used where the dataset's
            ``normal_classes`` is missing or ``all``).
        available: keep a dataset only if this returns True (the default profile skips datasets
            that are not on disk); ``None`` keeps all.

    Raises:
        GridError: an experiment names an unknown dataset or variant, or a class list is empty.
    """
    datasets_cfg = config.get("datasets") or {}
    variants_cfg = {"default": {}, **(config.get("variants") or {})}
    base_run = config.get("run") or {}
    keep = set(selected_datasets(config))
    if available is not None:
        keep = {d for d in keep if available(d)}
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
                    vcfg = variants_cfg[variant] or {}
                    settings = deep_merge(deep_merge(base_run, dcfg.get("run") or {}), vcfg)
                    for key in RUNTIME_KEYS:
                        settings.pop(key, None)
                    for cls in classes:
                        for seed in seeds:
                            run = Run(dataset, str(cls), method, variant, seed, {})
                            full = {**settings, "dataset": dataset, "normal_class": str(cls), "method": method,
                                    "variant": variant, "seed": seed}  # fmt: skip
                            if run.key in runs:
                                old = runs[run.key]
                                runs[run.key] = Run(*_ident(old), old.settings, (*old.experiments, exp_name))
                            else:
                                runs[run.key] = Run(*_ident(run), full, (exp_name,))
    return list(runs.values())


def _ident(run: Run) -> tuple[str, str, str, str, int]:
    return run.dataset, run.normal_class, run.method, run.variant, run.seed


def data_targets(runs: Iterable[Run]) -> list[tuple[str, int]]:
    """Distinct ``(dataset, image_size)`` pairs the runs need prepared (sorted)."""
    return sorted({(r.dataset, r.image_size or 0) for r in runs})


def count_by_method(runs: Iterable[Run]) -> Counter[str]:
    """Number of runs per method."""
    return Counter(r.method for r in runs)


def run_index(runs: Iterable[Run]) -> dict[str, Run]:
    """Runs by key (``dataset/class/method/variant/seedK``)."""
    return {r.key: r for r in runs}


def distinct_settings(runs: Iterable[Run]) -> list[dict[str, Any]]:
    """One representative settings dict per distinct (settings minus identity keys) combination.

    Used to validate every run config once, before any job runs.
    """
    seen: dict[str, dict[str, Any]] = {}
    for r in runs:
        core = {k: v for k, v in r.settings.items() if k not in ("normal_class", "seed")}
        seen.setdefault(json.dumps(core, sort_keys=True), r.settings)
    return list(seen.values())
