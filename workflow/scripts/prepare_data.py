"""Snakemake script of rule prepare_data: find (or download) one dataset at one size, or skip it.

Through the data layer (``con2.data``): a dataset on disk is verified and prepared once; a missing
one is downloaded when the profile allows (``download``, default true: MedMNIST and CIFAR need no
credentials, Kaggle sets need them). The outcome goes to ``results/data/<dataset>/<size>px.json``:
``ok`` with its counts, or ``skipped`` with the reason and the command that fixes it (the training
jobs of a skipped dataset are left out and the workflow's last lines list it). With
``strict: true`` a dataset that cannot be had fails this job instead, naming it.
"""

import json
import sys
from pathlib import Path

snakemake = globals()["snakemake"]  # injected by Snakemake's script directive
sys.path.insert(0, str(snakemake.scriptdir))
from _log import logged  # noqa: E402


def main() -> int:
    from con2.atomic import atomic_path
    from con2.workflow.status import UNAVAILABLE, check_dataset

    dataset, size = snakemake.wildcards.dataset, int(snakemake.wildcards.size)
    cfg = snakemake.config
    marker = check_dataset(dataset, size, cfg["data_dir"], bool(cfg.get("download", True)))
    marker["check"] = (
        snakemake.params.check
    )  # what this outcome depends on (see DataCheck.params in con2/workflow/data_check.py)
    print(json.dumps(marker, indent=2))
    if marker["status"] != "ok" and cfg.get("strict", False):
        line = f"{dataset} ({size} px): {marker['reason']} Fix: {marker['fix']}"
        print(UNAVAILABLE + line)
        print(f"con2 workflow: dataset {dataset} is unavailable and strict=true: {line}", file=sys.__stderr__)
        return 1
    with atomic_path(Path(snakemake.output.marker)) as tmp:
        tmp.write_text(json.dumps(marker, indent=2) + "\n")
    return 0


with logged(snakemake):
    code = main()
if code:
    raise SystemExit(code)
