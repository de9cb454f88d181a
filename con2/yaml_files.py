"""YAML and text files read as untrusted input: a size and nesting bound before anything walks a
value (a few lines of nested YAML anchors expand to billions of values), regular UTF-8 files of a
bounded size only, and one-line errors that name the file, the line and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from con2.errors import ConfigError, read_failure

# The most values (mappings, lists, scalars, counted as a reader walks them, YAML aliases expanded)
# and text characters a config may hold: a YAML file of nested anchors ("billion laughs") is a few
# lines that expand to billions of values, which printing or hashing would try to build.
MAX_CONFIG_VALUES = 100_000
MAX_CONFIG_CHARS = 10_000_000
# The largest YAML file read as a config or profile (the paper's profile is 20 kB).
MAX_CONFIG_BYTES = 1_000_000
# The deepest nesting of mappings and lists a config or profile may hold (the paper's profile: 5). PyYAML
# builds nested values by recursion: ~1000 levels (2 kB of "[") end in a RecursionError.
MAX_CONFIG_DEPTH = 50


def check_size(value: Any, what: str, fix: str) -> None:
    """Refuse a value that holds more than :data:`MAX_CONFIG_VALUES` values or :data:`MAX_CONFIG_CHARS`
    characters of text, counted as a reader walks it (a YAML alias counts each time it is used), so a
    file of nested anchors fails here at once rather than in the printer or hasher that expands it.

    Raises:
        ConfigError: naming ``what``, the bound and ``fix``.
    """
    values, chars = 0, 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        values += 1
        if isinstance(item, (str, bytes)):
            chars += len(item)
        elif isinstance(item, (dict, list, tuple, set)):
            if depth >= MAX_CONFIG_DEPTH:
                raise too_deep(what, fix)
            inner = [*item.keys(), *item.values()] if isinstance(item, dict) else list(item)
            stack.extend((v, depth + 1) for v in inner)
        if values > MAX_CONFIG_VALUES or chars > MAX_CONFIG_CHARS:
            raise ConfigError(
                f"{what} expands to more than {MAX_CONFIG_VALUES:,} values or {MAX_CONFIG_CHARS:,} characters "
                f"(nested YAML anchors and aliases?). Fix: {fix}"
            )


def too_deep(what: str, fix: str) -> ConfigError:
    """The error for a value nested deeper than :data:`MAX_CONFIG_DEPTH`."""
    return ConfigError(
        f"{what} is nested more than {MAX_CONFIG_DEPTH} levels deep (mappings and lists inside each other; a config "
        f"holds a few). Fix: {fix}"
    )


def check_yaml_depth(text: str, what: str, fix: str) -> None:
    """Refuse YAML text whose mappings and lists nest deeper than :data:`MAX_CONFIG_DEPTH`, read from the
    parser's events (no recursion, and no further than the first level too deep), before a loader builds
    the value by recursion.

    Raises:
        ConfigError: naming ``what`` and ``fix``; ``yaml.YAMLError`` for text that is not YAML.
    """
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_CONFIG_DEPTH:
                raise too_deep(what, fix)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def safe_yaml(text: str, what: str, fix: str) -> Any:
    """``yaml.safe_load(text)`` of text no deeper than :data:`MAX_CONFIG_DEPTH` (:func:`check_yaml_depth`),
    then :func:`check_size` (a bomb of aliases never expands)."""
    check_yaml_depth(text, what, fix)
    loaded = yaml.safe_load(text)
    check_size(loaded, what, fix)
    return loaded


def yaml_problem(exc: yaml.YAMLError) -> str:
    """One line for a YAML error: where, what (and that tags such as ``!!python/object`` are refused)."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if isinstance(exc, yaml.constructor.ConstructorError):
        problem += "; YAML tags that build Python objects (!!python/...) are refused"
    return f"{where}{problem}"


def read_text_file(
    path: Path, what: str, advice: str, limit: int = MAX_CONFIG_BYTES, kind: str = "YAML text file"
) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes (read no further); ``kind`` names what
    the file should be in the message for a binary one ("YAML text file", "CSV text file").

    Raises:
        ConfigError: in one line naming ``what`` and ``advice``: no such path, not a regular file
            (a folder, ``/dev/zero``, a FIFO), larger than ``limit``, not UTF-8 text; an ``OSError``
            (no permission) as :func:`con2.errors.read_failure` words it.
    """
    if not path.exists():
        raise ConfigError(f"{what} {path} not found. Fix: {advice}")
    if not path.is_file():
        raise ConfigError(f"{what} {path} is not a regular file (a folder, a device or a pipe). Fix: {advice}")
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"{what}: {read_failure(exc)}") from None
    if len(data) > limit:
        raise ConfigError(
            f"{what} {path} is larger than {limit:,} bytes; a {kind} this large is no input. Fix: {advice}"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {path} is not a {kind} (byte {exc.start} is not UTF-8). Fix: {advice}") from None


def read_yaml_mapping(path: str | Path, what: str = "config file", fix: str | None = None) -> dict[str, Any]:
    """The mapping a YAML file holds; ``ConfigError`` naming the file for anything else.

    Refused, each in one line: a missing file, one that is not UTF-8 text (a binary file), invalid
    YAML (with line and column), YAML tags that would build Python objects (``!!python/object``;
    ``yaml.safe_load`` never builds them), and a top level that is not a mapping. ``fix`` replaces
    the advice (e.g. for a file that ``con2 train`` wrote).
    """
    p = Path(path)
    advice = fix or "pass a YAML mapping of con2.config.RunConfig keys to values (e.g. `epochs: 8`)"
    text = read_text_file(p, what, advice)
    try:
        loaded = safe_yaml(text, f"{what} {p}", advice)
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"{what} {p} is not valid YAML ({yaml_problem(exc)}). Fix: {fix or 'correct that line'}"
        ) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(
            f"{what} {p} must hold a mapping of keys to values, not a {type(loaded).__name__}. Fix: {advice}"
        )
    return loaded
