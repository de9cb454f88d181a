"""The ``con2`` command line: train, evaluate, list methods, manage data.

Examples::

    con2 train --config my_run.yaml --set dataset=breastmnist data_dir=../shared/data \
        --run-dir results/runs/breastmnist/con2/seed0
    con2 evaluate --run-dir results/runs/breastmnist/con2/seed0 --set tta=0 --out /tmp/no_tta
    con2 methods
    con2 data list
    con2 contexts --dataset breastmnist --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from con2.cli.common import error_message, run_command
from con2.cli.contexts import add_contexts_subcommand
from con2.cli.data import add_data_subcommands
from con2.cli.metrics import add_metrics_subcommand
from con2.cli.plan import add_plan_subcommand
from con2.config import (
    EVALUATE_RUNTIME_KEYS,
    SCORING_KEYS,
    RunConfig,
    dataclass_from_params,
    load_config,
    parse_override,
)
from con2.errors import Con2Error, ConfigError, RunDirError
from con2.grid.experiments import rule_file_methods
from con2.methods import all_methods, get_spec
from con2.methods.spec import MethodSpec
from con2.paths import RULE_METHODS_DIR
from con2.run.rundir import RunDir, unfinished_rescore
from con2.run.runner import rescore, run
from con2.run.signals import sigterm_as_interrupt
from con2.text import escaping, shell_command, terminal_safe
from con2.torch_support import warn_if_unsupported
from con2.yaml_files import read_text_file, read_yaml_mapping

# Start-up imports only the standard library, yaml and con2's light modules (config, errors,
# rundir, runner, the grid): `con2 --help` and a re-run of a finished `con2 train` answer without loading torch,
# pandas or the data layer, which the commands import when they need them.


def _result_line(record: dict, where: str | Path | None = None) -> str:
    """The one result line: the headline scores (plain names such as ``nnd``, ``lh``; the other
    readings, ``<score>@<reading>``, are counted and left to the record), the silhouette, the times
    and where the record is."""
    m = record["metrics"]
    heads = {k: v for k, v in m["auroc"].items() if "@" not in k}
    aurocs = "  ".join(f"AUROC[{k}]={v:.1f}" for k, v in heads.items())
    more = len(m["auroc"]) - len(heads)
    sil = f"  silhouette={m['silhouette']:.3f}" if m.get("silhouette") is not None else ""
    t = record["timing"]
    run = f"{record['dataset']}/{record['normal_class']} {record['method']}/{record['variant']} seed={record['seed']}"
    rec = f"  {more} more readings in {Path(where) / 'record.json'}" if where is not None and more else ""
    rec = rec or (f"  record: {Path(where) / 'record.json'}" if where is not None else "")
    return f"{run}: {aurocs}{sil}  (fit {t['fit_seconds']:.0f}s, score {t['score_seconds']:.0f}s){rec}"


def output_to_log(path: str) -> TextIO:
    """Send everything this process writes to stdout and stderr (progress, warnings, errors, also
    from C code) to the file ``path`` (created with its folder, truncated) and return a stream on the
    original stdout: the console, which then gets only what the caller writes to it."""
    log = Path(path)
    if log.is_dir():
        raise ConfigError(
            f"--log {path} is a folder; --log takes the path of a file to write. Fix: pass a file in it, e.g. "
            f"--log {log / 'train.log'}"
        )
    if log.exists() and not log.is_file():  # /dev/full, a FIFO: every line written after the run would fail
        raise ConfigError(
            f"--log {path} is not a regular file (a device or a pipe); --log takes the path of a file to write. Fix: "
            f"pass a file, e.g. --log train.log"
        )
    log.parent.mkdir(parents=True, exist_ok=True)
    console = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, sys.stdout.fileno())
    os.dup2(fd, sys.stderr.fileno())
    os.close(fd)
    return console


SCORING_LINE = re.compile(r"^scoring will encode (\d+) view\(s\) x \((\d+) \+ (\d+)(?: \+ (\d+) validation)?\) images")
EPOCH_PACE = re.compile(r"  (\d+(?:\.\d+)?) img/s  ETA (?:(\d+)h)?(?:(\d+)m)?(\d+)s$")


def scoring_seconds(log_text: str, views_per_image: int | None, ratio: float | None) -> float | None:
    """The final scoring's seconds from a run's log so far (issue 58, item 3: the first epoch's ETA covered
    training alone; a CON2 run said 3m49s and took 9.5 min, 200 s of it scoring): its up-front line's views x
    images ("scoring will encode 4 view(s) x (5000 + 10000) images ..."), each at ``ratio`` x the time of a
    training view, which the last epoch line's pace gives (its img/s x ``views_per_image``, the method's
    encoder passes per training image). ``ratio``: :func:`con2.grid.plan.measured_scoring_ratio`, the cost of a
    scoring view against a training view in the benchmarks' committed records. ``None`` where any is unknown."""
    lines = log_text.splitlines()
    planned = next((m for line in lines if (m := SCORING_LINE.match(line))), None)
    paces = [m for line in lines if line.startswith("epoch ") and (m := EPOCH_PACE.search(line))]
    if planned is None or not paces or not views_per_image or not ratio:
        return None
    views = int(planned[1]) * sum(int(n) for n in planned.groups()[1:] if n)
    per_second = float(paces[-1][1]) * views_per_image
    return views * ratio / per_second if per_second > 0 else None


