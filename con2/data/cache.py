"""The prepared cache: one memory-mapped uint8 array per (dataset, size), plus its manifest.

Layout: ``<cache_root>/<dataset>/<size>px/images.npy`` (uint8 ``[N, size, size, C]``, read with
``mmap_mode="r"``) and ``manifest.json`` (sample ids, source split and class of every row, the
preprocessing recipe, the source's key, per-file hashes and checksums, the sha256 of ``images.npy``).
Rows are ordered by (source split, class, source order), so the training images of one class
and a whole test split are contiguous slices of the memmap: no copy at load time.

``manifest.json`` is written last, atomically; a cache without it, with another source key, or
whose ``images.npy`` changed since (size, mtime, then sha256) is prepared again.

The source key (:func:`source_key`) is a sha256 over the source files' relative paths, sizes and
the sha256 of their bytes: two files of one name, size and mtime but other bytes give other keys,
so one ``data_dir`` never trains on another's images. The manifest keeps each file's sha256 with its
identity (size, mtime, ctime, device, inode) only to skip hashing it again: a file of another
folder, or one rewritten since (which changes its ctime, even when its mtime is set back), is read
again.
The cache root is ``$CON2_CACHE_DIR`` if set, else the user's cache,
``$XDG_CACHE_HOME/con2/prepared`` (``~/.cache/con2/prepared``): never the data folder, which may
be shared, read-only or precious (a ``<data_dir>/prepared`` of an older version is left alone and
not read; preparing again takes seconds to minutes per dataset and size).
"""

from __future__ import annotations

import errno
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from tqdm import tqdm

from con2.data.base import DataError
from con2.data.fileops import atomic_path, clean_partials, file_digest, text_digest
from con2.data.images import preprocess
from con2.text import terminal_safe

FORMAT_VERSION = 1
SPLIT_ORDER = {"train": 0, "val": 1, "test": 2, "all": 3}


@dataclass
class SourceTable:
    """What a source found on disk: one row per sample, and how to read it.

    Attributes:
        dataset: registered name.
        location: the file or folder that was found.
        fingerprint: cheap identity of the listing (names, sizes, mtimes); never the cache's key
            (see :func:`source_key`).
        classes: class names; ``labels`` index into it.
        ids: ``[N]`` unique sample ids (relative paths, or ``split/index`` for arrays).
        splits: ``[N]`` source split (``train``/``val``/``test``/``all``).
        labels: ``[N]`` class indices.
        read: ``read(i)`` returns sample ``i`` as a PIL image or a uint8 array.
        recipe: preprocessing recipe (see :mod:`con2.data.images`).
        channels: 1 or 3.
        checksums: checksums of source files, recorded in the manifest.
        files: the files whose bytes are the samples (their content is the cache's key); empty:
            see :func:`source_files`.
        form: what kind of copy it is (:attr:`Found.form`), kept in the manifest's ``source.format``
            and from there in every split manifest and run record.
        settings: how the files are read into images where a declaration says so (:attr:`Found.settings`),
            kept in the manifest's ``source.settings``; ``""``: the source's fixed way.
    """

    dataset: str
    location: Path
    fingerprint: str
    classes: tuple[str, ...]
    ids: list[str]
    splits: list[str]
    labels: list[int]
    read: Callable[[int], Image.Image | np.ndarray]
    recipe: str
    channels: int
    checksums: dict[str, str] = field(default_factory=dict)
    files: tuple[Path, ...] = ()
    form: str = ""
    settings: str = ""


@dataclass(frozen=True)
class Found:
    """A source located on disk, before it is read: enough to check a cache.

    Attributes:
        location: the file or folder found (a description, e.g. ``scikit-learn``, for a source
            without files).
        fingerprint: cheap identity (see :class:`SourceTable`); the whole identity of a source
            without files.
        data_dir: the data folder it was found in (for messages).
        listing: the samples, where finding them already listed them (folder trees); else
            :meth:`con2.data.source.Source.table` reads them.
        files: the files whose bytes are the samples (empty: see :func:`source_files`).
        form: what kind of copy it is where a dataset has several (CIFAR-10: ``image-folder`` for a
            re-encoded image dump; empty: the dataset's one source), shown by ``con2 data list``.
        settings: the declared settings that turn the files into images (a dataset declared by folder in a
            profile: layout, channels, resize policy, test fraction), one line; a cache prepared under other
            settings is prepared again (:func:`load_prepared`). ``""``: the source's fixed way.
    """

    location: Path | str
    fingerprint: str
    data_dir: Path
    listing: SourceTable | None = None
    files: tuple[Path, ...] = ()
    form: str = ""
    settings: str = ""


