"""The ``con2`` command line: ``main`` (train, evaluate, plan, methods), ``data`` and ``contexts``."""

from con2.cli.main import main

__all__ = ["main"]
