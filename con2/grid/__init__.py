"""The grid: a workflow profile checked and expanded into runs, what the workflow knows about their data,
and what a profile will cost before it starts (``con2 plan``)."""
