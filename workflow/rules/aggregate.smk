# Aggregate: every record on disk (validated by con2.run.records.read_record) -> one tidy table, one row
# per run and score, plus the means and stds over seeds, and a bundle of every kept run's score files
# (scores.json.gz: the per-image scores the paired tests and operating points read). Tables read only
# these: no table opens a run folder. The grid decides
# what to train, never what to show: records outside it (another profile's, or a dataset that is
# unavailable now) are aggregated as they are and flagged (column in_grid), never dropped. A bad
# record (corrupt, against the schema, in a folder that is not its run's, e.g. a copied seed0.bak)
# is left out with one line naming it and the fix (the log, `skipped`, the workflow's last lines):
# one record never stops the aggregation, so the outputs are never lost to it.


rule aggregate:
    """All records -> results/evaluation/runs.csv, summary.csv and scores.json.gz."""
    localrule: True
    input:
        records=W.grid_records.ready,
        checked=W.grid_records.checked,
        status=D.status_input,
        scores=W.edited_scores,  # each record is checked against its score files by content (con2/aggregate/score_files.py)
    output:
        runs=S.RUNS_CSV,
        summary=report(
            S.SUMMARY_CSV,
            caption="../report/summary.rst",
            category="Runs",
        ),
        skipped=S.SKIPPED_CSV,
        scores=S.SCORES_BUNDLE,
    params:
        outside=W.records_outside,
        not_runs=W.not_run_records,
        grid=W.grid_hashes(),
        gone=W.gone_scores,  # score files a record keeps the sha256 of, missing now
    log:
        "results/logs/aggregate.log",
    message:
        "aggregate the records into {output.runs}"
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/aggregate.py"


rule aggregate_scope:
    """The records of a scoped table's experiments (`report.scopes`) -> results/evaluation/scopes/<table>.csv
    (and its scores bundle)."""
    localrule: True
    input:
        records=W.scope_records.ready,
        checked=W.scope_records.checked,
        status=D.status_input,
        scores=W.edited_scores,  # each record is checked against its score files by content (con2/aggregate/score_files.py)
    output:
        runs="results/evaluation/scopes/{scope}.csv",
        skipped="results/evaluation/scopes/{scope}.skipped.csv",
        scores="results/evaluation/scopes/{scope}.scores.json.gz",
    params:
        outside=W.scope_outside,
        grid=W.grid_hashes(),
        gone=W.gone_scores,
    log:
        "results/logs/aggregate_{scope}.log",
    message:
        "aggregate the records of table {wildcards.scope} into {output.runs}"
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/aggregate.py"