@dataclass(frozen=True)
class SourceKey:
    """The content identity of a source: the cache's key.

    Attributes:
        digest: sha256 over the files' relative paths, sizes and sha256 of bytes (of the fingerprint
            alone for a source without files).
        files: ``{relative path: [size, mtime_ns, ctime_ns, device, inode, sha256]}``, kept in the
            manifest so that an unchanged file is not read again (see :func:`source_key`).
    """

    digest: str
    files: dict[str, list[int | str]]


@dataclass(frozen=True)
class Prepared:
    """A loaded cache: ``images`` is a read-only memmap ``[N, H, W, C]``. ``directory`` is the cache
    folder (``None`` for a source kept in memory, whose ``manifest`` holds ``images_sha256`` and an
    empty ``source`` only)."""

    directory: Path | None
    images: np.ndarray
    ids: np.ndarray
    splits: np.ndarray
    labels: np.ndarray
    classes: tuple[str, ...]
    manifest: dict[str, Any]


def cache_root(data_dir: Path | None = None) -> Path:
    """Where prepared arrays live: ``$CON2_CACHE_DIR``, else ``$XDG_CACHE_HOME/con2/prepared``
    (``~/.cache/con2/prepared``), whatever ``data_dir`` is (see the module docstring); an absolute
    path, so every message names the same folder."""
    env = os.environ.get("CON2_CACHE_DIR")
    if env:
        return Path(os.path.abspath(os.path.expanduser(env)))
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"  # the XDG spec: relative is ignored
    return Path(os.path.abspath(base)) / "con2" / "prepared"


def cache_dir(data_dir: Path, dataset: str, size: int) -> Path:
    """The cache folder of ``dataset`` at ``size``."""
    return cache_root(data_dir) / dataset / f"{size}px"


def source_files(found: Found) -> tuple[Path, ...]:
    """The files whose content keys the cache: ``found.files``, else the file found, else every file
    under the folder found (a source registered from outside that does not list them); none for a
    source without files (a description as its location)."""
    if found.files:
        return found.files
    location = found.location
    if isinstance(location, Path) and location.is_file():
        return (location,)
    if isinstance(location, Path) and location.is_dir():
        return tuple(sorted(p for p in location.rglob("*") if p.is_file()))
    return ()


def file_identity(path: Path) -> list[int]:
    """``[size, mtime_ns, ctime_ns, device, inode]`` of ``path``: equal only for the same file, unchanged
    (a write, or setting its mtime back, changes its ctime; a copy is another inode)."""
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_dev, st.st_ino]


