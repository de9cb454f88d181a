# Shared Python for the rules: the grid of runs, their resolved configs, which datasets are
# available, what the aggregation reads, and the summary printed at the very end.
# (Functions only: Snakemake's linter wants functions and rules in separate files.)

import atexit
import collections
import functools
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger as snakemake_logger

from con2 import paths as P  # where runs, configs, logs live; the name pattern
from con2.resources import resource
from con2.grid import experiments as E
from con2.config import RUNTIME_KEYS
from con2.report.artefacts import FIGURES, MISSING_FILE, TABLES, figure_targets, table_targets
from con2.grid.console import hashed, install_grid_progress, install_short_reasons
from con2.grid.status import awaits_training, checked_in, same_folder, unknown_class

WORKFLOW_DIR = Path(workflow.basedir)
DATA_DIR = Path(os.path.abspath(os.path.expanduser(config["data_dir"])))  # normalised once: how messages name it
STARTED = time.time()
STRICT = bool(config.get("strict", False))
# A job's `Reason:` lists at most a few files per part (the target `all` listed every table and
# figure): con2/grid/console.py. Params that hold whole profiles or file lists are `hashed`:
# compared as before, printed as `<label hash>`.
install_short_reasons(snakemake_logger)


def registry_normal_classes(name):
    """The registry's normal classes of a dataset (one run each)."""
    from con2.data import DataError, normal_classes

    try:
        return normal_classes(name)
    except DataError as exc:
        raise E.GridError(f"datasets.{name}: {exc}") from None


def method_rule_files():
    """Extra rule files (workflow/rules/methods/*.smk and the extra_rules of the config)."""
    files = sorted(glob.glob(str(WORKFLOW_DIR / "workflow" / "rules" / "methods" / "*.smk")))
    return files + [str(Path(f).resolve()) for f in config.get("extra_rules", [])]


def grid_error(message):
    return WorkflowError(f"invalid workflow config: {message}")


def workflow_grid():
    """The grid of runs: every name checked against one pattern, every run config resolved and
    checked once, the report block checked against the profile (errors name the key); the runs
    whose method lacks its pretrained weights left out and listed at the end (with strict=true the
    first one fails the workflow, naming the file and the fix). Nothing is written here: each
    run's config file is the output of its `run_config` job (rules/train.smk)."""
    try:
        return E.workflow_grid(config, registry_normal_classes, OWN_RULE_METHODS, STRICT, unknown_class, TABLES)
    except E.GridError as exc:
        raise grid_error(exc) from None


def method_regex(methods):
    """A wildcard constraint matching exactly these method names (or nothing)."""
    return "|".join(sorted(methods)) if methods else "(?!x)x"


def runtime_set(wildcards, threads):
    """`con2 train --set` arguments of the runtime keys the profile sets, threads the job's own (a
    list, each quoted by the train command's `:q`). A param computed from the job's threads is one
    Snakemake never counts as a rerun trigger: right for keys that never change results
    (data_dir, device, ...)."""
    values = {k: config[k] for k in RUNTIME_KEYS if k in config}
    values["threads"] = threads
    return [f"{k}={json.dumps(v)}" for k, v in values.items()]


# ------------------------------------------------------------------------------------------ the grid
OWN_RULE_FILES = method_rule_files()
OWN_RULE_METHODS = {Path(f).stem for f in OWN_RULE_FILES}
GRID = workflow_grid()
RUNS, WEIGHTS_MISSING, CLI_METHODS = GRID.runs, GRID.missing_weights, GRID.cli_methods
RUN_INDEX = E.run_index(RUNS)
DATA_TARGETS = E.data_targets(RUNS)
# every record on disk when the workflow starts (aggregation reads all of them, not only the grid's),
# and the record.json files whose folders are not a run key (a copied seed0.bak): never a run
RECORDS_ON_DISK, NOT_RUN_RECORDS = P.records_on_disk()
NOT_RUN_RECORDS = hashed(NOT_RUN_RECORDS, "not_runs")

REPORT = config.get("report") or {}
SCOPED_TABLES = list(REPORT.get("scopes") or {})  # studies: built when named (or by `snakemake studies`)
TABLE_FILES = [f for f in table_targets(REPORT) if Path(f).stem not in SCOPED_TABLES]
STUDY_FILES = [f for f in table_targets(REPORT) if Path(f).stem in SCOPED_TABLES]
FIGURE_FILES = figure_targets(REPORT)
# the paper's tables are package data (con2.resources: wherever con2 is installed)
def stable_path(path):
    """``path`` relative to the working directory when inside it (a moved checkout keeps its input
    sets), else absolute (a copy of the workflow elsewhere names the installed package the same way)."""
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else os.path.abspath(path)


