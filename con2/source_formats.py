"""The names of a dataset's source formats, where a dataset can be read from more than one kind of copy.

Standard library only: the data layer writes them into a manifest's ``source.format`` and a record's
``data_source.format`` (:func:`con2.data.manifest.data_source`); the report reads them back from
``runs.csv`` without loading the data layer (:func:`con2.report.tables.re_encoded_note`).
"""

from __future__ import annotations

#: A re-encoding of the official files (a CIFAR-10 dump of JPEGs, one folder per class): the tables say
#: in their note that its pixels are not the official bytes.
IMAGE_FOLDER = "image-folder"
