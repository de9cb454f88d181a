"""What the report knows about methods, asked of the methods themselves: names, paper rows, the subject.

The report names no method. How a method is labelled, which of the paper's rows each of its
scores is compared with and its name in the paper's compute table come from, in this order:

1. the profile's ``paper_names`` block (``methods: {"toy/pixel_nn": "PANDA"}``, or
   ``"PANDA/NND"`` for a paper score): joins for methods without a spec, e.g. an external
   baseline trained by its own rule file; it overrides the others;
2. the method's spec where it is registered here (:func:`con2.methods.all_methods`, torch-free):
   ``label``, ``score_labels``, ``paper_rows``, ``compute_name`` and the order of ``score_names``;
3. the ``method_card`` each record carries (the run frame's ``method_label``, ``score_label``,
   ``paper_method``, ``paper_score`` and ``compute_name`` columns), for methods registered where
   the records were written but not here; else the method's own name.

``report.subject`` names the method the paper is about: it comes first in every table, and the
ablation tables (both scores, contexts, loss terms, number of contexts, silhouette, PCA) read its
runs, selected by the tags its records carry (``contexts``, ``n_contexts``, ``loss``: see
:class:`Subject`). :func:`lacking_weights` says which experiments of the profile have no runs
because the pretrained weights their method needs are missing, why, and how to get them (the
tables' one-line notes: :func:`con2.report.notes.missing_weights_notes`; the fixes: the
``missing`` table, :mod:`con2.builders.missing`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from con2.aggregate.cards import base_score, registered_specs
from con2.config import dataclass_from_params
from con2.errors import ConfigError, DataError, WeightsMissing
from con2.grid.checks import GridError
from con2.grid.experiments import as_list, deep_merge, grid_cells, method_variants, select_cells, selection

SUBJECT_TAGS = ("contexts", "n_contexts", "loss")  # the tags the subject's tables group its runs by


@dataclass
class MethodInfo:
    """One method as the report shows it."""

    label: str
    score_labels: dict[str, str] = field(default_factory=dict)
    score_order: tuple[str, ...] = ()
    paper_rows: dict[str, tuple[str, str]] = field(default_factory=dict)
    compute_name: str | None = None


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, str) and value != "" else None


class Methods:
    """Labels, paper rows, compute names and sort order of every method a report may show."""

    def __init__(
        self, infos: Mapping[str, MethodInfo], subject: str | None = None, floors: tuple[str, ...] = ()
    ) -> None:
        self.infos = dict(infos)
        self.subject = subject
        self.floors = tuple(floors)  # training-free methods every other must beat (report.floors)

    def info(self, method: str) -> MethodInfo:
        return self.infos.get(method) or MethodInfo(label=method)

    def label(self, method: str) -> str:
        """The display name (``CON2``)."""
        return self.info(method).label

    def score_label(self, method: str, score: str) -> str:
        """The display name of one of its scores (``NND``; a reading keeps its ``@...`` suffix)."""
        labels = self.info(method).score_labels
        base = base_score(score)
        if score in labels:
            return labels[score]
        return labels[base] + str(score)[len(base) :] if base in labels else str(score)

    def pair_label(self, method: str, score: str) -> str:
        """``CON2 (NND)``."""
        return f"{self.label(method)} ({self.score_label(method, score)})"

    def paper_row(self, method: str, score: str) -> tuple[str, str] | None:
        """The paper's ``(method, score or "")`` row a headline score is compared with, if any."""
        return self.info(method).paper_rows.get(score)

    def paper_rows(self) -> dict[tuple[str, str], tuple[str, str]]:
        """Every ``(method, score) -> (paper method, paper score)`` join."""
        return {(m, s): r for m, i in self.infos.items() for s, r in i.paper_rows.items()}

    def compute_name(self, method: str) -> str | None:
        """The method's name in the paper's compute-hours table."""
        return self.info(method).compute_name

    def scores(self, method: str) -> tuple[str, ...]:
        """Its headline scores in the order its spec lists them (known ones only)."""
        return self.info(method).score_order

    def score_key(self, method: str, score: str) -> tuple[int, str]:
        """Sort key of a method's score: its spec's order, others alphabetically after."""
        order = self.scores(method)
        return (order.index(score), "") if score in order else (len(order), str(score))

    def pair_key(self, method: str, score: str) -> tuple[int, str, tuple[int, str]]:
        """Sort key of (method, score): the floors first (``report.floors``, in their order), then the subject,
        then by method name; scores by :meth:`score_key`."""
        if method in self.floors:
            return (0, f"{self.floors.index(method):04d}", self.score_key(method, score))
        return (1 if method == self.subject else 2, str(method), self.score_key(method, score))

    def any_score_label(self, score: str) -> str:
        """A score's display name without a method (the first method that has a score of that name)."""
        for info in self.infos.values():
            if score in info.score_labels:
                return info.score_labels[score]
        return str(score)

    def any_score_rank(self, score: str) -> int:
        """A stable colour index of a score without a method (its place among every method's scores)."""
        seen = list(dict.fromkeys(s for i in self.infos.values() for s in i.score_order))
        return seen.index(score) if score in seen else len(seen)


