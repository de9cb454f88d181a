"""The experiment grid: a profile config -> the list of runs, each with its resolved config.

A *run* is one ``(dataset, normal class, method, variant, seed)`` cell; its settings are the
``run:`` block of the profile, then the dataset's ``run:`` overrides, then the variant's, with
``params`` merged key by key. Experiments name the cells: each one crosses its datasets (every
normal class the registry lists for a dataset, unless the config names some) with its methods'
variants and the seeds; a cell that several experiments share is one run.

Each run's config is resolved here, once, with :func:`con2.config.make_config` (every key checked,
defaults filled in) and without the runtime-only keys (:data:`con2.config.RUNTIME_KEYS`, set per
machine at the profile's top level); the :class:`Run` keeps that :class:`~con2.config.RunConfig`,
and every later step (the method and weights checks of :func:`workflow_grid`, the config hashes,
the workflow's ``run_config`` job writing ``results/configs/<key>.<hash>.yaml``) reuses it: one
parse per run in the Snakefile's process. ``con2 train --config`` reads that file (one parse in
the job's process); the config never travels as strings.

The workflow's path conventions and the name pattern live in :mod:`con2.paths`. Nothing here reads
data: the caller passes the registry's ``normal_classes``.

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
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from con2 import config as run_configs  # make_config through the module: one place parses (a test counts)
from con2.atomic import atomic_path
from con2.config import RUNTIME_KEYS, RunConfig
from con2.errors import ConfigError, WeightsMissing
from con2.grid.checks import GridError, check_name
from con2.methods import validate_run
from con2.paths import BENCH_ROOT, RUNS_ROOT, config_file_of, run_key


@dataclass(frozen=True)
class Run:
    """One cell of the grid.

    Attributes:
        dataset, normal_class, method, variant, seed: the cell.
        settings: the profile's settings of the run (``params`` included, runtime keys excluded),
            as written in the profile.
        config: the resolved config: every :class:`~con2.config.RunConfig` key but the runtime
            ones, defaults filled in (what ``results/configs/<key>.<hash>.yaml`` holds).
        run_config: the same, parsed once (:func:`resolve_config`): what every later check reuses.
        experiments: the experiments that asked for this cell.
    """

    dataset: str
    normal_class: str
    method: str
    variant: str
    seed: int
    settings: dict[str, Any] = field(compare=False, hash=False)
    config: dict[str, Any] = field(compare=False, hash=False)
    run_config: RunConfig = field(compare=False, hash=False, repr=False)
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
        """``results/configs/<key>.<config hash>.yaml``: the hash in the name, so a changed setting is a
        new file (written by the workflow's ``run_config`` job, which reruns the run), a file never
        holds another config than its name says, and no process rewrites a file another one reads."""
        return config_file_of(self.key, self.config_hash)

    @property
    def benchmark(self) -> str:
        return f"{BENCH_ROOT}/{self.key}.tsv"

    @property
    def data_size(self) -> int:
        """The size the run's data are prepared at (``data_size``, else ``image_size``)."""
        return int(self.config.get("data_size") or self.config["image_size"])

    @functools.cached_property
    def config_hash(self) -> str:
        """:meth:`RunConfig.config_hash` of the run (what its record will hold; computed once)."""
        return self.run_config.config_hash()


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
    """A list from a YAML list, a comma-separated string (``--config only_datasets=a,b``), one scalar
    (``--config only_classes=3`` arrives as the integer 3) or nothing."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (int, float)):
        return [str(value)]
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


def resolve_config(settings: Mapping[str, Any]) -> RunConfig:
    """A run's settings parsed and checked (:func:`con2.config.make_config`; raises ``ConfigError``
    naming a key). Mappings are read in sorted key order (``params`` as the YAML files list them)
    and copied, so a run's config shares nothing with the profile."""
    return run_configs.make_config(json.loads(json.dumps(dict(settings), sort_keys=True)))


def config_values(cfg: RunConfig) -> dict[str, Any]:
    """The mapping of a parsed config without the runtime keys (what a run's YAML file holds)."""
    return {k: v for k, v in cfg.to_dict().items() if k not in RUNTIME_KEYS}


