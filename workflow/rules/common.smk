# The bindings the rules use: one con2.workflow Session per invocation answers what they ask, W (the
# grid's runs, the records each aggregation reads, what the named targets train) and its parts: D, the
# data on disk and what waits for the data check; J, each run's jobs; F, the tables, figures and
# aggregates as files; A, what each table and figure reads. con2/workflow/ holds and tests all of it.
# Only what needs Snakemake's own objects stays here. (Functions only: Snakemake's linter wants rules elsewhere.)

import json
import os  # the rules' own lambdas use it
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger as snakemake_logger

from con2 import paths as P  # where runs, configs, logs live; the name pattern
from con2.data.profile_datasets import register_profile_datasets
from con2.grid.checks import GridError
from con2.report.artefacts import FIGURES, TABLES
from con2.workflow import session as S
from con2.workflow.artefact_rules import ArtefactRules
from con2.workflow.console import install_short_reasons
from con2.workflow.last_profile import report_mode
from con2.workflow.progress import ProgressLine, end_lines, print_at_exit

# A job's `Reason:` lists at most a few files per part, params that hold profiles print as a hash
install_short_reasons(snakemake_logger)


def named_targets():
    """The targets on the command line (Snakemake sets them after reading this file)."""
    settings = getattr(workflow, "dag_settings", None)
    return settings.targets if settings is not None else ()


def data_status():
    """{"<dataset>/<size>": marker} of the grid's data, once the data_status checkpoint has run."""
    return json.loads(Path(checkpoints.data_status.get().output[0]).read_text())


try:
    register_profile_datasets(config)  # datasets the profile declares by folder (con2/data/profile_datasets.py)
    W = S.Session(config, workflow.basedir, named_targets, data_status, report_mode(sys.argv))  # a report trains nothing
except GridError as exc:
    raise WorkflowError(f"invalid workflow config: {exc}") from None
D, J, F = W.data, W.jobs, W.files  # the data check, each run's jobs, the tables and figures as files
A = ArtefactRules(W)


def data_marker(wildcards, method=None):
    """The prepare_data output a run needs: ancient for a finished run (re-checking the data never
    retrains it), plain for one that trains anyway (else Snakemake 9 skips it below a data check that
    must run: `RunJobs.trains`)."""
    marker = J.data_marker(wildcards, method)
    return marker if J.trains(wildcards, method) else ancient(marker)


def data_marker_for(method):
    """Input function for a method rule whose output path spells its method (no {method} wildcard)."""
    return lambda wildcards: data_marker(wildcards, method)


def run_settings_for(method):
    """Params function for a method rule: the run's resolved config (every key but the runtime ones)."""
    return lambda wildcards: J.run_settings(wildcards, method)


def training_slots():
    """Training jobs at a time: --cores / threads per job here, --jobs on a cluster."""
    if workflow.local_exec:
        return max(1, int(workflow.cores) // max(1, int(config.get("threads", 1))))
    return max(1, int(workflow.nodes))


def dag_jobs():
    """(rule, output files) of each job of this invocation's DAG, finished ones included."""
    return [(job.rule.name, [str(f) for f in job.output]) for job in workflow.dag.needrun_jobs(exclude_finished=False)]


def dag_outputs():
    """Output files of the jobs of this invocation's DAG, finished ones included."""
    return {f for _, outputs in dag_jobs() for f in outputs}


PROGRESS = ProgressLine(W, dag_outputs, training_slots, dag_jobs)
