"""The one-run record: its schema (in one place), an atomic writer and a validating reader.

Every run writes ``record.json`` in its run directory; tables and figures read nothing else. A
record is written to a temporary name and renamed (:mod:`con2.atomic`), so a failed run leaves no
record, and a reader rejects any record that does not match the schema (or holds a NaN or an
infinite number: JSON Schema's ``number`` admits both), naming the field and the file. Records
are built by :func:`con2.run.records.build_record`, for registered methods and external programs alike.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from con2.atomic import NotARegularFile, read_regular, write_text_atomic
from con2.errors import Con2Error
from con2.run.provenance import _git_commit, _versions, cpu_model, hash_config

if TYPE_CHECKING:
    import numpy as np

SCHEMA_VERSION = 2  # 2: metrics.auroc_ci (a DeLong interval beside every AUROC); version-1 records still read
READ_VERSIONS = (1, 2)

_number = {"type": "number"}
_nullable_number = {"type": ["number", "null"]}
_nullable_percent = {"type": ["number", "null"], "minimum": 0, "maximum": 100}
# A timing's bound (issue 57, item 6): ten years in seconds, far beyond any run, yet finite enough that a cost table
# prints it in a few digits (1e308 s printed a 300-digit table); rates likewise, at a trillion images a second.
MAX_SECONDS = 10 * 365.25 * 24 * 3600
MAX_RATE = 1e12
_seconds = {"type": "number", "minimum": 0, "maximum": MAX_SECONDS}

RECORD_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "con2-bench run record",
    "type": "object",
    "required": [
        "schema_version",
        "dataset",
        "normal_class",
        "method",
        "variant",
        "seed",
        "metrics",
        "timing",
        "n_train",
        "n_test",
        "n_anomalous",
        "config",
        "config_hash",
    ],
    "properties": {
        "schema_version": {"enum": list(READ_VERSIONS)},
        "dataset": {"type": "string", "minLength": 1},
        "normal_class": {"type": "string"},
        "method": {"type": "string", "minLength": 1},
        "variant": {"type": "string"},
        "seed": {"type": "integer"},
        "metrics": {
            "type": "object",
            "required": ["auroc"],
            "properties": {
                "auroc": {
                    "type": "object",
                    "minProperties": 1,
                    "additionalProperties": {"type": "number", "minimum": 0, "maximum": 100},
                },
                # per AUROC column: its 95% DeLong interval and standard error in percent (con2.maths.stats);
                # null where undefined (fewer than two test images of a class)
                "auroc_ci": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "required": ["lo", "hi", "se"],
                        "properties": {"lo": _nullable_percent, "hi": _nullable_percent, "se": _nullable_number},
                    },
                },
                "silhouette": _nullable_number,
            },
        },
        "timing": {
            "type": "object",
            "description": (
                "seconds, each from 0 to ten years (MAX_SECONDS, 315,576,000 s: generous, and finite enough to print), "
                "and images_per_second from 0 to 1e12 (MAX_RATE)"
            ),
            "required": ["fit_seconds", "score_seconds", "wall_seconds"],
            "properties": {
                "fit_seconds": _seconds,
                "score_seconds": _seconds,
                "wall_seconds": _seconds,
                "images_per_second": {"type": ["number", "null"], "minimum": 0, "maximum": MAX_RATE},
                "curve_seconds": _seconds,  # the learning curve's scoring (config score_at), not in fit_seconds
                # since issue 32: whether training resumed from a checkpoint, and how many training sessions
                # fit_seconds, curve_seconds and images_per_second add up (resumed with 1: an older checkpoint
                # kept no time, so the sessions before the resume are missing); absent in older records
                "resumed": {"type": "boolean"},
                "sessions": {"type": "integer", "minimum": 1},
            },
        },
        "peak_memory_mb": _nullable_number,
        "n_train": {"type": "integer", "minimum": 1},
        "n_test": {"type": "integer", "minimum": 1},
        "n_anomalous": {"type": "integer", "minimum": 0},
        # since issue 35: the normal validation images scored into validation_scores.csv (0: none; absent in
        # older records) and the sha256 of their pixels (con2.data.manifest)
        "n_val": {"type": "integer", "minimum": 0},
        "val_sha256": {"type": ["string", "null"]},
        "epochs": {"type": "integer"},
        "steps": {"type": "integer"},
        "resumed_from_epoch": {"type": ["integer", "null"]},
        "precision": {"enum": ["float32", "bfloat16-autocast"]},  # what the training steps ran in
        "cpu": {"type": "string"},  # the CPU's model name: equal numbers need the same kind of CPU (docs/results.md)
        "gpu": {"type": "string"},  # the GPU's name, for runs on CUDA
        "batch_size": {"type": ["integer", "null"], "minimum": 1},  # the effective batch (images per step)
        "split_seed": {"type": ["integer", "null"]},
        "split_sha256": {"type": ["string", "null"]},  # the split manifest's checksum (same test ids <=> same value)
        # since issue 44: the images' source, `format` (a kind of copy where a dataset has several: "image-folder"
        # for a re-encoded CIFAR-10 dump, whose tables say so; null: the dataset's one source) and `sha256` (the
        # content checksum of its files); absent in older records
        "data_source": {
            "type": "object",
            "required": ["format", "sha256"],
            "properties": {"format": {"type": ["string", "null"]}, "sha256": {"type": ["string", "null"]}},
        },
        # since issue 47: the sha256 of the score files the run wrote beside its record ({"scores.csv": hex,
        # "validation_scores.csv": hex}): the aggregation checks them by content (con2.aggregate.score_files)
        "files_sha256": {"type": "object", "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]{64}$"}},
        # since issue 47: a re-scoring (`con2 evaluate`) names the checkpoint it scored: the epoch and step it had
        # reached, the epochs its configuration plans and whether it had not reached them (`unfinished`: a run
        # killed or still training); the aggregation leaves an unfinished one out of every table
        "rescored": {
            "type": "object",
            "required": ["checkpoint_epoch", "checkpoint_step", "planned_epochs", "unfinished"],
            "properties": {
                "checkpoint_epoch": {"type": "integer", "minimum": 0},
                "checkpoint_step": {"type": "integer", "minimum": 0},
                "planned_epochs": {"type": "integer", "minimum": 0},
                "unfinished": {"type": "boolean"},
            },
        },
        "scoring": {"type": "object"},  # each score column's reading, and each score's headline reading
        "method_card": {"type": "object"},  # the method spec's labels, paper rows and tags (con2.methods.spec)
        "curve": {  # the learning curve (config score_at; con2.run.curve): AUROC per column at each scored epoch
            "type": "object",
            "required": ["points"],
            "properties": {
                "views": {"type": ["integer", "null"]},  # the curve's test-time views (null: the run's own test views)
                "points": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["epoch", "auroc"],
                        "properties": {
                            "epoch": {"type": "integer", "minimum": 0},
                            "seconds": _seconds,
                            "auroc": {
                                "type": "object",
                                "additionalProperties": {"type": "number", "minimum": 0, "maximum": 100},
                            },
                            "extras": {"type": "object"},
                        },
                    },
                },
            },
        },
        "config": {"type": "object"},
        "config_hash": {"type": "string"},
        "versions": {"type": "object"},
        "git_commit": {"type": ["string", "null"]},
        "device": {"type": "string"},
        "created": {"type": "string"},
    },
    # a record written since version 2 holds an interval for every AUROC (older ones have none)
    "if": {"properties": {"schema_version": {"const": 2}}, "required": ["schema_version"]},
    "then": {"properties": {"metrics": {"required": ["auroc", "auroc_ci"]}}},
}


class RecordError(Con2Error, ValueError):
    """A record file is missing, unreadable or does not match the schema."""


def non_finite_fields(value: Any, where: tuple[str, ...] = ()) -> list[tuple[str, float]]:
    """``(dotted path, value)`` of every NaN or infinite number inside ``value`` (JSON Schema's
    ``number`` admits both, and a NaN metric would silently drop out of every table)."""
    if isinstance(value, float) and not math.isfinite(value):
        return [(".".join(where) or "(top level)", value)]
    if isinstance(value, dict):
        return [f for k, v in value.items() for f in non_finite_fields(v, (*where, str(k)))]
    if isinstance(value, (list, tuple)):
        return [f for i, v in enumerate(value) for f in non_finite_fields(v, (*where, str(i)))]
    return []


def validate_record(record: dict[str, Any], source: str = "<record>") -> None:
    """Raise ``RecordError`` naming the offending field and ``source`` if ``record`` is invalid
    (schema, or a NaN or infinite number anywhere)."""
    import jsonschema  # lazy: jsonschema (0.1 s) only when a record is validated

    bad = non_finite_fields(record)
    if bad:
        field, number = bad[0]
        raise RecordError(
            f"{source}: invalid run record at field {field!r}: {number} is not a finite number "
            "(NaN or infinite: the run diverged or a score is undefined)"
        )
    validator = jsonschema.Draft202012Validator(RECORD_SCHEMA)
    errors = sorted(validator.iter_errors(record), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        if err.validator == "required":
            missing = [f for f in err.validator_value if f not in err.instance]
            where = ".".join([*map(str, err.absolute_path), missing[0]]) if missing else where
        raise RecordError(f"{source}: invalid run record at field {where!r}: {err.message}")
    metrics = record["metrics"]
    if "auroc_ci" in metrics and set(metrics["auroc_ci"]) != set(metrics["auroc"]):
        odd = sorted(set(metrics["auroc_ci"]) ^ set(metrics["auroc"]))
        raise RecordError(
            f"{source}: invalid run record at field 'metrics.auroc_ci': its columns differ from metrics.auroc's ({odd})"
        )


def write_record(record: dict[str, Any], path: Path) -> None:
    """Validate, then write ``record`` as JSON atomically (temporary file + rename)."""
    validate_record(record, str(path))
    write_text_atomic(Path(path), json.dumps(record, indent=2, sort_keys=True, allow_nan=False))


def read_record(path: str | Path) -> dict[str, Any]:
    """Read and validate one record; ``RecordError`` names the file and the field (or what is wrong
    with the file: missing, unreadable, binary, not JSON) on failure."""
    p = Path(path)
    try:
        text = read_regular(p).decode("utf-8")
    except FileNotFoundError:
        raise RecordError(f"{p}: record file not found") from None
    except NotARegularFile:  # a FIFO would block the aggregation, `con2 metrics` and the workflow forever
        raise RecordError(f"{p}: not a regular file (a folder, a FIFO or a device), so not a run record") from None
    except UnicodeDecodeError:
        raise RecordError(f"{p}: not a text file (binary or damaged), so not a run record") from None
    except OSError as exc:
        raise RecordError(f"{p}: cannot read the record ({exc.strerror or exc})") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{p}: not valid JSON ({exc})") from None
    except RecursionError:
        raise RecordError(f"{p}: not a run record (JSON nested too deeply)") from None
    if not isinstance(record, dict):
        raise RecordError(f"{p}: a run record must be a JSON object")
    validate_record(record, str(p))
    return record


INTEGER_TIMING = ("sessions",)  # timing entries kept as integers (the rest are seconds or rates: floats)


def timing_value(key: str, value: float | bool | None) -> float | bool | int | None:
    """A record's ``timing`` entry: None and booleans as they are, :data:`INTEGER_TIMING` as integers, else a float."""
    if value is None or isinstance(value, bool):
        return value
    return int(value) if key in INTEGER_TIMING else float(value)