def first_epoch_notice(log: str, run: str, console: TextIO, cfg: RunConfig | None = None) -> Callable[[int], None]:
    """An ``on_epoch_end`` hook that copies the first epoch line of this process (with its ETA) from
    the log to the console, once, with the final scoring's time after it (:func:`scoring_seconds`, from the
    run ``cfg``'s method) and the sum: ``digits/0 con2/invert seed=0: epoch 1/10 ... ETA 1m05s + scoring
    ~40s = ~1m45s left (log: PATH)``."""
    shown = False

    def hook(epoch: int) -> None:
        nonlocal shown
        if shown:
            return
        shown = True
        sys.stdout.flush()
        text = Path(log).read_text(errors="replace")
        lines = [line for line in text.splitlines() if line.startswith("epoch ")]
        if not lines:
            return
        print(f"{run}: {lines[-1]}{scoring_text(text, lines[-1], cfg)} (log: {log})", file=console, flush=True)

    return hook


def scoring_text(log_text: str, epoch_line: str, cfg: RunConfig | None) -> str:
    """`` + scoring ~40s = ~1m45s left`` after an epoch line's ETA (empty where the scoring cannot be priced)."""
    if cfg is None:
        return ""
    from con2.grid.plan import measured_scoring_ratio, views_per_image  # lazy: read once a run has trained an epoch
    from con2.training.engine import format_duration  # lazy: torch is loaded by now: the run is training

    kind = "cuda" if str(cfg.device).startswith("cuda") else "cpu" if cfg.device == "cpu" else device_kind_now()
    ratio = measured_scoring_ratio(kind)
    seconds = scoring_seconds(log_text, views_per_image(cfg.method, cfg.params), ratio.ratio if ratio else None)
    eta = EPOCH_PACE.search(epoch_line)
    if seconds is None or eta is None:
        return ""
    training = 3600 * int(eta[2] or 0) + 60 * int(eta[3] or 0) + int(eta[4])
    return f" + scoring ~{format_duration(seconds)} = ~{format_duration(training + seconds)} left"


def device_kind_now() -> str:
    """``cuda`` where this process can train on a GPU (``device: auto`` takes it), else ``cpu``."""
    import torch  # lazy: loaded by now: the run is training

    return "cuda" if torch.cuda.is_available() else "cpu"


def cmd_train(args: argparse.Namespace) -> int:

    console = output_to_log(args.log) if args.log else None
    try:
        cfg = load_config(args.config, args.set)
        check_method_params(cfg)
        # every line the run prints (its folder, a checkpoint's path, notes) to the log or the terminal, escaped
        with contextlib.redirect_stdout(escaping(sys.stdout)):
            return _train(args, cfg, RunDir(args.run_dir), escaping(console) if console else None)
    except (Con2Error, OSError) as exc:
        if console is not None:  # the error line on the console too (the traceback-free one; the log has it)
            print(f"con2: error: {terminal_safe(error_message(exc))}", file=console, flush=True)
        raise


