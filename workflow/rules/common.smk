# Shared Python for the rules: the grid of runs, checks that fail before any job, input functions.
# (Functions only: Snakemake's linter wants functions and rules in separate files.)

import glob
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from con2.config import make_config
from con2.errors import ConfigError
from con2.report import grid as G
from con2.report.artefacts import FIGURES, PER_CLASS_PREFIX, TABLES, figure_targets, table_targets

WORKFLOW_DIR = Path(workflow.basedir)


def registry_normal_classes(name):
    """The registry's normal classes of a dataset (one run each)."""
    try:
        from con2.data import normal_classes
    except ImportError:  # older registry without the helper: read its metadata
        from con2.data import DATASETS

        info = DATASETS[name]
        return list(getattr(info, "normals", None) or [getattr(info, "default_normal", "default")])
    return normal_classes(name)


def dataset_present(name):
    """True if the dataset is on disk under data_dir at the profile's image size (or embedded)."""
    from con2.data import DataError, get_info
    from con2.data.registry import find_source

    try:
        info = get_info(name)
    except DataError:
        return True  # unknown to the registry: let the run fail with the registry's message
    if info.source == "embedded":
        return True
    size = (config["datasets"].get(name) or {}).get("run", {}).get("image_size", config["run"].get("image_size", 28))
    try:
        find_source(info, Path(config["data_dir"]), int(size))
    except DataError:
        return False
    return True


def method_rule_files():
    """Extra rule files (workflow/rules/methods/*.smk and the extra_rules of the config)."""
    files = sorted(glob.glob(str(WORKFLOW_DIR / "workflow" / "rules" / "methods" / "*.smk")))
    return files + [str(Path(f).resolve()) for f in config.get("extra_rules", [])]


def grid_error(message):
    return WorkflowError(f"invalid workflow config: {message}")


def expand_runs():
    """The grid of runs; the default profile drops datasets that are not on disk (warning)."""
    available = None
    if config.get("skip_missing_data", False):
        missing = [d for d in G.selected_datasets(config) if not dataset_present(d)]
        if missing:
            print(
                f"con2 workflow: skipping datasets not found under data_dir={config['data_dir']!r}: "
                f"{', '.join(missing)} (get them with `con2 data get NAME --data-dir {config['data_dir']}`, "
                "or restrict the grid with --config only_datasets=a,b)",
                file=sys.stderr,
            )
        available = lambda d: d not in missing
    try:
        return G.expand_grid(config, registry_normal_classes, available)
    except G.GridError as exc:
        raise grid_error(exc) from None


def check_run_settings(runs, own_rule_methods):
    """Validate every distinct run config with con2.config before any job runs (names the key)."""
    for settings in G.distinct_settings(r for r in runs if r.method not in own_rule_methods):
        where = f"dataset {settings['dataset']!r}, method {settings['method']!r}, variant {settings['variant']!r}"
        values = {k: v for k, v in settings.items() if k != "params"}
        try:
            cfg = make_config(values)
        except ConfigError as exc:
            raise grid_error(f"{where}: {exc} (set in `run:`, `datasets.{settings['dataset']}.run` or `variants.{settings['variant']}`)") from None
        params = settings.get("params") or {}
        k = int(params.get("n_contexts") or 0) or len(params.get("contexts") or ["invert"]) + 1
        if settings["method"] == "con2" and cfg.tta % k:
            raise grid_error(
                f"{where}: config key 'tta' = {cfg.tta} must be divisible by the number of contexts k = {k} "
                f"(A/k test-time views per context); set `tta` in variants.{settings['variant']}"
            )


def method_regex(methods):
    """A wildcard constraint matching exactly these method names (or nothing)."""
    return "|".join(sorted(methods)) if methods else "(?!x)x"


# ------------------------------------------------------------------------------------------ the grid
OWN_RULE_FILES = method_rule_files()
OWN_RULE_METHODS = {Path(f).stem for f in OWN_RULE_FILES}
RUNS = expand_runs()
RUN_INDEX = G.run_index(RUNS)
CLI_METHODS = {r.method for r in RUNS} - OWN_RULE_METHODS
check_run_settings(RUNS, OWN_RULE_METHODS)

