"""The ``con2`` command line: train, evaluate, list methods, manage data.

Examples::

    con2 train --config workflow/config/run.yaml --set dataset=breastmnist data_dir=../shared/data \
        --run-dir results/runs/breastmnist/con2/seed0
    con2 evaluate --run-dir results/runs/breastmnist/con2/seed0 --set tta=0 --out /tmp/no_tta
    con2 methods
    con2 data list
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import shutil
import sys
from pathlib import Path

from con2.config import load_config
from con2.data import DataError
from con2.errors import ConfigError, NonFiniteLossError
from con2.records import RecordError


def _summary(record: dict) -> str:
    m = record["metrics"]
    aurocs = "  ".join(f"AUROC[{k}]={v:.1f}" for k, v in m["auroc"].items())
    sil = f"  silhouette={m['silhouette']:.3f}" if m.get("silhouette") is not None else ""
    t = record["timing"]
    run = f"{record['dataset']}/{record['normal_class']} {record['method']}/{record['variant']} seed={record['seed']}"
    return f"{run}: {aurocs}{sil}  (fit {t['fit_seconds']:.0f}s, score {t['score_seconds']:.0f}s)"


def _stale_files(run_dir: Path, config_hash: str) -> list[str]:
    """What in ``run_dir`` was written under a config hash other than ``config_hash`` (``--replace-stale``);
    a file whose hash cannot be read counts as stale."""
    import torch

    from con2.runner import CHECKPOINT, CONFIG, RECORD

    def hash_of(name: str) -> str | None:
        path = run_dir / name
        try:
            if name == RECORD:
                return str(json.loads(path.read_text())["config_hash"])
            if name == CHECKPOINT:
                return str(torch.load(path, map_location="cpu", weights_only=True)["fingerprint"])
            return load_config(path).config_hash()
        except (OSError, EOFError, RuntimeError, ValueError, KeyError, TypeError, pickle.UnpicklingError):
            return None  # unreadable (truncated, another format): its config is unknown, so it is stale

    return [n for n in (RECORD, CHECKPOINT, CONFIG) if (run_dir / n).is_file() and hash_of(n) != config_hash]


def cmd_train(args: argparse.Namespace) -> int:
    from con2.runner import CHECKPOINT, RECORD, run

    cfg = load_config(args.config, args.set)
    run_dir = Path(args.run_dir)
    if args.replace_stale and (stale := _stale_files(run_dir, cfg.config_hash())):
        print(
            f"{run_dir}: {', '.join(stale)} written under another config (not {cfg.config_hash()}); "
            f"removing {CHECKPOINT} and {RECORD} to train afresh"
        )
        for name in (RECORD, CHECKPOINT):
            (run_dir / name).unlink(missing_ok=True)
    if (run_dir / RECORD).exists() and not args.force:
        print(f"{run_dir / RECORD} exists: run already complete (use --force to retrain)")
        return 0
    if args.force and run_dir.exists():
        for name in (RECORD, CHECKPOINT):
            (run_dir / name).unlink(missing_ok=True)
    record = run(cfg, run_dir)
    print(_summary(record))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from con2.runner import CHECKPOINT, CONFIG, run

    src = Path(args.run_dir)
    if not (src / CONFIG).is_file():
        raise ConfigError(f"{src} holds no {CONFIG}; pass the run directory written by `con2 train`")
    cfg = load_config(src / CONFIG, args.set)
    out = Path(args.out) if args.out else src
    if out != src:
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / CHECKPOINT, out / CHECKPOINT)
    record = run(cfg, out, train=False)
    print(_summary(record))
    return 0


def _method_params(cls: type) -> dict:
    return {
        f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        for f in dataclasses.fields(cls.Params)
    }


def cmd_methods(args: argparse.Namespace) -> int:
    from con2.methods import all_methods

    methods = all_methods()
    if args.json:
        print(json.dumps({
            name: {"description": cls.description, "scores": list(cls.score_names),
                   "params": _method_params(cls), "test_params": cls.test_params}
            for name, cls in methods.items()
        }, indent=2, default=list))
        return 0
    for name, cls in methods.items():
        print(f"{name}: {cls.description}")
        print(f"  scores: {', '.join(cls.score_names)}")
        for k, v in _method_params(cls).items():
            print(f"  params.{k} = {v!r}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="con2", description="CON2 benchmark harness")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train and evaluate one run; writes a run directory")
    p.add_argument("--config", help="YAML run config (keys of con2.config.RunConfig)")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="overrides, e.g. epochs=8 params.temperature=0.2")
    p.add_argument("--run-dir", required=True, help="output directory (resumes from its checkpoint)")
    p.add_argument("--force", action="store_true", help="retrain even if the run directory holds a record")
    p.add_argument(
        "--replace-stale", action="store_true",
        help="if the run directory was written under another config, delete its checkpoint and record first "
        "(the workflow's train rule passes this; without it such a checkpoint is refused)",
    )
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="re-score a trained run (e.g. other test-time augmentations)")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    p.add_argument("--out", help="write the new record here instead of overwriting the run's")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("methods", help="list registered methods and their parameters")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_methods)

    try:
        from con2.data.cli import add_data_subcommands
    except ImportError:
        pass
    else:
        add_data_subcommands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (ConfigError, DataError, NonFiniteLossError, RecordError, FileNotFoundError) as exc:
        print(f"con2: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("con2: interrupted; rerun the same command to resume from the last checkpoint", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