def check_method_params(cfg: RunConfig) -> None:
    """Check the run's ``params`` against its method's ``Params`` (types and bounds such as
    ``params.head_dim``: :func:`con2.config.dataclass_from_params`) before the run directory is locked
    or torch loads; the method's pretrained weights are looked for later, by the run.

    Raises:
        ConfigError: an unknown method or parameter, or a value out of bounds, named.
    """
    spec = get_spec(cfg.method)
    dataclass_from_params(spec.Params, cfg.params, spec.name)


def _train(args: argparse.Namespace, cfg: RunConfig, rd: RunDir, console: TextIO | None) -> int:
    """``con2 train`` once its config is loaded (``console``: the terminal when ``--log`` took stdout)."""

    def say(line: str) -> None:  # to stdout (the log, with --log) and, with --log, to the console too
        print(line, flush=True)
        if console is not None:
            print(line, file=console, flush=True)

    complete: list[Path] = []
    where = f"{cfg.dataset}/{cfg.normal_class}" if cfg.normal_class is not None else cfg.dataset
    name = f"{where} {cfg.method}/{cfg.variant} seed={cfg.seed}"
    notice = first_epoch_notice(args.log, name, console, cfg) if console is not None and cfg.progress else None
    record = run(
        cfg,
        rd.path,
        on_epoch_end=notice,
        force=args.force,
        replace_stale=args.replace_stale,
        on_complete=complete.append,
        say=lambda line: print(line, flush=True),
    )
    if complete:
        say(terminal_safe(f"{rd.record} exists: run already complete (use --force to retrain)"))
    else:
        say(terminal_safe(_result_line(record, rd.path)))
    return 0


def evaluate_overrides(overrides: list[str], scoring_params: tuple[str, ...] = ()) -> None:
    """Refuse every ``--set`` key of ``con2 evaluate`` that would change the model rather than how it is scored.

    Allowed: :data:`con2.config.SCORING_KEYS`, :data:`con2.config.EVALUATE_RUNTIME_KEYS` and
    ``params.<name>`` for the ``scoring_params`` the run's method declares.
    """
    allowed = (*SCORING_KEYS, *EVALUATE_RUNTIME_KEYS, *(f"params.{p}" for p in scoring_params))
    refused = [key for key in (parse_override(text)[0] for text in overrides) if key not in allowed]
    if refused:
        raise ConfigError(
            f"`con2 evaluate --set` changes only how the trained model is scored; refused: {', '.join(refused)} "
            f"(the record would describe another model than the checkpoint holds). Allowed: {', '.join(allowed)}. "
            f"Fix: drop them, or train that configuration with `con2 train` into another --run-dir"
        )


def free_folder(base: Path) -> Path:
    """``base`` if it is free (absent, or an empty folder), else the first free ``base-2``, ``base-3``, ..."""

    def free(p: Path) -> bool:
        return not os.path.lexists(p) or (p.is_dir() and not p.is_symlink() and not any(p.iterdir()))

    n = 2
    candidate = base
    while not free(candidate):
        candidate = base.with_name(f"{base.name}-{n}")
        n += 1
    return candidate


def check_evaluate_out(src: RunDir, out: RunDir) -> None:
    """Refuse a ``con2 evaluate --out`` that is the run directory itself or holds any run file (another run,
    or an earlier re-scoring): its checkpoint, record and config would be replaced. The fix names a free folder.

    Raises:
        RunDirError: naming the files found and a free folder.
    """
    if os.path.realpath(out.path) == os.path.realpath(src.path):
        free = free_folder(src.path.with_name(f"{src.path.name}-rescored"))
        raise RunDirError(
            f"--out {out.path} is the run directory itself (--run-dir {src.path}): re-scoring there would replace "
            f"its record.json and config.yaml. Fix: pass a new folder, e.g. --out {free}"
        )
    held = out.holds_run_files()
    if held:
        raise RunDirError(
            f"--out {out.path} already holds {', '.join(held)} (another run, or an earlier re-scoring): writing there "
            f"would replace them. Fix: pass a new or empty folder, e.g. --out {free_folder(out.path)} (or delete "
            f"{out.path} first if its files are yours to discard)"
        )