PAPER_NUMBERS = stable_path(resource("paper_numbers.csv"))
PAPER_HOURS = stable_path(resource("paper_compute_hours.csv"))
RUNS_CSV = "results/evaluation/runs.csv"
SCORE_RUNTIME_CSV = "results/score_runtime/score_runtime.csv"
GPU_MEASURED = os.path.relpath(WORKFLOW_DIR / "benchmarks" / "measured")
SUMMARY_CSV = "results/evaluation/summary.csv"
SKIPPED_CSV = "results/evaluation/skipped.csv"  # the records evaluate left out: file, problem, fix
DATA_STATUS = f"{P.DATA_ROOT}/status.json"


def run_of(wildcards, method=None):
    """The grid's Run for a job's wildcards (``method`` for rules whose output names it literally)."""
    method = method or getattr(wildcards, "method", None)
    if method is None:
        raise WorkflowError("this rule's output has no {method} wildcard: use data_marker_for('<method>') / run_settings_for('<method>')")
    key = P.run_key(wildcards.dataset, wildcards.normal_class, method, wildcards.variant, wildcards.seed)
    try:
        return RUN_INDEX[key]
    except KeyError:
        raise WorkflowError(f"{key} is not a run of this profile's grid (see `experiments` in the config)") from None


DATA_PRIORITY = 2000  # above every train_priority: a dataset is checked and prepared before training starts


@functools.cache
def _train_priorities():
    """{run key: Snakemake priority} of the grid's runs (con2.grid.eta's weights, sizes from the sizes
    table): a method whose cost is unknown first, then the larger runs."""
    from con2.grid.eta import weigh_runs  # lazy: the weights are needed once, when the DAG is built

    planned = weigh_runs(RUNS, None, None)
    return {
        key: 1000 if not p.priced else int(round(10 * math.log10(1.0 + p.weight + p.score_images)))
        for key, p in planned.items()
    }


def train_priority(wildcards):
    """Longest first (issue 36): a run of a method whose cost the ETA cannot price (I-JEPA-AD's ViT)
    starts at once, so its pace is known early, then the runs by planned cost. A grid whose longest
    run starts last ends with one job slot idle (the default profile: I-JEPA-AD's 688 s at the end)."""
    try:
        return _train_priorities().get(run_of(wildcards).key, 0)
    except Exception:  # a priority never stops the workflow: an unplannable grid runs in Snakemake's order
        return 0


def run_config_file(wildcards):
    """The resolved config a `con2 train` job reads (results/configs/<key>.<hash>.yaml: the output of
    its run_config job)."""
    return run_of(wildcards).config_file


def run_config_text(wildcards, output):
    """The run_config job's param: the YAML text of the run's resolved config (its method checked
    with the grid). The file's name carries the config hash, so a file never holds another config
    than the grid's (files of older hashes stay, unread); a name of another hash is refused."""
    run = run_of(wildcards)
    if run.config_file != output.config:
        raise WorkflowError(f"{output.config}: this profile's run {run.key} has config hash {run.config_hash}: {run.config_file}")
    return E.run_config_text(run.run_config)


def data_marker(wildcards, method=None):
    """The prepare_data output a run needs (ancient: re-checking the data never retrains)."""
    run = run_of(wildcards, method)
    return ancient(P.data_marker(run.dataset, run.data_size))


def data_marker_for(method):
    """Input function for a baseline rule whose output path spells its method (no {method} wildcard)."""
    return lambda wildcards: data_marker(wildcards, method)


def run_settings_for(method):
    """Params function for a baseline rule: the run's resolved config (every RunConfig key but the runtime ones)."""
    return lambda wildcards: dict(run_of(wildcards, method).config)


def train_resource(name, default):
    """A training job's resource from `resources` (per dataset, then profile-wide)."""

    def get(wildcards):
        ds = (config["datasets"].get(wildcards.dataset) or {}).get("resources") or {}
        return ds.get(name, (config.get("resources") or {}).get(name, default))

    return get


