"""``con2 plan``: runs, training images and estimated GPU-hours of a workflow profile, before it starts
(the arithmetic: :mod:`con2.grid.plan`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from con2.errors import ConfigError
from con2.grid.checks import GridError, check_profile_schema
from con2.grid.cost_tables import PAPER_HOURS_CSV, SIZES_CSV, THROUGHPUT_CSV
from con2.grid.plan import DEFAULT_PROFILE, plan_lines
from con2.text import terminal_safe
from con2.yaml_files import read_text_file, safe_yaml, yaml_problem


def load_profile(path: Path) -> dict[str, Any]:
    """A workflow profile config (YAML), as Snakemake's ``--configfile`` reads it."""

    fix = "pass a workflow profile, e.g. workflow/config/paper.yaml"
    if not path.exists():
        where = " (the default profile: run con2 plan from the checkout's root, or pass --configfile)"
        raise ConfigError(
            f"cannot read --configfile {path}: No such file or directory{where if path == DEFAULT_PROFILE else ''}"
        )
    text = read_text_file(path, "--configfile", fix)  # bounded: /dev/zero is refused, not read
    try:
        config = safe_yaml(text, f"--configfile {path}", fix)
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"--configfile {path} is not valid YAML ({yaml_problem(exc)}). Fix: correct that line"
        ) from None
    if not isinstance(config, dict) or "experiments" not in config:
        raise ConfigError(f"--configfile {path} is not a workflow profile (no `experiments:`); see workflow/config/")
    check_schema(config, path)  # its size: safe_yaml
    return config


# The workflow's schema of a profile (the Snakefile checks every profile against it), in the checkout con2 runs from.
PROFILE_SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


def check_schema(config: dict[str, Any], path: Path, schema: Path = PROFILE_SCHEMA) -> None:
    """Refuse a profile the workflow would refuse for its schema, with the workflow's own line (an unknown key: its
    name): :func:`con2.grid.checks.check_profile_schema`, on the profile as the Snakefile checks it (the flags
    given as ``"true"`` / ``"false"`` made booleans, :data:`con2.workflow.startup.FLAGS`). It used to plan a
    profile Snakemake then refused (issue 57, item 6).

    An install without its checkout (the wheel holds no workflow) has no schema beside the package: the plan is
    made unchecked and one line on stderr says so (planning a profile away from the checkout is a documented use;
    the workflow still checks the profile before it runs anything).

    Raises:
        ConfigError: ``--configfile PATH: <key>: <problem>. Fix: ...``.
    """
    if not schema.is_file():
        print(
            terminal_safe(
                f"con2 plan: note: --configfile {path} not checked against the workflow's schema, which is not "
                f"beside this install ({schema}); the workflow checks it before it runs. Fix: run con2 plan from a "
                "checkout of con2-bench (pip install -e .) to check it here"
            ),
            file=sys.stderr,
        )
        return
    checked: dict[str, Any] = dict(config)
    if any(isinstance(value, str) for value in checked.values()):
        from con2.workflow.startup import FLAGS  # lazy: it imports Snakemake; only a profile with text values

        for flag in FLAGS:
            if str(checked.get(flag)).lower() in ("true", "false"):
                checked[flag] = str(checked[flag]).lower() == "true"
    try:
        check_profile_schema(checked, schema)
    except GridError as exc:
        raise ConfigError(f"--configfile {path}: {exc}") from None


def cmd_plan(args: argparse.Namespace) -> int:
    config = load_profile(Path(args.configfile))
    tables = Path(args.throughput), Path(args.sizes), Path(args.paper_hours)
    for line in plan_lines(config, args.device, *tables, Path(args.data_dir) if args.data_dir else None):
        print(line)
    return 0


def add_plan_subcommand(sub: Any) -> None:
    """``con2 plan``: registered on the CLI's subparsers."""
    p = sub.add_parser("plan", help="runs, training images and estimated GPU-hours of a workflow profile")
    p.add_argument(
        "--configfile",
        default=str(DEFAULT_PROFILE),
        help="a workflow profile (default: workflow/config/default.yaml; the paper's: workflow/config/paper.yaml)",
    )
    p.add_argument("--device", default="h200", help="device whose measured throughput to use (default: h200)")
    p.add_argument("--throughput", default=str(THROUGHPUT_CSV), help="measured throughput table (CSV)")
    p.add_argument("--sizes", default=str(SIZES_CSV), help="training-set sizes where no manifest exists (CSV)")
    p.add_argument("--paper-hours", default=str(PAPER_HOURS_CSV), help="the paper's GPU-hours per run (CSV)")
    p.add_argument("--data-dir", help="where prepared data (split manifests) are looked for (default: the workflow's)")
    p.set_defaults(func=cmd_plan)
