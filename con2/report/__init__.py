"""Tables and figures built from run records only (no torch, no training code).

* what they read: ``runs.csv`` and the scores bundle, written and read back by :mod:`con2.aggregate`;
* :mod:`con2.report.paper`: the published numbers and the dataset names that join them to ours;
* :mod:`con2.report.methods`: method labels, paper rows and the subject, from the method specs, the
  records' cards and the config (the report names no method);
* :mod:`con2.report.artefacts`: the registry of tables and figures (name, builder, what it reads),
  read by the workflow and the builders alike, and :class:`~con2.report.artefacts.ReportInputs`;
* :mod:`con2.report.tables`: any table of the registry built by name; its builders, one per paper
  table (``build(inputs) -> Table``), live by family: :mod:`~con2.report.summary` (Table 1, the
  natural summary), :mod:`~con2.report.ablations`, :mod:`~con2.report.per_class`,
  :mod:`~con2.report.silhouette`, :mod:`~con2.report.compute`, :mod:`~con2.report.reproduction`
  (opened by :mod:`~con2.report.verdict`, with :mod:`~con2.report.budget`),
  :mod:`~con2.report.fidelity`, :mod:`~con2.report.bound`, :mod:`~con2.report.comparisons`,
  :mod:`~con2.report.curves`; what they share to select runs is :mod:`con2.report.select`;
* :mod:`con2.report.gpu_runs`: the GPU runs of ``benchmarks/gpu_fidelity.py`` (its JSON lines);
* :mod:`con2.report.format`: CSV + Markdown + LaTeX (booktabs, "mean ± std") writers;
* :mod:`con2.report.figures`: the figures (PNG + PDF, matplotlib Agg), ``draw(inputs, png, pdf)``.
"""