def cmd_evaluate(args: argparse.Namespace) -> int:

    src = RunDir(args.run_dir)
    src.check_links()  # its config.yaml and checkpoint.pt are read: never through a link
    if not src.config.is_file():
        raise ConfigError(f"{src.path} holds no {src.config.name}; pass the run directory written by `con2 train`")
    retrain = shell_command("con2", "train", "--run-dir", src.path, "--force")
    fix = f"restore it from a backup, or retrain the run (`{retrain}` with its configuration); con2 train wrote it"
    stored = read_yaml_mapping(src.config, what="run configuration", fix=fix)
    spec = get_spec(str(stored.get("method", RunConfig.method)))
    evaluate_overrides(args.set, tuple(getattr(spec, "scoring_params", ())))
    cfg = load_config(src.config, args.set)
    check_method_params(cfg)
    elsewhere = args.out is not None  # "" never reaches here (check_path_options): it is no "no --out"
    out = RunDir(args.out) if elsewhere else src
    check = (lambda rd: check_evaluate_out(src, rd)) if elsewhere else None  # as the one writer, under the lock
    if elsewhere:
        check_evaluate_out(src, out)  # before loading torch: a refusal costs nothing
    record = rescore(cfg, out.path, src.checkpoint, before=check)
    print(terminal_safe(_result_line(record, out.path)))
    unfinished = unfinished_note(record, out.path, src)
    if unfinished:
        print(terminal_safe(unfinished))
    return 0


def unfinished_note(record: dict[str, Any], where: Path, src: RunDir) -> str:
    """The console's line for a re-scoring of a checkpoint that had not finished training (its record's
    ``rescored.unfinished``, :func:`con2.run.rundir.unfinished_rescore`), else ``""``: the record says so, and
    the aggregation leaves it out of every table, so the numbers just printed must say it too (issue 57)."""
    unfinished = unfinished_rescore(record)
    if not unfinished:
        return ""
    resume = shell_command("con2", "train", "--config", src.config, "--run-dir", src.path)
    return (
        f"note: {Path(where) / 'record.json'} was {unfinished}: its training had not finished, so these are not the "
        f"run's numbers and the tables leave this record out. Fix: finish the training (`{resume}` resumes it from "
        f"its checkpoint), then re-score"
    )


