"""Snakemake script of checkpoint data_status: the prepare_data outcomes of the grid in one file."""

import json
import sys
from pathlib import Path

snakemake = globals()["snakemake"]  # injected by Snakemake's script directive
sys.path.insert(0, str(snakemake.scriptdir))
from _log import logged  # noqa: E402


def main() -> None:
    from con2.atomic import atomic_path
    from con2.workflow.status import merge_status

    status = merge_status(snakemake.input)
    for key, marker in status.items():
        print(f"{key} px: {marker['status']}" + (f" ({marker['reason']})" if marker["status"] != "ok" else ""))
    with atomic_path(Path(snakemake.output[0])) as tmp:
        tmp.write_text(json.dumps(status, indent=2) + "\n")


with logged(snakemake):
    main()
