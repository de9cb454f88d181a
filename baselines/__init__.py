"""Baselines in the CON2 harness: same training loop, encoder, data and test-time views as CON2.

Registered methods (``con2 methods`` lists them with their parameters):

* ``simclr`` (:mod:`baselines.simclr`): SimCLR, scored by deep kNN (``knn``, the SimCLR row of
  the tables) and by SSD's Mahalanobis distance (``ssd``, the SSD row) on one representation.
* ``csi`` (:mod:`baselines.csi`): CSI, rotations as shifted instances plus a rotation head.

The contract for a new baseline, either way it joins every table through its run record:

(a) A Python class: subclass :class:`con2.methods.Method` with ``training_loss(images,
    progress)`` and the scoring declarations (``scoring()``, and where needed
    ``test_contexts()``, ``test_views()``, ``feature_spaces()``); describe it by a torch-free
    :class:`con2.methods.MethodSpec` (its ``Params`` dataclass with defaults = the paper's, a
    ``check`` of their constraints, labels, ``test_params`` for the every-method test) in a
    ``<name>_spec.py`` module, and declare the spec as a ``con2.methods`` entry point in
    ``pyproject.toml`` (one line; then reinstall). ``con2 train --set method=NAME`` runs it and
    ``tests/methods/test_every_method.py`` trains and scores it on tiny data, with no other edit.
(b) An external program: it writes per-sample scores (a ``label`` column and one column per
    score); ``python -m con2.run.external`` (:mod:`con2.run.external`) turns them into the
    standard ``scores.csv`` and a schema-validated ``record.json``. See
    ``baselines/examples/pixel_nn.smk`` for a Snakemake rule doing both steps.

Importing this package imports nothing heavy: the registry loads implementations on demand.
"""
