"""Tables and figures built from run records only (no torch, no training code).

* :mod:`con2.report.collect`: records -> one tidy row per (run, score); means over seeds;
* :mod:`con2.report.paper`: the published numbers and the dataset names that join them to ours;
* :mod:`con2.report.methods`: method labels, paper rows and the subject, from the method specs, the
  records' cards and the config (the report names no method);
* :mod:`con2.report.artefacts`: the registry of tables and figures (name, builder, what it reads),
  read by the workflow and the builders alike, and :class:`~con2.report.artefacts.ReportInputs`;
* :mod:`con2.report.tables`: one builder per paper table, ``build(inputs) -> Table``;
* :mod:`con2.report.format`: CSV + Markdown + LaTeX (booktabs, "mean ± std") writers;
* :mod:`con2.report.figures`: the figures (PNG + PDF, matplotlib Agg), ``draw(inputs, png, pdf)``.
"""