def method_names(config: Mapping[str, Any] | None = None, runs: pd.DataFrame | None = None) -> Methods:
    """:class:`Methods` from the config's ``paper_names``, the registered specs and the records'
    cards in ``runs`` (in that order of precedence; see the module docstring)."""
    infos: dict[str, MethodInfo] = {}
    if runs is not None and not runs.empty and "method_label" in runs.columns:
        for method, g in runs.groupby("method", sort=False):
            info = MethodInfo(label=next((str(v) for v in g["method_label"] if _text(v)), str(method)))
            for r in g.drop_duplicates(subset=["score"]).to_dict("records"):
                if _text(r.get("score_label")):
                    info.score_labels[str(r["score"])] = str(r["score_label"])
                if _text(r.get("paper_method")):
                    info.paper_rows[str(r["score"])] = (str(r["paper_method"]), _text(r.get("paper_score")) or "")
                info.compute_name = info.compute_name or _text(r.get("compute_name"))
            info.score_order = tuple(sorted(s for s in info.score_labels if "@" not in s))
            infos[str(method)] = info
    for name, spec in registered_specs().items():
        infos[name] = MethodInfo(
            label=spec.label or spec.name,
            score_labels={s: spec.score_labels.get(s, s) for s in spec.score_names},
            score_order=tuple(spec.score_names),
            paper_rows={s: (str(r[0]), str(r[1])) for s, r in spec.paper_rows.items()},
            compute_name=spec.compute_name,
        )
    extra = (config or {}).get("paper_names") or {}
    for ours, theirs in (extra.get("methods") or {}).items():
        m, _, s = str(ours).partition("/")
        pm, _, ps = str(theirs).partition("/")
        infos.setdefault(m, MethodInfo(label=m)).paper_rows[s] = (pm, ps)
    rep = (config or {}).get("report") or {}
    return Methods(infos, _text(rep.get("subject")), tuple(str(m) for m in rep.get("floors") or []))


# ----------------------------------------------------------------------------- the subject
_REFERENCE = object()  # "the main variant's value" in Subject.runs


