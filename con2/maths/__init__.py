"""The mathematics, pure functions on tensors and arrays: the losses, anomaly scores, metrics and their
intervals, training views and contexts, preprocessing. Knows no run, file or method."""