def as_run_config(config: RunConfig | Mapping[str, Any]) -> RunConfig:
    """``config`` itself if parsed already, else parsed from its mapping (``ConfigError`` naming a key)."""
    return config if isinstance(config, RunConfig) else run_configs.make_config(dict(config))


def _seeds(values: Iterable[Any], where: str) -> list[int]:
    """Seeds as integers >= 0 (each becomes ``seed<k>`` in a path); ``GridError`` naming ``where``."""
    out = []
    for s in values:
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise GridError(f"{where}: {s!r} is not a seed: seeds are integers >= 0")
        out.append(s)
    return out


@dataclass(frozen=True)
class Cell:
    """One ``(experiment, dataset, method, variant)`` of a profile by name, with the normal classes and seeds it
    crosses: what :func:`grid_cells` lists before any run's config is resolved."""

    experiment: str
    dataset: str
    classes: tuple[str, ...]
    method: str
    variant: str
    seeds: tuple[int, ...]


def grid_cells(
    config: Mapping[str, Any],
    normal_classes: Callable[[str], Iterable[str]],
    unknown_class: Callable[[str, str], str | None] | None = None,
) -> list[Cell]:
    """The profile's experiments by name (``only_datasets`` applied; ``only_classes``, ``only_methods`` and
    ``only_seeds`` not: :func:`select_cells`), each name checked as :func:`expand_grid` says.

    Raises:
        GridError: as :func:`expand_grid`, for a name, a class, a variant or a seed.
    """
    datasets_cfg = config.get("datasets") or {}
    variants_cfg = {"default": {}, **(config.get("variants") or {})}
    keep = set(selected_datasets(config))
    default_seeds = _seeds(config.get("seeds", [0]), "seeds")
    cells: list[Cell] = []
    for exp_name, exp in (config.get("experiments") or {}).items():
        seeds = _seeds(exp["seeds"], f"experiments.{exp_name}.seeds") if "seeds" in exp else default_seeds
        for dataset in as_list(exp.get("datasets")):
            if dataset not in datasets_cfg:
                raise GridError(f"experiments.{exp_name}.datasets: {dataset!r} is not a key of `datasets`")
            if dataset not in keep:
                continue
            dcfg = datasets_cfg[dataset] or {}
            classes = dcfg.get("normal_classes", "all")
            if classes in ("all", None):
                where = f"the registry's normal classes of {dataset!r} (datasets.{dataset}.normal_classes: all)"
                classes = [check_name(c, where) for c in normal_classes(dataset)]
            else:
                classes = [check_name(c, f"datasets.{dataset}.normal_classes") for c in as_list(classes)]
                for cls in classes:
                    why = unknown_class(dataset, cls) if unknown_class else None
                    if why:
                        raise GridError(f"datasets.{dataset}.normal_classes: {why}")
            if "normal_classes" in exp:
                restrict = as_list(exp["normal_classes"])
                classes = [c for c in classes if c in restrict] if restrict != ["all"] else classes
            if not classes:
                raise GridError(f"datasets.{dataset}.normal_classes: no normal class to run")
            for method, variants in method_variants(exp, config.get("extra_methods")).items():
                check_name(method, f"experiments.{exp_name}.methods (or extra_methods)")
                for variant in variants:
                    if variant not in variants_cfg:
                        raise GridError(
                            f"experiments.{exp_name}.methods.{method}: variant {variant!r} is not a key of `variants`"
                        )
                    cells.append(Cell(exp_name, dataset, tuple(str(c) for c in classes), method, variant, tuple(seeds)))
    return cells


@dataclass(frozen=True)
class Selection:
    """What a profile's ``only_classes``, ``only_methods`` and ``only_seeds`` keep of its grid (an empty one:
    everything; ``only_datasets`` is applied by :func:`selected_datasets`). ``methods`` holds ``method`` (all
    its variants) and ``method/variant`` names as given."""

    classes: frozenset[str] = frozenset()
    methods: frozenset[str] = frozenset()
    seeds: frozenset[int] = frozenset()

    @property
    def narrows(self) -> bool:
        """Whether any of the three keys names something."""
        return bool(self.classes or self.methods or self.seeds)

    def keeps_method(self, method: str, variant: str) -> bool:
        """Whether ``only_methods`` keeps ``method/variant`` (named as the method or as the pair)."""
        return not self.methods or method in self.methods or f"{method}/{variant}" in self.methods

    def keeps_class(self, normal_class: str) -> bool:
        """Whether ``only_classes`` keeps the normal class."""
        return not self.classes or normal_class in self.classes

    def keeps_seed(self, seed: int) -> bool:
        """Whether ``only_seeds`` keeps the seed."""
        return not self.seeds or seed in self.seeds


