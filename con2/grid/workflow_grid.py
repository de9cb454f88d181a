"""What the Snakefile does with a profile before any job: expand it into runs, check its ``report:``
block against them, leave out the runs whose method lacks its pretrained weights and check every
other run's method (:func:`workflow_grid`). Nothing here writes: each run's resolved config is
written by the workflow's ``run_config`` job."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from con2.grid.checks import GridError, check_profile_text
from con2.grid.experiments import (
    Run,
    check_run_methods,
    drop_runs_without_weights,
    expand_grid,
    method_variants,
)


def profile_methods(config: Mapping[str, Any]) -> list[str]:
    """Every method the profile's experiments name (``extra_methods`` included), sorted."""
    extra = config.get("extra_methods")
    return sorted({m for exp in (config.get("experiments") or {}).values() for m in method_variants(exp, extra)})


def check_report(config: Mapping[str, Any], tables: Collection[str] = ()) -> None:
    """Check the ``report:`` block against the profile: ``subject`` (and each fidelity row's method)
    must be a method of its experiments, every dataset it lists (``medical``, ``natural``,
    ``per_class``, ``pca``, ``fidelity.datasets``) a key of ``datasets``, every variant it names
    a key of ``variants``, every ``scopes`` entry a table (of ``tables``, when given) reading
    experiments of the profile. Otherwise a table would be built empty ("(no runs)") without a word.

    Raises:
        GridError: naming the ``report`` key, the unknown value and what the profile has.
    """
    rep = config.get("report") or {}
    datasets = list(config.get("datasets") or {})
    variants = ["default", *[v for v in config.get("variants") or {} if v != "default"]]
    experiments = list(config.get("experiments") or {})
    methods = profile_methods(config)

    def known(value: Any, allowed: list[str], where: str, what: str) -> None:
        if str(value) not in allowed:
            raise GridError(
                f"report.{where}: {value!r} is not {what} of this profile ({', '.join(allowed) or 'none'}); "
                "name one of them or remove it"
            )

    if rep.get("subject") is not None:
        known(rep["subject"], methods, "subject", "a method of the experiments")
    for floor in rep.get("floors") or []:
        known(floor, methods, "floors", "a method of the experiments")
    for key in ("medical", "natural", "per_class", "pca", "comparisons", "length_curve", "claims"):
        for dataset in rep.get(key) or []:
            known(dataset, datasets, key, "a key of `datasets`")
    for method, variant in (rep.get("main_variants") or {}).items():
        known(variant, variants, f"main_variants.{method}", "a key of `variants`")
    if rep.get("best_variant") is not None:  # CON2 (Best)'s own row in the natural-image tables
        known(rep["best_variant"], variants, "best_variant", "a key of `variants`")
    for table, exps in (rep.get("scopes") or {}).items():
        if tables:
            known(table, sorted(tables), "scopes", "a table")
        for exp in exps or []:
            known(exp, experiments, f"scopes.{table}", "an experiment")
    fidelity = rep.get("fidelity") or {}
    for dataset in fidelity.get("datasets") or []:
        known(dataset, datasets, "fidelity.datasets", "a key of `datasets`")
    for i, row in enumerate(fidelity.get("rows") or []):
        known(row.get("method"), methods, f"fidelity.rows[{i}].method", "a method of the experiments")
        known(row.get("variant"), variants, f"fidelity.rows[{i}].variant", "a key of `variants`")
    combination = rep.get("combination") or {}
    for dataset in [combination.get("target"), *(combination.get("guard") or [])]:
        if dataset is not None:
            known(dataset, datasets, "combination.target/guard", "a key of `datasets`")
    rows = [("reference", combination.get("reference"))]
    rows += [(f"{key}[{i}]", r) for key in ("candidates", "against") for i, r in enumerate(combination.get(key) or [])]
    for where, row in rows:
        if row:
            known(row.get("method"), methods, f"combination.{where}.method", "a method of the experiments")
            known(row.get("variant"), variants, f"combination.{where}.variant", "a key of `variants`")


@dataclass(frozen=True)
class WorkflowGrid:
    """The grid as the Snakefile uses it (:func:`workflow_grid`).

    Attributes:
        runs: the runs to train (those whose method lacks its weights left out).
        missing_weights: ``{"method/variant": why}`` of the runs left out.
        cli_methods: the methods trained by ``con2 train`` (those without their own rule file).
    """

    runs: list[Run]
    missing_weights: dict[str, str]
    cli_methods: frozenset[str]

    def hashes(self) -> dict[str, str | None]:
        """``{run key: config hash}`` (None for runs of own-rule methods, which keep no hash), sorted by
        key: a param of the aggregation, so the order of a profile's experiments never reruns it."""
        return {
            r.key: (r.config_hash if r.method in self.cli_methods else None)
            for r in sorted(self.runs, key=lambda r: r.key)
        }


def workflow_grid(
    config: Mapping[str, Any],
    normal_classes: Callable[[str], Iterable[str]],
    own_rule_methods: Collection[str] = (),
    strict: bool = False,
    unknown_class: Callable[[str, str], str | None] | None = None,
    tables: Collection[str] = (),
) -> WorkflowGrid:
    """What the Snakefile does with a profile before any job: expand the grid (each run's config
    parsed once; every name checked against :data:`NAME_PATTERN`, every class the profile names
    against ``unknown_class``), check the ``report:`` block (:func:`check_report`), leave out the
    runs whose method lacks its pretrained weights and check every other run's method. It writes
    nothing: each run's resolved config is written to :attr:`Run.config_file` (its name carries the
    config hash) by the workflow's ``run_config`` job (:func:`write_run_config`), under Snakemake's
    lock, so ``snakemake -n`` leaves the disk alone and a second invocation, refused by the lock,
    changes nothing.

    ``config`` has passed :func:`con2.workflow.startup.check_profile` (its size, its schema): the one
    place that checks the profile as a whole, before the Snakefile reads its rules.

    Raises:
        GridError: the profile holds an unsafe character (:data:`UNSAFE_TEXT`), names
            something that does not exist or an unsafe name, a run's
            config or method params are invalid, or (``strict``) a method lacks its weights.
    """
    check_profile_text(config)
    runs = expand_grid(config, normal_classes, unknown_class)
    check_report(config, tables)
    runs, missing = drop_runs_without_weights(runs, own_rule_methods, strict)
    cli_methods = frozenset({r.method for r in runs} - set(own_rule_methods))
    check_run_methods([r for r in runs if r.method in cli_methods])
    return WorkflowGrid(runs, missing, cli_methods)