# ------------------------------------------------------------------------------------------ the data
def found_on_disk(dataset, size):
    """The data layer's Found for the dataset under data_dir (no network), or None."""
    from con2.data import DataError, find_source

    try:
        return find_source(dataset, DATA_DIR, int(size))
    except DataError:
        return None


def dataset_on_disk(dataset, size):
    """True if the dataset's files are under data_dir (no network; the data layer's own search)."""
    return found_on_disk(dataset, size) is not None


def embedded_source(dataset, size):
    """The fingerprint of a dataset kept without files (a description, not a path, as its location:
    scikit-learn's digits), else None."""
    found = found_on_disk(dataset, size)
    return None if found is None or isinstance(found.location, Path) else found.fingerprint


def awaits_data(dataset, size):
    """True if a run of the grid on this dataset at this size would train now (no record yet, or a
    changed config): a run that reads the data, not only its record."""
    return any(
        awaits_training(r.record, r.config_file) for r in RUNS if r.dataset == dataset and r.data_size == int(size)
    )


def data_check(wildcards):
    """prepare_data's params: what its outcome depends on. A dataset found ready keeps the value it
    was checked with (no re-check, so no rerun) while data_dir names the folder it was checked in
    and its files are still there, or while no run of it would train (a table rebuild of a finished
    grid reads records only); with another data_dir, or its files gone from this one (a run deleted
    after its data: `rm -rf` the run folder), and runs left to train it is checked again there, so
    data missing there skip the dataset (its unfinished runs are not scheduled; its records stay in
    the tables, a deleted one leaves them) instead of failing its training jobs. A skipped one is
    checked again when data_dir, download or strict change or when its files appear on disk
    (`con2 data get`). A dataset without files (the embedded digits) depends on none of these: its
    value is its source's fingerprint alone, so a profile with another data_dir or download setting
    does not check it again. (A data check that runs again would hide, until it has run, the runs
    of that dataset whose setting changed: in Snakemake 9 the jobs below a job that must run are
    not checked on their own, and an `ancient` input does not pass the rerun down.)"""
    embedded = embedded_source(wildcards.dataset, wildcards.size)
    if embedded:
        return {"embedded": embedded}
    marker = Path(P.data_marker(wildcards.dataset, wildcards.size))
    if marker.is_file():
        try:
            found = json.loads(marker.read_text())
        except (OSError, ValueError):
            found = {}
        if "check" in found and not trains_anything():  # a rebuild: the data stay as last checked
            return found["check"]
        if found.get("status") == "ok" and "check" in found:
            here = same_folder(checked_in(found), config["data_dir"])
            if (here and on_disk_at_start(wildcards.dataset, wildcards.size)) or not awaits_data(
                wildcards.dataset, wildcards.size
            ):
                return found["check"]
    return {
        "data_dir": str(DATA_DIR),
        "download": bool(config.get("download", True)),
        "strict": STRICT,
        "on_disk": dataset_on_disk(wildcards.dataset, wildcards.size),
    }


def data_status():
    """{"<dataset>/<size>": marker} of the grid's data, once the data_status checkpoint has run."""
    return json.loads(Path(checkpoints.data_status.get().output[0]).read_text())


_ON_DISK = {}  # (dataset, size) -> on disk when the workflow started
_READY = {}  # run key -> scheduled before the data check (`ready`)


def on_disk_at_start(dataset, size):
    """True if the dataset's files were under data_dir when the workflow started (asked once)."""
    key = (dataset, int(size))
    if key not in _ON_DISK:
        _ON_DISK[key] = dataset_on_disk(dataset, size)
    return _ON_DISK[key]


def ready(run):
    """True for a run scheduled before the data check: its dataset's files are on disk when the
    workflow starts, and it trains or its data marker is there. (A finished run whose marker is
    gone waits for the check: a marker that a job writes anew makes every run reading it "updated
    by another job", `ancient` or not, and the run would retrain.)"""
    if run.key not in _READY:  # decided once, at the start: a marker or record written later changes nothing
        _READY[run.key] = on_disk_at_start(run.dataset, run.data_size) and (
            os.path.exists(P.data_marker(run.dataset, run.data_size)) or awaits_training(run.record, run.config_file)
        )
    return _READY[run.key]


