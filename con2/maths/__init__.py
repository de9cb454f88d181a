"""The mathematics, pure functions on tensors and arrays: the losses, anomaly scores, metrics and their
intervals, operating points. Knows no run, file or method (image transforms: :mod:`con2.transforms`)."""
