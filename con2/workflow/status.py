"""What the workflow knows about its data and its records, and the closing lines it ends with.

* :func:`unknown_class`: whether the registry knows a normal class a profile names;
* :func:`check_dataset`: find (or download) one dataset at one size through the data layer and
  describe the outcome: ``ok`` with its counts, or ``skipped`` with the reason and the one command
  that fixes it (what ``prepare_data`` writes to ``results/data/<dataset>/<size>px.json``);
* :func:`checked_in`, :func:`same_folder`, :func:`awaits_training`: whether a marker found ``ok``
  is checked again (:meth:`con2.workflow.data_check.DataCheck.params`): only when the ``data_dir`` now differs from the
  one it was checked in and a run of it would train (a finished grid's table rebuild reads records
  only, so it re-checks nothing);
* :func:`merge_status`: those files of a grid as one mapping (the ``data_status`` checkpoint);
* :func:`other_data`: the datasets whose records were trained on other images than ``data_dir`` holds
  now (their content checksums differ), which a finished grid's invocation would otherwise pass over
  with "Nothing to be done";
* :func:`closing_lines`: the block printed at the very end of a workflow run: every dataset
  skipped (or, with ``strict``, failed), every record the aggregation left out (corrupt, invalid,
  misplaced) with its fix, and the records aggregated although outside the grid; each command
  quoted for a shell, each line free of control characters (:mod:`con2.text`).

No network here: downloads happen inside the data layer (``con2.data``), whose network boundary
tests replace. The one module of ``con2.workflow`` below the report layer (tests/project/test_layers.py):
the report's ``missing`` table builds its fixes with :func:`data_fix` and :func:`get_command`.
"""

from __future__ import annotations

import csv
import json
import os
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from con2.config import DEFAULT_DATA_DIR
from con2.paths import RUNS_ROOT, data_marker, record_files, record_key
from con2.text import csv_value, shell_command, terminal_safe

UNAVAILABLE = "con2 workflow: unavailable: "  # prefix of the line prepare_data logs when it fails (strict)


def get_command(dataset: str, size: int | None, data_dir: str | Path) -> str:
    """``con2 data get DATASET --data-dir DIR --size N`` (no ``--size`` without one), each word
    quoted for a shell (:func:`con2.text.shell_command`): a ``data_dir`` with a space or ``;``
    stays one argument."""
    sized = ["--size", int(size)] if size else []
    return shell_command("con2", "data", "get", dataset, "--data-dir", data_dir, *sized)


def data_fix(dataset: str, size: int | None, data_dir: str | Path) -> tuple[str, str]:
    """``(what to do first, command)`` that puts ``dataset`` on disk at ``size`` (downloads where it
    can): :func:`get_command` into ``data_dir`` as given, normalised (``a/../b`` is ``b``). A
    ``data_dir`` that exists but is no folder (``/etc/passwd``) is the problem itself: first another
    one, and the command names ``DIR``."""
    where = os.path.normpath(data_dir)
    first, size = published_size(dataset, size)  # MedMNIST at 16 px: no `--size 16`, which the command refuses
    if os.path.exists(where) and not os.path.isdir(where):  # the fix is another data_dir, not a download there
        return f"{first}--config data_dir=DIR (a folder: {shlex.quote(where)} is not one), then ", get_command(
            dataset, size, "DIR"
        )
    return first, get_command(dataset, size, where)


def published_size(dataset: str, size: int | None) -> tuple[str, int | None]:
    """``(what to do first, size)``: ``size`` where ``dataset``'s source can be prepared at it, else the nearest
    published size above it (the largest below, past the last) and the profile change that asks for it."""
    from con2.data import DataError, get_info  # lazy: numpy and PIL only when a fix is built
    from con2.data.registry import source_of  # lazy: as above

    try:
        info = get_info(dataset)
        sizes = source_of(info).published_sizes(info)
    except DataError:
        return "", size
    if not size or sizes is None or size in sizes:
        return "", size
    nearest = min((s for s in sizes if s >= size), default=max(sizes))
    return f"set data_size: {nearest} for {dataset} (it comes in {', '.join(map(str, sizes))} px), then ", nearest


def fix_command(dataset: str, size: int, data_dir: str | Path) -> str:
    """:func:`data_fix` as one line: what to do first, then the command."""
    return "".join(data_fix(dataset, size, data_dir))


