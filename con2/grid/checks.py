"""Checks of a profile that run before any job: every string safe to print in a report, the size of
the expanded profile, every name a valid path component, the ``report:`` block naming what exists.

Each failure is a :class:`GridError` naming the profile key at fault.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from con2.errors import ConfigError, GridError
from con2.paths import NAME_PATTERN, is_name
from con2.text import UNSAFE_TEXT, terminal_safe  # UNSAFE_TEXT: what a profile's strings may not hold
from con2.yaml_files import check_size


def check_profile_text(config: Any, where: str = "") -> None:
    """Refuse a profile whose keys or strings hold an :data:`UNSAFE_TEXT` character, naming the key.
    Walks the whole profile (call :func:`check_profile_size` first: a YAML bomb is refused there).

    Raises:
        GridError: naming the key (``run.encoder``), the value and the character.
    """
    if isinstance(config, dict):
        items: Iterable[tuple[str, Any]] = [(f"{where}.{k}" if where else str(k), v) for k, v in config.items()]
        for key in config:
            _safe_text(key, f"{where or 'the profile'}: the key")
    elif isinstance(config, (list, tuple)):
        items = [(f"{where}[{i}]", v) for i, v in enumerate(config)]
    else:
        _safe_text(config, where)
        return
    for key, value in items:
        check_profile_text(value, key)


def _safe_text(value: Any, where: str) -> None:
    """:class:`GridError` if ``value`` is a string holding an :data:`UNSAFE_TEXT` character."""
    found = UNSAFE_TEXT.search(value) if isinstance(value, str) else None
    if found:
        raise GridError(
            f"{where}: {value[:80]!r} holds {found.group()!r}: a profile's text reaches the report (HTML) and the "
            "tables (Markdown), so '<', '`' and control characters (line breaks, tabs) are refused; "
            "remove them from the profile"
        )


def check_profile_size(config: Any) -> None:
    """Refuse a profile that expands to more values than any profile holds (nested YAML aliases):
    :func:`con2.yaml_files.check_size`, as a :class:`GridError`. Call it before anything walks, prints
    or hashes the profile (the schema check prints it)."""
    try:
        check_size(config, "the profile", "write the values out, without nested anchors and aliases")
    except ConfigError as exc:
        raise GridError(str(exc)) from None


def check_name(value: Any, where: str) -> str:
    """``value`` as a string if it matches :data:`NAME_PATTERN`, else :class:`GridError` naming ``where``
    (the profile key that sets it) and the pattern."""
    text = str(value)
    if not is_name(text):
        raise GridError(
            f"{where}: {text!r} is not a valid name: it becomes a path and a shell word, so it must match "
            f"{NAME_PATTERN} (a letter or digit, then letters, digits, '_', '+' or '-'; no '/', '.', space "
            "or shell character); rename it in the profile"
        )
    return text


def check_profile_schema(config: Any, schema_path: str | Path) -> None:
    """Refuse a profile that does not match the workflow's JSON schema in one line naming the key and what is
    wrong (an unknown key: its name), before Snakemake's own check, which prints the whole schema (918 lines
    for one unknown key).

    Raises:
        GridError: naming the key, the problem and the schema file.
    """
    import jsonschema  # lazy: only the Snakefile's start checks a profile against its schema
    import yaml  # lazy: as above

    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if error is None:
        return
    where = ".".join(str(p) for p in error.absolute_path) or "the profile's top level"
    message = terminal_safe(error.message)
    message = message if len(message) <= 300 else message[:300] + "..."
    raise GridError(
        f"{where}: {message}. Fix: correct or remove that key (every key and its type: {Path(schema_path).name})"
    )


# The longest folder name and path most file systems take (Linux: NAME_MAX 255 bytes, PATH_MAX 4096).
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4096


def check_data_dir(data_dir: str | Path) -> None:
    """Refuse a ``data_dir`` the file system cannot hold (a folder name over :data:`MAX_NAME_BYTES` bytes, a path
    over :data:`MAX_PATH_BYTES`) in one line before any job: asked later, for each run, it was a 39-line
    traceback from an input function (``File name too long``).

    Raises:
        GridError: naming the value (shortened) and the fix.
    """
    text = str(data_dir)
    longest = max((len(part.encode()) for part in Path(text).parts), default=0)
    if longest <= MAX_NAME_BYTES and len(text.encode()) <= MAX_PATH_BYTES:
        return
    shown = terminal_safe(text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)")
    what = f"a folder name of {longest} bytes" if longest > MAX_NAME_BYTES else f"a path of {len(text.encode())} bytes"
    raise GridError(
        f"data_dir {shown!r} holds {what}, longer than the file system allows ({MAX_NAME_BYTES} per name, "
        f"{MAX_PATH_BYTES} in all). Fix: pass a shorter data_dir (--config data_dir=PATH)"
    )