def ready_runs():
    """The runs scheduled before the data check: every run with strict=true, else the `ready` ones.
    Snakemake knows their jobs from its first line, so its step total ("N of M steps") stays put
    through the data check; a dataset that is fetched (or skipped) joins after the check
    (`checked_runs`). One found on disk whose check then fails (a damaged copy) fails its training
    jobs with the check's error instead of being skipped."""
    if STRICT:
        return RUNS
    return [r for r in RUNS if ready(r)]


def checked_runs():
    """The other runs whose data prepare_data found ready (or downloaded): known after the data check."""
    if STRICT:
        return []
    status = data_status()
    return [r for r in RUNS if not ready(r) and (status.get(f"{r.dataset}/{r.data_size}") or {}).get("status") == "ok"]


def available_runs():
    """The runs whose data are ready: `ready_runs` and `checked_runs` (after the data check); in a
    rebuild (nothing trains), the `finished_runs`."""
    if not trains_grid():
        return finished_runs()
    return ready_runs() + checked_runs()


def status_file(wildcards):
    """The data status a table's notes read: the checkpoint's file; in a rebuild, the file as the last
    check left it, and none where a dataset was never checked (a rebuild checks no data)."""
    if trains_anything() or all(os.path.exists(P.data_marker(d, s)) for d, s in DATA_TARGETS):
        return [DATA_STATUS]
    return []


def status_input(wildcards):
    """The data-status checkpoint as an input of rules whose inputs depend on it (none when strict;
    in a rebuild, the file as the last check left it: `status_file`, the input set unchanged)."""
    return [] if STRICT else status_file(wildcards)


# ------------------------------------------------------------------------------------------ targets
# What this invocation may train follows from its targets (read when the DAG is built: Snakemake sets
# them after parsing this file). `all`, `runs`, a record: the grid's runs; `studies` or a study's table:
# that study's runs; a table, figure or aggregate named alone: nothing. A rebuild reads the records on
# disk and never trains, checks or downloads data, whatever data_dir says (issue 36, point 4).
ARTEFACT_DIRS = ("results/tables/", "results/figures/", "results/evaluation/", "results/score_runtime/")


def named_targets():
    """The targets named on the command line, paths relative to the working directory (empty: `all`)."""
    settings = getattr(workflow, "dag_settings", None)
    targets = settings.targets if settings is not None else ()
    return [t if "/" not in t else os.path.relpath(os.path.abspath(t)) for t in targets]


def target_scope(target):
    """The study (a scope of `report.scopes`) a target trains, or None."""
    if target.startswith("table_") and target[len("table_") :] in SCOPED_TABLES:
        return target[len("table_") :]
    for prefix in ("results/tables/", "results/evaluation/scopes/"):
        if target.startswith(prefix):
            stem = Path(target).name.split(".")[0]
            return stem if stem in SCOPED_TABLES else None
    return None


def is_artefact(target):
    """True for a target that only reads records: a table (not a study's), a figure, an aggregate."""
    if target_scope(target) is not None:
        return False
    return target == "evaluate" or target.startswith(("table_", "figure_")) or target.startswith(ARTEFACT_DIRS)


def trains_grid():
    """True if this invocation trains the grid's runs (`all`, `runs`, a record, any other target)."""
    return not all(is_artefact(t) or target_scope(t) or t == "studies" for t in named_targets() or ["all"])


def trains_scope(scope):
    """True if this invocation trains a study's runs: `studies`, or the study's table named."""
    return any(t == "studies" or target_scope(t) == scope for t in named_targets())


def trains_anything():
    return trains_grid() or any(trains_scope(s) for s in SCOPED_TABLES)


def finished_runs():
    """The grid's runs a rebuild reads as inputs: a record, its config unchanged and its data marker
    there, so no job above it has a reason to run (their records stay inputs, as in `all`: the
    aggregation's params, and so its rerun, are the same in both). Any other record on disk is read
    as it is (`records_outside`)."""
    return [
        r
        for r in RUNS
        if not awaits_training(r.record, r.config_file) and os.path.exists(P.data_marker(r.dataset, r.data_size))
    ]


# ------------------------------------------------------------------------------------------ aggregation
def scoped_experiments():
    """The experiments of every scoped table (`report.scopes`, e.g. the fidelity study)."""
    return {e for exps in (REPORT.get("scopes") or {}).values() for e in exps}


def scoped_only(run):
    """True for a run that only scoped tables (`report.scopes`, e.g. the fidelity study) need."""
    return bool(run.experiments) and set(run.experiments) <= scoped_experiments()