def unknown_class(dataset: str, normal_class: str) -> str | None:
    """Why the registry cannot run ``normal_class`` of ``dataset`` as the normal class (its message
    lists the valid classes and indices), or None (a name, an index, a group or a '+'-list of
    them). The workflow checks every class a profile names with it before any job."""
    from con2.data import DataError, get_info  # lazy: numpy and PIL only when the workflow checks a dataset
    from con2.data.registry import resolve_normal  # lazy: numpy and PIL only when the workflow checks a dataset

    try:
        resolve_normal(get_info(dataset), normal_class)
    except DataError as exc:
        return " ".join(str(exc).split())
    return None


def check_dataset(dataset: str, size: int, data_dir: str | Path, download: bool) -> dict[str, Any]:
    """Locate (or, with ``download``, download) and prepare ``dataset`` at ``size``; load its default
    normal class once to count images.

    Returns:
        ``{"status": "ok", n_train, n_test, n_anomalous, images_sha256, ...}`` or
        ``{"status": "skipped", "reason": <the data layer's message>, "fix": <command>}``.
    """
    from con2.data import DataError, load_one_class  # lazy: numpy and PIL only when the workflow checks a dataset

    out: dict[str, Any] = {"dataset": dataset, "size": int(size), "data_dir": os.path.normpath(data_dir)}
    try:
        data = load_one_class(dataset, data_dir, None, 0, int(size), download=download)
    except DataError as exc:
        reason = " ".join(str(exc).split())
        if not download:
            reason += " (download: false in the profile)"
        return {**out, "status": "skipped", "reason": reason, "fix": fix_command(dataset, size, data_dir)}
    manifest = data.manifest or {}
    return {
        **out,
        "status": "ok",
        "default_normal_class": data.normal_class,
        "n_train": int(len(data.train)),
        "n_test": int(len(data.test)),
        "n_anomalous": int(data.n_anomalous),
        "images_sha256": manifest.get("images_sha256"),
        "location": str((manifest.get("source") or {}).get("location", "")),
        # the source files' content key, as a record's data_source.sha256 (the close reads it: :func:`checked_now`)
        "source_sha256": (manifest.get("source") or {}).get("fingerprint"),
    }


def checked_in(marker: Mapping[str, Any]) -> str | None:
    """The ``data_dir`` a ``prepare_data`` marker was checked in, as the profile gave it (relative
    to the working directory where it was: a copied or moved results folder with ``./data`` beside
    it still names its own), else its ``check`` params' absolute one, else None."""
    where = marker.get("data_dir") or (marker.get("check") or {}).get("data_dir")
    return str(where) if where else None


def same_folder(a: str | Path | None, b: str | Path) -> bool:
    """Whether two ``data_dir`` values name one folder (``data`` and ``./data/``, a link and its
    target; relative paths from the working directory, the workflow's)."""
    return a is not None and os.path.realpath(os.path.expanduser(a)) == os.path.realpath(os.path.expanduser(b))


def awaits_training(record: str | Path, config_file: str | Path) -> bool:
    """Whether the workflow would train a run now: no record yet, or a config (the grid's, named by
    its hash) that is absent (a changed setting: run_config writes it, then the run retrains) or
    newer than the record. A run that reads its data; a finished one does not."""
    try:
        done = Path(record).stat().st_mtime
    except OSError:
        return True
    try:
        return Path(config_file).stat().st_mtime > done
    except OSError:
        return True


def merge_status(markers: Iterable[str | Path]) -> dict[str, dict[str, Any]]:
    """``{"<dataset>/<size>": marker}`` of ``prepare_data`` outputs."""
    out = {}
    for path in markers:
        marker = json.loads(Path(path).read_text())
        out[f"{marker['dataset']}/{marker['size']}"] = marker
    return dict(sorted(out.items()))


def _failed_in_log(log: Path, since: float) -> str | None:
    """The reason a strict ``prepare_data`` logged before failing (after time ``since``), if any."""
    if not log.is_file() or log.stat().st_mtime < since:
        return None
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith(UNAVAILABLE)]
    return lines[-1].removeprefix(UNAVAILABLE) if lines else None


def prepare_log(dataset: str, size: int) -> str:
    return f"results/logs/prepare_data/{dataset}_{size}px.log"


def outside_grid(runs_csv: str | Path) -> list[str]:
    """Record paths in ``runs.csv`` whose ``in_grid`` is false (one per run)."""
    path = Path(runs_csv)
    if not path.is_file():
        return []
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return sorted({csv_value(r["record"]) for r in rows if r.get("in_grid", "True") in ("False", "false", "0")})


