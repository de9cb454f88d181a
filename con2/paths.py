"""The workflow's path conventions and the one pattern every name in them matches.

Where a run's record, resolved config, log, benchmark and data marker live (``results/...``), how a
run key (``<dataset>/<class>/<method>/<variant>/seed<k>``) is spelt and read back from a path, and
:data:`NAME_PATTERN`, which every dataset, class, method and variant name matches. Standard library
only: the Snakefile, the report and the command line all read paths through here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

RUNS_ROOT = "results/runs"
CONFIGS_ROOT = "results/configs"
BENCH_ROOT = "results/benchmarks/train"
LOG_ROOT = "results/logs/train"
DATA_ROOT = "results/data"
RUN_PATTERN = "{dataset}/{normal_class}/{method}/{variant}/seed{seed}"
IDENTITY_KEYS = ("dataset", "normal_class", "method", "variant", "seed")
# The one pattern of every name that becomes a wildcard, a path component and a shell word: a
# dataset, normal class, method or variant (a run key is four of them and ``seed<k>``). A letter or
# digit first, then letters, digits, '_', '+' (a '+'-list of classes) and '-': no '/', no '.', so no
# '..', no space and no shell character. The workflow's schema (workflow/schemas/config.schema.yaml,
# ``definitions.name``) and its wildcard constraints use the same pattern (a test compares them).
NAME_REGEX = r"[A-Za-z0-9][A-Za-z0-9_+-]{0,99}"
NAME_PATTERN = f"^{NAME_REGEX}$"
SEED_REGEX = r"\d{1,9}"
CONFIG_HASH_REGEX = r"[0-9a-f]{16}"
_NAME = re.compile(NAME_REGEX)  # matched in full (re.fullmatch): '$' would accept a trailing newline
_SEED_DIR = re.compile(f"seed({SEED_REGEX})")


def is_name(value: Any) -> bool:
    """True for a string that matches :data:`NAME_PATTERN` (safe as a path component and a shell word)."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def run_key(dataset: str, normal_class: str, method: str, variant: str, seed: int | str) -> str:
    return RUN_PATTERN.format(dataset=dataset, normal_class=normal_class, method=method, variant=variant, seed=seed)


def config_file_of(key: str, config_hash: str) -> str:
    """Where the resolved config of run ``key`` with hash ``config_hash`` is written."""
    return f"{CONFIGS_ROOT}/{key}.{config_hash}.yaml"


def path_identity(path: str | Path) -> dict[str, Any] | None:
    """``{dataset, normal_class, method, variant, seed}`` that a ``.../<dataset>/<class>/<method>/
    <variant>/seed<k>/record.json`` path spells, or None for a path of another shape (a copied
    ``seed0.bak``, a name outside :data:`NAME_PATTERN`)."""
    parts = Path(path).parts
    if len(parts) < 6 or parts[-1] != "record.json":
        return None
    *names, seed_dir = parts[-6:-1]
    seed = _SEED_DIR.fullmatch(seed_dir)
    if seed is None or not all(is_name(n) for n in names):
        return None
    return dict(zip(IDENTITY_KEYS, [*names, int(seed.group(1))], strict=True))


def record_key(path: str | Path) -> str | None:
    """The run key of a ``results/runs/<key>/record.json`` path (relative or absolute), else None
    (a path that is no run directory of the grid's layout, e.g. a copy named ``seed0.bak``)."""
    ident = path_identity(path)
    return None if ident is None else run_key(**ident)


def record_files(root: str | Path) -> list[str]:
    """Every ``record.json`` below ``root`` (sorted; hidden folders skipped, as a glob skips them).
    A folder is walked once: a symbolic link to a folder already walked, or to one inside ``root``
    (``ln -s ../.. loop``: a loop, or a second name of the same runs), is not followed, so no record
    is found twice under another name; links to folders elsewhere are followed."""
    top = os.path.realpath(root)
    seen: set[str] = set()
    out = []
    for folder, subfolders, files in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen or (folder != str(root) and os.path.islink(folder) and _inside(real, top)):
            subfolders[:] = []
            continue
        seen.add(real)
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        if "record.json" in files:
            out.append(os.path.join(folder, "record.json"))
    return sorted(out)


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def records_on_disk(root: str | Path = RUNS_ROOT) -> tuple[list[str], list[str]]:
    """``(records, others)`` under ``root``: every ``<key>/record.json`` whose path is a run key, and
    every other ``record.json`` there (a copied ``seed0.bak``, a deeper or shallower folder), which
    aggregation must not count as a run. Both sorted, each path ``root`` joined with the rest."""
    found = record_files(root)
    runs = [p for p in found if len(Path(p).relative_to(root).parts) == 6 and record_key(p) is not None]
    kept = set(runs)
    return runs, [p for p in found if p not in kept]


def scores_bundle(runs_csv: str | Path) -> str:
    """The per-image scores bundle the aggregation writes beside a runs CSV
    (:func:`con2.aggregate.bundle.bundle_bytes`): ``runs.csv`` -> ``scores.json.gz``, ``scopes/<table>.csv`` ->
    ``scopes/<table>.scores.json.gz``."""
    path = Path(runs_csv)
    name = "scores.json.gz" if path.name == "runs.csv" else f"{path.stem}.scores.json.gz"
    return str(path.with_name(name))


def data_marker(dataset: str, size: int | str) -> str:
    """The data check's marker of one dataset prepared at one size (``prepare_data``'s output)."""
    return f"{DATA_ROOT}/{dataset}/{size}px.json"


# ------------------------------------------------------------------------------------------ rule-based methods
RULE_METHODS_DIR = "workflow/rules/methods"  # the workflow includes every <method>.smk here (and `extra_rules`)
