"""Datasets a workflow profile declares itself (issue 59): ``datasets.<name>.folder`` names a folder of images.

The workflow calls :func:`register_profile_datasets` once per invocation, before the grid is expanded,
so a declared dataset is in the registry for every rule, exactly as a built-in one is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def declared_folders(config: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """``{name: settings}`` of the profile's datasets that name a ``folder`` (the rest are built-in ones)."""
    datasets = config.get("datasets") or {}
    return {str(n): e for n, e in datasets.items() if isinstance(e, Mapping) and "folder" in e}


def register_profile_datasets(config: Mapping[str, Any]) -> list[str]:
    """Register every dataset the profile declares by folder; the names registered, in profile order."""
    declared = declared_folders(config)
    if not declared:
        return []
    from con2.data.own_folder import register_folder_dataset  # noqa: PLC0415 (only a profile that declares one needs it)

    return [register_folder_dataset(name, settings, config).name for name, settings in declared.items()]
