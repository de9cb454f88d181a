"""Your own images declared in a profile (issue 59, con2/data/own_folder.py): the three layouts, the settings,
``con2 data list`` / ``con2 data get --profile``, the declarations passed to other processes, and the
refusals of item 4: each bad input is one line on stderr naming the file or folder and the fix, and nothing
is prepared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from own_data_trees import class_folders_tree, image, mvtec_tree, normal_anomalous_tree, write_images
from PIL import Image

from con2.cli.data import main
from con2.data import own_folder
from con2.data.registry import DATASETS, load_one_class

ROOT = Path(__file__).resolve().parents[2]


from data_fixtures import private_registry  # noqa: E402, F401  (the fixture, by name)

pytestmark = pytest.mark.usefixtures("private_registry")


def profile(tmp_path: Path, datasets: dict) -> Path:
    """A profile file declaring ``datasets``, its data_dir ``tmp_path/data``."""
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"data_dir": str(tmp_path / "data"), "datasets": datasets}))
    return path


def get(tmp_path: Path, name: str, datasets: dict, *extra: str) -> int:
    """``con2 data get NAME --profile mine.yaml`` in-process; its exit status."""
    return main(["data", "get", name, "--profile", str(profile(tmp_path, datasets)), "--no-download", *extra])


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, datasets: dict, *extra: str) -> str:
    """The one line ``con2 data get`` refuses the declared ``name`` with; asserts that nothing was prepared."""
    assert get(tmp_path, name, datasets, *extra) == 2
    err = capsys.readouterr().err.split("\r")[-1]  # after the progress bar of an image-by-image check, if any
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("con2: error: "), err
    assert "\x1b" not in err
    assert not list((tmp_path / "cache").rglob("images.npy")) and not list((tmp_path / "cache").rglob("manifest.json"))
    return lines[0]


# --------------------------------------------------------------------------- the layouts and settings


def test_an_mvtec_tree_is_one_normal_class_and_its_anomaly_kinds(tmp_path: Path) -> None:
    mvtec_tree(tmp_path / "data" / "parts", n_train=8, n_good=3, n_kind=2)
    info = own_folder.register_folder_dataset("parts", {"folder": "parts"}, {"data_dir": str(tmp_path / "data")})
    assert (info.classes, info.normals, info.protocol, info.source) == (
        ("good", "bar", "disc"),
        ("good",),
        "official",
        "folder",
    )
    data = load_one_class("parts", tmp_path / "data", size=24)
    assert data.train.shape == (8, 24, 24, 3) and data.test.shape == (7, 24, 24, 3) and data.n_anomalous == 4
    assert data.manifest["test_ids"][:3] == ["test/good/000.png", "test/good/001.png", "test/good/002.png"]
    assert data.manifest["source"]["format"] == "folder"


def test_an_mvtec_split_names_each_test_image_kind_and_the_record_has_an_auroc_per_kind(tmp_path: Path) -> None:
    from con2.run.records import auroc_by_kind

    mvtec_tree(tmp_path / "data" / "parts", n_train=6, n_good=3, n_kind=2)
    own_folder.register_folder_dataset("parts", {"folder": "parts"}, {"data_dir": str(tmp_path / "data")})
    data = load_one_class("parts", tmp_path / "data", size=16)
    assert data.manifest["test_kinds"] == ["good"] * 3 + ["bar"] * 2 + ["disc"] * 2
    scores = {"s": np.array([0.1, 0.2, 0.3, 0.9, 0.8, 0.25, 0.05])}  # bar found, disc missed
    assert auroc_by_kind(data.test_labels, scores, data.manifest["test_kinds"]) == {
        "bar": {"s": 100.0},
        "disc": {"s": pytest.approx(100 / 3)},  # 0.25 above two of three normals, 0.05 above none
    }
    class_folders_tree(tmp_path / "data" / "flat", n=5)
    own_folder.register_folder_dataset("flat", {"folder": "flat"}, {"data_dir": str(tmp_path / "data")})
    assert "test_kinds" not in load_one_class("flat", tmp_path / "data", size=16).manifest  # kinds: mvtec only


def test_normal_and_anomalous_folders_are_split_by_a_seeded_hash_of_the_file_ids(tmp_path: Path) -> None:
    normal_anomalous_tree(tmp_path / "data" / "scans", n_normal=20, n_anomalous=5)
    decl = {"folder": str(tmp_path / "data" / "scans"), "test_fraction": 0.25, "channels": "grey"}
    own_folder.register_folder_dataset("scans", decl, {})
    one = load_one_class("scans", tmp_path / "data", seed=0, size=16)
    again = load_one_class("scans", tmp_path / "data", seed=0, size=16)
    other = load_one_class("scans", tmp_path / "data", seed=1, size=16)
    assert one.train.shape == (15, 16, 16, 1) and one.n_normal_test == 5 and one.n_anomalous == 5
    assert one.manifest["test_ids"] == again.manifest["test_ids"] != other.manifest["test_ids"]


def test_class_folders_make_each_class_a_normal_class_with_or_without_their_own_split(tmp_path: Path) -> None:
    class_folders_tree(tmp_path / "data" / "flat", n=10)
    info = own_folder.register_folder_dataset("flat", {"folder": "flat"}, {"data_dir": str(tmp_path / "data")})
    assert info.normals == ("barred", "dotted", "plain") and info.protocol == "holdout"
    flat = load_one_class("flat", tmp_path / "data", "dotted", size=16)
    assert len(flat.train) == 8 and flat.n_normal_test == 2 and flat.n_anomalous == 4  # held-out 20% of each class
    rng = np.random.default_rng(0)
    for split, n in (("train", 6), ("test", 3)):
        for cls in ("cat", "dog"):
            write_images(tmp_path / "data" / "pets" / split / cls, n, rng, "bar" if cls == "dog" else "")
    info = own_folder.register_folder_dataset("pets", {"folder": "pets"}, {"data_dir": str(tmp_path / "data")})
    assert info.protocol == "official"
    pets = load_one_class("pets", tmp_path / "data", "dog", size=16)
    assert len(pets.train) == 6 and pets.n_normal_test == 3 and pets.n_anomalous == 3


def test_resize_policies_and_channels_prepare_what_they_say(tmp_path: Path) -> None:
    """center_crop keeps the aspect (a wide image's centre), resize stretches it, keep takes the pixels as they are."""
    root = tmp_path / "data" / "wide"
    for cls in ("a", "b"):
        (root / cls).mkdir(parents=True)
        for i in range(5):
            arr = np.zeros((20, 60, 3), np.uint8)
            arr[:, 20:40] = 255  # a white centre third: all of a centre crop, a third of a stretched image
            Image.fromarray(arr).save(root / cls / f"{i}.png")
    config = {"data_dir": str(tmp_path / "data")}
    own_folder.register_folder_dataset("wide", {"folder": "wide"}, config)
    crop = load_one_class("wide", tmp_path / "data", "a", size=20)
    assert crop.train.shape[1:] == (20, 20, 3) and crop.train.min() > 200
    own_folder.register_folder_dataset("wide", {"folder": "wide", "resize": "resize", "channels": "grey"}, config)
    stretched = load_one_class("wide", tmp_path / "data", "a", size=20)
    assert stretched.train.shape[1:] == (20, 20, 1)  # the cache of other settings is prepared again
    assert stretched.train[0, :, 0].max() < 50 and stretched.train[0, :, 10].min() > 200
    assert (
        stretched.manifest["source"]["settings"] == "layout=class_folders channels=grey resize=resize test_fraction=0.2"
    )


def test_duplicates_within_and_across_splits_and_classes_are_reported_not_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = mvtec_tree(tmp_path / "data" / "parts", n_train=6, n_good=3, n_kind=3)
    (root / "test" / "good" / "copy.png").write_bytes((root / "train" / "good" / "000.png").read_bytes())
    (root / "test" / "bar" / "copy.png").write_bytes((root / "train" / "good" / "001.png").read_bytes())
    (root / "train" / "good" / "twice.png").write_bytes((root / "train" / "good" / "002.png").read_bytes())
    assert get(tmp_path, "parts", {"parts": {"folder": "parts"}}, "--size", "16") == 0
    err = capsys.readouterr().err
    assert "train/good/002.png = train/good/twice.png are byte-identical files of one class in one split" in err
    assert "test/bar/copy.png = train/good/001.png are byte-identical files in different class folders" in err
    assert "test/good/copy.png = train/good/000.png are byte-identical files of one class in more than one split" in err


# --------------------------------------------------------------------------- con2 data list / get, other processes


def test_data_list_shows_the_folder_source_and_counts_per_split_and_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mvtec_tree(tmp_path / "data" / "parts", n_train=4, n_good=2, n_kind=3)
    prof = profile(
        tmp_path, {"parts": {"folder": "parts"}, "later": {"folder": "not-yet", "layout": "normal_anomalous"}}
    )
    assert main(["data", "list", "--profile", str(prof)]) == 0
    out = capsys.readouterr().out
    assert f"data_dir: {tmp_path / 'data'}  (the profile's data_dir)" in out
    assert any(line.split()[:4] == ["parts", "own", "folder", "yes"] for line in out.splitlines()), out
    assert "parts (mvtec): train: good 4; test: good 2, bar 3, disc 3" in out
    assert f"later: put the images in {tmp_path / 'data' / 'not-yet'}" in out


def test_data_list_names_one_folder_in_its_header_and_its_fix_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 58, item 6: the header printed data_dir resolved (a symlink followed) and the fix commands unresolved."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path)
    assert main(["data", "list", "--data-dir", "link"]) == 0
    out = capsys.readouterr().out
    assert f"data_dir: {tmp_path / 'real'}  (--data-dir)" in out
    assert f"--data-dir {tmp_path / 'real'}" in out and "link" not in out.replace("(--data-dir)", "")


def test_other_processes_learn_the_declarations_from_the_environment(tmp_path: Path) -> None:
    """What the workflow's jobs (`con2 train`, its scripts) see: the JSON the hook exports, or a profile's path."""
    class_folders_tree(tmp_path / "data" / "shapes", n=5)
    own_folder.register_folder_dataset("shapes", {"folder": "shapes"}, {"data_dir": str(tmp_path / "data")})
    exported = os.environ[own_folder.ENV]
    probe = "from con2.data import get_info; i = get_info('shapes'); print(i.source, ','.join(i.normals))"
    for value in (exported, str(profile(tmp_path, {"shapes": {"folder": "shapes"}}))):
        env = {**os.environ, own_folder.ENV: value, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, cwd=tmp_path)
        assert out.stdout.strip() == "folder barred,dotted,plain", out.stderr
    assert json.loads(exported)["shapes"]["classes"] == ["barred", "dotted", "plain"]


def test_the_workflow_hook_sets_the_declared_image_size_for_the_runs_and_refuses_in_one_line(tmp_path: Path) -> None:
    from con2.data.profile_datasets import register_profile_datasets
    from con2.grid.checks import GridError

    mvtec_tree(tmp_path / "data" / "parts", n_train=4, n_good=2, n_kind=2)
    config = {
        "data_dir": str(tmp_path / "data"),
        "datasets": {"digits": None, "parts": {"folder": "parts", "image_size": 32}},
    }
    assert register_profile_datasets(config) == ["parts"]
    assert config["datasets"]["parts"]["run"] == {"image_size": 32} and config["datasets"]["digits"] is None
    config["datasets"]["cifar10"] = {"folder": "parts"}
    with pytest.raises(GridError, match=r"^datasets\.cifar10\.folder: cifar10 is a built-in dataset\. Fix: "):
        register_profile_datasets(config)


def test_the_schema_takes_the_declaration_keys_and_refuses_a_setting_without_a_folder() -> None:
    from con2.workflow import startup

    cfg = yaml.safe_load((ROOT / "workflow/config/test.yaml").read_text())
    cfg["datasets"]["parts"] = {
        "folder": "parts",
        "layout": "mvtec",
        "channels": "grey",
        "resize": "keep",
        "image_size": 32,
    }
    startup.check_profile(cfg, ROOT / "workflow/schemas/config.schema.yaml")
    cfg["datasets"]["parts"] = {"folder": "parts", "resize": "squash"}
    with pytest.raises(Exception, match="squash"):
        startup.check_profile(cfg, ROOT / "workflow/schemas/config.schema.yaml")
    cfg["datasets"]["parts"] = {"channels": "grey"}  # a built-in dataset's images are not re-declared
    with pytest.raises(Exception, match="datasets.parts: 'folder' is a dependency of 'channels'"):
        startup.check_profile(cfg, ROOT / "workflow/schemas/config.schema.yaml")


# --------------------------------------------------------------------------- item 4: one line, nothing prepared


def test_a_layout_that_matches_none_of_the_three_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_images(tmp_path / "data" / "odd" / "images", 3, np.random.default_rng(0))
    line = refused(tmp_path, capsys, "odd", {"odd": {"folder": "odd"}})
    assert "matches none of the three layouts (it holds images)" in line and "Fix: lay" in line
    assert main(["data", "list", "--profile", str(tmp_path / "mine.yaml")]) == 0  # listed broken, its line below
    out = capsys.readouterr().out
    assert any(line.split()[:4] == ["odd", "own", "folder", "BROKEN"] for line in out.splitlines()), out
    assert "  odd: odd: " in out and "matches none of the three layouts" in out


def test_an_empty_normal_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = mvtec_tree(tmp_path / "data" / "parts", n_train=1, n_good=2, n_kind=2)
    (root / "train" / "good" / "000.png").unlink()
    line = refused(tmp_path, capsys, "parts", {"parts": {"folder": "parts"}})
    assert f"the normal folder {root / 'train' / 'good'} holds no images" in line


def test_a_test_split_without_anomalies_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(0)
    write_images(tmp_path / "data" / "parts" / "train" / "good", 4, rng)
    write_images(tmp_path / "data" / "parts" / "test" / "good", 2, rng)
    line = refused(tmp_path, capsys, "parts", {"parts": {"folder": "parts", "layout": "mvtec"}})
    assert "holds no anomalies" in line and "Fix: add a folder of anomalous test images" in line
    normal_anomalous_tree(tmp_path / "data" / "scans", n_normal=5, n_anomalous=0)
    (tmp_path / "data" / "scans" / "anomalous").mkdir(exist_ok=True)
    line = refused(tmp_path, capsys, "scans", {"scans": {"folder": "scans"}})
    assert "the anomalous folder (the test split's anomalies)" in line and "holds no images" in line


def test_mixed_sizes_under_keep_are_refused_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = class_folders_tree(tmp_path / "data" / "shapes", n=4)
    image(np.random.default_rng(0), side=48).save(root / "plain" / "big.png")
    line = refused(tmp_path, capsys, "shapes", {"shapes": {"folder": "shapes", "resize": "keep"}}, "--size", "40")
    assert (
        f"{root / 'plain' / 'big.png'} is 48x48, not 40x40: `resize: keep`" in line
        and "Fix: datasets.shapes.resize" in line
    )


def test_an_unreadable_image_is_refused_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = class_folders_tree(tmp_path / "data" / "shapes", n=4)
    (root / "dotted" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not an image")
    line = refused(tmp_path, capsys, "shapes", {"shapes": {"folder": "shapes"}}, "--size", "16")
    assert "cannot decode dotted/broken.png" in line and "Fix: replace that file by a readable image" in line


def test_a_file_that_is_not_an_image_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = class_folders_tree(tmp_path / "data" / "shapes", n=4)
    (root / "barred" / "notes.txt").write_text("taken on Monday")
    line = refused(tmp_path, capsys, "shapes", {"shapes": {"folder": "shapes"}})
    assert f"{root / 'barred'} holds 1 entry that is not an image, e.g. the file notes.txt" in line


def test_a_name_with_control_characters_is_refused_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = class_folders_tree(tmp_path / "data" / "shapes", n=4)
    (root / "plain" / "000.png").rename(root / "plain" / "x\x1b[31m\nSKIPPED.png")
    line = refused(tmp_path, capsys, "shapes", {"shapes": {"folder": "shapes"}})
    assert "x\\x1b[31m\\x0aSKIPPED.png has a control character in its name (shown escaped)" in line


def test_a_symlink_leading_out_of_the_folder_is_refused_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = mvtec_tree(tmp_path / "data" / "parts", n_train=4, n_good=2, n_kind=2)
    secret = tmp_path / "elsewhere" / "secret.png"
    secret.parent.mkdir()
    image(np.random.default_rng(0)).save(secret)
    (root / "test" / "bar" / "link.png").symlink_to(secret)
    line = refused(tmp_path, capsys, "parts", {"parts": {"folder": "parts"}})
    assert f"{root / 'test' / 'bar' / 'link.png'} is a symbolic link to {secret}, outside the declared folder" in line


def test_two_class_folders_that_are_one_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = class_folders_tree(tmp_path / "data" / "shapes", n=4)
    (root / "copy").symlink_to(root / "plain", target_is_directory=True)
    line = refused(tmp_path, capsys, "shapes", {"shapes": {"folder": "shapes"}})
    assert "is the same folder as" in line


def test_a_class_folder_name_that_cannot_be_a_class_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = class_folders_tree(tmp_path / "data" / "shapes", n=4)
    (root / "plain").rename(root / "plain one")
    line = refused(tmp_path, capsys, "shapes", {"shapes": {"folder": "shapes"}})
    assert f"class folder {root / 'plain one'}: its name becomes a class name" in line


def test_a_bad_setting_is_refused_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    class_folders_tree(tmp_path / "data" / "shapes", n=4)
    line = refused(tmp_path, capsys, "shapes", {"shapes": {"folder": "shapes", "channels": "cmyk"}})
    assert "datasets.shapes.channels: 'cmyk' is not one of rgb, grey. Fix: channels: rgb" in line


# --------------------------------------------------------------------------- docs/own_data.md


def test_the_docs_worked_example_is_a_valid_overlay_on_the_tree_the_tests_build(tmp_path: Path) -> None:
    """docs/own_data.md's profile passes the workflow's schema merged onto the test profile (as Snakemake merges
    two --configfile), and declares the default mvtec tree of own_data_trees.py with the counts the page prints."""
    import re

    from con2.data.profile_datasets import register_profile_datasets
    from con2.grid.experiments import deep_merge
    from con2.workflow import startup

    page = (ROOT / "docs" / "own_data.md").read_text()
    block = re.search(r"The profile, `own.yaml`.*?```yaml\n(.*?)```", page, re.S)
    assert block, "no own.yaml block in docs/own_data.md"
    overlay = yaml.safe_load(block.group(1))
    cfg = deep_merge(yaml.safe_load((ROOT / "workflow/config/test.yaml").read_text()), overlay)
    cfg.update(data_dir=str(tmp_path / "data"), only_datasets="parts")
    startup.check_profile(cfg, ROOT / "workflow/schemas/config.schema.yaml")
    mvtec_tree(tmp_path / "data" / "parts")
    assert "mvtec_tree(Path('data/parts'))" in page
    assert register_profile_datasets(cfg) == ["parts"]
    line = own_folder.counts_line(DATASETS["parts"], tmp_path / "data")
    assert line == "parts (mvtec): train: good 24; test: good 6, bar 6, disc 6" and line in page


def test_a_class_folder_that_cannot_be_listed_is_one_line_and_not_called_damaged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No permission (as a user other than root meets it: the tests may run as root, so listing is denied here)."""
    root = class_folders_tree(tmp_path / "data" / "shapes", n=4)
    real = Path.iterdir

    def denied(self: Path) -> Iterator[Path]:
        if self == root / "plain":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "iterdir", denied)
    line = refused(tmp_path, capsys, "shapes", {"shapes": {"folder": "shapes"}})
    assert f"cannot read {root / 'plain'}: permission denied" in line and "do not delete it" in line


def test_a_folder_beside_the_layouts_own_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An mvtec tree's ground_truth/ (its masks) is ignored; any other folder beside train/ and test/ would be left
    out without a word."""
    root = mvtec_tree(tmp_path / "data" / "parts", n_train=4, n_good=2, n_kind=2)
    write_images(root / "validation" / "good", 2, np.random.default_rng(0))
    line = refused(tmp_path, capsys, "parts", {"parts": {"folder": "parts"}})
    assert f"{root} holds validation beside train, test, ground_truth: its images would be left out" in line
    scans = normal_anomalous_tree(tmp_path / "data" / "scans", n_normal=5, n_anomalous=2)
    write_images(scans / "unsure", 2, np.random.default_rng(0))
    line = refused(tmp_path, capsys, "scans", {"scans": {"folder": "scans"}})
    assert f"{scans} holds unsure beside normal, anomalous: its images would be left out" in line
