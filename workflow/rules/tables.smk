# Tables: one rule (and one target) per entry of con2.report.artefacts.TABLES, each writing CSV
# (numbers), Markdown, LaTeX (booktabs, "mean ± std") and HTML from the files its builder reads
# (results/evaluation/runs.csv, the paper's numbers, the data status, ...), so deleting a table and
# naming it as the target rebuilds that table alone. A table made per dataset (`each`) has a
# {dataset} wildcard. The HTML (the Markdown's cells and notes, rounded as there) is the file the
# HTML report (`snakemake --report`) embeds; the CSV holds the unrounded numbers for machines.
# The profile settings a table is built from (report:, ...) are a param of its rule: changing one
# rebuilds the tables it shapes.


rule score_runtime:
    """Time S_NND and S_LH on synthetic features: training-set size n and number of scored batches."""
    output:
        csv=S.SCORE_RUNTIME_CSV,
    params:
        settings=dict(sorted((config.get("score_runtime") or {}).items())),  # sorted: the YAML's key order reruns nothing
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


for _name, _table in TABLES.items():

    rule:
        name:
            f"table_{_name}"
        localrule: True
        input:
            **A.inputs(_table),
        output:
            csv=f"results/tables/{_table.stem}.csv",
            md=f"results/tables/{_table.stem}.md",
            tex=f"results/tables/{_table.stem}.tex",
            html=report(f"results/tables/{_table.stem}.html", caption=A.caption(_name), category="Tables"),
        params:
            table=_name,
            **A.params(_table),
        log:
            f"results/logs/tables/{_table.stem}.log",
        message:
            f"table {A.label(_table)}"
        priority: 1 if _table.starts_first else 0  # the longest table job first among the steps after the runs
        conda:
            "../envs/con2.yaml"
        script:
            "../scripts/make_table.py"
