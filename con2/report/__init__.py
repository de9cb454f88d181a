"""The report's vocabulary: what every table and figure builder (:mod:`con2.builders`) shares, built from
run records only (no torch, no training code).

* what they read: ``runs.csv`` and the scores bundle, written and read back by :mod:`con2.aggregate`;
* :mod:`con2.report.artefacts`: the registry of tables and figures (name, builder, what it reads),
  read by the workflow and the builders alike, and :class:`~con2.report.artefacts.ReportInputs`;
* :mod:`con2.report.tables`: any table of the registry built by name (what ``make_table.py`` runs);
* :mod:`con2.report.paper`: the published numbers and the dataset names that join them to ours;
* :mod:`con2.report.methods`: method labels, paper rows and the subject, from the method specs, the
  records' cards and the config (the report names no method);
* :mod:`con2.report.select`: which runs feed a cell, and the cell (``Stat``, its columns in a CSV);
* :mod:`con2.report.notes`: the lines under a table on what it lacks (data, weights, runs) and why;
* :mod:`con2.report.paired`: paired comparisons on the same test images and over seeds, and the marks
  (†, ‡) they give the method tables;
* :mod:`con2.report.budget`: the training budget beside the paper's, and how far each measured budget goes;
* :mod:`con2.report.curve_points`: the records' learning curves as points;
* :mod:`con2.report.gpu_runs`: the GPU runs of ``benchmarks/gpu_fidelity.py`` (its JSON lines);
* :mod:`con2.report.format`: CSV + Markdown + LaTeX (booktabs, "mean ± std") + HTML writers.

A builder imports this vocabulary, never another builder (``tests/project/test_layers.py``).
"""
