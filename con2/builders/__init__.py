"""The builders of the paper's tables and figures, one module per family, each importing the report's
vocabulary (:mod:`con2.report`) and never another builder (``tests/project/test_layers.py``).

A table builder is ``build(inputs: ReportInputs) -> Table`` and a figure builder ``draw(inputs, png,
pdf)``, each named by its entry in the artefact registry (:mod:`con2.report.artefacts`), which imports
it by name when its rule runs. The families: :mod:`~con2.builders.method_tables` (Table 1 and the
natural summary), :mod:`~con2.builders.ablations` (the subject's scores, contexts, loss terms, number
of contexts), :mod:`~con2.builders.per_class`, :mod:`~con2.builders.per_kind`,
:mod:`~con2.builders.silhouette`, :mod:`~con2.builders.compute` (compute cost, score runtime),
:mod:`~con2.builders.reproduction` (every paper number next to ours, opened by the verdict),
:mod:`~con2.builders.fidelity`, :mod:`~con2.builders.bound`, :mod:`~con2.builders.comparisons`,
:mod:`~con2.builders.claims`, :mod:`~con2.builders.operating`, :mod:`~con2.builders.curves`,
:mod:`~con2.builders.length`, :mod:`~con2.builders.missing` and the figures,
:mod:`~con2.builders.figures`.
"""