def auroc_by_kind(
    labels: np.ndarray, scores: Mapping[str, np.ndarray], kinds: Sequence[str]
) -> dict[str, dict[str, float]]:
    """The MVTec convention: per anomaly kind, the AUROC of every score column over the normal test images and
    that kind's anomalies alone (``{kind: {column: AUROC in %}}``), so a table shows which defects a method misses.

    Args:
        labels: ``[M]`` test labels, 1 = anomaly.
        scores: ``{column: [M]}`` anomaly scores.
        kinds: ``[M]`` the anomaly kind of each test image (its class folder; a normal image's is ignored).
    """
    import numpy as np  # lazy: as in checked_labels

    from con2.maths.metrics import auroc  # lazy: scikit-learn only for a per-kind AUROC

    labels = np.asarray(labels)
    kinds_a = np.asarray([str(k) for k in kinds])
    if kinds_a.shape != labels.shape:
        raise RecordError(f"test kinds: {kinds_a.shape} for {labels.shape} test labels")
    normal = labels == 0
    out: dict[str, dict[str, float]] = {}
    for kind in sorted(set(kinds_a[labels == 1].tolist())):
        keep = normal | ((labels == 1) & (kinds_a == kind))
        out[kind] = {k: auroc(labels[keep], np.asarray(v)[keep]) for k, v in scores.items()}
    return out