@dataclass(frozen=True)
class Subject:
    """The method the paper is about (``report.subject``) and its reference runs.

    Attributes:
        method: the registry name (``None``: no subject set; its tables are empty).
        label: display name.
        scores: its headline scores in order.
        main_variant: the variant compared across methods (``report.main_variants``).
        reference: the tags of the main variant's runs (``contexts``, ``n_contexts``, ``loss``;
            from its records, else from the spec's default params).
    """

    method: str | None
    label: str
    scores: tuple[str, ...]
    main_variant: str
    reference: Mapping[str, Any]
    study_only: frozenset[str] = frozenset()  # variants only a study trains: never pooled by their tags

    def runs(
        self, runs: pd.DataFrame, *, contexts: list[str] | None = None, loss: Any = _REFERENCE, k: Any = _REFERENCE
    ) -> pd.DataFrame:
        """The subject's rows by what their records' tags say: context label(s), loss and number of
        contexts k (default: the main variant's; ``None``: any). A study's own variants (a fidelity
        reading with the same tags as the main variant, BatchNorm per context, say) are never among them."""
        if runs.empty or self.method is None:
            return runs.iloc[0:0]
        sel = (runs["method"] == self.method) & ~runs["variant"].isin(self.study_only)
        loss = self.reference.get("loss") if loss is _REFERENCE else loss
        k = self.reference.get("n_contexts") if k is _REFERENCE else k
        if loss is not None:
            sel &= self.losses(runs) == loss
        if k is not None and not pd.isna(k):
            sel &= runs["n_contexts"] == float(k)
        if contexts is not None:
            sel &= runs["contexts"].isin(contexts)
        return runs[sel]

    def losses(self, runs: pd.DataFrame) -> pd.Series:
        """The ``loss`` tag of each row, the main variant's where a record has none."""
        ref = self.reference.get("loss")
        return runs["loss"] if ref is None else runs["loss"].fillna(ref)

    @property
    def main_context(self) -> str | None:
        """The main variant's context label (``invert``)."""
        ctx = self.reference.get("contexts")
        return str(ctx) if isinstance(ctx, str) and ctx else None


def subject_of(config: Mapping[str, Any], runs: pd.DataFrame, names: Methods, method: str | None = None) -> Subject:
    """The :class:`Subject` of a profile (``report.subject``; or of ``method``) as its runs and spec describe it,
    ``names`` being the caller's :class:`Methods` (derived once, e.g. ``ReportInputs.names``)."""
    rep = config.get("report") or {}
    method = method or names.subject
    main = str((rep.get("main_variants") or {}).get(method, "default")) if method else "default"
    if method is None:
        return Subject(None, "", (), main, {})
    ours = runs[(runs["method"] == method)] if not runs.empty else runs
    scores = names.scores(method) or tuple(
        sorted({str(s) for s in ours.get("score", []) if "@" not in str(s)}, key=lambda s: names.score_key(method, s))
    )
    reference: dict[str, Any] = {}
    main_rows = ours[ours["variant"] == main] if not ours.empty else ours
    if not main_rows.empty:
        first = main_rows.iloc[0]
        reference = {t: first[t] for t in SUBJECT_TAGS if t in main_rows.columns and not _missing(first[t])}
    if not reference:
        spec = registered_specs().get(method)
        if spec is not None and spec.tags is not None:
            reference = dict(spec.tags(spec.Params()))
    return Subject(method, names.label(method), scores, main, reference, study_only_variants(config, method))


def study_only_variants(config: Mapping[str, Any], method: str) -> frozenset[str]:
    """The variants of ``method`` that only studies train (experiments of ``report.scopes``, which `all`
    leaves out): readings of the paper whose records carry the main variant's tags."""
    scopes = (config.get("report") or {}).get("scopes") or {}
    studies = {e for exps in scopes.values() for e in exps or []}
    seen: dict[bool, set[str]] = {True: set(), False: set()}
    for name, exp in (config.get("experiments") or {}).items():
        methods = (exp or {}).get("methods") or {}
        if isinstance(methods, Mapping):
            seen[name in studies].update(str(v) for v in methods.get(method) or [])
    main = str(((config.get("report") or {}).get("main_variants") or {}).get(method, "default"))
    return frozenset(seen[True] - seen[False] - {main})


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


# ----------------------------------------------------------------------------- runs that need weights
@dataclass(frozen=True)
class LackingWeights:
    """One (method, variant) of the profile's experiments not run for want of its pretrained weights.

    Attributes:
        label: the method's display name (``PANDA``).
        method: its registry name.
        variant: the variant.
        missing: True when no file was found (else a file was found but refused: a wrong digest).
        why: what is missing and where it was looked for (the weights layer's message, one line).
        fix: how to get the file and where to put it (the commands; "" when the message gives none).
    """

    label: str
    method: str
    variant: str
    missing: bool
    why: str
    fix: str


