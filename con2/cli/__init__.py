"""The ``con2`` command line: ``main`` (train, evaluate, plan, methods), ``data`` and ``contexts``.

Importing this package (every ``con2`` command does, before torch loads) shortens how long OpenMP's
idle threads spin before they sleep: ``GOMP_SPINCOUNT=10000`` (libgomp's default is 300,000) unless
the environment sets ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` itself. With the default spin, a run of
2 torch threads next to other CPU work waited at every barrier for a descheduled thread and trained
2-8x slower; the short spin keeps most of the speed of a run alone (``benchmarks/threads_under_load.py``
and ``benchmarks/README.md``).
"""

import os

if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "10000"  # read once, when torch loads libgomp

from con2.cli.main import main  # noqa: E402  (after the environment it must see)

__all__ = ["main"]