def selected_seeds(value: Any) -> list[int]:
    """``only_seeds`` as integers: a YAML list, one integer, or a comma-separated string (``--config
    only_seeds=0,1``); nothing gives ``[]``.

    Raises:
        GridError: a value that is not an integer >= 0, naming it.
    """
    if value is None or value == "" or value == []:
        return []
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, (list, tuple)) else [value]
    seeds = []
    for item in items:
        text = str(item).strip()
        if isinstance(item, bool) or not text.isdigit():
            raise GridError(f"only_seeds: {item!r} is not a seed: name integers >= 0, e.g. `--config only_seeds=0,1`")
        seeds.append(int(text))
    return seeds


def selection(config: Mapping[str, Any]) -> Selection:
    """The profile's ``only_classes``, ``only_methods`` and ``only_seeds`` (unchecked against the grid:
    :func:`check_selection` does that)."""
    return Selection(
        frozenset(as_list(config.get("only_classes"))),
        frozenset(as_list(config.get("only_methods"))),
        frozenset(selected_seeds(config.get("only_seeds"))),
    )


def _refuse(key: str, wrong: Iterable[str], accepted: Iterable[str], what: str) -> None:
    """:class:`GridError` naming ``key``, the ``wrong`` names and the ``accepted`` ones (``what`` they are)."""
    shown = ", ".join(sorted(set(accepted), key=_natural)) or "none"
    raise GridError(
        f"{key}: {', '.join(sorted(set(wrong), key=_natural))} not among {what} ({shown}); "
        f"name some of them, or leave {key} empty for all"
    )


def _natural(name: str) -> tuple[int, Any]:
    """Names in numeric order where they are numbers (classes ``2`` before ``10``), then by name."""
    return (0, int(name)) if name.isdigit() else (1, name)


def check_selection(config: Mapping[str, Any], cells: Iterable[Cell]) -> Selection:
    """The profile's :func:`selection`, every name in it checked against ``cells`` (:func:`grid_cells`: the
    grid on the selected datasets).

    Raises:
        GridError: one line naming the key (``only_classes``, ``only_methods``, ``only_seeds``), the names
            the grid does not have and those it has.
    """
    cells = list(cells)
    sel = selection(config)
    classes = {c for cell in cells for c in cell.classes}
    methods = {cell.method for cell in cells} | {f"{cell.method}/{cell.variant}" for cell in cells}
    seeds = {s for cell in cells for s in cell.seeds}
    if sel.classes - classes:
        _refuse("only_classes", sel.classes - classes, classes, "the normal classes the selected datasets run")
    if sel.methods - methods:
        _refuse("only_methods", sel.methods - methods, methods, "the methods and method/variant pairs of the grid")
    if sel.seeds - seeds:
        _refuse("only_seeds", [str(s) for s in sel.seeds - seeds], [str(s) for s in seeds], "the grid's seeds")
    return sel


def select_cells(cells: Iterable[Cell], sel: Selection) -> list[Cell]:
    """The ``cells`` with what ``sel`` keeps of their classes and seeds, those it keeps none of left out."""
    kept = []
    for cell in cells:
        classes = tuple(c for c in cell.classes if sel.keeps_class(c))
        seeds = tuple(s for s in cell.seeds if sel.keeps_seed(s))
        if classes and seeds and sel.keeps_method(cell.method, cell.variant):
            kept.append(Cell(cell.experiment, cell.dataset, classes, cell.method, cell.variant, seeds))
    return kept