def lacking_weights(
    config: Mapping[str, Any], runs: pd.DataFrame, datasets: list[str] | None, names: Methods
) -> dict[tuple[str, str], LackingWeights]:
    """``{(method, variant): LackingWeights}`` of the profile's experiments on ``datasets`` (``None``: all),
    labelled by ``names`` (the caller's :class:`Methods`, derived once, e.g. ``ReportInputs.names``).

    For each (method, variant) whose spec needs weights (``spec.weight_sets(params)`` not empty) and
    that has no row in ``runs`` on one of its datasets, the weights are looked up as a run would
    (``spec.resolve_weights``); pairs whose weights are found are left out.
    """
    specs = registered_specs()
    variants_cfg = {"default": {}, **(config.get("variants") or {})}
    datasets_cfg = config.get("datasets") or {}
    only = set(as_list(config.get("only_datasets")))
    kept = selected_names(config)
    base = (config.get("run") or {}).get("params") or {}
    notes: dict[tuple[str, str], LackingWeights] = {}
    for exp in (config.get("experiments") or {}).values():
        wanted = [
            d for d in as_list(exp.get("datasets")) if (datasets is None or d in datasets) and (not only or d in only)
        ]
        for method, variants in method_variants(exp, config.get("extra_methods")).items():
            spec = specs.get(method)
            if spec is None or spec.weights is None:
                continue
            for variant in variants:
                for d in wanted:
                    if (method, variant) in notes:
                        break
                    if kept is not None and (d, method, variant) not in kept:
                        continue  # left out by only_classes, only_methods or only_seeds: no run to miss
                    ran = not runs.empty and bool(
                        ((runs["method"] == method) & (runs["variant"] == variant) & (runs["dataset"] == d)).any()
                    )
                    if ran:
                        continue
                    dparams = ((datasets_cfg.get(d) or {}).get("run") or {}).get("params") or {}
                    vparams = (variants_cfg.get(variant) or {}).get("params") or {}
                    merged = deep_merge(deep_merge(base, dparams), vparams)
                    try:
                        params = dataclass_from_params(spec.Params, merged, method)
                    except ConfigError:
                        continue  # a bad key, not missing weights: the workflow names it before any job
                    if not spec.weight_sets(params):
                        continue
                    try:
                        spec.resolve_weights(params)
                    except ConfigError as exc:
                        why, fix = _why_and_fix(method, str(exc))
                        missing = isinstance(exc, WeightsMissing)
                        notes[(method, variant)] = LackingWeights(
                            names.label(method), method, variant, missing, why, fix
                        )
    return notes


def selected_names(config: Mapping[str, Any]) -> set[tuple[str, str, str]] | None:
    """``{(dataset, method, variant)}`` the profile's ``only_classes``, ``only_methods`` and ``only_seeds`` keep
    of its grid (:func:`con2.grid.experiments.select_cells`; ``only_datasets`` applied too), so the tables speak
    of the runs the workflow was asked for and no others; ``None`` when none of the three is set, or when the
    grid cannot be listed here (a dataset the registry does not know in this process: the workflow checked it)."""
    sel = selection(config)
    if not sel.narrows:
        return None
    try:
        from con2.data import normal_classes  # lazy: only a selection needs the registry's classes

        cells = select_cells(grid_cells(config, normal_classes), sel)
    except (GridError, DataError):
        return None
    return {(c.dataset, c.method, c.variant) for c in cells}


# where the weights layer's message turns from what is missing to how to get it (con2.weights.loading)
_FIX_STARTS = re.compile(r"[;:] ((?:get it|then put it)\b.*)$")


def _why_and_fix(method: str, message: str) -> tuple[str, str]:
    """The weights layer's message split into what is missing and how to get it (one line each):
    ``("needs the pretrained weights 'X' (params.weights) and no file ... was found in D", "get it ...")``."""
    text = " ".join(message.split())
    prefix = f"method {method!r} "
    text = text[len(prefix) :] if text.startswith(prefix) else text
    found = _FIX_STARTS.search(text)
    if found is None:
        return text, ""
    return text[: found.start()], found.group(1)
