"""Checks of a profile that run before any job: every string safe to print in a report, the size of
the expanded profile, every name a valid path component, the ``report:`` block naming what exists.

Each failure is a :class:`GridError` naming the profile key at fault.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from con2.errors import ConfigError
from con2.paths import NAME_PATTERN, is_name
from con2.text import UNSAFE_TEXT  # what a profile's strings may not hold (an external label neither)
from con2.yaml_files import check_size


class GridError(ValueError):
    """The profile config names something that does not exist; the message names the key."""


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
