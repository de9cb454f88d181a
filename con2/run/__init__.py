"""One run: its owner (:mod:`~con2.run.runner`: the lock and the action), its steps (:mod:`~con2.run.execute`),
its directory, lock and record, and the adapter that turns an external program's scores into a record."""
