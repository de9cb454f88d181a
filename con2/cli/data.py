"""``con2 data list`` and ``con2 data get NAME``: what is registered, present and prepared; get one.

Wire into the main CLI with :func:`add_data_subcommands`; every sub-command sets ``func`` to a
callable ``(args) -> int`` (exit status). Also runnable alone: ``python -m con2.cli.data data list``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from con2.cli.common import run_command  # prints `con2: error: ...`, returns 2 for errors a user can fix
from con2.config import MAX_IMAGE_SIZE
from con2.data import default_data_dir
from con2.errors import ConfigError
from con2.text import terminal_safe


def cmd_list(args: argparse.Namespace) -> int:
    """Print every registered dataset: family, source, present or not, prepared sizes, how to get it."""
    from con2.data import own_folder  # lazy: numpy and PIL stay off the start of `con2`
    from con2.data.cache import cache_root  # lazy: the data layer only when a command runs
    from con2.data.registry import DATASETS, dataset_status  # lazy: the data layer only when a command runs

    given = args.data_dir or profile_data_dir(args)
    # resolved once, so the header, the "looked only in" line and every fix command name the same folder
    data_dir = Path(given or default_data_dir()).expanduser().resolve()
    declared = register_profile(args, data_dir, strict=False)  # a refused folder: listed as BROKEN with its line
    shown = terminal_safe(str(data_dir))  # a folder's name, its escapes shown (as every line here)
    print(f"data_dir: {shown}  ({data_dir_origin(args.data_dir, given)})")
    cache = terminal_safe(str(cache_root(Path(data_dir))))
    print(f"cache:    {cache} (prepared arrays; user-wide, shared by every checkout: $CON2_CACHE_DIR)")
    print(f"{'name':22} {'family':8} {'source':12} {'present':8} {'prepared':14} normal classes")
    missing, elsewhere, counts = [], False, []
    for name in DATASETS:
        s = dataset_status(name, data_dir)
        info = DATASETS[name]
        normals = ", ".join(info.normals) if len(info.normals) <= 3 else f"{len(info.normals)} classes"
        present = "yes" if s["present"] else ("BROKEN" if s["problem"] not in ("", "missing") else "no")
        prepared = ",".join(f"{x}px" for x in s["prepared"]) or "-"
        if s["prepared"] and not s["present"]:  # prepared from another data folder: the cache is user-wide
            prepared, elsewhere = prepared + "*", True
        print(f"{name:22} {s['family']:8} {s['source']:12} {present:8} {prepared:14} {normals}")
        if not s["present"]:
            missing.append((name, s["problem"] if present == "BROKEN" else s["how_to_get"]))
        elif name in declared:
            counts.append(own_folder.counts_line(info, data_dir))
    if counts:
        print("\nDeclared folders (images per split and class):")
        for line in counts:
            print(f"  {terminal_safe(line)}")
    if elsewhere:
        print(
            "* prepared from another data folder (the cache above is shared by every checkout and data_dir); "
            "this data_dir has no source files for it, so a run here cannot use them"
        )
    if missing:
        print(
            f"\nLooked only in {shown}. Data already on disk elsewhere: "
            "`con2 data list --data-dir DIR` or `export CON2_DATA_DIR=DIR` (the workflow: `--config data_dir=DIR`), "
            "DIR the folder that holds them (e.g. DIR/medmnist/breastmnist.npz)."
        )
        print("\nTo get what is missing:")
        for name, how in missing:
            print(f"  {name}: {terminal_safe(how.removeprefix('Fix: '))}")  # a folder's name: one line, escaped
    return 0


def profile_data_dir(args: argparse.Namespace) -> str | None:
    """The ``data_dir`` of the profile ``--profile`` names (``None``: no profile, or it sets none).

    Raises:
        DataError: the profile cannot be read, one line.
    """
    if not getattr(args, "profile", None):
        return None
    from con2.data.own_folder import declarations  # lazy: yaml, only with --profile

    return declarations(args.profile)[1]


def register_profile(args: argparse.Namespace, data_dir: Path, strict: bool = True) -> list[str]:
    """Register the folder datasets of the profile ``--profile`` names, their relative folders under
    ``data_dir``; the names (none without ``--profile``). ``strict``: a refused folder raises (else it is
    registered, to be shown broken: :func:`con2.data.own_folder.register_spec`).

    Raises:
        DataError: a bad declaration or (``strict``) a refused folder, one line.
    """
    if not getattr(args, "profile", None):
        from con2.data.own_folder import DECLARED  # lazy: declared by $CON2_DATASETS, if any

        return list(DECLARED)
    from con2.data.own_folder import DECLARED, register_declared  # lazy: the declarations only for a listing

    DECLARED.clear()  # the profile's own: a $CON2_DATASETS of another one would list its folders too
    return register_declared(args.profile, data_dir, strict)


def data_dir_origin(given: str | None, used: str | None = None) -> str:
    """Where ``con2 data`` took its data folder from: ``--data-dir``, the ``--profile``'s ``data_dir`` (``used``
    without ``given``), ``$CON2_DATA_DIR`` or the default ``./data``."""
    if given:
        return "--data-dir"
    if used:
        return "the profile's data_dir"
    if os.environ.get("CON2_DATA_DIR"):
        return "$CON2_DATA_DIR"
    return "the default, ./data: neither --data-dir nor $CON2_DATA_DIR given"


def check_sizes(sizes: list[int]) -> None:
    """Refuse a ``--size`` outside 1..:data:`con2.config.MAX_IMAGE_SIZE` before any image is made
    (every image of the dataset is held in memory at that size)."""

    bad = [s for s in sizes if not 0 < s <= MAX_IMAGE_SIZE]
    if bad:
        raise ConfigError(
            f"--size {bad[0]}: a prepared size is 1..{MAX_IMAGE_SIZE} px (every image is held in memory at this "
            f"size; the paper's largest is 224). Fix: --size 224 or smaller"
        )


def cmd_get(args: argparse.Namespace) -> int:
    """Locate or download dataset ``args.name``, verify it and prepare it at each requested size."""
    from tqdm import tqdm  # lazy: tqdm only while a dataset is prepared

    from con2.data.registry import (  # lazy: numpy and PIL stay off the command line's start
        get_info,
        load_one_class,
        prepare_dataset,
        source_of,
    )

    given = args.data_dir or profile_data_dir(args)
    data_dir = Path(given or default_data_dir()).expanduser().resolve()
    declared = register_profile(args, data_dir)
    info = get_info(args.name)
    sizes = args.size or [source_of(info).default_size(info)]
    check_sizes(sizes)
    for size in tqdm(sizes, desc=f"{info.name}", unit="size", disable=len(sizes) < 2):
        prep = prepare_dataset(info.name, data_dir, size, download=not args.no_download, progress=True, verify=True)
        where = prep.directory or "memory (nothing to cache)"
        shape = tuple(prep.images.shape[1:])
        print(terminal_safe(f"{info.name} {size}px: {len(prep.images)} images {shape} in {where}"))
        source = prep.manifest["source"].get("location") or f"{info.source} (no files)"
        print(terminal_safe(f"  source {source}, images sha256 {prep.manifest['images_sha256']}"))
        if info.name in declared:
            from con2.data.own_folder import counts_line  # lazy: a declared folder's counts

            print(terminal_safe(f"  {counts_line(info, data_dir)}"))
        data = load_one_class(info.name, data_dir, None, 0, size)
        print(
            f"  normal class {data.normal_class}: {len(data.train)} train, test {data.n_normal_test} normal + "
            f"{data.n_anomalous} anomalous (split sha256 {data.manifest['split_sha256'][:16]})"  # type: ignore[index]
        )
    return 0


PROFILE_HELP = (
    "a workflow profile whose datasets.<name>.folder entries declare your own images (docs/own_data.md); its "
    "data_dir unless --data-dir is given"
)


def add_data_subcommands(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``data list`` and ``data get NAME [--data-dir DIR] [--size N]`` on ``subparsers``."""
    data = subparsers.add_parser("data", help="list, download and prepare datasets")
    sub = data.add_subparsers(dest="data_command", metavar="{list,get}")
    sub.required = True
    p_list = sub.add_parser("list", help="registered datasets, what is present, how to get what is missing")
    p_list.add_argument("--data-dir", default=None, help="data folder (default: $CON2_DATA_DIR or ./data)")
    p_list.add_argument("--profile", default=None, help=PROFILE_HELP)
    p_list.set_defaults(func=cmd_list)
    p_get = sub.add_parser("get", help="locate or download a dataset, verify it, prepare it")
    p_get.add_argument("name", help="a registered dataset (`con2 data list` lists them)")
    p_get.add_argument(
        "--data-dir", default=None, help="data folder, searched first (default: $CON2_DATA_DIR or ./data)"
    )
    p_get.add_argument(
        "--size", type=int, action="append", help="prepared size; repeatable (default: MedMNIST 28, else the paper's)"
    )
    p_get.add_argument("--no-download", action="store_true", help="only use what is on disk")
    p_get.add_argument("--profile", default=None, help=PROFILE_HELP)
    p_get.set_defaults(func=cmd_get)
    return data


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry: ``python -m con2.cli.data data {list,get} ...``."""
    parser = argparse.ArgumentParser(prog="con2")
    add_data_subcommands(parser.add_subparsers(dest="command", required=True))

    return run_command(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