REPORT = config.get("report") or {}
PER_CLASS = list(REPORT.get("per_class", []))
TABLE_FILES = table_targets(PER_CLASS)
FIGURE_FILES = figure_targets(PER_CLASS)
# inputs relative to the working directory, so a moved checkout does not change the input sets
PAPER_NUMBERS = os.path.relpath(WORKFLOW_DIR / "workflow" / "resources" / "paper_numbers.csv")
PAPER_HOURS = os.path.relpath(WORKFLOW_DIR / "workflow" / "resources" / "paper_compute_hours.csv")
RUNS_CSV = "results/evaluation/runs.csv"
SUMMARY_CSV = "results/evaluation/summary.csv"
CHECK_FILE = "results/checks/run_configs.json"


def run_of(wildcards, method=None):
    """The grid's Run for a job's wildcards (``method`` for rules whose output names it literally)."""
    method = method or getattr(wildcards, "method", None)
    if method is None:
        raise WorkflowError("this rule's output has no {method} wildcard: use data_marker_for('<method>') / run_settings_for('<method>')")
    key = f"{wildcards.dataset}/{wildcards.normal_class}/{method}/{wildcards.variant}/seed{wildcards.seed}"
    try:
        return RUN_INDEX[key]
    except KeyError:
        raise WorkflowError(f"{key} is not a run of this profile's grid (see `experiments` in the config)") from None


def run_settings(wildcards):
    """Resolved RunConfig keys of a run (dataset, normal_class, seed, image_size, params, ...)."""
    return dict(run_of(wildcards).settings)


def train_overrides(wildcards):
    """`con2 train --set` arguments of a run (a params change reruns the run)."""
    return run_of(wildcards).overrides()


def data_marker(wildcards, method=None):
    """The prepare_data output a run needs (ancient: re-preparing never retrains)."""
    run = run_of(wildcards, method)
    return ancient(f"results/data/{run.dataset}/{run.image_size or 28}px.json")


def data_marker_for(method):
    """Input function for a baseline rule whose output path spells its method (no {method} wildcard)."""
    return lambda wildcards: data_marker(wildcards, method)


def run_settings_for(method):
    """Params function for a baseline rule: the run's resolved settings (see run_settings)."""
    return lambda wildcards: dict(run_of(wildcards, method).settings)


def train_resource(name, default):
    """A training job's resource from `resources` (per dataset, then profile-wide)."""

    def get(wildcards):
        ds = (config["datasets"].get(wildcards.dataset) or {}).get("resources") or {}
        return ds.get(name, (config.get("resources") or {}).get(name, default))

    return get


def cli_distinct_settings():
    """One settings dict per distinct run config trained by `con2 train` (the check job's params)."""
    return G.distinct_settings(r for r in RUNS if r.method in CLI_METHODS)


def all_records():
    return [r.record for r in RUNS]


def pca_runs():
    """(title, run directory) per dataset of report.pca: CON2's main variant, first class and seed."""
    variant = (REPORT.get("main_variants") or {}).get("con2", "default")
    out = []
    for dataset in REPORT.get("pca", []):
        cands = [r for r in RUNS if r.dataset == dataset and r.method == "con2" and r.variant == variant]
        if cands:
            r = min(cands, key=lambda r: (r.seed, r.normal_class))
            out.append((f"{dataset} (normal: {r.normal_class}), {r.method} {r.variant}, seed {r.seed}", r.run_dir))
    return out


def pca_records():
    return [f"{d}/record.json" for _, d in pca_runs()]


def caption(name):
    """The report caption of an artefact (a generic one where no file exists)."""
    path = WORKFLOW_DIR / "workflow" / "report" / f"{name}.rst"
    return str(path if path.is_file() else WORKFLOW_DIR / "workflow" / "report" / "artefact.rst")
