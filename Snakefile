# con2-bench: the paper's experiment grid, every table and figure, one command.
#
#   snakemake --cores 2 all --configfile workflow/config/default.yaml  # the default profile (laptop CPU)
#   snakemake --cores 2 all --config data_dir=../shared/data           # data elsewhere (or CON2_DATA_DIR); profile: below
#   snakemake --cores 2 --configfile workflow/config/paper.yaml \
#       --config data_dir=/data device=cuda                             # the paper's grid (GPU)
#   snakemake --cores 2 all --configfile workflow/config/default.yaml workflow/config/cifar10.yaml \
#       --config only_datasets=cifar10 only_classes=airplane,automobile \
#       only_methods=floor_pixels,con2/invert,simclr only_seeds=0      # part of a grid: six runs
#   snakemake --cores 2 results/tables/table1_medical.md               # one artefact from the records on disk (trains nothing)
#   snakemake --report results/report.html                             # HTML report: what is built, and what is not
#
# Profiles live in workflow/config/ and are validated against workflow/schemas/config.schema.yaml.
# Without --configfile a command uses the profile of the last run in this folder (results/last_profile.yaml,
# said in its first line), else the default profile; `--config key=value` overrides scalars
# (data_dir, device, threads, download=false, strict=true) and selects part of the grid: only_datasets=a,b,
# only_classes=c,d, only_methods=m,m/variant (a method alone: all its variants), only_seeds=0,1; a name the
# grid lacks stops the launch naming the ones it has. Missing datasets are
# downloaded where no credentials are needed (Kaggle ones with credentials); what cannot be had is
# skipped and listed at the very end (strict=true: an error instead).

from snakemake.utils import min_version

import sys

from con2.workflow import startup as X  # what this file does before the rules and the first job, typed and tested

min_version("9.0")


# Without --configfile: the last run's profile here (results/last_profile.yaml; every command, said in its first
# line), read as data into config (never as a configfile: Snakemake runs YTE templates; its rule files are
# checked), else the default profile
_profile, _recalled = X.profile_to_read(
    config,
    sys.argv,
    f"{workflow.basedir}/workflow/config/default.yaml",
    workflow.basedir,
    dict(workflow.config_settings.overwrite_config or {}),
    workflow.config_settings.configfiles,  # an overlay given alone extends the default profile
)
if _profile is not None:

    configfile: _profile


# Its size, data_dir, the --config flags, then the schema (one line naming the key; Snakemake fills in its defaults)
X.check_profile(config, f"{workflow.basedir}/workflow/schemas/config.schema.yaml")

# Another live run in this results folder: one line naming it and the fix, before Snakemake's lock error
X.name_holder(workflow.is_main_process)


include: "workflow/rules/common.smk"


# A report of a partial grid shows what is built and lists the rest on its first page (nothing built: one line)
X.prepare_report(config, sys.argv, F.report_files(), _recalled, F.built)


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
        F.on_disk(F.table_files),  # on_disk: all of them, but in a report (which builds nothing) those built
        F.on_disk(F.study_files),  # as their records stand: a study table never shows an older profile's runs
        F.on_disk(F.figure_files),
        F.on_disk(F.aggregate_files),  # a deleted or never-written aggregate is rebuilt (artefact_files.py says why)
        F.on_disk(F.study_aggregate_files),
        W.grid_records.ready,  # a deleted run's record: trained again (con2.workflow.session, `grid_records` says why)
        W.grid_records.checked,
    message:
        "every table and figure of the profile"


rule studies:
    """The scoped tables of `report.scopes` (the fidelity study) and the figures that draw them (the length
    study's curves), each training only its own runs."""
    localrule: True
    input:
        F.on_disk(F.study_files),  # as in `all`
        F.on_disk(F.study_figure_files),  # the figures that draw a study's table (the length study's curves)
        F.on_disk(F.study_aggregate_files),  # as in `all`
        W.study_records.ready,  # as in `all`
        W.study_records.checked,
    message:
        "the studies: " + ", ".join(W.scopes)


rule runs:
    """Only the runs of the grid (records), no tables."""
    localrule: True
    input:
        W.all_records.ready,
        W.all_records.checked,
        D.status_input,
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


# Before the first job: SIGTERM and SIGINT stop the jobs (each leaving its checkpoint) and then Snakemake, the
# profile is remembered for the next command without --configfile, the grid's ETA and a heartbeat
# (con2/workflow/startup.py).
onstart:
    X.on_start(
        snakemake_logger,
        config,
        workflow.config_settings.configfiles,
        dict(workflow.config_settings.config or {}),
        PROGRESS,
        _recalled,
    )


# The last lines of every run: datasets skipped (why, and the command that fixes it) and records
# aggregated from outside this profile's grid.
onsuccess:
    print_at_exit(end_lines(W))


onerror:
    print_at_exit(end_lines(W))
