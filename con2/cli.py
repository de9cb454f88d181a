"""The ``con2`` command line: train, evaluate, list methods, manage data.

Examples::

    con2 train --config my_run.yaml --set dataset=breastmnist data_dir=../shared/data \
        --run-dir results/runs/breastmnist/con2/seed0
    con2 evaluate --run-dir results/runs/breastmnist/con2/seed0 --set tta=0 --out /tmp/no_tta
    con2 methods
    con2 data list
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from con2.errors import Con2Error, ConfigError, write_failure
from con2.plan import add_plan_subcommand

# Start-up imports only the standard library, yaml and con2's light modules (config, errors,
# rundir): `con2 --help` and a re-run of a finished `con2 train` answer without loading torch,
# pandas or the data layer, which the commands import when they need them.


def _summary(record: dict) -> str:
    m = record["metrics"]
    aurocs = "  ".join(f"AUROC[{k}]={v:.1f}" for k, v in m["auroc"].items())
    sil = f"  silhouette={m['silhouette']:.3f}" if m.get("silhouette") is not None else ""
    t = record["timing"]
    run = f"{record['dataset']}/{record['normal_class']} {record['method']}/{record['variant']} seed={record['seed']}"
    return f"{run}: {aurocs}{sil}  (fit {t['fit_seconds']:.0f}s, score {t['score_seconds']:.0f}s)"


def cmd_train(args: argparse.Namespace) -> int:
    from con2.config import load_config
    from con2.rundir import CHECKPOINT, COMPLETE, RECORD, REPLACE, RunDir

    cfg = load_config(args.config, args.set)
    rd = RunDir(args.run_dir)
    done = f"{rd.record} exists: run already complete (use --force to retrain)"
    if rd.plan(cfg, force=args.force, replace_stale=args.replace_stale) == COMPLETE:  # no torch needed
        print(done)
        return 0
    with rd.lock():
        action = rd.plan(cfg, force=args.force, replace_stale=args.replace_stale)  # again, as the one writer
        if action == COMPLETE:
            print(done)
            return 0
        if action == REPLACE:
            stored = rd.stored()
            assert stored is not None
            print(
                f"{rd.path}: removing {CHECKPOINT} and {RECORD}, written under another configuration "
                f"({rd.describe_change(stored, cfg)})",
                flush=True,
            )
        if args.force or action == REPLACE:
            rd.discard()
        from con2.runner import run

        record = run(cfg, rd.path)
    print(_summary(record))
    return 0


def evaluate_overrides(overrides: list[str], scoring_params: tuple[str, ...] = ()) -> None:
    """Refuse every ``--set`` key of ``con2 evaluate`` that would change the model rather than how it is scored.

    Allowed: :data:`con2.config.SCORING_KEYS`, :data:`con2.config.EVALUATE_RUNTIME_KEYS` and
    ``params.<name>`` for the ``scoring_params`` the run's method declares.
    """
    from con2.config import EVALUATE_RUNTIME_KEYS, SCORING_KEYS, parse_override

    allowed = (*SCORING_KEYS, *EVALUATE_RUNTIME_KEYS, *(f"params.{p}" for p in scoring_params))
    refused = [key for key in (parse_override(text)[0] for text in overrides) if key not in allowed]
    if refused:
        raise ConfigError(
            f"`con2 evaluate --set` changes only how the trained model is scored; refused: {', '.join(refused)} "
            f"(the record would describe another model than the checkpoint holds). Allowed: {', '.join(allowed)}. "
            f"Fix: drop them, or train that configuration with `con2 train` into another --run-dir"
        )


def cmd_evaluate(args: argparse.Namespace) -> int:
    from con2.config import RunConfig, load_config, read_yaml_mapping
    from con2.methods import get_spec
    from con2.rundir import RunDir

    src = RunDir(args.run_dir)
    if not src.config.is_file():
        raise ConfigError(f"{src.path} holds no {src.config.name}; pass the run directory written by `con2 train`")
    fix = (
        f"restore it from a backup, or retrain the run (`con2 train --run-dir {src.path} --force` with its "
        f"configuration); con2 train wrote it"
    )
    stored = read_yaml_mapping(src.config, what="run configuration", fix=fix)
    spec = get_spec(str(stored.get("method", RunConfig.method)))
    evaluate_overrides(args.set, tuple(getattr(spec, "scoring_params", ())))
    cfg = load_config(src.config, args.set)
    out = RunDir(args.out) if args.out else src
    with out.lock():
        from con2.runner import run

        record = run(cfg, out.path, train=False, weights=src.checkpoint)
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
        print(
            json.dumps(
                {
                    name: {
                        "description": cls.description,
                        "scores": list(cls.score_names),
                        "params": _method_params(cls),
                        "test_params": cls.test_params,
                    }
                    for name, cls in methods.items()
                },
                indent=2,
                default=list,
            )
        )
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
    p.add_argument(
        "--set", nargs="*", default=[], metavar="KEY=VALUE", help="overrides, e.g. epochs=8 params.temperature=0.2"
    )
    p.add_argument("--run-dir", required=True, help="output directory (resumes from its checkpoint)")
    p.add_argument(
        "--force",
        action="store_true",
        help="retrain from scratch: delete the run directory's checkpoint.pt and record.json first",
    )
    p.add_argument(
        "--replace-stale",
        action="store_true",
        help="if the run directory holds a checkpoint/record of another configuration, delete them and train "
        "(a finished run of this configuration stays complete)",
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
    add_plan_subcommand(sub)
    return parser


def run_command(args: argparse.Namespace) -> int:
    """Run a parsed command; errors a user can fix print as ``con2: error: ...`` and return 2."""
    try:
        return int(args.func(args))
    except Con2Error as exc:
        message = str(exc)
    except OSError as exc:  # disk full, read-only, missing file: say which path and what to do
        message = write_failure(exc) or (
            str(exc) if exc.filename is None or str(exc.filename) in str(exc) else f"{exc} ({exc.filename})"
        )
    except KeyboardInterrupt:
        print("con2: interrupted; rerun the same command to resume from the last checkpoint", file=sys.stderr)
        return 130
    print(f"con2: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    return run_command(build_parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
