"""The jobs of one training run: what ``run_config``, ``train`` and a method's own rule read, are given and
are ranked by.

:class:`RunJobs` finds the grid's run for a job's wildcards (:meth:`RunJobs.run_of`) and answers the rules'
input, params, priority and resource functions for it (``workflow/rules/train.smk``, the helpers of
``workflow/rules/common.smk`` that a method's own rules use). Built once per invocation by the
:class:`~con2.workflow.session.Session` from the profile and the grid's runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any

from snakemake.exceptions import WorkflowError

from con2 import paths as P
from con2.config import RUNTIME_KEYS
from con2.grid import experiments as E
from con2.workflow.eta import job_priority, weigh_runs
from con2.workflow.status import awaits_training
from con2.workflow.wildcards import Wildcards


class RunJobs:
    """The inputs, params, priority and resources of each run's jobs.

    Args:
        config: the profile (its runtime keys and ``resources``).
        runs: the grid's runs.
    """

    def __init__(self, config: Mapping[str, Any], runs: Sequence[E.Run]) -> None:
        self.config = config
        self.runs = list(runs)
        self.run_index = E.run_index(self.runs)

    def run_of(self, wildcards: Wildcards, method: str | None = None) -> E.Run:
        """The grid's Run for a job's wildcards (``method`` for rules whose output names it literally)."""
        method = method or getattr(wildcards, "method", None)
        if method is None:
            raise WorkflowError(
                "this rule's output has no {method} wildcard: use data_marker_for('<method>') / "
                "run_settings_for('<method>')"
            )
        key = P.run_key(wildcards.dataset, wildcards.normal_class, method, wildcards.variant, wildcards.seed)
        try:
            return self.run_index[key]
        except KeyError:
            raise WorkflowError(
                f"{key} is not a run of this profile's grid (see `experiments` in the config)"
            ) from None

    @cached_property
    def priorities(self) -> dict[str, int]:
        """{run key: Snakemake priority} (:func:`con2.workflow.eta.job_priority`): a run whose cost the ETA
        cannot price from the others first (a method of unknown views, a floor that trains nothing), then the
        larger runs (con2.workflow.eta's weights, sizes from the sizes table)."""
        return {key: job_priority(p) for key, p in weigh_runs(self.runs, None, None).items()}

    def train_priority(self, wildcards: Wildcards) -> int:
        """Longest first (issue 36): a run of a method whose cost the ETA cannot price (I-JEPA-AD's
        ViT) starts at once, so its pace is known early, then the runs by planned cost. A grid whose
        longest run starts last ends with one job slot idle."""
        try:
            return self.priorities.get(self.run_of(wildcards).key, 0)
        except Exception:  # a priority never stops the workflow: an unplannable grid runs in Snakemake's order
            return 0

    def run_config_file(self, wildcards: Wildcards) -> str:
        """The resolved config a `con2 train` job reads (results/configs/<key>.<hash>.yaml)."""
        return self.run_of(wildcards).config_file

    def run_config_text(self, wildcards: Wildcards, output: Any) -> str:
        """The run_config job's param: the YAML text of the run's resolved config. The file's name
        carries the config hash, so a file never holds another config than the grid's (files of older
        hashes stay, unread); a name of another hash is refused."""
        run = self.run_of(wildcards)
        if run.config_file != output.config:
            raise WorkflowError(
                f"{output.config}: this profile's run {run.key} has config hash {run.config_hash}: {run.config_file}"
            )
        return E.run_config_text(run.run_config)

    def data_marker(self, wildcards: Wildcards, method: str | None = None) -> str:
        """The prepare_data output a run needs (the rule marks it ancient: re-checking data never retrains)."""
        run = self.run_of(wildcards, method)
        return P.data_marker(run.dataset, run.data_size)

    def trains(self, wildcards: Wildcards, method: str | None = None) -> bool:
        """True if the run would train now (no record, or its config changed): its data marker need not
        be `ancient`. (An `ancient` marker whose prepare_data job must run, after a change to its
        code say, hides the run from Snakemake 9 until that job has run: a record named as the
        target would be left untrained by an invocation that ends "done".)"""
        run = self.run_of(wildcards, method)
        return awaits_training(run.record, run.config_file)

    def run_settings(self, wildcards: Wildcards, method: str) -> dict[str, Any]:
        """A baseline rule's params: the run's resolved config (every RunConfig key but the runtime ones)."""
        return dict(self.run_of(wildcards, method).config)

    def runtime_set(self, wildcards: Wildcards, threads: int) -> list[str]:
        """`con2 train --set` arguments of the runtime keys the profile sets, threads the job's own (a
        list, each quoted by the train command's `:q`). A param computed from the job's threads is
        never a rerun trigger: right for keys that never change results (data_dir, device, ...)."""
        values = {k: self.config[k] for k in RUNTIME_KEYS if k in self.config}
        values["threads"] = threads
        return [f"{k}={json.dumps(v)}" for k, v in values.items()]

    def train_resource(self, name: str, default: Any) -> Callable[[Wildcards], Any]:
        """A training job's resource from `resources` (per dataset, then profile-wide)."""

        def get(wildcards: Wildcards) -> Any:
            ds = (self.config["datasets"].get(wildcards.dataset) or {}).get("resources") or {}
            return ds.get(name, (self.config.get("resources") or {}).get(name, default))

        return get
