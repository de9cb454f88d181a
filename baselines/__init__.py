"""Baselines in the CON2 harness: same training loop, encoder, data and test-time views as CON2.

Registered methods (``con2 methods`` lists them with their parameters):

* ``simclr`` (:mod:`baselines.simclr`): SimCLR, scored by deep kNN (``knn``, the SimCLR row of
  the tables) and by SSD's Mahalanobis distance (``ssd``, the SSD row) on one representation.
* ``csi`` (:mod:`baselines.csi`): CSI, rotations as shifted instances plus a rotation head.

The contract for a new baseline, either way it joins every table through its run record:

(a) A Python class: subclass :class:`con2.methods.Method`, decorate it with
    :func:`con2.methods.register`, give it ``name``, a ``Params`` dataclass (defaults = the
    paper's; ``cfg.params`` is validated against it), ``test_params`` (a tiny override for the
    every-method test), ``score_names``, ``training_loss(images, progress)`` and
    ``score(train, test, device)``. Put the module here and import it below (or expose it as a
    ``con2.methods`` entry point from another package): ``con2 train --set method=NAME`` runs it
    and ``tests/test_every_method.py`` trains and scores it on tiny data, with no other edit.
(b) An external program: it writes per-sample scores (a ``label`` column and one column per
    score); ``python -m baselines.external`` (:mod:`baselines.external`) turns them into the
    standard ``scores.csv`` and a schema-validated ``record.json``. See
    ``baselines/examples/pixel_nn.smk`` for a Snakemake rule doing both steps.
"""

from baselines import csi, simclr  # noqa: F401  (importing registers the methods)

__all__ = ["csi", "simclr"]
