"""The Python side of the Snakemake workflow: everything ``workflow/rules/common.smk`` binds.

One :class:`~con2.workflow.session.Session` per Snakemake invocation, built once from the profile,
answers what the rules ask (the runs and their inputs, the data on disk and what waits for the data
check, what each table reads, what this invocation trains) and prints the progress and the last
lines. ``common.smk`` keeps only the bindings Snakemake needs, so every answer here is tested
without launching Snakemake.

Modules: :mod:`~con2.workflow.targets` (what the named targets train), :mod:`~con2.workflow.session`
(the invocation's runs and the records each aggregation reads), :mod:`~con2.workflow.data_check` (the
data on disk and what waits for the data check), :mod:`~con2.workflow.status` (a dataset's check, its
marker and fix, the closing lines), :mod:`~con2.workflow.run_jobs` (each run's jobs: config, settings,
priority, resources), :mod:`~con2.workflow.artefact_files` (the tables, figures and aggregates as files,
and which are built), :mod:`~con2.workflow.artefact_rules` (what a table or figure rule reads),
:mod:`~con2.workflow.progress` (the grid's ETA line and the last lines), :mod:`~con2.workflow.eta` (how
the ETA is estimated) and :mod:`~con2.workflow.console` (short rerun reasons, the progress filter).
"""