def read_manifest(directory: Path) -> dict[str, Any]:
    """The cache's ``manifest.json`` as a dict (empty if absent or unreadable)."""
    try:
        manifest = json.loads((directory / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def known_hashes(manifest: dict[str, Any], location: Path | str) -> dict[str, Any]:
    """The per-file hashes a manifest recorded for the source at ``location`` (none for another location)."""
    source = manifest.get("source")
    if not isinstance(source, dict) or source.get("location") != str(location):
        return {}
    files = source.get("files")
    return files if isinstance(files, dict) else {}


def relative_name(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` in POSIX form (a string prefix where it lies below ``root``: the
    source listings' case, thousands of files per load)."""
    text, prefix = str(path), str(root).rstrip(os.sep) + os.sep
    if text.startswith(prefix):
        return text[len(prefix) :].replace(os.sep, "/")
    return Path(os.path.relpath(path, root)).as_posix()


def source_key(found: Found, known: dict[str, Any] | None = None) -> SourceKey:
    """The content key of ``found`` (see :class:`SourceKey`): every file's bytes are hashed, except a
    file whose :func:`file_identity` equals the one ``known`` recorded with its hash (same path, size,
    mtime, ctime, device and inode: the same unchanged file).

    Raises:
        OSError: a file cannot be read.
    """
    files = source_files(found)
    if not files:
        return SourceKey(text_digest(f"fingerprint\t{found.fingerprint}"), {})
    location = Path(found.location)
    root = location if location.is_dir() else location.parent
    known = known or {}
    memo: dict[str, list[int | str]] = {}
    rows = []
    for f in files:
        rel = relative_name(f, root)
        ident = file_identity(f)
        old = known.get(rel)
        sha = old[-1] if isinstance(old, list) and old[:-1] == ident and isinstance(old[-1], str) else None
        if sha is None:
            sha = file_digest(f, "sha256")
            if file_identity(f) != ident:  # written while it was read: these bytes name no state of it
                sha = file_digest(f, "sha256")
                ident = file_identity(f)
        memo[rel] = [*ident, sha]
        rows.append(f"{rel}\t{ident[0]}\t{sha}")
    return SourceKey(text_digest("\n".join(rows)), memo)


def remember_hashes(directory: Path, location: Path | str, key: SourceKey) -> bool:
    """Record ``key``'s per-file hashes and ``location`` in the manifest of the cache it keys, so the next
    load reads none of those files again (the same bytes found in another folder, or files whose ctime
    changed, e.g. by ``chmod``). Call it holding the cache's lock. Returns whether it wrote.

    A manifest of another source key (another process prepared other images meanwhile) is left alone.
    """
    manifest = read_manifest(directory)
    source = manifest.get("source")
    if not isinstance(source, dict) or source.get("fingerprint") != key.digest:
        return False
    if source.get("location") == str(location) and source.get("files") == key.files:
        return False
    manifest["source"] = {**source, "location": str(location), "files": key.files}
    with atomic_path(directory / "manifest.json") as tmp:
        tmp.write_text(json.dumps(manifest))
    return True


def load_prepared(
    directory: Path, fingerprint: str | None = None, verify: bool = False, settings: str | None = None
) -> Prepared | None:
    """Open a cache; ``None`` if it is absent, stale (another source key or other settings) or damaged.

    Args:
        directory: the cache folder.
        fingerprint: expected source key (:attr:`SourceKey.digest`); ``None`` accepts any.
        verify: always recompute the sha256 of ``images.npy`` (otherwise only when its size or
            mtime differ from the manifest's).
        settings: expected ``source.settings`` (:attr:`Found.settings`; absent counts as ``""``); ``None``
            accepts any.
    """
    mpath, ipath = directory / "manifest.json", directory / "images.npy"
    try:
        manifest = json.loads(mpath.read_text())
        if manifest.get("format") != FORMAT_VERSION:
            return None
        if fingerprint is not None and manifest["source"]["fingerprint"] != fingerprint:
            return None
        if settings is not None and manifest["source"].get("settings", "") != settings:
            return None
        st = ipath.stat()
        if verify or st.st_size != manifest["images_bytes"] or st.st_mtime_ns != manifest["images_mtime_ns"]:
            if file_digest(ipath, "sha256") != manifest["images_sha256"]:
                return None
        images = np.load(ipath, mmap_mode="r")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    s = manifest["samples"]
    if list(images.shape) != manifest["shape"] or len(s["id"]) != len(images):
        return None
    return Prepared(
        directory=directory,
        images=images,
        ids=np.array(s["id"]),
        splits=np.array(s["split"]),
        labels=np.array(s["class"], dtype=np.int64),
        classes=tuple(manifest["classes"]),
        manifest=manifest,
    )


def images_disagree(directory: Path) -> bool:
    """Whether the cache's ``images.npy`` exists under a readable manifest whose ``images_sha256`` it does not have
    (an edit or damage since it was prepared; size and mtime may still match the manifest's)."""
    try:
        manifest = json.loads((directory / "manifest.json").read_text())
        return file_digest(directory / "images.npy", "sha256") != manifest["images_sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


def row_order(splits: Sequence[str], labels: Sequence[int]) -> np.ndarray:
    """Row order of the cache: stable sort by (source split, class)."""
    keys = [(SPLIT_ORDER.get(s, 9), int(c), i) for i, (s, c) in enumerate(zip(splits, labels, strict=True))]
    return np.array([k[2] for k in sorted(keys)], dtype=np.int64)


def prepare(
    table: SourceTable, size: int, directory: Path, progress: bool = True, key: SourceKey | None = None
) -> Prepared:
    """Preprocess every sample of ``table`` into ``directory`` (atomically) and return the cache.

    ``key``: the source's content key, recorded in the manifest (``None``: computed here from the
    table's files).

    Raises:
        DataError: a sample cannot be decoded (names the file) or the folder cannot be written.
    """
    if len(table.ids) == 0:
        raise DataError(f"{table.dataset}: no images found in {table.location}")
    if len(set(table.ids)) != len(table.ids):
        raise DataError(f"{table.dataset}: duplicate sample ids in {table.location}")
    if key is None:
        key = source_key(Found(table.location, table.fingerprint, table.location, files=table.files))
    directory.mkdir(parents=True, exist_ok=True)
    clean_partials(directory)
    order = row_order(table.splits, table.labels)
    shape = (len(order), size, size, table.channels)
    ipath, mpath = directory / "images.npy", directory / "manifest.json"
    mpath.unlink(missing_ok=True)  # the old manifest must never describe new images
    with atomic_path(ipath) as tmp:
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=shape)
        reserve(tmp)  # a full disk fails here with ENOSPC, not with SIGBUS while writing the memmap
        bar = tqdm(order, desc=f"prepare {table.dataset} {size}px", unit="img", disable=not progress, leave=False)
        for row, i in enumerate(bar):
            try:
                out[row] = preprocess(table.read(int(i)), table.recipe, size, table.channels)
            except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:  # a bomb: no traceback
                if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM, errno.EIO):
                    raise  # the file cannot be read (Source.prepare says so), which is no sign of damage
                fix = (
                    "replace that file by a readable image, or move it out of the folder (your own images: nothing "
                    "downloads them again)"
                    if table.settings
                    else f"delete that file or the dataset folder and run `con2 data get {table.dataset}`."
                )
                name = terminal_safe(table.ids[i])
                problem = f"cannot decode {name} in {table.location} ({exc})"
                raise DataError(f"{table.dataset}: {problem}. Fix: {fix}") from exc
        out.flush()
        del out
        sha = file_digest(tmp, "sha256")
    st = ipath.stat()
    manifest = {
        "format": FORMAT_VERSION,
        "dataset": table.dataset,
        "size": size,
        "recipe": table.recipe,
        "channels": table.channels,
        "shape": list(shape),
        "classes": list(table.classes),
        "source": {
            "location": str(table.location),
            "fingerprint": key.digest,
            "listing": table.fingerprint,
            "checksums": table.checksums,
            "files": key.files,
            **({"format": table.form} if table.form else {}),
            **({"settings": table.settings} if table.settings else {}),
        },
        "images_file": "images.npy",
        "images_sha256": sha,
        "images_bytes": st.st_size,
        "images_mtime_ns": st.st_mtime_ns,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "samples": {
            "id": [table.ids[i] for i in order],
            "split": [table.splits[i] for i in order],
            "class": [int(table.labels[i]) for i in order],
        },
    }
    manifest["duplicates_across_classes"] = duplicates_across_classes(manifest)
    manifest["duplicates_across_splits"] = duplicates_across_splits(manifest)
    if table.settings:  # a declared folder of your own: copies inside one class folder are named too
        manifest["duplicates_within_splits"] = duplicates_within_splits(manifest)
    for line in duplicate_lines(manifest, directory / "manifest.json"):
        print(f"note: {table.dataset}: {line}", file=sys.stderr, flush=True)
    with atomic_path(mpath) as tmp:
        tmp.write_text(json.dumps(manifest))
    prepared = load_prepared(directory)
    if prepared is None:  # pragma: no cover - would mean the file system lost our write
        raise DataError(f"{table.dataset}: the cache just written to {directory} does not read back")
    return prepared


#: The most duplicate groups of each kind named one line each when data are prepared; the rest are counted
#: in one more line (a class folder that is a copy of another would otherwise print a line per image).
MAX_DUPLICATE_LINES = 5


def _identical_files(manifest: dict[str, Any]) -> list[list[tuple[str, str, int]]]:
    """The groups of two or more samples whose files are byte-identical (the same sha256 in the manifest's
    per-file hashes), each ``[(id, source split, class)]``; none for a source without per-file hashes."""
    files = (manifest.get("source") or {}).get("files") or {}
    samples = manifest.get("samples") or {}
    by_sha: dict[str, list[tuple[str, str, int]]] = {}
    rows = zip(samples.get("id", []), samples.get("split", []), samples.get("class", []), strict=False)
    for sample, split, label in rows:
        entry = files.get(sample)
        if isinstance(entry, list) and entry and isinstance(entry[-1], str):
            by_sha.setdefault(entry[-1], []).append((str(sample), str(split), int(label)))
    return [group for group in by_sha.values() if len(group) > 1]


def duplicates_across_classes(manifest: dict[str, Any]) -> list[list[str]]:
    """The groups of sample ids whose files are byte-identical but which are labelled with more than one class:
    one image both normal and anomalous (BR35H's copy holds such a pair). Each group sorted, the groups sorted;
    ``[]`` for a source without per-file hashes."""
    groups = _identical_files(manifest)
    return sorted(sorted(s for s, _, _ in g) for g in groups if len({c for _, _, c in g}) > 1)


def duplicates_across_splits(manifest: dict[str, Any]) -> list[list[str]]:
    """The groups of sample ids of one class whose files are byte-identical and which lie in more than one
    source split (a training image copied into its class's test folder, or val and test), or two or more in a
    split the harness divides itself (``all``): an image trained on and then scored as a test image, which
    inflates AUROC. Each group sorted, the groups sorted; ``[]`` without per-file hashes."""
    out = []
    for group in _identical_files(manifest):
        for label in sorted({c for _, _, c in group}):
            same = [(s, split) for s, split, c in group if c == label]
            splits = {split for _, split in same}
            if len(same) > 1 and (len(splits) > 1 or "all" in splits):
                out.append(sorted(s for s, _ in same))
    return sorted(out)


def duplicates_within_splits(manifest: dict[str, Any]) -> list[list[str]]:
    """The groups of sample ids of one class and one source split (``train``, ``val`` or ``test``: a split the
    harness divides itself is :func:`duplicates_across_splits`'s) whose files are byte-identical: an image counted
    twice. Each group sorted, the groups sorted; ``[]`` without per-file hashes."""
    out = []
    for group in _identical_files(manifest):
        for label, split in sorted({(c, sp) for _, sp, c in group if sp != "all"}):
            same = [s for s, sp, c in group if c == label and sp == split]
            if len(same) > 1:
                out.append(sorted(same))
    return sorted(out)


def within_duplicate_note(group: list[str]) -> str:
    """One line on a group of :func:`duplicates_within_splits`, its file names escaped as in :func:`duplicate_note`."""
    return (
        f"{' = '.join(terminal_safe(s) for s in group)} are byte-identical files of one class in one split: the "
        "image counts more than once (kept as the folders say; delete the extra copies)"
    )


def duplicate_note(group: list[str]) -> str:
    """One line on a group of :func:`duplicates_across_classes`, its file names escaped for a terminal and a
    log (:func:`con2.text.terminal_safe`: a name may hold a line break or an escape sequence)."""
    return (
        f"{' = '.join(terminal_safe(s) for s in group)} are byte-identical files in different class folders: one "
        "image is both a normal and an anomalous sample (kept as the folders say; delete the wrong copy to correct "
        "the labels)"
    )


def split_duplicate_note(group: list[str]) -> str:
    """One line on a group of :func:`duplicates_across_splits`, its file names escaped as in :func:`duplicate_note`."""
    return (
        f"{' = '.join(terminal_safe(s) for s in group)} are byte-identical files of one class in more than one split: "
        "an image trained on is also scored as a test image, which inflates AUROC (kept as the folders say; delete "
        "the test copy to remove the leak)"
    )


def duplicate_lines(manifest: dict[str, Any], where: Path) -> list[str]:
    """The notes on a prepared cache's duplicates: one line per group of each kind, at most
    :data:`MAX_DUPLICATE_LINES` of each, then one line counting the rest and naming ``where`` (the manifest
    that lists them all)."""
    lines = []
    kinds = (
        ("duplicates_across_classes", duplicate_note),
        ("duplicates_across_splits", split_duplicate_note),
        ("duplicates_within_splits", within_duplicate_note),
    )
    for key, note in kinds:
        groups = manifest.get(key) or []
        lines += [note(g) for g in groups[:MAX_DUPLICATE_LINES]]
        if len(groups) > MAX_DUPLICATE_LINES:
            lines.append(
                f"and {len(groups) - MAX_DUPLICATE_LINES:,} more groups of byte-identical files ({key}), all listed "
                f"in {terminal_safe(str(where))}"
            )
    return lines


def reserve(path: Path) -> None:
    """Allocate the disk blocks of the (sparse) file ``path`` now, so a full disk raises ENOSPC.

    Writing a memory map onto a full file system kills the process with SIGBUS instead.
    """
    if hasattr(os, "posix_fallocate"):
        fd = os.open(path, os.O_RDWR)
        try:
            os.posix_fallocate(fd, 0, os.fstat(fd).st_size)
        except OSError as exc:
            if exc.errno in (errno.EINVAL, errno.EOPNOTSUPP):  # the file system cannot preallocate
                return
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        finally:
            os.close(fd)


def take(images: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``images[idx]``: a zero-copy slice when ``idx`` is a contiguous ascending range."""
    if len(idx) and idx[-1] - idx[0] + 1 == len(idx) and np.all(np.diff(idx) == 1):
        return images[int(idx[0]) : int(idx[-1]) + 1]
    return np.asarray(images[idx])
