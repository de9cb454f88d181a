# Pixel NN: raw-pixel nearest neighbour, an external program wrapped by a Snakemake rule.
#
# pixel_nn.py beside this file stands in for any program: it writes per-sample scores (a `label`
# column, one column per score, higher = more anomalous), which `python -m con2.run.external`
# turns into scores.csv and a validated record.json (labelled "Pixel NN (NND)" in the tables) in
# the run's folder, so the run joins every table like a registered method's. In the workflow: name
# this file in `extra_rules` and the method in `extra_methods` (docs/methods.md, "Adding a baseline
# to the workflow"). Standalone:
#   snakemake -s baselines/examples/pixel_nn.smk --cores 1 --config data_dir=../shared/data -- \
#       results/runs/breastmnist/1/pixel_nn/default/seed0/record.json
import sys
from pathlib import Path

from con2.paths import NAME_REGEX, SEED_REGEX

_PIXEL_NN_PROGRAM = Path(workflow.current_basedir) / "pixel_nn.py"


def _pixel_nn_data(wildcards):
    """`--set` arguments that fix the run's test set: its split seed (never the training seed) and
    sizes. In the workflow they come from the run's resolved settings; standalone, from the
    config's `run:` block (default split_seed 0, image_size 28), exactly as `con2 train` resolves them."""
    if "run_settings_for" in globals():  # included in the workflow (workflow/rules/common.smk)
        settings = run_settings_for("pixel_nn")(wildcards)
    else:
        settings = dict(config.get("run") or {})
    keys = ("split_seed", "image_size", "data_size", "center_crop")
    return [f"{k}={settings[k]}" for k in keys if settings.get(k) is not None]  # a list: `:q` quotes each


rule pixel_nn:
    output:
        record="results/runs/{dataset}/{normal_class}/pixel_nn/{variant}/seed{seed}/record.json",
        scores="results/runs/{dataset}/{normal_class}/pixel_nn/{variant}/seed{seed}/scores.csv",
    log:
        "results/logs/pixel_nn/{dataset}/{normal_class}/{variant}/seed{seed}.log",
    message:
        "pixel_nn {wildcards.dataset}/{wildcards.normal_class} seed {wildcards.seed}"
    wildcard_constraints:  # the workflow's one name pattern (also when run standalone)
        dataset=NAME_REGEX,
        normal_class=NAME_REGEX,
        variant=NAME_REGEX,
        seed=SEED_REGEX,
    params:
        python=sys.executable,
        program=_PIXEL_NN_PROGRAM,
        data_dir=lambda wc: config.get("data_dir", "data"),
        run_dir=lambda wc, output: Path(output.record).parent,
        data=_pixel_nn_data,
        raw_scores=lambda wc, output: Path(output.record).parent / "raw_scores.csv",
    # every value quoted with `:q`: a data_dir such as '/x;touch PWNED;#' stays one argument; the
    # log gets both programs' output, the console its last line (the run's AUROC)
    shell:
        "{{ {params.python:q} {params.program:q} --data-dir {params.data_dir:q} --dataset {wildcards.dataset:q} "
        "--normal-class {wildcards.normal_class:q} --set {params.data:q} --out {params.raw_scores:q} && "
        "{params.python:q} -m con2.run.external --scores {params.raw_scores:q} --run-dir {params.run_dir:q} "
        "--dataset {wildcards.dataset:q} --normal-class {wildcards.normal_class:q} --method pixel_nn "
        "--label 'Pixel NN' --score-label nnd=NND --variant {wildcards.variant:q} --seed {wildcards.seed:q} "
        "--set {params.data:q} --data-dir {params.data_dir:q}; }} > {log:q} 2>&1 && tail -n 1 {log:q}"
