# Prepare data: locate (or, with `download: true`, download) a dataset, verify it and build its
# prepared cache at one image size, once, before any run reads it. A local rule: on a cluster it
# runs on the submit host, which is the one with a network.


rule prepare_data:
    """Locate, verify and prepare one dataset at one size; writes a JSON summary of what it found."""
    localrule: True
    output:
        summary="results/data/{dataset}/{size}px.json",
    log:
        "results/logs/prepare_data/{dataset}_{size}px.log",
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/prepare_data.py"