def grid_records(wildcards, runs=ready_runs):
    """Records the main aggregation trains (or keeps up to date): every run whose data are
    available, but those only a scoped table needs (they train when that table is the target).
    Two inputs: the `ready_runs` (known from the start) and the `checked_runs` (after the data
    check): an input function that waits for a checkpoint holds back only its own files.
    Also inputs of the target `all` (`study_records` of `studies`): Snakemake 9 rebuilds a deleted
    file only when a job that must run needs it, and a missing input is no reason to run for a job
    that is not a target, so a finished run deleted from disk (`rm -rf` its folder or its
    record.json) left `evaluate` up to date: neither retrained nor dropped, its rows stayed in
    runs.csv and the tables. A missing input is such a reason for a target without outputs (`all`):
    the run trains again, and the aggregation and the tables are rebuilt from its new record."""
    if not trains_grid():  # a rebuild: the finished runs (known from the start; no data check)
        return [r.record for r in finished_runs() if not scoped_only(r)] if runs is ready_runs else []
    return [r.record for r in runs() if not scoped_only(r)]


def checked_grid_records(wildcards):
    return grid_records(wildcards, checked_runs)


def study_records(wildcards, runs=ready_runs):
    """Records of the runs of every scoped table (rule `studies`; two inputs as in `grid_records`)."""
    scoped = scoped_experiments()
    return [r.record for r in runs() if scoped & set(r.experiments)]


def study_checked_records(wildcards):
    return study_records(wildcards, checked_runs)


def all_grid_records(wildcards, runs=ready_runs):
    """Records of every run of the grid whose data are available (rule `runs`; two inputs as in `grid_records`)."""
    return [r.record for r in runs()]


def all_checked_records(wildcards):
    return all_grid_records(wildcards, checked_runs)


def records_outside(wildcards):
    """Records on disk that the grid does not (re)build: other profiles', or runs of a dataset that
    is unavailable now. Aggregated as they are; their names and mtimes (a param, so not derived
    from the inputs: Snakemake compares it) make aggregation rerun when one appears, changes or
    disappears."""
    tracked = {r.record for r in available_runs() if not scoped_only(r)}
    return hashed([f"{p}@{os.stat(p).st_mtime_ns}" for p in RECORDS_ON_DISK if p not in tracked], "outside")


def scope_experiments(scope):
    """The experiments whose runs feed a scoped table (`report.scopes`)."""
    return set((REPORT.get("scopes") or {})[scope])


def scope_records(wildcards, runs=ready_runs):
    """Records a scoped table needs: the available runs of its experiments (naming the table as the
    target trains only these; two inputs as in `grid_records`)."""
    exps = scope_experiments(wildcards.scope)
    if not trains_scope(wildcards.scope):  # `all` or a rebuild: the study's finished runs, none trained
        return [r.record for r in finished_runs() if exps & set(r.experiments)] if runs is ready_runs else []
    return [r.record for r in runs() if exps & set(r.experiments)]


def scope_checked_records(wildcards):
    return scope_records(wildcards, checked_runs)


def scope_outside(wildcards):
    """Records on disk of the scope's runs that the grid does not rebuild now (their data are
    unavailable): kept, as in `records_outside`."""
    exps = scope_experiments(wildcards.scope)
    tracked = {*scope_records(wildcards), *scope_checked_records(wildcards)}
    keys = {r.record for r in RUNS if exps & set(r.experiments)}
    return hashed([f"{p}@{os.stat(p).st_mtime_ns}" for p in RECORDS_ON_DISK if p in keys and p not in tracked], "outside")


def table_runs(table):
    """The runs CSV a table reads: its scope's (`report.scopes`) or every record's."""
    return f"results/evaluation/scopes/{table}.csv" if table in (REPORT.get("scopes") or {}) else RUNS_CSV


def grid_hashes():
    """{run key: config hash} of the grid (None for runs of own-rule methods, which keep no hash)."""
    return hashed(GRID.hashes(), "grid")


def pca_runs():
    """(title, run directory) per dataset of report.pca: the main variant of report.subject (the
    method the paper is about), first class and seed; none without a subject."""
    subject = REPORT.get("subject")
    variant = (REPORT.get("main_variants") or {}).get(subject, "default")
    out = []
    runs = available_runs() if subject else []
    for dataset in REPORT.get("pca", []):
        cands = [r for r in runs if r.dataset == dataset and r.method == subject and r.variant == variant]
        if cands:
            r = min(cands, key=lambda r: (r.seed, r.normal_class))
            out.append((f"{dataset} (normal: {r.normal_class}), {r.method} {r.variant}, seed {r.seed}", r.run_dir))
    return out