def _method_params(spec: MethodSpec) -> dict[str, Any]:
    """The defaults of a method's ``Params`` (a field without one is left out)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(spec.Params):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def rule_methods(args: argparse.Namespace) -> dict[str, dict[str, str]]:
    """The rule-based methods ``con2 methods`` lists: ``workflow/rules/methods/*.smk`` under
    ``--workflow`` (the workflow includes each) and the files given with ``--rules``."""
    found = sorted((workflow_checkout(args.workflow) / RULE_METHODS_DIR).glob("*.smk"))
    missing = [f for f in args.rules if not os.path.lexists(f)]
    if missing:
        raise ConfigError(
            f"--rules: no such rule file: {', '.join(missing)}. Fix: pass the path of a Snakemake rule file "
            f"(workflow/rules/methods/*.smk, or a profile's extra_rules)"
        )
    for f in args.rules:  # a folder, /dev/zero, a FIFO or a binary file (a checkpoint) is no rule file
        text = read_text_file(Path(f), "--rules", "pass a Snakemake rule file (.smk text)", kind="Snakemake rule file")
        if not RULE_LINE.search(text):  # /etc/passwd is text, and no rule file
            raise ConfigError(
                f"--rules {f} defines no Snakemake rule (no `rule NAME:` line), so no method. Fix: pass a Snakemake "
                f"rule file (workflow/rules/methods/*.smk, or a profile's extra_rules)"
            )
    return rule_file_methods([*found, *args.rules])


def workflow_checkout(given: str | None) -> Path:
    """The checkout ``con2 methods`` lists the rule files of: ``--workflow`` where given, which must be a folder
    holding the workflow's ``Snakefile`` (``/dev/zero``, a file or a folder that is no checkout listed nothing and
    exited 0: issue 57, item 6), else the current folder, as it is.

    Raises:
        ConfigError: naming the path, what it is and the fix.
    """
    if given is None:
        return Path(".")
    path = Path(given)
    if not path.is_dir():
        what = "does not exist" if not os.path.lexists(path) else "is not a folder"
    elif not (path / "Snakefile").is_file():
        what = "is a folder without a Snakefile, so no checkout of con2-bench"
    else:
        return path
    raise ConfigError(
        f"--workflow {given} {what}. Fix: pass the root of a con2-bench checkout (the folder holding its Snakefile "
        f"and {RULE_METHODS_DIR}/), or leave --workflow out for the current folder"
    )


# A rule's first line in a Snakemake file (what makes a file a rule file for `con2 methods --rules`).
RULE_LINE = re.compile(r"^(?:checkpoint|rule)\s+\w+\s*:", re.M)


def cmd_methods(args: argparse.Namespace) -> int:
    methods = all_methods()
    rules = rule_methods(args)
    if args.json:
        print(
            json.dumps(
                {
                    **{
                        name: {
                            "description": cls.description,
                            "scores": list(cls.score_names),
                            "params": _method_params(cls),
                            "test_params": cls.test_params,
                        }
                        for name, cls in methods.items()
                    },
                    **rules,
                },
                indent=2,
                default=list,
            )
        )
        return 0
    lines = []
    for name, cls in methods.items():
        lines.append(f"{name}: {cls.description}")
        lines.append(f"  scores: {', '.join(cls.score_names)}")
        lines += [f"  params.{k} = {v!r}" for k, v in _method_params(cls).items()]
    where = Path(args.workflow or ".") / RULE_METHODS_DIR
    if not rules:
        lines.append(f"rule-based methods: none in {where}/ (list a rule file with --rules FILE)")
    for name, info in rules.items():  # a rule file's name and first comment are anyone's text
        lines.append(f"{name}: {info['description'] or '(rule-based method)'}")
        lines.append(
            f"  rule file: {info['rule_file']} (trained by its own rule; a profile adds it with extra_methods)"
        )
    print("\n".join(terminal_safe(line) for line in lines))
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
    p.add_argument(
        "--log",
        metavar="PATH",
        help="write all output (one line per epoch, warnings, errors) to PATH; the console gets the first "
        "epoch's line with the ETA and the result line (what the workflow's train jobs do)",
    )
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="re-score a trained run (e.g. other test-time augmentations)")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    p.add_argument(
        "--out",
        help="write the new record here instead of overwriting the run's: a new or empty folder (one holding a "
        "run's files, or the run directory itself, is refused)",
    )
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser(
        "methods", help="list registered methods and their parameters, and the workflow's rule-based methods"
    )
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--workflow",
        metavar="DIR",
        help="the checkout (a folder holding the Snakefile) whose workflow/rules/methods/*.smk to list (default: the "
        "current directory)",
    )
    p.add_argument(
        "--rules", nargs="*", default=[], metavar="FILE", help="more rule files to list (a profile's extra_rules)"
    )
    p.set_defaults(func=cmd_methods)

    add_data_subcommands(sub)
    add_plan_subcommand(sub)
    add_contexts_subcommand(sub)
    add_metrics_subcommand(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``con2`` command: one warning line first where the installed torch is outside the supported range
    (:mod:`con2.torch_support`: the line names the version and the install command), then the subcommand."""
    if argv is None:  # the `con2` command (not a call from Python): SIGTERM stops it as Ctrl-C does
        sigterm_as_interrupt()
    warn_if_unsupported()
    return run_command(build_parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