def skipped_records(files: Iterable[str | Path]) -> list[tuple[str, str, str]]:
    """``(record, problem, fix)`` of every record the aggregations left out (their ``skipped`` CSVs:
    record, mtime_ns, problem, fix) that is still as it was then (a file since replaced or deleted
    is no longer reported), once per record."""
    out: dict[str, tuple[str, str, str]] = {}
    for path in files:
        if not Path(path).is_file():
            continue
        with open(path, newline="") as fh:
            for raw in csv.DictReader(fh):
                row = {k: csv_value(v) for k, v in raw.items() if isinstance(v, str)}  # as the aggregation had them
                record = row.get("record", "")
                try:
                    now = Path(record).stat().st_mtime_ns
                except OSError:
                    now = -1
                if record and str(now) == row.get("mtime_ns"):
                    out.setdefault(record, (record, row.get("problem", ""), row.get("fix", "")))
    return sorted(out.values())


def trained_on(dataset: str, root: str | Path = RUNS_ROOT) -> dict[str, int]:
    """``{content sha256: records}`` of ``dataset``'s records under ``root`` (``data_source.sha256``:
    the checksum of the source files a run was trained on; records without one are not counted)."""
    out: dict[str, int] = {}
    folder = Path(root, dataset)
    for path in record_files(folder) if folder.is_dir() else []:  # this dataset's folder alone, walked once
        if len(Path(path).relative_to(root).parts) != 6 or record_key(path) is None:
            continue  # a copied seed0.bak, a deeper folder: no run (as con2.paths.records_on_disk decides)
        try:
            sha = (json.loads(Path(path).read_text()).get("data_source") or {}).get("sha256")
        except (OSError, ValueError, AttributeError):
            continue  # a damaged record: the aggregation names it
        if isinstance(sha, str) and sha:
            out[sha] = out.get(sha, 0) + 1
    return out


def data_now(dataset: str, size: int, data_dir: str | Path) -> tuple[str, str] | None:
    """``(content sha256, location)`` of ``dataset`` as ``data_dir`` holds it now, or None where it is
    not there or cannot be read. Files unchanged since they were prepared (same path, size, times,
    inode) are not read again (the prepared cache's per-file hashes); a copy elsewhere is read once."""
    from con2.data import DataError, find_source  # lazy: the data layer only where records exist
    from con2.data.cache import cache_dir, known_hashes, read_manifest, source_key  # lazy: as above

    try:
        found = find_source(dataset, data_dir, int(size))
        manifest = read_manifest(cache_dir(Path(data_dir), dataset, int(size)))
        return source_key(found, known_hashes(manifest, found.location)).digest, str(found.location)
    except (DataError, OSError, ValueError):
        return None


def checked_now(dataset: str, size: int, since: float) -> tuple[str, str] | None:
    """``(content sha256, location)`` of ``dataset`` as this invocation's data check found it: its
    ``prepare_data`` marker, where written at or after ``since`` (the invocation's start) with the source's
    content key; else None (no check ran now, or an older marker without the key)."""
    marker = Path(data_marker(dataset, size))
    try:
        if marker.stat().st_mtime < since:
            return None
        m = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    sha, where = (m.get("source_sha256"), m.get("location")) if isinstance(m, dict) else (None, None)
    ok = isinstance(m, dict) and m.get("status") == "ok"
    return (sha, where) if ok and isinstance(sha, str) and sha and isinstance(where, str) and where else None


def other_data(
    data_targets: Iterable[tuple[str, int]], data_dir: str | Path, root: str | Path = RUNS_ROOT, since: float = 0.0
) -> list[tuple[str, int, int, str]]:
    """``(dataset, records on other data, records, location now)`` of each dataset of the grid whose
    records were trained, some or all, on other images than ``data_dir`` holds now: a finished grid
    with ``data_dir`` pointing at a changed copy trains nothing, and its tables keep those runs.

    ``since`` > 0 (the invocation's start): a dataset its data check looked at in this invocation is taken
    as that check found it (:func:`checked_now`), not looked at again: CIFAR-10's 60,000 files took 2.1 s to
    stat at the close, after the last job (issue 58: the ETA's last lines said half the time left)."""
    out, seen = [], set()
    for dataset, size in data_targets:
        if dataset in seen:
            continue
        seen.add(dataset)
        counts = trained_on(dataset, root)
        if not counts:
            continue
        now = (checked_now(dataset, size, since) if since > 0 else None) or data_now(dataset, size, data_dir)
        if now is None or set(counts) == {now[0]}:
            continue
        out.append((dataset, sum(n for sha, n in counts.items() if sha != now[0]), sum(counts.values()), now[1]))
    return out


