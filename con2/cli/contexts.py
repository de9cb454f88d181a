"""``con2 contexts``: CON2's two assumptions (distinctiveness, alignment) of every context
augmentation on a dataset's normal training images, and the context CON2 (Best) chooses
(:mod:`con2.methods.contexts`). Light at import: numpy, torch and the data layer load when the command runs.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from typing import Any, cast

from con2.cli.data import check_sizes
from con2.config import MAX_SEED
from con2.data import default_data_dir
from con2.errors import ConfigError


def check_seed_arg(
    seed: int, option: str = "--seed", what: str = "the seed of the image sample, encoders and folds"
) -> None:
    """Refuse a seed option the measurement cannot use (NumPy refuses a negative one) before anything is loaded."""
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(
            f"{option} {seed}: {what} is 0..{MAX_SEED}. Fix: {option} 0 (the default) or another seed in that range"
        )


def format_measure(value: float, digits: int, width: int) -> str:
    """A measure right-aligned in ``width`` with ``digits`` decimals, or ``undefined`` where it is NaN."""
    return f"{'undefined':>{width}}" if math.isnan(value) else f"{value:{width}.{digits}f}"


def print_measures(measures: list[dict[str, Any]], chosen: object = None) -> None:
    """The table of both measures of every context; ``<- chosen`` marks ``chosen``."""
    print(f"  {'context':10} {'distinctiveness':>16} {'alignment':>10}")
    for m in measures:
        mark = "  <- chosen" if m["context"] == chosen else ""
        row = format_measure(float(m["distinctiveness"]), 1, 16) + " " + format_measure(float(m["alignment"]), 3, 10)
        print(f"  {m['context']:10} {row}{mark}")


def cmd_contexts(args: argparse.Namespace) -> int:
    """``con2 contexts --dataset D [--normal-class C]``: both assumptions of every registered context
    on the normal training images of D (each normal class the paper runs, or C), and the choice."""

    check_seed_arg(args.seed)
    check_seed_arg(args.split_seed, "--split-seed", "the split seed (as config key split_seed)")
    if args.size is not None:
        check_sizes([args.size])

    import numpy as np  # lazy: numpy, the data layer and torch load only when `con2 contexts` runs

    from con2.data.registry import (  # lazy: numpy and PIL load only when `con2 contexts` runs
        get_info,
        load_one_class,
        normal_classes,
        source_of,
    )
    from con2.methods.contexts import (  # lazy: torch loads only when `con2 contexts` runs
        NoBasisToChoose,
        choose_context,
        uint8_to_unit,
    )

    info = get_info(args.dataset)  # DataError naming the registered datasets
    data_dir = args.data_dir or default_data_dir()
    size = args.size or source_of(info).default_size(info)
    classes = [args.normal_class] if args.normal_class is not None else normal_classes(info.name)
    results = {}
    for cls in classes:
        t0 = time.perf_counter()
        data = load_one_class(info.name, data_dir, cls, args.split_seed, size)
        n_train = len(data.train)
        x = uint8_to_unit(np.asarray(data.train).transpose(0, 3, 1, 2), args.seed)
        where = f"{info.name} normal class {data.normal_class}"
        try:
            choice = choose_context(x, seed=args.seed)
        except NoBasisToChoose as exc:
            if not args.json:
                print(f"{where}: {len(x)} of {n_train} normal training images")
                print_measures(exc.measures)
            raise ConfigError(
                f"{where}: {exc}. Fix: set the context explicitly (params.contexts: [invert], [flip] or [equalize]) "
                "instead of [best]"
            ) from None
        except ValueError as exc:
            raise ConfigError(
                f"{where}: {exc} ({n_train} normal training images); "
                "Fix: pass a normal class with at least 4 training images (--normal-class)"
            ) from None
        choice["seconds"] = round(time.perf_counter() - t0, 1)
        results[data.normal_class] = choice
        if args.json:
            continue
        print(f"{where}: {choice['n_images']} of {n_train} normal training images")
        print_measures(cast(list[dict[str, Any]], choice["measures"]), choice["context"])  # choose_context's shape
        print(f"  rule: {choice['rule']} ({choice['seconds']}s)")
    if args.json:
        print(json.dumps({"dataset": info.name, "size": size, "classes": results}, indent=2))
    return 0


def add_contexts_subcommand(sub: argparse._SubParsersAction) -> None:
    """Wire ``con2 contexts`` into the main CLI's sub-commands."""
    p = sub.add_parser(
        "contexts",
        help="measure distinctiveness and alignment of every context augmentation on a dataset's normal "
        "training images, and the context CON2 (Best) chooses",
    )
    p.add_argument("--dataset", required=True, help="a registered dataset (con2 data list)")
    p.add_argument("--normal-class", help="one normal class (default: every normal class the paper runs)")
    p.add_argument("--data-dir", help="where the data are (default: $CON2_DATA_DIR or ./data)")
    p.add_argument("--size", type=int, help="image size the data are loaded at, 1..512 (default: the dataset's)")
    p.add_argument("--seed", type=int, default=0, help="seed of the image sample, encoders and folds, >= 0 (default 0)")
    p.add_argument("--split-seed", type=int, default=0, help="split seed of datasets without an official split")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.set_defaults(func=cmd_contexts)
