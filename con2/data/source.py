"""What a dataset is (:class:`DatasetInfo`) and where its images come from (:class:`Source`).

A :class:`Source` is one object per kind of source (MedMNIST npz files, Kaggle folders and zips,
the CIFAR pickles, ImageNet30's manual folders, scikit-learn's embedded digits), registered by its
``kind`` in :mod:`con2.data.registry`; a :class:`DatasetInfo` names the kind its files come in.
Every source answers the same four questions with the same signatures:

* :meth:`Source.find`: where the dataset is under ``data_dir`` (no network; cheap: a listing of
  names, sizes and mtimes, and the files whose bytes are the samples; no image read), or
  :class:`~con2.errors.DatasetMissing`;
* :meth:`Source.table`: the samples found, one row each, and how to read them;
* :meth:`Source.download`: put the dataset under ``data_dir`` (the network is touched only here);
* :meth:`Source.how_to_get`: the command or manual steps that get it.

:meth:`Source.prepare` turns what ``find`` located into the prepared, memory-mapped cache of
:mod:`con2.data.cache` (downloading first when allowed and nothing is on disk); a source whose
samples need no files (the embedded digits) overrides it and keeps them in memory.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from con2.data.cache import (
    Found,
    Prepared,
    SourceTable,
    cache_dir,
    images_disagree,
    known_hashes,
    load_prepared,
    prepare,
    read_manifest,
    remember_hashes,
    source_key,
)
from con2.data.data_dir import absolute_data_dir
from con2.data.fileops import PARTIAL, file_lock
from con2.errors import NO_SPACE, DataError, DatasetMissing, read_failure, write_failure
from con2.text import terminal_safe


@dataclass(frozen=True)
class DatasetInfo:
    """What the harness knows about one dataset.

    Attributes:
        name: registry key (lower case).
        title: display name.
        family: ``medical``, ``natural`` or ``smoke``.
        source: the ``kind`` of the registered :class:`Source` its files come from (``medmnist``,
            ``kaggle``, ``torchvision``, ``manual``, ``embedded``).
        classes: all class names (index = label).
        normals: the normal classes the paper runs, one run each (a group is one entry).
        groups: named groups of classes (e.g. Kvasir's ``normal`` = its three normal classes).
        protocol: ``official`` or ``holdout`` (see :mod:`con2.data.splits`).
        test_fraction: held-out fraction per class (``holdout``).
        all_anomalies: ``holdout``: every anomaly is a test image (else only held-out ones).
        recipe: preprocessing (see :mod:`con2.data.images`); ``native`` for MedMNIST.
        channels: channels of the prepared images.
        paper_size: the training size in the paper.
        in_paper: whether the paper reports it.
        split: one line describing the split.
    """

    name: str
    title: str
    family: str
    source: str
    classes: tuple[str, ...]
    normals: tuple[str, ...]
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    protocol: str = "official"
    test_fraction: float = 0.2
    all_anomalies: bool = True
    recipe: str = "resize"
    channels: int = 3
    paper_size: int = 224
    in_paper: bool = True
    split: str = ""

    @property
    def default_normal(self) -> str:
        """The normal class used when none is given."""
        return self.normals[0]


def resolve_data_dir(data_dir: str | Path | None) -> Path:
    """The absolute, normalised data folder (:func:`con2.data.data_dir.absolute_data_dir`; ``None``: the
    default one), refused where it is no folder.

    Raises:
        DataError: the path exists but is not a folder.
    """
    d = absolute_data_dir(data_dir)
    if d.exists() and not d.is_dir():
        what = "a file" if d.is_file() else "a device, a pipe or a socket"
        raise DataError(
            f"data_dir {d} is {what}, not a folder. Fix: pass the folder that holds the datasets "
            f"(`con2 train --set data_dir=DIR`, `con2 data get NAME --data-dir DIR`), e.g. {d.parent}"
        )
    return d


def _is_write(exc: OSError, cache: Path | None = None) -> bool:
    """Whether a failed file operation was a write: a full or read-only disk, one of our temporary
    names (``.partial-``), or a path in the ``cache`` folder or one of the folders above it (created
    on the way); an unknown path counts as a write. Anything else was reading the dataset."""
    if exc.errno in (*NO_SPACE, errno.EROFS) or exc.filename is None:
        return True
    path = Path(os.fsdecode(exc.filename)).absolute()
    if PARTIAL in path.name:
        return True
    if cache is None:
        return False
    cache = cache.absolute()
    return path == cache or cache in path.parents or path in cache.parents


class Source(ABC):
    """One kind of source: how datasets of that kind are found, listed, downloaded and prepared.

    Subclasses set ``kind`` and implement :meth:`find`, :meth:`table`, :meth:`download` and
    :meth:`how_to_get`; register an instance with :func:`con2.data.registry.register_source`.
    """

    kind: ClassVar[str]

    @abstractmethod
    def find(self, info: DatasetInfo, data_dir: Path, size: int) -> Found:
        """Locate ``info``'s files under ``data_dir`` (no network, no image read).

        Raises:
            DatasetMissing: nothing of it there (the message says how to get it);
            DataError: a damaged or incomplete copy.
        """

    @abstractmethod
    def table(self, info: DatasetInfo, found: Found, size: int) -> SourceTable:
        """The samples of what :meth:`find` located: ids, source splits, labels and a reader."""

    @abstractmethod
    def download(self, info: DatasetInfo, data_dir: Path, size: int, progress: bool = True) -> None:
        """Put ``info``'s files under ``data_dir`` (the network boundary of the source).

        Raises:
            DataError: no network or credentials, a bad download (nothing is left behind), or a
                dataset that has no download (the message gives the manual steps).
        """

    @abstractmethod
    def how_to_get(self, info: DatasetInfo, data_dir: Path) -> str:
        """The command (or manual steps) that gets ``info`` into ``data_dir``."""

    def default_size(self, info: DatasetInfo) -> int:
        """The size ``con2 data get`` and ``con2 data list`` use when none is given: the paper's."""
        return info.paper_size

    def published_sizes(self, info: DatasetInfo) -> tuple[int, ...] | None:
        """The only sizes this source can be prepared at (MedMNIST's npz files), or None: any size."""
        return None

    def prepare(
        self,
        info: DatasetInfo,
        data_dir: str | Path | None,
        size: int,
        *,
        download: bool = False,
        progress: bool | None = None,
        verify: bool = False,
    ) -> Prepared:
        """Locate (or, with ``download``, download) ``info``, verify it and return its prepared cache.

        Args:
            info: the dataset.
            data_dir: searched first; downloads go there (``None``: the default data folder).
            size: image size of the cache.
            download: download when nothing is on disk.
            progress: show progress bars (``None``: when stderr is a terminal).
            verify: recompute the cache's sha256 even if it looks unchanged.

        Raises:
            DataError: with the file and the fix.
        """
        d = resolve_data_dir(data_dir)
        show = sys.stderr.isatty() if progress is None else progress
        try:
            found = self.find(info, d, size)
        except DatasetMissing:
            if not download:
                raise
            self.download(info, d, size, show)
            found = self.find(info, d, size)
        except OSError as exc:  # a folder or file of the dataset that cannot be listed or read
            if _is_write(exc):  # extracting a local archive: a full or read-only disk
                raise
            raise DataError(f"{info.name}: {read_failure(exc)}") from exc
        directory = cache_dir(d, info.name, size)
        try:  # the cache's key: the source's content (hashes of unchanged files come from the manifest)
            key = source_key(found, known_hashes(read_manifest(directory), found.location))
        except OSError as exc:
            raise DataError(f"{info.name}: {read_failure(exc)}") from exc
        prepared = load_prepared(directory, key.digest, verify=verify, settings=found.settings)
        if prepared is not None:
            if known_hashes(prepared.manifest, found.location) != key.files:  # some files were read: note them
                try:
                    with file_lock(directory / ".lock"):
                        remember_hashes(directory, found.location, key)
                except OSError:
                    pass  # a read-only cache still loads; its files are hashed again next time
                source = {**prepared.manifest["source"], "location": str(found.location), "files": key.files}
                prepared = dataclasses.replace(prepared, manifest={**prepared.manifest, "source": source})
            return prepared
        try:
            with file_lock(directory / ".lock"):
                # another job may have finished it (verified again: an edit that kept size and mtime passes otherwise)
                prepared = load_prepared(directory, key.digest, verify=verify, settings=found.settings)
                if prepared is None:
                    if verify and images_disagree(directory):
                        print(
                            terminal_safe(
                                f"{info.name}: the prepared {directory / 'images.npy'} disagrees with the sha256 of "
                                "its manifest (edited or damaged since it was prepared); preparing it again from the "
                                "source"
                            ),
                            flush=True,
                        )
                    prepared = prepare(self.table(info, found, size), size, directory, progress=show, key=key)
        except OSError as exc:
            if not _is_write(exc, directory):  # reading the source, not writing the cache
                raise DataError(f"{info.name}: {read_failure(exc)}") from exc
            fix = (
                f"point CON2_CACHE_DIR at a writable folder with free space (or make room or write access there), "
                f"then rerun (or run `con2 data get {info.name} --size {size}`)"
            )
            problem = write_failure(exc, fix) or f"cannot write the prepared cache {directory} ({exc}). Fix: {fix}"
            raise DataError(f"{info.name}: {problem}") from exc
        return prepared
