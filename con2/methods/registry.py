"""Methods found by name: CON2 here, the baselines from the ``baselines`` package, and any
third-party package that declares a ``con2.methods`` entry point."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from con2.config import RunConfig, dataclass_from_params
from con2.errors import ConfigError
from con2.methods.base import Method

METHODS: dict[str, type[Method]] = {}
_loaded = False


def register(cls: type[Method]) -> type[Method]:
    """Class decorator: add a method to the registry under ``cls.name``."""
    if cls.name in METHODS and METHODS[cls.name] is not cls:
        raise ValueError(f"method name {cls.name!r} is registered twice")
    METHODS[cls.name] = cls
    return cls


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    importlib.import_module("con2.methods.con2_method")
    try:
        importlib.import_module("baselines")
    except ModuleNotFoundError as exc:
        if exc.name != "baselines":
            raise
    for ep in entry_points(group="con2.methods"):
        ep.load()


def all_methods() -> dict[str, type[Method]]:
    """Every registered method by name (sorted)."""
    _load_all()
    return dict(sorted(METHODS.items()))


def get_method(name: str) -> type[Method]:
    """The method class called ``name``; ``ConfigError`` lists the registered names otherwise."""
    methods = all_methods()
    if name not in methods:
        raise ConfigError(f"unknown method {name!r}; registered: {sorted(methods)}")
    return methods[name]


def build_method(cfg: RunConfig) -> Method:
    """Instantiate the configured method with its validated params."""
    cls = get_method(cfg.method)
    params: Any = dataclass_from_params(cls.Params, cfg.params, cls.name)
    return cls(cfg, params)
