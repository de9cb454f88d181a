"""``con2 contexts``: CON2's two assumptions (distinctiveness, alignment) of every context
augmentation on a dataset's normal training images, and the context CON2 (Best) chooses
(:mod:`con2.methods.contexts`). Light at import: numpy, torch and the data layer load when the command runs.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, cast

from con2.data import default_data_dir
from con2.errors import ConfigError


def cmd_contexts(args: argparse.Namespace) -> int:
    """``con2 contexts --dataset D [--normal-class C]``: both assumptions of every registered context
    on the normal training images of D (each normal class the paper runs, or C), and the choice."""

    import numpy as np  # lazy: numpy, the data layer and torch load only when `con2 contexts` runs

    from con2.data.registry import (  # lazy: numpy and PIL load only when `con2 contexts` runs
        get_info,
        load_one_class,
        normal_classes,
        source_of,
    )
    from con2.methods.contexts import choose_context, uint8_to_unit  # lazy: torch loads only when `con2 contexts` runs

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
        try:
            choice = choose_context(x, seed=args.seed)
        except ValueError as exc:
            raise ConfigError(
                f"{info.name} normal class {data.normal_class}: {exc} ({n_train} normal training images); "
                "Fix: pass a normal class with at least 4 training images (--normal-class)"
            ) from None
        choice["seconds"] = round(time.perf_counter() - t0, 1)
        results[data.normal_class] = choice
        if args.json:
            continue
        print(f"{info.name} normal class {data.normal_class}: {choice['n_images']} of {n_train} normal training images")
        print(f"  {'context':10} {'distinctiveness':>16} {'alignment':>10}")
        measures = cast(list[dict[str, Any]], choice["measures"])  # choose_context's documented shape
        for m in measures:
            mark = "  <- chosen" if m["context"] == choice["context"] else ""
            print(f"  {m['context']:10} {m['distinctiveness']:16.1f} {m['alignment']:10.3f}{mark}")
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
    p.add_argument("--size", type=int, help="image size the data are loaded at (default: the dataset's)")
    p.add_argument("--seed", type=int, default=0, help="seed of the image sample, encoders and folds (default 0)")
    p.add_argument("--split-seed", type=int, default=0, help="split seed of datasets without an official split")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.set_defaults(func=cmd_contexts)
