"""The data of one run: the split a run trains and scores on, and the checks made before training.

:func:`load_run_data` is what every method and external baseline uses, so all of them score the
same test images for the same (dataset, normal class, split seed) whatever the training seed.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from con2.config import RunConfig
from con2.errors import ConfigError, DataError

if TYPE_CHECKING:
    from con2.data import OneClassData


# The fewest normal and anomalous test images a run scores: below it an AUROC is noise (each of n anomalies
# moves it by up to 100/n points; one anomaly gave 95.6) that the tables would show beside real numbers.
MIN_TEST_PER_CLASS = 5


def check_test_split(data: OneClassData, minimum: int = MIN_TEST_PER_CLASS) -> None:
    """Refuse a test split with fewer than ``minimum`` anomalous or normal images (one line naming the fix).

    Raises:
        DataError: naming both counts and the fix.
    """

    n_anomalous, n_normal = data.n_anomalous, data.n_normal_test
    if n_anomalous >= minimum and n_normal >= minimum:
        return
    few = min(n_anomalous, n_normal)
    raise DataError(
        f"{data.name}: the test split of normal class {data.normal_class} holds "
        f"{n_anomalous} anomalous and {n_normal} normal image(s); an AUROC over fewer than {minimum} of either is "
        f"noise (each image moves it by up to {100 / max(few, 1):.0f} points), not a benchmark number. Fix: add test "
        f"images to that copy of {data.name} (at least {minimum} of each kind), or choose another normal class "
        f"(--set normal_class=...)"
    )


def load_run_data(cfg: RunConfig, verify: bool = False) -> OneClassData:
    """The one-class split a run trains and scores on: ``cfg``'s dataset, normal class, split seed
    (``split_seed``, never the training ``seed``) and prepared size (``data_size``, else ``image_size``),
    centre-cropped by ``center_crop`` (:mod:`con2.transforms.preprocess`) when below 1.

    Every registered method (through :func:`con2.run.runner.run`) and every external baseline
    (``con2/run/external.py``, ``baselines/examples/``) loads its data here.

    ``verify``: recompute the prepared cache's sha256 (a new run, or a re-scoring: about 0.4 ms for
    BreastMNIST at 28 px, 2 ms at 64 px); a cache that disagrees with its manifest is prepared again.
    Otherwise (a resumed run) only a changed size or mtime of the cache is noticed.

    Raises:
        DataError: missing or damaged data, an unknown class, or a test split with fewer than
            :data:`MIN_TEST_PER_CLASS` normal or anomalous images.
    """
    from con2.data import load_one_class  # lazy: numpy and PIL: the data layer loads when a run reads its data

    data = load_one_class(
        cfg.dataset,
        cfg.data_dir,
        cfg.normal_class,
        seed=cfg.split_seed,
        size=cfg.data_size or cfg.image_size,
        verify=verify,
    )
    check_test_split(data)
    if cfg.center_crop < 1:  # the paper's resize 256 / centre-crop 224, at the stored size
        from con2.transforms.preprocess import center_crop_array  # lazy: torch: only when a run crops its images

        data = dataclasses.replace(
            data,
            train=center_crop_array(data.train, cfg.center_crop),
            test=center_crop_array(data.test, cfg.center_crop),
            val=None if data.val is None else center_crop_array(data.val, cfg.center_crop),
        )
    return data


def check_batch_size(cfg: RunConfig, n_train: int, normal_class: str | None = None) -> None:
    """Refuse a batch larger than the training set (it would silently become the whole set).

    ``normal_class``: the class the data loader resolved (``cfg.normal_class`` may be ``None``, the default).
    """
    if cfg.batch_size > n_train:
        normal = normal_class if normal_class is not None else cfg.normal_class
        raise ConfigError(
            f"config key 'batch_size': {cfg.batch_size} is larger than the training set of {cfg.dataset} "
            f"(normal class {normal if normal is not None else 'default'}: {n_train} images). "
            f"Fix: --set batch_size={n_train} or smaller"
        )
