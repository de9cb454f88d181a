"""A job's wildcards as the rules' input, params and priority functions receive them (typing only)."""

from __future__ import annotations

from typing import Protocol


class Wildcards(Protocol):
    """A job's wildcards as Snakemake passes them (``snakemake.io.Wildcards``): the names of its rule's output
    pattern as attributes; a rule has those its pattern names (a run's rule: ``dataset`` to ``seed``; the
    data rules: ``dataset``, ``size``; a scoped table's aggregation: ``scope``). An input function that
    reads none takes ``None`` where no job is at hand (a target's inputs)."""

    dataset: str
    normal_class: str
    method: str
    variant: str
    seed: str
    size: str
    scope: str
