"""Snakemake script of rule prepare_data: locate, verify and prepare one dataset at one size.

Uses the registry (``con2.data``); downloads only when the profile says ``download: true``. Writes
a JSON summary (where the data came from, how many images, checksums) that the training jobs
depend on, so the prepared cache is built once and never by two jobs at the same time.
"""

import json
import sys
from pathlib import Path

snakemake = globals()["snakemake"]  # injected by Snakemake's script directive
sys.path.insert(0, str(snakemake.scriptdir))
from _log import logged  # noqa: E402


def main() -> None:
    from con2.data import DataError, get_info, load_one_class, prepare_dataset

    dataset, size = snakemake.wildcards.dataset, int(snakemake.wildcards.size)
    data_dir = snakemake.config.get("data_dir", "data")
    info = get_info(dataset)
    summary = {"dataset": info.name, "size": size, "data_dir": str(data_dir), "source": info.source}
    try:
        if info.source != "embedded":
            prep = prepare_dataset(info.name, data_dir, size, download=bool(snakemake.config.get("download")), progress=False)
            summary.update(
                prepared=str(prep.directory),
                n_images=int(len(prep.images)),
                images_sha256=prep.manifest.get("images_sha256"),
                location=str(prep.manifest.get("source", {}).get("location", "")),
            )
        data = load_one_class(info.name, data_dir, None, 0, size)
    except DataError as exc:
        raise SystemExit(f"prepare_data {dataset} {size}px: {exc}") from None
    summary.update(
        default_normal_class=data.normal_class,
        n_train=int(len(data.train)),
        n_test=int(len(data.test)),
        n_anomalous=data.n_anomalous,
    )
    print(json.dumps(summary, indent=2))
    Path(snakemake.output.summary).write_text(json.dumps(summary, indent=2) + "\n")


with logged(snakemake):
    main()