def pca_records(wildcards):
    return [f"{d}/record.json" for _, d in pca_runs()]


def pca_panels(wildcards):
    return pca_runs()


def edited_scores(wildcards=None):
    """The scores.csv files changed since their run wrote its record: those beside a record on disk
    at the start that are newer than it (a run writes record.json last). Inputs of the aggregation,
    which checks each record against its scores.csv, and of the tables that read them (`scores` in
    con2.report.artefacts): an edited scores.csv rebuilds them. Only these: a scores.csv is no
    declared output (its run's job writes it beside the record), so listing every one would change
    the input set each time a run is trained and rebuild everything on the next invocation."""
    edited = []
    for record in RECORDS_ON_DISK:
        scores = os.path.join(os.path.dirname(record), "scores.csv")
        try:
            if os.stat(scores).st_mtime_ns > os.stat(record).st_mtime_ns:
                edited.append(scores)
        except OSError:
            continue
    return edited


def artefact_inputs(artefact):
    """The inputs of a table's or figure's rule: the files its builder reads (`reads` in
    con2.report.artefacts); for `panels`, the records of the PCA runs and the data status; for
    `scores`, the runs' scores.csv files edited since their records (`edited_scores`)."""
    files = {
        "runs": table_runs(artefact.name),
        "paper": PAPER_NUMBERS,
        "hours": PAPER_HOURS,
        "measured": SCORE_RUNTIME_CSV,
        "table": f"results/tables/{TABLES[artefact.table].stem}.csv" if artefact.table else None,
        "status": status_file,  # which datasets were skipped for want of data (a table's notes say why)
        "gpu": GPU_MEASURED if os.path.isdir(GPU_MEASURED) else None,  # the GPU runs' lines (report.bound), if any
        "panels": None,
        "scores": None,  # many files: below
    }
    inputs = {name: files[name] for name in artefact.reads if files[name]}
    if "panels" in artefact.reads:
        inputs.update(records=pca_records, status=status_input)
    if "scores" in artefact.reads:
        inputs.update(scores=edited_scores)
    return inputs


# profile keys that never shape a table or figure (where things run, how data are fetched, the
# training jobs' resources, extra rule files, the score-runtime measurement's own settings)
NOT_REPORT_KEYS = {*RUNTIME_KEYS, "download", "strict", "resources", "extra_rules", "score_runtime"}


def report_settings():
    """The profile as the table and figure builders read it (`report:` above all; also the variants'
    order, the experiments, paper_names): every rule of an artefact takes it as a param and its
    script builds from it, so changing a setting that shapes an artefact (report.subject, ...)
    rebuilds it. Keys that never shape one (NOT_REPORT_KEYS) are left out: they rebuild nothing."""
    return {k: config[k] for k in sorted(config) if k not in NOT_REPORT_KEYS}  # sorted: key order changes nothing


def artefact_params(artefact):
    """The params that make a table or figure beyond its name: the settings it is built from
    (`report_settings`, a rerun trigger) and, for the PCA figure, its panels."""
    params = {"settings": hashed(report_settings(), "settings")}
    if "panels" in artefact.reads:
        params["panels"] = pca_panels
    return params


def artefact_label(artefact):
    """The artefact's file stem in a rule's message ({wildcards.dataset} for one made per dataset)."""
    return artefact.stem.replace("{dataset}", "{wildcards.dataset}")


def caption(name):
    """The report caption of an artefact (a generic one where no file exists)."""
    path = WORKFLOW_DIR / "workflow" / "report" / f"{name}.rst"
    return str(path if path.is_file() else WORKFLOW_DIR / "workflow" / "report" / "artefact.rst")


# ------------------------------------------------------------------------------------------ progress
# After each finished training job, one line with the whole grid's ETA (con2/grid/eta.py says how it
# is estimated), printed under Snakemake's "N of M steps" by a filter on its logger (the Snakefile's
# onstart installs it).
_PLANNED = {}  # run key -> PlannedRun (weighed once)
_SPENT = {}  # run key -> the timing of a record written since the workflow started (None: not in it)
JOB_STARTED = {}  # output file -> when its job started (con2.grid.console.GridProgress notes it)


