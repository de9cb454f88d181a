# Train and evaluate one run: `con2 train` fits the method, scores the test split (AUROC of every
# score, silhouette), and writes the run directory with record.json last. A killed run leaves a
# checkpoint and no record; the same command resumes it. Runs trained by `con2 train` are those of
# every method without its own rule file (see workflow/rules/methods/).


rule check_runs:
    """Build every distinct run config once (method params included) before any training starts."""
    localrule: True
    output:
        CHECK_FILE,
    params:
        settings=cli_distinct_settings(),
    log:
        "results/logs/check_runs.log",
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/check_runs.py"


rule train:
    """One (dataset, normal class, method, variant, seed) run via `con2 train`."""
    input:
        data=data_marker,
        checked=ancient(CHECK_FILE),
    output:
        record="results/runs/{dataset}/{normal_class}/{method}/{variant}/seed{seed}/record.json",
    params:
        overrides=train_overrides,
    log:
        "results/logs/train/{dataset}/{normal_class}/{method}/{variant}/seed{seed}.log",
    benchmark:
        "results/benchmarks/train/{dataset}/{normal_class}/{method}/{variant}/seed{seed}.tsv"
    wildcard_constraints:
        method=method_regex(CLI_METHODS),
    threads: config.get("threads", 1)
    resources:
        gpu=train_resource("gpu", 0),
        mem_mb=train_resource("mem_mb", 4000),
        runtime=train_resource("runtime", 60),
        cpus_per_task=train_resource("cpus", 1),
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/train_run.py"
