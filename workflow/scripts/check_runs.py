"""Snakemake script of rule check_runs: build every distinct run config once, before training.

The Snakefile already checks every RunConfig key when it parses the profile; this job also builds
each method with its ``params`` (which needs the method registry, i.e. torch), so a typo such as
``params.temprature`` fails here, naming the key, before any training job starts.
"""

import json
import sys
from pathlib import Path

snakemake = globals()["snakemake"]  # injected by Snakemake's script directive
sys.path.insert(0, str(snakemake.scriptdir))
from _log import logged  # noqa: E402


def main() -> None:
    from con2.config import make_config
    from con2.errors import ConfigError
    from con2.methods import build_method

    checked = []
    for settings in snakemake.params.settings:
        where = f"dataset {settings['dataset']!r}, method {settings['method']!r}, variant {settings['variant']!r}"
        try:
            cfg = make_config({**settings, "width": min(int(settings.get("width", 64)), 8), "device": "cpu"})
            build_method(cfg)
        except ConfigError as exc:
            raise SystemExit(f"invalid workflow config: {where}: {exc}") from None
        checked.append({"dataset": settings["dataset"], "method": settings["method"], "variant": settings["variant"],
                        "params": settings.get("params", {})})  # fmt: skip
        print(f"ok: {where}")
    Path(snakemake.output[0]).parent.mkdir(parents=True, exist_ok=True)
    Path(snakemake.output[0]).write_text(json.dumps(checked, indent=2) + "\n")


with logged(snakemake):
    main()
