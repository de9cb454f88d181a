"""Your own images through the workflow (issue 59): each of the three layouts built on disk, declared in a
profile alone, prepared once, trained and scored by the floor and CON2 (tiny settings) through Snakemake in a
temporary copy of the workflow, to Table 1 with the dataset's row; the records name the folder's content
checksum and the declared settings.

Every test works in a temporary copy of the workflow (tests/workflow_helpers.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from own_data_trees import class_folders_tree, mvtec_tree, normal_anomalous_tree
from workflow_helpers import SNAKEMAKE, TEST_CONFIG, copy_workflow, snakemake

pytestmark = pytest.mark.slow

if shutil.which("snakemake") is None and subprocess.run([*SNAKEMAKE, "--version"], capture_output=True).returncode:
    pytest.skip("snakemake is not installed (pip install -e '.[workflow]')", allow_module_level=True)


def own_profile(wd: Path, name: str, declaration: dict, classes: list[str] | None = None, natural: bool = False) -> str:
    """The tiny profile with one declared folder dataset, the floor and CON2 (invert) on it, its column in
    Table 1 or (``natural``) in the natural-image summary with a per-class table, as CIFAR-10's (written into
    ``wd``)."""
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    entry = dict(declaration)
    if classes:
        entry["normal_classes"] = classes
    cfg["datasets"] = {name: entry}
    cfg["run"].update(batch_size=16)
    cfg["variants"]["floor"] = {"max_steps": 0, "tta": 0}
    cfg["experiments"] = {"main": {"datasets": [name], "methods": {"floor_pixels": ["floor"], "con2": ["invert"]}}}
    tables = (
        {"medical": [], "natural": [name], "per_class": [name]}
        if natural
        else {"medical": [name], "natural": [], "per_class": []}
    )
    cfg["report"].update(**tables, comparisons=[], pca=[], curves=[])
    cfg["report"].update(floors=["floor_pixels"], main_variants={"con2": "invert", "floor_pixels": "floor"})
    (wd / "own.yaml").write_text(yaml.safe_dump(cfg))
    return "own.yaml"


def run_own(
    tmp_path: Path, name: str, declaration: dict, classes: list[str] | None = None, natural: bool = False
) -> tuple[Path, str]:
    """Run ``all`` on the profile of :func:`own_profile`; the workflow's folder and Table 1's (or, ``natural``,
    the natural-image summary's) text."""
    wd = copy_workflow(tmp_path / "wd")
    prof = own_profile(wd, name, declaration, classes, natural)
    done = snakemake(wd, "--cores", "2", "all", "--configfile", prof, "--config", f"data_dir={tmp_path / 'data'}")
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    table = (wd / f"results/tables/{'natural_summary' if natural else 'table1_medical'}.md").read_text()
    return wd, table


def check_records(wd: Path, name: str, n: int, settings: str) -> list[dict]:
    """The dataset's ``n`` records, each naming the folder's content checksum and the declared settings."""
    from con2.data.cache import Found, source_key
    from con2.data.own_folder import FolderSpec, list_folder

    paths = sorted((wd / "results/runs" / name).rglob("record.json"))
    assert len(paths) == n, paths
    recs = [json.loads(p.read_text()) for p in paths]
    spec = FolderSpec(name=name, folder=name)
    listing = list_folder(spec, wd.parent / "data")
    content = source_key(Found(listing.root, "", listing.root, files=listing.files)).digest
    for rec in recs:
        assert rec["data_source"] == {"format": "folder", "sha256": content, "settings": settings}, rec["data_source"]
    return recs


def header(table: str) -> list[str]:
    """The column names of Table 1 (or of another table whose first column is ``Method``)."""
    line = next(line for line in table.splitlines() if line.startswith("| Method |"))
    return [c.strip() for c in line.strip("|").split("|")]


def row_of(table: str, method: str) -> str:
    """The line of Table 1 whose first cell starts with ``method``."""
    return next(line for line in table.splitlines() if line.startswith(f"| {method}"))


def test_an_mvtec_tree_declared_in_a_profile_runs_the_floor_and_con2_to_table_1(tmp_path: Path) -> None:
    mvtec_tree(tmp_path / "data" / "parts", n_train=20, n_good=5, n_kind=5)
    wd, table = run_own(tmp_path, "parts", {"folder": "parts", "image_size": 16})
    assert header(table)[-1] == "parts", table
    for method in ("Floor: pixel NN (NND) | ours", "CON2 (NND) | ours"):
        assert row_of(table, method).rstrip(" |").endswith("[1×1]"), table
    recs = check_records(wd, "parts", 2, "layout=mvtec channels=rgb resize=center_crop")
    assert {r["method"] for r in recs} == {"floor_pixels", "con2"}
    for rec in recs:  # the MVTec convention: an AUROC per anomaly kind, of every score column
        by_kind = rec["metrics"]["auroc_by_kind"]
        assert set(by_kind) == {"bar", "disc"} and set(by_kind["bar"]) == set(rec["metrics"]["auroc"]), by_kind
    # ... in a table of its own: the kinds as columns, a row per main variant's headline score, the floor first
    per_kind = (wd / "results/tables/per_kind_parts.md").read_text()
    assert header(per_kind) == ["Method", "bar", "disc", "all"], per_kind
    con2 = next(r for r in recs if r["method"] == "con2")
    cells = row_of(per_kind, "CON2 (NND)").strip(" |").split(" | ")
    aurocs = [con2["metrics"]["auroc_by_kind"][k]["nnd"] for k in ("bar", "disc")] + [con2["metrics"]["auroc"]["nnd"]]
    assert cells[1:] == [f"{a:.1f} [1×1]" for a in aurocs], per_kind
    rows = [line for line in per_kind.splitlines() if line.startswith("| ") and not line.startswith("| Method")]
    assert rows[0].startswith("| Floor: pixel NN (NND) |") and len(rows) == 3, per_kind  # floor, CON2 NND and LH


def test_normal_and_anomalous_folders_with_a_seeded_test_split_run_to_table_1(tmp_path: Path) -> None:
    normal_anomalous_tree(tmp_path / "data" / "scans", n_normal=30, n_anomalous=6)
    declaration = {"folder": str(tmp_path / "data" / "scans"), "channels": "grey", "test_fraction": 0.25}
    wd, table = run_own(tmp_path, "scans", {**declaration, "image_size": 16})
    assert header(table)[-1] == "scans", table
    recs = check_records(wd, "scans", 2, "layout=normal_anomalous channels=grey resize=center_crop test_fraction=0.25")
    assert all(r["n_test"] == 8 + 6 for r in recs), [r.get("n_test") for r in recs]


def test_one_folder_per_class_runs_each_named_class_as_normal_to_the_per_class_table(tmp_path: Path) -> None:
    class_folders_tree(tmp_path / "data" / "shapes", n=25)
    declaration = {"folder": "shapes", "resize": "keep", "image_size": 40, "layout": "class_folders"}
    wd, table = run_own(tmp_path, "shapes", declaration, classes=["plain", "barred"], natural=True)
    assert header(table)[-1] == "shapes" and row_of(table, "CON2 (NND) | ours").rstrip(" |").endswith("[2×1]"), table
    per_class = (wd / "results/tables/per_class_shapes.md").read_text().splitlines()
    for cls in ("barred", "plain"):  # one row per normal class, the floor's and CON2's cells, as CIFAR-10's
        cells = next(line for line in per_class if line.startswith(f"| {cls} |")).strip(" |").split(" | ")
        assert len(cells) == 4 and all(c.endswith("[1×1]") for c in cells[1:]), per_class
    recs = check_records(wd, "shapes", 4, "layout=class_folders channels=rgb resize=keep test_fraction=0.2")
    assert {r["normal_class"] for r in recs} == {"plain", "barred"}


def test_a_refused_folder_stops_the_workflow_on_one_line_before_any_job(tmp_path: Path) -> None:
    """Issue 59, item 4: a declared folder the data layer refuses (here a file name with an escape sequence) stops
    the launch with its one line, escaped, and nothing is prepared or written under results/."""
    root = mvtec_tree(tmp_path / "data" / "parts", n_train=4, n_good=2, n_kind=2)
    (root / "test" / "bar" / "000.png").rename(root / "test" / "bar" / "x\x1b[2J.png")
    wd = copy_workflow(tmp_path / "wd")
    prof = own_profile(wd, "parts", {"folder": "parts", "image_size": 16})
    done = snakemake(wd, "--cores", "1", "all", "--configfile", prof, "--config", f"data_dir={tmp_path / 'data'}")
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if "control character" in line]
    assert len(lines) == 1 and "x\\x1b[2J.png has a control character in its name" in lines[0], done.stderr[-2000:]
    assert lines[0].startswith("invalid workflow config: parts: ") and "\x1b" not in done.stderr
    assert not (wd / "results").exists() and not (wd / ".con2-cache").exists()