@functools.cache
def device_name():
    """This device's name as the throughput table names devices: the GPU's (nvidia-smi) when the
    profile trains on CUDA, else the CPU's model and precision (con2.run.provenance.cpu_device_name); None
    if it cannot be told."""
    device = str(config.get("device", "auto"))
    if device.startswith("cuda") or (device == "auto" and shutil.which("nvidia-smi")):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        names = out.stdout.strip().splitlines()
        return names[0].strip() if names else None
    from con2.run.provenance import cpu_device_name  # lazy: read once, when the workflow runs

    return cpu_device_name()


def training_slots():
    """Training jobs at a time: --cores / threads per job here, --jobs on a cluster."""
    if workflow.local_exec:
        return max(1, int(workflow.cores) // max(1, int(config.get("threads", 1))))
    return max(1, int(workflow.nodes))


def planned_training():
    """The grid's runs this invocation trains: those whose record a job of the DAG writes, now or
    earlier in this invocation (Snakemake drops finished jobs when it updates the DAG after the
    data check)."""
    outputs = {str(f) for job in workflow.dag.needrun_jobs(exclude_finished=False) for f in job.output}
    return [r for r in RUNS if r.record in outputs or r.key in _PLANNED]


def grid_eta_line():
    """The grid's progress line (con2.grid.eta): runs done, the ETA and what it rests on."""
    from con2.grid.eta import eta_line, grid_eta, weigh_runs

    runs = planned_training()
    if not runs:
        return None
    new = [r for r in runs if r.key not in _PLANNED]
    if new:
        _PLANNED.update(weigh_runs(new, DATA_DIR if DATA_DIR.is_dir() else None, device_name()))
    for r in runs:
        if r.key in _SPENT:
            continue
        try:
            if os.stat(r.record).st_mtime < STARTED:
                continue
            timing = json.loads(Path(r.record).read_text()).get("timing")
            if isinstance(timing, dict) and r.record in JOB_STARTED:  # the job's own clock: start-up included
                timing = {**timing, "job_seconds": os.stat(r.record).st_mtime - JOB_STARTED[r.record]}
            _SPENT[r.key] = timing
        except (OSError, ValueError, AttributeError):
            continue
    now = time.time()  # the runs in flight: how long each has run (what is left of it is what counts)
    running = {r.key: now - JOB_STARTED[r.record] for r in runs if r.key not in _SPENT and r.record in JOB_STARTED}
    slots = training_slots()
    return eta_line(grid_eta([_PLANNED[r.key] for r in runs], _SPENT, slots, running), slots)


# ------------------------------------------------------------------------------------------ the end
def end_summary():
    """Lines for the end of the run: every dataset skipped (why, the command that fixes it), every
    record the aggregation left out (what is wrong, the fix) and the records aggregated although
    outside this profile's grid; and, where it was written, the table that holds every fix (MISSING_FILE)."""
    from con2.grid.status import summary_lines

    skipped = [SKIPPED_CSV, *sorted(glob.glob("results/evaluation/scopes/*.skipped.csv"))]
    lines = summary_lines(
        DATA_TARGETS, config, RUNS_CSV, since=STARTED, methods_missing_weights=WEIGHTS_MISSING, skipped_files=skipped
    )
    if not trains_anything():  # a rebuild: what it left out, and the command that trains it
        untrained = [r for r in RUNS if not scoped_only(r) and not os.path.exists(r.record)]
        if untrained:
            by_dataset = collections.Counter(r.dataset for r in untrained)
            where = ", ".join(f"{d} {n}" for d, n in sorted(by_dataset.items()))
            lines.append(
                f"con2 workflow: a table rebuild trains nothing: {len(untrained)} run(s) of the grid have no record "
                f"yet ({where}) and are not in the tables; `snakemake --cores N all` (with the grid's --config "
                "data_dir=DIR, where their data are) trains them"
            )
    if lines and Path(MISSING_FILE).is_file():
        lines.insert(-1, f"con2 workflow: what is missing and how to get it, in one file: {MISSING_FILE}")
    return lines


def print_at_exit(lines):
    """Print ``lines`` after Snakemake's own last lines (an atexit hook), so they end the output."""
    if lines:
        atexit.register(lambda: print("\n".join(lines), file=sys.stderr, flush=True))
