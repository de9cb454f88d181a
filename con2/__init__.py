"""con2-bench: CON2 (aligned representation pairs for anomaly detection) and its baselines."""

__version__ = "0.1.0"
