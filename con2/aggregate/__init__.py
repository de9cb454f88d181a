"""The aggregation: every run's record and score files -> ``runs.csv`` and the scores bundle, checked.

The layer between the runs (:mod:`con2.run`) and the report (:mod:`con2.report`): rule ``aggregate``
writes what it collects, and the tables read it back from here, never a run folder.

* :mod:`con2.aggregate.collect`: records -> one row per (run, score), a bad record left out with the
  reason and the fix;
* :mod:`con2.aggregate.runs_csv`: ``runs.csv``'s columns, the file read back, its means over seeds and
  classes;
* :mod:`con2.aggregate.cards`: a record's method card and the run frame's columns it gives;
* :mod:`con2.aggregate.score_files`: a run's ``scores.csv`` and ``validation_scores.csv`` read and checked
  against its record, and where a table finds them (:class:`~con2.aggregate.score_files.ScoresSource`);
* :mod:`con2.aggregate.bundle`: the score files of every run of a runs CSV in one sealed file beside it;
* :mod:`con2.aggregate.csv_text`: the CSV files con2 writes, and the same frames read back.
"""
