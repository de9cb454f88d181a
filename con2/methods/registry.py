"""Methods found by name, through the ``con2.methods`` entry-point group.

Every method (CON2 and the baselines alike) is declared as an entry point whose value is its
:class:`~con2.methods.spec.MethodSpec` (torch-free: listing and validating never import torch)
or its :class:`~con2.methods.Method` subclass. The core names no method: the built-ins are the
entry points of this project's ``pyproject.toml``, read from the checkout itself whenever it
has one (so a source tree run with ``PYTHONPATH``, installed or not, lists its own methods).
``register`` adds a class at run time (tests, notebooks).
"""

from __future__ import annotations

import importlib
import tomllib
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from con2.config import RunConfig
from con2.errors import ConfigError
from con2.methods.spec import MethodSettings, MethodSpec

if TYPE_CHECKING:
    from con2.methods.base import Method

GROUP = "con2.methods"
METHODS: dict[str, MethodSpec] = {}
_CLASSES: dict[str, type] = {}  # methods registered as classes (no import needed to load them)
_loaded = False
_PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def register(cls: type[Method]) -> type[Method]:
    """Class decorator: add a method class to the registry under ``cls.name``."""
    if cls.name in _CLASSES and _CLASSES[cls.name] is not cls:
        raise ValueError(f"method name {cls.name!r} is registered twice")
    spec = METHODS.get(cls.name)
    if spec is None or spec.implementation != f"{cls.__module__}:{cls.__qualname__}":
        spec = spec_from_class(cls)
    METHODS[cls.name] = spec
    _CLASSES[cls.name] = cls
    return cls


def register_spec(spec: MethodSpec) -> MethodSpec:
    """Add a method by its spec (its class is imported when a run needs it)."""
    old = METHODS.get(spec.name)
    if old is not None and old.implementation != spec.implementation:
        raise ValueError(f"method name {spec.name!r} is registered twice ({old.implementation}, {spec.implementation})")
    METHODS[spec.name] = spec
    return spec


def _declared_entry_points() -> dict[str, str]:
    """``{name: "module:attr"}`` of the group: installed distributions, then this checkout's pyproject.

    The checkout whose ``con2`` package is imported declares the built-ins: its table wins over
    installed metadata, which may be stale (an editable install of another checkout, or a run
    with ``PYTHONPATH`` on a source tree that was never installed).
    """
    found = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    if _PYPROJECT.is_file():
        table = tomllib.loads(_PYPROJECT.read_text()).get("project", {}).get("entry-points", {}).get(GROUP, {})
        found = {**found, **table}
    return found


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name, value in _declared_entry_points().items():
        module, _, attr = value.partition(":")
        obj: Any = getattr(importlib.import_module(module), attr)
        spec = obj if isinstance(obj, MethodSpec) else spec_from_class(obj)
        if spec.name != name:
            raise ValueError(f"entry point {name!r} = {value!r} declares method {spec.name!r}")
        if isinstance(obj, MethodSpec):
            register_spec(spec)
        else:
            register(obj)


def all_methods() -> dict[str, MethodSpec]:
    """Every registered method's spec by name (sorted). Torch-free for spec entry points."""
    _load_all()
    return dict(sorted(METHODS.items()))


def get_spec(name: str) -> MethodSpec:
    """The spec of method ``name``; ``ConfigError`` lists the registered names otherwise."""
    methods = all_methods()
    if name not in methods:
        raise ConfigError(f"unknown method {name!r}; registered: {sorted(methods)}")
    return methods[name]


def get_method(name: str) -> type[Method]:
    """The method class called ``name`` (imports its module)."""
    spec = get_spec(name)
    cls = _CLASSES.get(name)
    if cls is None:
        cls = spec.load()
        _CLASSES[name] = cls
    return cls


def validate_run(cfg: RunConfig) -> Any:
    """Check a run's method and its ``params`` without building anything; return the params object."""
    return get_spec(cfg.method).params_for(cfg)


def build_method(cfg: RunConfig) -> Method:
    """Instantiate the configured method with its validated params."""
    params = validate_run(cfg)
    return get_method(cfg.method)(MethodSettings.from_config(cfg), params)


def spec_from_class(cls: type[Method]) -> MethodSpec:
    """A spec read off a method class's attributes (for methods registered as classes)."""
    return MethodSpec(
        name=cls.name,
        Params=cls.Params,
        implementation=f"{cls.__module__}:{cls.__qualname__}",
        score_names=tuple(cls.score_names),
        description=getattr(cls, "description", ""),
        label=getattr(cls, "label", "") or cls.name,
        test_params=dict(getattr(cls, "test_params", {}) or {}),
        scoring_params=tuple(getattr(cls, "scoring_params", ())),
        views_per_image=getattr(cls, "views_per_image", None),
    )
