# Data: find (or download) each dataset of the grid once, at each size its runs need, before any
# run reads it. Local rules: on a cluster they run on the submit host, the one with a network.
# A dataset that cannot be had is skipped (its runs are left out and listed at the end), or, with
# `strict: true`, fails here naming it. A dataset the profile declares by folder (docs/own_data.md) is
# known to the script through $CON2_DATASETS (see train.smk); a refused folder stops the workflow on its one
# line before any job (con2/data/profile_datasets.py).


rule prepare_data:
    """Find, verify and prepare one dataset at one size (downloading it where allowed), or skip it."""
    localrule: True
    output:
        marker=P.data_marker("{dataset}", "{size}"),
    params:
        check=D.check,
    log:
        "results/logs/prepare_data/{dataset}_{size}px.log",
    message:
        "data {wildcards.dataset} at {wildcards.size} px"
    priority: S.DATA_PRIORITY  # before any training: the longest runs (train_priority) wait for their data
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/prepare_data.py"


checkpoint data_status:
    """Which datasets of the grid are ready and which were skipped: the runs to train follow from it."""
    localrule: True
    input:
        [P.data_marker(d, s) for d, s in D.data_targets],
    output:
        S.DATA_STATUS,
    log:
        "results/logs/data_status.log",
    message:
        "data status of {} dataset(s)".format(len(D.data_targets))
    conda:
        "../envs/con2.yaml"
    script:
        "../scripts/data_status.py"