def expand_grid(
    config: Mapping[str, Any],
    normal_classes: Callable[[str], Iterable[str]],
    unknown_class: Callable[[str, str], str | None] | None = None,
) -> list[Run]:
    """All runs of a profile config, in a stable order (experiment, dataset, class, method, variant, seed).

    Args:
        config: the validated profile config (``seeds``, ``run``, ``datasets``, ``variants``,
            ``experiments``, optional ``extra_methods``, and the selection: ``only_datasets``,
            ``only_classes``, ``only_methods`` (``method`` or ``method/variant``), ``only_seeds``).
        normal_classes: the registry's normal classes of a dataset (used where the dataset's
            ``normal_classes`` is missing or ``all``).
        unknown_class: ``(dataset, class) ->`` why the registry does not know that class of the
            dataset, or None if it does; checks the classes a profile names (the workflow passes
            the registry's check; None: not checked).

    Raises:
        GridError: an experiment names an unknown dataset or variant, a class list is empty or
            names a class the dataset lacks, a name (dataset, class, method, variant) does not
            match :data:`NAME_PATTERN` or a seed is not an integer >= 0, a run block holds a
            runtime key, a run's config is invalid (the message names the key and where it is set),
            an ``only_*`` key names what the grid does not have (naming what it has), or the
            ``only_*`` keys together keep no run.
    """
    datasets_cfg = config.get("datasets") or {}
    variants_cfg = {"default": {}, **(config.get("variants") or {})}
    for name in datasets_cfg:
        check_name(name, "datasets")
    for name in variants_cfg:
        check_name(name, "variants")
    base_run = config.get("run") or {}
    _no_runtime_keys(base_run, "run")
    for name, dcfg in datasets_cfg.items():
        _no_runtime_keys((dcfg or {}).get("run"), f"datasets.{name}.run")
    for name, vcfg in variants_cfg.items():
        _no_runtime_keys(vcfg, f"variants.{name}")
    cells = grid_cells(config, normal_classes, unknown_class)
    sel = check_selection(config, cells)
    runs: dict[str, Run] = {}
    for cell in select_cells(cells, sel):
        dataset, method, variant, exp_name = cell.dataset, cell.method, cell.variant, cell.experiment
        dcfg = datasets_cfg[dataset] or {}
        settings = deep_merge(deep_merge(base_run, dcfg.get("run") or {}), variants_cfg[variant] or {})
        for cls in cell.classes:
            for seed in cell.seeds:
                key = run_key(dataset, cls, method, variant, seed)
                if key in runs:
                    old = runs[key]
                    runs[key] = Run(
                        *_ident(old), old.settings, old.config, old.run_config, (*old.experiments, exp_name)
                    )
                    continue
                full = {**settings, "dataset": dataset, "normal_class": cls, "method": method}
                full.update(variant=variant, seed=seed)
                try:
                    resolved = resolve_config(full)
                except ConfigError as exc:
                    raise GridError(
                        f"dataset {dataset!r}, method {method!r}, variant {variant!r}: {exc} (set in "
                        f"`run:`, `datasets.{dataset}.run` or `variants.{variant}`)"
                    ) from None
                runs[key] = Run(
                    dataset, cls, method, variant, seed, full, config_values(resolved), resolved, (exp_name,)
                )
    if sel.narrows and not runs:
        given = {
            k: config.get(k)
            for k in ("only_classes", "only_methods", "only_seeds")
            if config.get(k) not in (None, "", [])
        }
        raise GridError(
            f"{', '.join(given)}: no run of the grid has them all ({'; '.join(f'{k}: {v}' for k, v in given.items())}: "
            "each name is in the grid, but no experiment crosses them); name a class, method and seed one "
            "experiment runs together"
        )
    return list(runs.values())


def _key(run: Run) -> str:
    return run.key


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


_METHODS_CHECKED: set[str] = set()  # the method checks that passed in this process


