"""Anomaly-detection methods: torch-free specs found by name (``registry``), torch classes on demand.

``from con2.methods import all_methods`` lists every method without importing torch; the
``Method`` base class and ``MethodScores`` load torch when first touched.
"""

from __future__ import annotations

from typing import Any

from con2.methods.registry import all_methods, build_method, get_method, get_spec, register, register_spec, validate_run
from con2.methods.spec import MethodSpec

__all__ = [
    "Method",
    "MethodScores",
    "MethodSpec",
    "all_methods",
    "build_method",
    "get_method",
    "get_spec",
    "register",
    "register_spec",
    "validate_run",
]


def __getattr__(name: str) -> Any:
    if name in ("Method", "MethodScores"):
        from con2.methods import (
            base,  # lazy: torch: the Method class loads only when a run needs it; specs stay torch-free
        )

        return getattr(base, name)
    raise AttributeError(f"module 'con2.methods' has no attribute {name!r}")
