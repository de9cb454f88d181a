# Train and evaluate one run: `con2 train` reads the run's resolved config
# (results/configs/<run key>.<config hash>.yaml, written by the run_config job: a changed setting is
# a new hash, so a new file, which reruns that run alone), fits the method, scores the test split
# (AUROC of every score, silhouette) and writes the run directory with record.json last. Where the
# data live, the device, threads and progress come from the profile's top level (runtime keys:
# never in the hash, never a rerun). A killed run leaves a checkpoint and no record; the same
# command resumes it; a checkpoint of an older config is replaced (--replace-stale). Runs trained
# this way are those of every method without its own rule file (see workflow/rules/methods/). The
# run's log gets everything, one line per epoch (`tail -f` it); the console gets two lines per run:
# the first epoch's line with the run's ETA, and the result. Every path and value in
# the shell command is quoted (`:q`), and every name in it matches con2.paths.NAME_PATTERN.
# A dataset the profile declares by folder (docs/own_data.md) reaches `con2 train` in the environment:
# common.smk's register_profile_datasets sets $CON2_DATASETS when the Snakefile is read (on a cluster, the
# job's own Snakemake reads it again), and con2.data.registry registers it on import. No param and no run
# config key: a built-in dataset's run config hash is unchanged; a declared image_size is its runs' image_size.


rule run_config:
    """Write one run's resolved config (checked with the grid before any job). A job, not a side
    effect of reading the Snakefile: it runs under Snakemake's lock, so a second invocation (refused
    by the lock) never changes the config a running invocation trains with, and `-n` writes nothing.
    A shell job (a `run:` job would start a Snakemake process per run); the file appears whole."""
    localrule: True
    output:
        config=P.config_file_of(P.RUN_PATTERN, "{config_hash}"),
    params:
        text=J.run_config_text,
    log:
        f"results/logs/configs/{P.RUN_PATTERN}.{{config_hash}}.log",
    message:
        "config of {wildcards.dataset}/{wildcards.normal_class} {wildcards.method}/{wildcards.variant} seed {wildcards.seed}"
    wildcard_constraints:
        method=S.method_regex(W.grid.cli_methods),
        config_hash=P.CONFIG_HASH_REGEX,
    priority: J.train_priority  # its train job's: a train job is ready only once its config is written
    conda:
        "../envs/con2.yaml"
    shell:
        "printf '%s' {params.text:q} > {output.config:q}.tmp && mv {output.config:q}.tmp {output.config:q} "
        "&& echo wrote {output.config:q} > {log:q}"


rule train:
    """One (dataset, normal class, method, variant, seed) run via `con2 train`."""
    input:
        config=J.run_config_file,
        data=data_marker,
    output:
        record=f"{P.RUNS_ROOT}/{P.RUN_PATTERN}/record.json",
    params:
        runtime=J.runtime_set,
        run_dir=lambda wildcards, output: os.path.dirname(output.record),
    log:
        f"{P.LOG_ROOT}/{P.RUN_PATTERN}.log",
    benchmark:
        f"{P.BENCH_ROOT}/{P.RUN_PATTERN}.tsv"
    message:
        "train {wildcards.dataset}/{wildcards.normal_class} {wildcards.method}/{wildcards.variant} seed {wildcards.seed}"
    wildcard_constraints:
        method=S.method_regex(W.grid.cli_methods),
    threads: config.get("threads", 1)
    priority: J.train_priority
    resources:
        gpu=J.train_resource("gpu", 0),
        mem_mb=J.train_resource("mem_mb", 4000),
        runtime=J.train_resource("runtime", 60),
        cpus_per_task=J.train_resource("cpus", 1),
    conda:
        "../envs/con2.yaml"
    shell:
        "con2 train --config {input.config:q} --set {params.runtime:q} --run-dir {params.run_dir:q} --replace-stale "
        "--log {log:q}"
