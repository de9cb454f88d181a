# Tables: one rule (and one target) per paper artefact, each writing CSV (numbers), Markdown and
# LaTeX (booktabs, "mean ± std") from results/evaluation/runs.csv and the paper's numbers only, so
# deleting a table and naming it as the target rebuilds that table alone.

for _table in TABLES:
    if _table == "score_runtime":
        continue

    rule:
        name:
            f"table_{_table}"
        localrule: True
        input:
            runs=table_runs(_table),
            paper=PAPER_NUMBERS,
            hours=PAPER_HOURS,
        output:
            csv=report(f"results/tables/{_table}.csv", caption=caption(_table), category="Tables"),
            md=f"results/tables/{_table}.md",
            tex=f"results/tables/{_table}.tex",
        params:
            table=_table,
        log:
            f"results/logs/tables/{_table}.log",
        message:
            f"table {_table}"
        conda:
            "../envs/con2.yaml"
        script:
            "../scripts/make_table.py"


rule per_class_table:
    """AUROC per normal class of one dataset (report.per_class)."""
    localrule: True
    input:
        runs=RUNS_CSV,
        paper=PAPER_NUMBERS,
        hours=PAPER_HOURS,
    output:
        csv=report(
            "results/tables/per_class_{dataset}.csv",
            caption="../report/per_class.rst",
            category="Tables",
        ),
        md="results/tables/per_class_{dataset}.md",
        tex="results/tables/per_class_{dataset}.tex",
    params:
        table="per_class",
    log:
        "results/logs/tables/per_class_{dataset}.log",
    message:
        "table per_class_{wildcards.dataset}"
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/make_table.py"


rule score_runtime:
    """Time S_NND and S_LH on synthetic features: training-set size n and number of scored batches."""
    output:
        csv="results/score_runtime/score_runtime.csv",
    params:
        settings=config.get("score_runtime", {}),
    log:
        "results/logs/score_runtime.log",
    message:
        "time the NND and LH scores on synthetic features"
    benchmark:
        "results/benchmarks/score_runtime.tsv"
    threads: config.get("threads", 1)
    resources:
        gpu=(config.get("resources") or {}).get("gpu", 0),
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/score_runtime.py"


rule score_runtime_table:
    """The score-runtime measurements as a table."""
    localrule: True
    input:
        measured=rules.score_runtime.output.csv,
    output:
        csv=report(
            "results/tables/score_runtime.csv",
            caption="../report/score_runtime.rst",
            category="Tables",
        ),
        md="results/tables/score_runtime.md",
        tex="results/tables/score_runtime.tex",
    params:
        table="score_runtime",
    log:
        "results/logs/tables/score_runtime.log",
    message:
        "table score_runtime"
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/make_table.py"
