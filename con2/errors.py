"""Error types with messages that say what is wrong and how to fix it.

Every error the user can cause or fix derives from :class:`Con2Error`; the command line prints
its message as ``con2: error: ...`` and exits 2. Write failures stay ``OSError``s (so callers can
test ``errno``); :func:`write_failure` turns the common ones (disk full, read-only, no permission)
into that kind of message (:func:`job_write_failure` with the fix that fits a workflow job),
:func:`read_failure` a file or folder that cannot be read. This module
imports nothing heavy: the CLI imports it at start-up.
"""

from __future__ import annotations

import errno

NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


class Con2Error(Exception):
    """Base of the errors whose message names the problem and the fix."""


class ConfigError(Con2Error, ValueError):
    """An invalid configuration value: the message names the key and the allowed values."""


class WeightsMissing(ConfigError):
    """A method's pretrained weights are not on disk (as opposed to a wrong or damaged file)."""


class NonFiniteLossError(Con2Error, FloatingPointError):
    """Training produced a NaN or infinite loss; the message names the step and the loss terms."""


class NonFiniteFeaturesError(Con2Error, FloatingPointError):
    """Scoring met NaN or infinite features (a diverged model); the message says what to change."""


class GridError(ValueError):
    """The profile config names something that does not exist; the message names the key (raised by
    :mod:`con2.grid.checks` and the grid; here, below every layer, so that a lower layer (a dataset a
    profile declares, :mod:`con2.data.profile_datasets`) can refuse a profile in the workflow's own terms)."""


class DataError(Con2Error, RuntimeError):
    """A dataset is missing, malformed or cannot be obtained; the message says how to fix it."""

    #: the source format of a copy that was found but is broken (``image-folder``: ``con2 data list`` shows it
    #: as that copy's source); ``""``: the dataset's registered source
    form: str = ""


class DatasetMissing(DataError):
    """Nothing of the dataset is on disk (as opposed to a damaged copy): a download may fix it."""


class RunDirError(Con2Error, RuntimeError):
    """A run directory cannot be used: another writer holds it, or its checkpoint is unreadable."""


_NOT_READABLE_FIX = (
    "make it readable by this user (chmod, chown, or a readable mount), or copy it to a readable folder and point "
    "there; the file itself may be fine: do not delete it"
)
_NO_SPACE_FIX = (
    "free space on that file system (or write elsewhere: another --run-dir, or CON2_CACHE_DIR for prepared data), "
    "then rerun the same command: it resumes from the last checkpoint"
)
_NOT_WRITABLE_FIX = (
    "make that folder writable, or choose a writable --run-dir (prepared data: set CON2_CACHE_DIR to a writable folder)"
)


# A workflow job (the aggregation, a table or figure, the data check) writes under results/ where the
# workflow runs and takes no --run-dir: its fix is space or permission there, and the same command.
_JOB_NO_SPACE_FIX = (
    "free space on that file system (or move the workflow's folder, results/ with it, to a larger one and run it "
    "there; prepared data: CON2_CACHE_DIR on a larger one), then rerun the same snakemake command: finished jobs "
    "are not redone"
)
_JOB_NOT_WRITABLE_FIX = (
    "make that folder writable (or run the workflow from a writable copy of its folder; prepared data: "
    "CON2_CACHE_DIR to a writable folder), then rerun the same snakemake command"
)


def write_failure(exc: OSError, fix: str | None = None) -> str | None:
    """A message for a failed write (disk full, read-only, no permission), else ``None``.

    The message names the path (``exc.filename``) and says what to do; ``fix`` replaces the
    generic advice.
    """
    path = exc.filename if exc.filename is not None else "(unknown path)"
    if exc.errno in NO_SPACE:
        what = "no space left on device" if exc.errno == errno.ENOSPC else "disk quota exceeded"
        problem, advice = f"{what} writing {path}", _NO_SPACE_FIX
    elif exc.errno in NOT_WRITABLE:
        what = "read-only file system" if exc.errno == errno.EROFS else "permission denied"
        problem, advice = f"cannot write {path}: {what}", _NOT_WRITABLE_FIX
    else:
        return None
    return f"{problem}. Fix: {fix or advice}"


def job_write_failure(exc: OSError) -> str | None:
    """:func:`write_failure` for a workflow job's script (workflow/scripts): the fix names what fits
    a job run by Snakemake (space or permission where the workflow writes), not a ``--run-dir``."""
    return write_failure(exc, _JOB_NO_SPACE_FIX if exc.errno in NO_SPACE else _JOB_NOT_WRITABLE_FIX)


def read_failure(exc: OSError, fix: str | None = None) -> str:
    """A message for a failed read (no permission, an I/O error): names the path and says what to do.

    A file that cannot be *read* is not known to be damaged, so the advice never says to delete it.
    """
    path = exc.filename if exc.filename is not None else "(unknown path)"
    what = (exc.strerror or str(exc)).lower()
    return f"cannot read {path}: {what}. Fix: {fix or _NOT_READABLE_FIX}"
