# Evaluate: gather every record of the grid (validated by con2.records.read_record) into one tidy
# table, one row per run and score, plus the means and stds over seeds. Tables read only this.


rule evaluate:
    """All records of the grid -> results/evaluation/runs.csv and summary.csv."""
    localrule: True
    input:
        records=all_records(),
    output:
        runs=RUNS_CSV,
        summary=report(
            SUMMARY_CSV,
            caption="../report/summary.rst",
            category="Runs",
        ),
    log:
        "results/logs/evaluate.log",
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/evaluate.py"