def checked_labels(
    where: str, labels: np.ndarray, scores: Mapping[str, np.ndarray], validation: Mapping[str, np.ndarray] | None
) -> np.ndarray:
    """``labels`` as integers, once the scores are known to fit them (a record's first step).

    Args:
        where: the run, as an error names it.
        labels: ``[M]`` test labels, 1 = anomaly, 0 = normal.
        scores: score name -> ``[M]`` per-sample scores, higher = more anomalous (one AUROC each).
        validation: score name -> ``[V]`` scores of the normal validation images (the columns of
            ``scores``; ``None``: none scored).

    Raises:
        RecordError: no scores, a score of another length than ``labels``, labels of one class, or
            validation scores whose columns or lengths disagree.
    """
    import numpy as np  # lazy: numpy only when a record is built, never when one is read

    labels = np.asarray(labels).astype(np.int64)
    if not scores:
        raise RecordError(f"{where}: no score columns given")
    for name, s in scores.items():
        if np.shape(s) != labels.shape:
            raise RecordError(f"{where}: score {name!r} has shape {np.shape(s)}, labels {labels.shape}")
    if validation is not None:
        lengths = {np.shape(v) for v in validation.values()}
        if validation and (set(validation) != set(scores) or len(lengths) != 1 or len(next(iter(lengths))) != 1):
            raise RecordError(
                f"{where}: validation scores must be one vector per test score column ({sorted(scores)}), "
                f"got {sorted(validation)} of shapes {sorted(lengths)}"
            )
    if len(np.unique(labels)) != 2:
        raise RecordError(f"{where}: the test labels hold one class only; an AUROC needs normal (0) and anomalous (1)")
    return labels