def closing_lines(
    data_targets: Iterable[tuple[str, int]],
    config: Mapping[str, Any],
    runs_csv: str | Path,
    since: float = 0.0,
    methods_missing_weights: Mapping[str, str] | None = None,
    skipped_files: Iterable[str | Path] = (),
    rebuild: bool = False,
) -> list[str]:
    """The end-of-run block (empty when there is nothing to say).

    Args:
        data_targets: the grid's ``(dataset, size)`` pairs.
        config: the profile (``data_dir``).
        runs_csv: the aggregation, for records outside the grid.
        since: when this workflow run started (older failure logs are not reported).
        methods_missing_weights: ``{"method/variant": message}`` of runs left out because their
            pretrained weights are not on disk.
        skipped_files: the aggregations' lists of records they left out (:func:`skipped_records`).
        rebuild: the invocation checks no data and trains nothing (a table rebuild): a dataset the last
            data check skipped is one line, without the fixes that belong to a run that trains
            (``--config data_dir=DIR``, ``con2 data get``), which the README's rebuild does without.
    """
    data_dir = config.get("data_dir", DEFAULT_DATA_DIR)
    skipped, failed = [], []
    for dataset, size in data_targets:
        marker = Path(data_marker(dataset, size))
        if marker.is_file():
            try:
                m = json.loads(marker.read_text())
            except (OSError, ValueError):
                continue
            if m.get("status") == "skipped":  # the fix built now: a marker of an older version stored it unquoted
                fix = fix_command(dataset, size, checked_in(m) or data_dir)
                skipped.append((dataset, size, m.get("reason", ""), fix))
        elif (reason := _failed_in_log(Path(prepare_log(dataset, size)), since)) is not None:
            failed.append((dataset, size, reason, fix_command(dataset, size, data_dir)))
    outside = outside_grid(runs_csv)
    weights = dict(methods_missing_weights or {})
    bad = skipped_records(skipped_files)
    changed = other_data(data_targets, data_dir, since=since)
    if not (skipped or failed or outside or weights or bad or changed):
        return []
    rule = "-" * 100
    lines = ["", rule]
    if skipped and rebuild:
        names = ", ".join(f"{d} ({n} px)" for d, n, _, _ in skipped)
        lines.append(
            f"con2 workflow: the last data check skipped {len(skipped)} dataset(s), {names}: a table rebuild checks "
            "no data, so their runs without a record stay out of the tables; `snakemake --cores N all` with their "
            "data trains them"
        )
        skipped = []
    if skipped:
        lines.append(
            f"con2 workflow: {len(skipped)} dataset(s) SKIPPED: their runs without a record were not trained "
            "(none failed); their records already on disk stay in the tables."
        )
    if failed:
        lines.append(f"con2 workflow: {len(failed)} dataset(s) UNAVAILABLE with strict=true: the run failed.")
    for dataset, size, reason, fix in failed + skipped:
        lines += [
            f"  {dataset} ({size} px): {reason}",
            f"      fix: {fix}   (then run the same snakemake command again)",
        ]
    if skipped or failed:
        lines.append(
            "  data already on disk elsewhere: add `--config data_dir=DIR` (or `export CON2_DATA_DIR=DIR`), "
            "DIR the folder that holds them (e.g. DIR/medmnist/breastmnist.npz)"
        )
    if skipped:
        lines.append("  (--config strict=true turns a skipped dataset into an error)")
    if weights:
        lines.append(
            f"con2 workflow: {len(weights)} method variant(s) NOT RUN: their pretrained weights are not on disk."
        )
        for key, message in weights.items():
            lines.append(f"  {key}: {message}")
        lines.append("  (--config strict=true turns this into an error)")
    if bad:
        lines.append(f"con2 workflow: {len(bad)} record(s) SKIPPED by the aggregation: they are in no table.")
        for record, problem, fix in bad:
            lines += [f"  {record}: {problem}", f"      fix: {fix}"]
    for dataset, n_other, n_all, location in changed:
        lines.append(
            f"con2 workflow: {dataset}: {n_other} of its {n_all} record(s) were trained on other images than "
            f"data_dir holds now ({location}: another content checksum); the tables show those runs. "
            f"To train them on these images: move {RUNS_ROOT}/{dataset} aside and run the same command again"
        )
    if outside:
        lines.append(
            f"con2 workflow: {len(outside)} record(s) outside this profile's grid are aggregated as they are "
            f"(column in_grid of {runs_csv}; listed in results/logs/aggregate.log); "
            "delete a run's directory to drop it."
        )
    lines.append(rule)
    return [terminal_safe(line) for line in lines]  # a folder name, a reason: no escape sequence reaches the terminal
