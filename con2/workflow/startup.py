"""What the Snakefile does before its rules and before the first job, typed and tested here, so that the
Snakefile itself holds no logic (issue 45, item 6): which profile file it reads (:func:`profile_to_read`: the
last run's here without ``--configfile``), the one check of the profile Snakemake merged (:func:`check_profile`),
the report's files not built yet (:func:`prepare_report`), and the ``onstart`` handler (:func:`on_start`).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config, validate

from con2.data import default_data_dir
from con2.errors import ConfigError
from con2.grid.checks import GridError, check_profile_schema, check_profile_size
from con2.run.signals import terminate_jobs_on_sigint, terminate_jobs_on_sigterm
from con2.workflow.console import install_grid_progress
from con2.workflow.heartbeat import start_heartbeat
from con2.workflow.holder import claim, held_by, holder_line
from con2.workflow.last_profile import UNBUILT_KEY as UNBUILT_KEY  # the report's landing text reads it
from con2.workflow.last_profile import (
    given_as,
    read_last_profile,
    recalled_profile,
    remember_profile,
    report_missing,
    report_mode,
    report_partial,
    unbuilt,
)
from con2.workflow.progress import ProgressLine

__all__ = ["FLAGS", "UNBUILT_KEY", "check_profile", "name_holder", "on_start", "prepare_report", "profile_to_read"]

#: the profile keys `--config key=true` sets, which arrive as the strings "true" / "false"
FLAGS = ("download", "strict", "progress", "compile")


def profile_to_read(
    config: MutableMapping[str, Any],
    argv: Sequence[str],
    default: str,
    checkout: str | Path = ".",
    overrides: Mapping[str, Any] | None = None,
    configfiles: Sequence[str | Path] = (),
) -> tuple[str | None, Path | None]:
    """``(profile file the Snakefile reads, recalled profile)`` when no ``--configfile`` gave a profile (``config``
    has no ``experiments``): the last run's profile here (con2/workflow/last_profile.py), for every command (a
    run, a dry run, a table rebuild, ``--report``), said in the first line the workflow prints (stderr), read as
    data into ``config`` by :func:`~con2.workflow.last_profile.read_last_profile` (never Snakemake's
    ``configfile``, which runs YTE templates), then the ``--config`` ``overrides`` over it, as Snakemake merges
    them: ``(None, recalled)``; without one, ``(default, None)``. ``checkout``: the workflow's folder, where the
    profile's rule files must lie. ``(None, None)`` when a profile was given; ``(default, None)`` when the
    ``configfiles`` given hold no ``experiments`` (an overlay such as docs/methods.md's ``my.yaml`` extends the
    default profile, as documented, whatever ran here last).

    Raises:
        WorkflowError: the recalled profile is too large, not YAML, or would run code (one line).
    """
    if "experiments" in config:
        return None, None
    recalled = None if configfiles else recalled_profile()
    if recalled is None:
        return default, None
    try:
        profile = read_last_profile(recalled, Path(checkout))
    except ConfigError as exc:
        raise WorkflowError(str(exc)) from None
    who = "con2 report" if report_mode(argv) else "con2 workflow"
    print(
        f"{who}: the profile of the last run here, {given_as(recalled)} ({recalled}): no --configfile was given "
        "(name one to use another profile)",
        file=sys.stderr,
    )
    update_config(config, profile)
    update_config(config, dict(overrides or {}))
    return None, recalled


def check_profile(config: MutableMapping[str, Any], schema: str | Path) -> None:
    """The one check of the profile Snakemake merged, before any rule reads it, in this order: its size
    (a YAML file of nested aliases expands to billions: refused before anything walks or prints it),
    ``data_dir`` defaulted (``$CON2_DATA_DIR``, else ``./data``), the :data:`FLAGS` given as ``"true"`` /
    ``"false"`` made booleans, then the ``schema`` (a JSON schema in YAML): first as one line naming the
    key, then Snakemake's own :func:`~snakemake.utils.validate`, which also fills in the schema's defaults.

    Raises:
        WorkflowError: ``invalid workflow config: <key>: <problem>``.
    """
    try:
        check_profile_size(config)
        config.setdefault("data_dir", str(default_data_dir()))
        for flag in FLAGS:
            if str(config.get(flag)).lower() in ("true", "false"):
                config[flag] = str(config[flag]).lower() == "true"
        _selection_as_given(config)
        check_profile_schema(config, schema)
    except GridError as exc:
        raise WorkflowError(f"invalid workflow config: {exc}") from None
    validate(config, str(schema))


#: the selection keys that take names (a dataset, a class, ``method`` or ``method/variant``)
NAME_SELECTIONS = ("only_datasets", "only_classes", "only_methods")


def _selection_as_given(config: MutableMapping[str, Any]) -> None:
    """The ``only_*`` keys as the schema takes them where ``--config`` parsed them otherwise: a number named
    alone (``only_classes=3`` arrives as the integer 3) is that name, and a list (``only_seeds=[0,1]`` arrives
    as the strings ``"0"``, ``"1"``) holds its seeds as integers."""
    for key in NAME_SELECTIONS:
        value = config.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            config[key] = str(value)
    seeds = config.get("only_seeds")
    if isinstance(seeds, list):
        config["only_seeds"] = [int(s) if isinstance(s, str) and s.strip().isdigit() else s for s in seeds]


def prepare_report(
    config: MutableMapping[str, Any],
    argv: Sequence[str],
    files: Sequence[str],
    recalled: Path | None,
    built: Callable[[str], bool] = os.path.isfile,
) -> list[str]:
    """For ``snakemake --report``: the report files of the profile (``files``) that are not ``built`` (their
    artefact whole on disk: :meth:`con2.workflow.artefact_files.ArtefactFiles.built`), said in one line on
    stderr and handed to the report's landing text under :data:`UNBUILT_KEY` of ``config``, which lists them (a
    partial grid: the report shows what exists, as the tables do); ``[]`` for any other command.

    Raises:
        WorkflowError: none of ``files`` is built (:func:`con2.workflow.last_profile.report_missing`'s line: a
            report of nothing is another profile's, or of results never built).
    """
    if not report_mode(argv):
        return []
    nothing = report_missing(files, recalled, built)
    if nothing:
        raise WorkflowError(nothing)
    partial = report_partial(files, recalled, built)
    if partial:
        print(partial, file=sys.stderr)
    config[UNBUILT_KEY] = unbuilt(files, built)
    return config[UNBUILT_KEY]


def name_holder(main_process: bool) -> str | None:
    """At the Snakefile's start, in the launch (not a job's own Snakemake): the line naming another live run
    that holds this results folder (:mod:`con2.workflow.holder`), printed to stderr before Snakemake may stop
    on a lock or a write-protected output; the line, or None."""
    held = held_by() if main_process else None
    if held is None:
        return None
    line = holder_line(held)
    print(line, file=sys.stderr, flush=True)
    return line


def on_start(
    logger: logging.Logger,
    config: Mapping[str, Any],
    configfiles: Sequence[str | Path],
    overrides: Mapping[str, Any],
    progress: ProgressLine,
    recalled: Path | None = None,
) -> None:
    """The Snakefile's ``onstart``: after Snakemake's signal handlers, before the first job (never in a dry run).

    SIGTERM (``timeout``, a cluster's time limit, ``kill PID``) and SIGINT stop the running jobs, each
    ``con2 train`` leaving its checkpoint, and then Snakemake, as Ctrl-C does; Snakemake's own handler would
    wait for them to finish, hours for a training run (con2/run/signals.py says why; a SIGINT inherited
    ignored, ``snakemake ... &`` in a script, stays ignored). The run's whole profile is written for
    ``snakemake --report`` (con2/workflow/last_profile.py), the grid's ETA goes under Snakemake's progress
    (con2/workflow/eta.py) and is printed once before the first job, and a heartbeat names each running job
    after 45 s without a line. ``configfiles``, ``overrides``: how the profile was given; ``recalled``: the
    last run's profile file, which this run read for want of a ``--configfile`` (:func:`profile_to_read`).
    """
    terminate_jobs_on_sigterm()
    terminate_jobs_on_sigint()
    try:  # a second launch here names this one (con2/workflow/holder.py); the file goes when this process exits
        claim(sys.argv)
    except OSError:  # a results/ that cannot be written fails its jobs, with their own error: not here
        pass
    try:
        remember_profile(config, configfiles, overrides, recalled_as=given_as(recalled) if recalled else "")
    except OSError as exc:  # a results/ that cannot be written fails its jobs, with their own error: not here
        logger.warning(f"con2 report: results/last_profile.yaml not written ({exc})")
    grid = install_grid_progress(logger, progress.line, progress.job_started)
    try:  # as its later updates (con2.workflow.console.GridProgress): an ETA never stops the workflow
        grid.last = progress.line()
    except Exception as exc:
        grid.last = f"con2 grid: no ETA ({type(exc).__name__}: {exc})"
    if grid.last:
        logger.info(grid.last)
    start_heartbeat(logger)
