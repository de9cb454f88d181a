"""Datasets a workflow profile declares itself (issue 59): ``datasets.<name>.folder`` names a folder of images.

The workflow calls :func:`register_profile_datasets` once per invocation, before the grid is expanded,
so a declared dataset is in the registry for every rule, exactly as a built-in one is; the processes it
starts learn the declarations from ``$CON2_DATASETS`` (:mod:`con2.data.own_folder`). A declaration's
``image_size`` becomes its runs' ``image_size`` unless ``datasets.<name>.run`` sets one, so a changed
size is a changed run config (a new hash: those runs train again); built-in datasets are untouched.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from con2.errors import DataError, GridError


def declared_folders(config: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """``{name: settings}`` of the profile's datasets that name a ``folder`` (the rest are built-in ones)."""
    datasets = config.get("datasets") or {}
    return {str(n): e for n, e in datasets.items() if isinstance(e, Mapping) and "folder" in e}


def register_profile_datasets(config: Mapping[str, Any]) -> list[str]:
    """Register every dataset the profile declares by folder; the names registered, in profile order.

    Raises:
        con2.errors.GridError: a bad declaration or a refused folder (the workflow stops on its one line
            before any job; nothing is prepared).
    """
    declared = declared_folders(config)
    if not declared:
        return []
    from con2.data.own_folder import register_folder_dataset  # lazy: only a profile that declares one needs it

    names = []
    for name, settings in declared.items():
        try:
            names.append(register_folder_dataset(name, settings, config).name)
        except DataError as exc:
            raise GridError(str(exc)) from None
        if "image_size" in settings and isinstance(settings, MutableMapping):
            run = settings.get("run")
            if run is None:
                settings["run"] = run = {}
            if isinstance(run, MutableMapping):
                run.setdefault("image_size", settings["image_size"])
    return names