def check_method(config: RunConfig | Mapping[str, Any]) -> None:
    """Check the run's method and its ``params`` through the method's spec (torch-free): unknown
    keys, values the method refuses, ``tta`` against its contexts, pretrained files it needs.
    Runs that differ only in seed or normal class are checked once per process. A parsed
    ``config`` is used as it is; a mapping is parsed first.

    Raises:
        ConfigError: naming the key (an unknown ``params`` key, a value the method refuses);
            :class:`~con2.errors.WeightsMissing` for pretrained weights that are not on disk.
    """

    cfg = as_run_config(config)
    shared = {k: v for k, v in config_values(cfg).items() if k not in ("seed", "normal_class")}
    key = json.dumps(shared, sort_keys=True)
    if key not in _METHODS_CHECKED:
        validate_run(cfg)
        why = run_configs.unknown_encoder(cfg.encoder)
        if why:
            raise ConfigError(
                f"config key 'encoder': {why}. Fix: encoder: resnet18, or a name timm.list_models() lists"
            )
        _METHODS_CHECKED.add(key)


def write_run_config(path: str | Path, config: RunConfig | Mapping[str, Any], check: bool = True) -> None:
    """Write a resolved run config (``check``: check its method first) as YAML, atomically; a
    mapping is validated (parsed) first, a parsed config is written as it is."""

    cfg = as_run_config(config)
    if check:
        check_method(cfg)
    with atomic_path(Path(path)) as tmp:
        tmp.write_text(run_config_text(cfg))


def run_config_text(config: RunConfig) -> str:
    """The YAML text of a resolved run config (what :func:`write_run_config` writes, and what the
    workflow's ``run_config`` job writes from its param)."""
    text = "# resolved by con2.grid.experiments for the workflow; read by `con2 train --config`\n"
    return text + yaml.safe_dump(config_values(config), sort_keys=False)


def read_run_config(path: str | Path) -> dict[str, Any] | None:
    """The mapping in a file written by :func:`write_run_config` (None if unreadable)."""
    try:
        values = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return None
    return values if isinstance(values, dict) else None


# ------------------------------------------------------------------------------------------ the workflow's grid
def drop_runs_without_weights(
    runs: Iterable[Run], skip_methods: Collection[str] = (), strict: bool = False
) -> tuple[list[Run], dict[str, str]]:
    """The runs whose method finds its pretrained weights, and ``{"method/variant": why}`` of the
    others (the first run of a method/variant decides for all of its runs; methods in
    ``skip_methods``, which run by their own rules, are kept unchecked). Other config errors are
    left to :func:`check_run_methods`, which names the key.

    Raises:
        GridError: ``strict`` and a method lacks its weights (naming the file and the fix).
    """

    runs = list(runs)
    missing: dict[str, str] = {}
    verdict: dict[str, bool] = {}
    for run in runs:
        key = f"{run.method}/{run.variant}"
        if run.method in skip_methods or key in verdict:
            continue
        try:
            validate_run(run.run_config)
            verdict[key] = True
        except WeightsMissing as exc:
            if strict:
                raise GridError(f"method {run.method!r}, variant {run.variant!r}: {exc} (strict=true)") from None
            verdict[key], missing[key] = False, " ".join(str(exc).split())
        except ConfigError:
            verdict[key] = True
    return [r for r in runs if verdict.get(f"{r.method}/{r.variant}", True)], missing


def check_run_methods(runs: Iterable[Run]) -> None:
    """Check every run's method and its params (:func:`check_method`; once per shared config), so a
    bad key fails before any job, naming it and where it is set.

    Raises:
        GridError: a run's method refuses its settings (the message names the key and where it is set).
    """
    for run in runs:
        try:
            check_method(run.run_config)
        except ConfigError as exc:
            raise GridError(
                f"dataset {run.dataset!r}, method {run.method!r}, variant {run.variant!r}: {exc} "
                f"(set in `run:`, `datasets.{run.dataset}.run` or `variants.{run.variant}`)"
            ) from None


def rule_file_methods(paths: Iterable[str | Path]) -> dict[str, dict[str, str]]:
    """Methods trained by their own Snakemake rule file: ``{name: {"description", "rule_file"}}``.

    The name is the file's stem (as the workflow reads it); the description is the file's first
    comment line (``# Pixel NN: raw-pixel nearest neighbour, ...``), or ``""`` without one.
    """
    out: dict[str, dict[str, str]] = {}
    for path in sorted(Path(p) for p in paths):
        lines = path.read_text(errors="replace").splitlines()
        first = next((line.lstrip("#").strip() for line in lines if line.startswith("#")), "")
        out[path.stem] = {"description": first, "rule_file": str(path)}
    return out
