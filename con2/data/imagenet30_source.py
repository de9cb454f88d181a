"""ImageNet30 (Hendrycks et al. 2019): a manual download, read from its class folders.

Layout: ``one_class_train/<class>/...`` and ``one_class_test/<class>/...`` (images at any depth
below the class folder, as ``torchvision.datasets.ImageFolder`` reads them) in
``<data_dir>/imagenet30/`` or directly in ``<data_dir>``. If only the archives
``one_class_train.tar`` / ``one_class_test.tar`` are there, they are extracted. The 30 classes are
indexed in alphabetical order. There is no stable download API (Google Drive), so a missing copy
gives the exact commands to fetch it.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from con2.data.base import DatasetMissing
from con2.data.cache import Found, SourceTable
from con2.data.fileops import extract_into
from con2.data.folders import folder_table, require_dirs
from con2.data.source import DatasetInfo, Source
from con2.text import shell_command

CLASSES = (
    "acorn",
    "airliner",
    "ambulance",
    "american_alligator",
    "banjo",
    "barn",
    "bikini",
    "digital_clock",
    "dragonfly",
    "dumbbell",
    "forklift",
    "goblet",
    "grand_piano",
    "hotdog",
    "hourglass",
    "manhole_cover",
    "mosque",
    "nail",
    "parking_meter",
    "pillow",
    "revolver",
    "rotary_dial_telephone",
    "schooner",
    "snowmobile",
    "soccer_ball",
    "stingray",
    "strawberry",
    "tank",
    "toaster",
    "volcano",
)
DRIVE_IDS = {
    "one_class_train": "1B5c39Fc3haOPzlehzmpTLz6xLtGyKEy4",
    "one_class_test": "13xzVuQMEhSnBRZr-YaaO08coLU2dxAUq",
}
SPLITS = (("train", "one_class_train"), ("test", "one_class_test"))
LAYOUT = tuple((split, c, f"{folder}/{c}") for split, folder in SPLITS for c in CLASSES)


def instructions(data_dir: Path) -> str:
    """The exact manual download steps; each command quoted for a shell."""
    dest = data_dir / "imagenet30"
    steps = [
        shell_command("pip", "install", "gdown"),
        shell_command("mkdir", "-p", dest),
        shell_command("cd", dest),
        *(shell_command("gdown", DRIVE_IDS[split]) for split in ("one_class_train", "one_class_test")),
        *(shell_command("tar", "-xf", f"{split}.tar") for split in ("one_class_train", "one_class_test")),
    ]
    return (
        f"Fix (manual download, ~20 GB, from the README of hendrycks/ss-ood): `{' && '.join(steps)}` (or open "
        f"https://drive.google.com/file/d/{DRIVE_IDS['one_class_train']} and "
        f"https://drive.google.com/file/d/{DRIVE_IDS['one_class_test']} in a browser), so that "
        f"{dest}/one_class_train/acorn/ "
        f"and {dest}/one_class_test/acorn/ exist; then run "
        f"`{shell_command('con2', 'data', 'get', 'imagenet30', '--data-dir', data_dir)}`."
    )


def locate(data_dir: Path) -> Path:
    """The folder holding ``one_class_train/`` and ``one_class_test/`` (extracting local tars)."""
    fix = instructions(data_dir)
    for base in (data_dir / "imagenet30", data_dir):
        for _, folder in SPLITS:
            archive = base / f"{folder}.tar"
            if not (base / folder).is_dir() and archive.is_file():
                check = partial(require_dirs, "imagenet30", relative=[folder], fix=fix)  # check(tmp)
                extract_into(archive, base, "imagenet30", check)
        if any((base / folder).is_dir() for _, folder in SPLITS):
            require_dirs("imagenet30", base, [rel for _, _, rel in LAYOUT], fix)
            return base
    raise DatasetMissing(
        f"imagenet30: one_class_train/ and one_class_test/ not found in {data_dir / 'imagenet30'} or {data_dir}. {fix}"
    )


class ManualFolders(Source):
    """A manual download read from its class folders (``kind = "manual"``): ImageNet30."""

    kind = "manual"

    def find(self, info: DatasetInfo, data_dir: Path, size: int) -> Found:
        """Locate (extracting local tars) and list ImageNet30 (no image is read)."""
        t = folder_table(info.name, locate(data_dir), LAYOUT, info.classes, info.recipe, info.channels, recursive=True)
        return Found(t.location, t.fingerprint, data_dir, listing=t, files=t.files)

    def table(self, info: DatasetInfo, found: Found, size: int) -> SourceTable:
        assert found.listing is not None  # find lists the folders
        return found.listing

    def download(self, info: DatasetInfo, data_dir: Path, size: int, progress: bool = True) -> None:
        """There is no download API: raises with the manual steps (or finds a copy put there meanwhile)."""
        locate(data_dir)

    def how_to_get(self, info: DatasetInfo, data_dir: Path) -> str:
        return instructions(data_dir)


SOURCE = ManualFolders()
