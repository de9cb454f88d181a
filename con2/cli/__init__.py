"""The ``con2`` command line: ``main`` (train, evaluate, plan, methods), ``data`` and ``contexts``.

Importing this package (every ``con2`` command does, before torch loads) makes OpenMP's idle threads
sleep instead of spin: ``OMP_WAIT_POLICY=PASSIVE`` unless the environment already sets it. With
libgomp's default spin-wait, a run with 2 torch threads next to other CPU work waited at every
barrier for a descheduled thread and trained 2-3x slower (``benchmarks/threads_under_load.py``).
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read once, when torch loads libgomp

from con2.cli.main import main  # noqa: E402  (after the environment it must see)

__all__ = ["main"]
