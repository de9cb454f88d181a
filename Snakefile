# con2-bench: the paper's experiment grid, every table and figure, one command.
#
#   snakemake --cores 2 all                                            # default profile (laptop CPU)
#   snakemake --cores 2 all --config data_dir=../shared/data           # data elsewhere (or set CON2_DATA_DIR)
#   snakemake --cores 2 --configfile workflow/config/paper.yaml \
#       --config data_dir=/data device=cuda                             # the paper's grid (GPU)
#   snakemake --cores 2 results/tables/table1_medical.md               # one artefact from the records on disk (trains nothing)
#   snakemake --report results/report.html                             # HTML report of the last run's profile
#
# Profiles live in workflow/config/ and are validated against workflow/schemas/config.schema.yaml.
# Without --configfile the default profile is used; `--config key=value` overrides scalars
# (data_dir, device, threads, only_datasets=a,b, download=false, strict=true). Missing datasets are
# downloaded where no credentials are needed (Kaggle ones with credentials); what cannot be had is
# skipped and listed at the very end (strict=true: an error instead).

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

import sys

from con2.data import default_data_dir
from con2.grid.checks import GridError, check_profile_schema, check_profile_size
from con2.workflow.last_profile import given_as, recalled_profile, remember_profile, report_missing, report_mode

min_version("9.0")


# `snakemake --report` without --configfile reports the profile of the last run in this folder
# (results/last_profile.yaml, written by `onstart`: con2/workflow/last_profile.py), not the default one
_recalled = None if "experiments" in config else recalled_profile(sys.argv)
if _recalled is not None:
    print(f"con2 report: the profile of the last run here, {given_as(_recalled)} ({_recalled})", file=sys.stderr)

    configfile: str(_recalled)

elif "experiments" not in config:  # no profile given with --configfile: the default one

    configfile: f"{workflow.basedir}/workflow/config/default.yaml"


try:  # before anything prints or walks the config: a YAML file of nested aliases expands to billions
    check_profile_size(config)
except GridError as exc:
    raise WorkflowError(f"invalid workflow config: {exc}") from None

config.setdefault("data_dir", str(default_data_dir()))  # $CON2_DATA_DIR, else ./data
for _flag in ("download", "strict", "progress", "compile"):  # `--config strict=true` arrives as the string "true"
    if str(config.get(_flag)).lower() in ("true", "false"):
        config[_flag] = str(config[_flag]).lower() == "true"


try:  # one line naming the key (Snakemake's own message below prints the whole schema)
    check_profile_schema(config, f"{workflow.basedir}/workflow/schemas/config.schema.yaml")
except GridError as exc:
    raise WorkflowError(f"invalid workflow config: {exc}") from None
validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"


if report_mode(sys.argv):  # a report of files that were never built: one line naming the profile to give
    _missing = report_missing(W.report_files(), _recalled)
    if _missing:
        raise WorkflowError(_missing)


report: "workflow/report/workflow.rst"


# Every name in a path or a shell command matches one pattern (con2.paths.NAME_PATTERN: no
# slash, no dot, no shell character), checked by the schema and the grid before any job, and here.
wildcard_constraints:
    dataset=P.NAME_REGEX,
    normal_class=P.NAME_REGEX,
    method=P.NAME_REGEX,
    variant=P.NAME_REGEX,
    seed=P.SEED_REGEX,
    size=r"\d+",
    scope=P.NAME_REGEX,


rule all:
    """Every table and figure of the profile (and so every run they need whose data are available);
    the studies of `report.scopes` (the fidelity table) are rebuilt from their records on disk, and
    trained by `snakemake studies` or by naming their table."""
    localrule: True
    input:
        W.table_files,
        W.study_files,  # as their records stand: a study table never shows an older profile's runs
        W.figure_files,
        W.aggregate_files,  # a deleted or never-written aggregate is rebuilt (con2.workflow.session says why)
        W.study_aggregate_files,
        W.grid_records,  # a deleted run's record: trained again (con2.workflow.session, `grid_records` says why)
        W.checked_grid_records,
    message:
        "every table and figure of the profile"


rule studies:
    """The scoped tables of `report.scopes` (the fidelity study), each training only its own runs."""
    localrule: True
    input:
        W.study_files,
        W.study_aggregate_files,  # as in `all`
        W.study_records,  # as in `all`
        W.study_checked_records,
    message:
        "the studies: " + ", ".join(W.scopes)


rule runs:
    """Only the runs of the grid (records), no tables."""
    localrule: True
    input:
        W.all_grid_records,
        W.all_checked_records,
        W.status_input,
    message:
        "every run of the grid"


include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/figures.smk"


# Baselines with their own rules: workflow/rules/methods/<method>.smk (found by glob) and the
# config's extra_rules; each writes results/runs/{dataset}/{normal_class}/<method>/{variant}/seed{seed}/record.json.
for _rule_file in W.own_rule_files:

    include: _rule_file


# The grid's ETA: after each finished training job, one line under Snakemake's "N of M steps" (how it
# is estimated: con2/workflow/eta.py).
# SIGTERM (`timeout`, a cluster's time limit, `kill PID`) stops the running jobs, each `con2 train`
# leaving its checkpoint, and then Snakemake, as Ctrl-C does; Snakemake's own handler would wait for
# them to finish, hours for a training run (con2/run/signals.py says why and how). Installed here: after
# Snakemake's handler, before the first job.
onstart:
    from con2.run.signals import terminate_jobs_on_sigint, terminate_jobs_on_sigterm

    terminate_jobs_on_sigterm()
    # `kill -INT PID` (Snakemake alone) stops the jobs too, as Ctrl-C does; SIGINT inherited ignored
    # (`snakemake ... &` in a script) stays ignored: `kill PID` stops that one (con2/run/signals.py)
    terminate_jobs_on_sigint()
    # what `snakemake --report` without --configfile reports from now on (con2/workflow/last_profile.py)
    try:
        remember_profile(config, workflow.config_settings.configfiles, dict(workflow.config_settings.config or {}))
    except OSError as exc:  # a results/ that cannot be written fails its jobs, with their own error: not here
        snakemake_logger.warning(f"con2 report: results/last_profile.yaml not written ({exc})")
    # the whole grid's ETA under Snakemake's progress, and once before the first job
    _progress = install_grid_progress(snakemake_logger, PROGRESS.line, PROGRESS.job_started)
    try:  # as its later updates (con2.workflow.console.GridProgress): an ETA never stops the workflow
        _progress.last = PROGRESS.line()
    except Exception as exc:
        _progress.last = f"con2 grid: no ETA ({type(exc).__name__}: {exc})"
    if _progress.last:
        snakemake_logger.info(_progress.last)
    # a sign of life after 45 s without a line: each running job, how long it has run, its log's last line
    start_heartbeat(snakemake_logger)


# The last lines of every run: datasets skipped (why, and the command that fixes it) and records
# aggregated from outside this profile's grid.
onsuccess:
    print_at_exit(end_lines(W))


onerror:
    print_at_exit(end_lines(W))
