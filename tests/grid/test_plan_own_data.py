"""`con2 plan` of a profile that declares a folder of its own images (issue 59): the folder is registered as the
workflow registers it before the grid is expanded (it was "unknown dataset 'parts'"), and a refused folder is
the usual one error line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from own_data_trees import mvtec_tree

from con2.cli.main import main
from con2.data import own_folder

# 10 images/s of 4 views each at 16 px, width 8, N = 16 (CON2 invert: 2 contexts, 2 views each)
THROUGHPUT = "device,image_size,width,batch_size,views_per_image,compile,images_per_s,source\n"
THROUGHPUT += "Test GPU,16,8,16,4,false,10.0,by hand\n"
PAPER = "method,dataset,gpu_hours_per_run\nCON2,digits,2.0\n"


from data_fixtures import private_registry  # noqa: E402, F401  (the fixture, by name)

pytestmark = pytest.mark.usefixtures("private_registry")


def plan_args(tmp_path: Path, profile: dict, sizes: str) -> list[str]:
    """``con2 plan`` of ``profile`` (written into ``tmp_path``) with hand-made tables: ``sizes`` is the CSV of
    training-set sizes."""
    paths = {name: tmp_path / f"{name}.csv" for name in ("throughput", "sizes", "paper")}
    for name, text in (("throughput", THROUGHPUT), ("sizes", sizes), ("paper", PAPER)):
        paths[name].write_text(text)
    (tmp_path / "own.yaml").write_text(yaml.safe_dump(profile))
    args = ["plan", "--configfile", str(tmp_path / "own.yaml"), "--device", "test gpu"]
    args += ["--throughput", str(paths["throughput"]), "--sizes", str(paths["sizes"])]
    return [*args, "--paper-hours", str(paths["paper"])]


def own_profile(tmp_path: Path) -> dict:
    """A profile that declares ``parts`` (a folder under its data_dir) and trains CON2 (invert) on it."""
    return {
        "data_dir": str(tmp_path / "data"),
        "seeds": [0, 1],
        "run": {"image_size": 16, "width": 8, "epochs": 3, "batch_size": 16},
        "datasets": {"parts": {"folder": "parts", "layout": "mvtec", "image_size": 16}},
        "variants": {"invert": {"params": {"contexts": ["invert"]}}},
        "experiments": {"own": {"datasets": ["parts"], "methods": {"con2": ["invert"]}}},
    }


def test_a_declared_folder_is_planned_as_the_workflow_runs_it(tmp_path: Path, capsys) -> None:
    mvtec_tree(tmp_path / "data" / "parts", n_train=6, n_good=2, n_kind=2)
    sizes = "dataset,normal_class,n_train,source\nparts,good,40,by hand\n"
    assert main(plan_args(tmp_path, own_profile(tmp_path), sizes)) == 0, capsys.readouterr().err
    out = capsys.readouterr().out.splitlines()
    # its one normal class (good, the mvtec tree's) times two seeds; 40 images -> 2 steps of 16 -> 32 an epoch
    assert next(line for line in out if line.startswith("own ")).split()[1:3] == ["2", "192"], out
    assert any(line.split()[:2] == ["parts", "40"] for line in out), out


def test_a_folder_under_the_data_dir_given_is_found_there(tmp_path: Path, capsys) -> None:
    """``--data-dir`` is where a relative folder is looked for, as it is where prepared data are."""
    mvtec_tree(tmp_path / "elsewhere" / "parts", n_train=6, n_good=2, n_kind=2)
    sizes = "dataset,normal_class,n_train,source\nparts,good,40,by hand\n"
    profile = {**own_profile(tmp_path), "data_dir": str(tmp_path / "nothing here")}
    args = plan_args(tmp_path, profile, sizes)
    assert main([*args, "--data-dir", str(tmp_path / "elsewhere")]) == 0, capsys.readouterr().err
    assert own_folder.DECLARED["parts"].classes == ("good", "bar", "disc")


def test_a_refused_folder_is_one_error_line(tmp_path: Path, capsys) -> None:
    """A declared folder the data layer refuses (an mvtec tree without anomalies) stops the plan on its line."""
    root = mvtec_tree(tmp_path / "data" / "parts", n_train=6, n_good=2, n_kind=2)
    for kind in ("bar", "disc"):
        for image in (root / "test" / kind).iterdir():
            image.unlink()
        (root / "test" / kind).rmdir()
    assert main(plan_args(tmp_path, own_profile(tmp_path), "dataset,normal_class,n_train,source\n")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("con2: error: invalid profile: parts: "), err
    assert "anomal" in err[0] and "unknown dataset" not in err[0], err