def run_identity(dataset: str, normal_class: str, method: str, variant: str, seed: int) -> dict[str, Any]:
    """The record's schema version and the run's five coordinates (the parts of its run key)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "dataset": dataset,
        "normal_class": str(normal_class),
        "method": method,
        "variant": variant,
        "seed": int(seed),
    }


def record_metrics(
    labels: np.ndarray,
    scores: Mapping[str, np.ndarray],
    extras: Mapping[str, Any] | None,
    test_kinds: Sequence[str] | None,
) -> dict[str, Any]:
    """The record's ``metrics``: each score column's AUROC in % and its 95% DeLong interval (:mod:`con2.maths.stats`).

    Args:
        labels, scores: as :func:`checked_labels` returns and checked them.
        extras: further metrics (e.g. ``silhouette``), stored beside ``auroc`` (a key of both: the extra's).
        test_kinds: ``[M]`` each test image's anomaly kind (a declared mvtec tree): ``auroc_by_kind``
            (:func:`auroc_by_kind`); ``None``: none.
    """
    import numpy as np  # lazy: as in checked_labels

    from con2.maths.metrics import auroc, auroc_intervals  # lazy: scikit-learn and scipy only when a record is built

    return {
        "auroc": {k: auroc(labels, np.asarray(v)) for k, v in scores.items()},
        "auroc_ci": auroc_intervals(labels, scores),
        **(extras or {}),
        **({"auroc_by_kind": auroc_by_kind(labels, scores, test_kinds)} if test_kinds is not None else {}),
    }


def record_timing(timing: Mapping[str, float | bool | None] | None) -> dict[str, float | bool | int | None]:
    """The record's ``timing``: ``fit_seconds``, ``score_seconds``, ``wall_seconds`` (missing ones are 0),
    ``images_per_second``, ``curve_seconds``; ``resumed`` (bool) and ``sessions`` (int) as given
    (each entry as :func:`timing_value` keeps it)."""
    times = {"fit_seconds": 0.0, "score_seconds": 0.0, "wall_seconds": 0.0, **(timing or {})}
    return {k: timing_value(k, v) for k, v in times.items()}


def data_fields(
    n_train: int, labels: np.ndarray, batch_size: int | None, split_seed: int | None, split_sha256: str | None
) -> dict[str, Any]:
    """The images a run used: ``n_train`` normal training images, the test set's size and anomalies (of
    ``labels``), ``batch_size`` the effective batch size (images per optimiser step, if the run trained), and
    the split: ``split_seed``, ``split_sha256`` (from the data manifest: equal values mean the same train and
    test ids)."""
    return {
        "n_train": int(n_train),
        "n_test": int(len(labels)),
        "n_anomalous": int(labels.sum()),
        "batch_size": None if batch_size is None else int(batch_size),
        "split_seed": None if split_seed is None else int(split_seed),
        "split_sha256": split_sha256,
    }


def provenance_fields(device: str) -> dict[str, Any]:
    """Where and with what a record was built: versions, git commit, ``device`` (``"external"``: an external
    program's scores), the CPU's model, the time (UTC, to the second), and on CUDA the GPU's name."""
    fields = {
        "versions": _versions(),
        "git_commit": _git_commit(),
        "device": device,
        "cpu": cpu_model(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    if str(device).startswith("cuda"):
        import torch  # lazy: torch: only here, where a CUDA run has loaded it already

        if torch.cuda.is_available():
            fields["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return fields


TRAINING_KEYS = ("epochs", "steps", "resumed_from_epoch", "precision")  # what a record keeps of ``training``


def training_fields(training: Mapping[str, Any] | None) -> dict[str, Any]:
    """What ``training`` holds of :data:`TRAINING_KEYS`: ``epochs``, ``steps``, ``resumed_from_epoch``,
    ``precision`` (``float32`` or ``bfloat16-autocast``: CPUs with native bf16 train in bf16 under ``amp``,
    others in fp32); nothing for a run that did not train."""
    return {key: training[key] for key in TRAINING_KEYS if training and key in training}


def validation_fields(validation: Mapping[str, np.ndarray] | None, val_sha256: str | None) -> dict[str, Any]:
    """``n_val``, the normal validation images scored (0: the dataset has none), and ``val_sha256``, their
    pixels' sha256; nothing where ``validation`` is ``None`` (none scored, e.g. an external program)."""
    if validation is None:
        return {}
    return {"n_val": len(next(iter(validation.values()))) if validation else 0, "val_sha256": val_sha256}


def given_sections(
    data_source: Mapping[str, str | None] | None,
    rescored: Mapping[str, Any] | None,
    files_sha256: Mapping[str, str] | None,
) -> dict[str, dict[str, Any]]:
    """The sections a run adds where it has them, each copied: ``data_source`` (the images' source,
    :func:`con2.data.manifest.data_source`), ``rescored`` (a re-scoring's checkpoint: ``checkpoint_epoch``,
    ``checkpoint_step``, ``planned_epochs``, ``unfinished``), and ``files_sha256`` (the sha256 of each score
    file written beside the record, ``{"scores.csv": hex, ...}``; an empty one is left out too)."""
    given = {"data_source": data_source, "rescored": rescored, "files_sha256": files_sha256 or None}
    return {key: dict(value) for key, value in given.items() if value is not None}


def json_sections(**sections: Mapping[str, Any] | None) -> dict[str, Any]:
    """The method-defined sections a run adds where it has them, each as JSON reads it back (a tuple as a
    list): ``scoring`` (per score, which reading is its headline), ``method_card`` (the method spec's card of
    this run: labels, paper rows, tags) and ``curve`` (the learning curve, :mod:`con2.run.curve`:
    ``{"views", "points": [{"epoch", "seconds", "auroc": {column: %}, "extras"}]}``)."""
    return {key: json.loads(json.dumps(value)) for key, value in sections.items() if value is not None}


def build_record(
    *,
    dataset: str,
    normal_class: str,
    method: str,
    variant: str,
    seed: int,
    labels: np.ndarray,
    scores: Mapping[str, np.ndarray],
    n_train: int,
    config: Mapping[str, Any],
    config_hash: str | None = None,
    split_seed: int | None = None,
    split_sha256: str | None = None,
    batch_size: int | None = None,
    timing: Mapping[str, float | bool | None] | None = None,
    extras: Mapping[str, Any] | None = None,
    scoring: Mapping[str, Any] | None = None,
    method_card: Mapping[str, Any] | None = None,
    training: Mapping[str, Any] | None = None,
    device: str = "external",
    peak_memory_mb: float | None = None,
    curve: Mapping[str, Any] | None = None,
    validation: Mapping[str, np.ndarray] | None = None,
    val_sha256: str | None = None,
    data_source: Mapping[str, str | None] | None = None,
    rescored: Mapping[str, Any] | None = None,
    files_sha256: Mapping[str, str] | None = None,
    test_kinds: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The one-run record (schema: :data:`RECORD_SCHEMA`) of any run, ours or external, in named steps, each
    documenting the arguments it records: the scores checked against the labels (:func:`checked_labels`), the
    run's coordinates (:func:`run_identity`), its metrics (:func:`record_metrics`) and times
    (:func:`record_timing`), the images it used (:func:`data_fields`), its ``config`` (``config_hash``: by
    default :func:`hash_config` of it) and provenance (:func:`provenance_fields`), then what a run adds where it
    has it (:func:`training_fields`, :func:`validation_fields`, :func:`given_sections`, :func:`json_sections`).

    Raises:
        RecordError: scores that fit neither the labels (:func:`checked_labels`) nor the test kinds
            (:func:`auroc_by_kind`).
    """
    where = f"run {dataset}/{normal_class}/{method}/{variant}/seed{seed}"
    labels = checked_labels(where, labels, scores, validation)
    record: dict[str, Any] = {
        **run_identity(dataset, normal_class, method, variant, seed),
        "metrics": record_metrics(labels, scores, extras, test_kinds),
        "timing": record_timing(timing),
        "peak_memory_mb": peak_memory_mb,
        **data_fields(n_train, labels, batch_size, split_seed, split_sha256),
        "config": dict(config),
        "config_hash": config_hash or hash_config(config),
        **provenance_fields(device),
    }
    record.update(training_fields(training))
    record.update(validation_fields(validation, val_sha256))
    record.update(given_sections(data_source, rescored, files_sha256))
    record.update(json_sections(scoring=scoring, method_card=method_card, curve=curve))
    return record
