"""Issue 58, items 2 and 4, through ``snakemake`` in a copy of the test profile's finished folder (the
``tiny_run`` fixture, tests/conftest.py):

* item 2: ``snakemake --report`` of a partial grid (a table and a figure never built) shows what is built,
  lists the rest on its first page and exits 0; it stopped on the first missing figure;
* item 4: a command without ``--configfile`` (the README's table rebuild, a dry run) uses the folder's last
  profile and says so in the first line the workflow prints; with none, the default profile, as before.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from workflow_helpers import SNAKEMAKE, clone, job_stats, snakemake, workflow_env

from con2.workflow.last_profile import given_as

pytestmark = pytest.mark.slow

if shutil.which("snakemake") is None and subprocess.run([*SNAKEMAKE, "--version"], capture_output=True).returncode:
    pytest.skip("snakemake is not installed (pip install -e '.[workflow]')", allow_module_level=True)

SNAKEMAKES_OWN = "Using workflow specific profile"  # the line Snakemake prints before it reads the Snakefile
RECALLED = (
    "the profile of the last run here, --configfile workflow/config/test.yaml (results/last_profile.yaml): "
    "no --configfile was given (name one to use another profile)"
)


def embedded(page: str) -> set[str]:
    """The names of the files a Snakemake report embeds (its ``results`` JSON)."""
    start = page.index("var results = ", page.index('<script id="results">')) + len("var results = ")
    results, _ = json.JSONDecoder().raw_decode(page, start)
    return {Path(path).name for path in results}


def unbuilt_list(page: str) -> str:
    """The report's first-page list of what is not built (its HTML, as the page holds it)."""
    found = re.search(r"<strong>Not built yet</strong>(.*?)</ul>", page, re.S)
    assert found, "the report's first page lists nothing as not built"
    return found.group(1)


def merged(wd: Path, *args: str) -> subprocess.CompletedProcess:
    """``snakemake *args`` in ``wd`` with its stderr into its stdout, as a terminal shows them (in order)."""
    return subprocess.run(
        [*SNAKEMAKE, *args], cwd=wd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=workflow_env(wd)
    )


def first_line(out: str) -> str:
    """The first line the workflow prints (after Snakemake's own line about its profile)."""
    return next(line for line in out.splitlines() if line.strip() and not line.startswith(SNAKEMAKES_OWN))


def test_a_report_of_a_partial_grid_shows_what_is_built_and_lists_the_rest(tiny_run: Path, tmp_path: Path) -> None:
    wd = clone(tiny_run, tmp_path / "wd")
    never = [
        "results/tables/per_class_digits",
        "results/figures/per_class_digits",
        "results/figures/learning_curve_digits",
    ]
    for stem in never:  # never built: every file of the table's and the figure's job
        for f in (wd / stem).parent.glob(Path(stem).name + ".*"):
            f.unlink()
    (wd / "results/tables/silhouette.html").unlink()  # one of a table's files gone: that table is not shown
    res = merged(wd, "--report", "r.html")
    out = res.stdout
    assert res.returncode == 0, out[-3000:]
    assert first_line(out) == f"con2 report: {RECALLED}"
    said = [line for line in out.splitlines() if line.startswith("con2 report: 5 of the 28 report files")]
    assert len(said) == 1, out[-3000:]
    assert "are not built yet (results/figures/learning_curve_digits.png and 4 more)" in said[0], said
    assert "Missing metadata" not in out and "Traceback" not in out
    page = (wd / "r.html").read_text(errors="replace")
    files = embedded(page)
    assert {"natural_summary.html", "table1_medical.html", "score_runtime.png", "summary.csv"} <= files, files
    # the silhouette figure draws the table whose page is gone: shown only with it (Snakemake's report needs both)
    unbuilt = {"per_class_digits.html", "per_class_digits.png", "learning_curve_digits.png", "silhouette.html"}
    unbuilt.add("silhouette.png")
    assert not files & unbuilt, files & unbuilt
    listed = unbuilt_list(page)
    assert "5 of this profile's tables and figures" in listed, listed
    for name in unbuilt:
        assert f"results/{'figures' if name.endswith('png') else 'tables'}/{name}" in listed, (name, listed)

    # nothing of the profile built: one line naming the profile to give, as before
    for folder in ("results/tables", "results/figures", "results/evaluation"):
        shutil.rmtree(wd / folder)
    res = snakemake(wd, "--report", "r2.html")
    out = res.stdout + res.stderr
    assert res.returncode == 1 and not (wd / "r2.html").exists(), out[-3000:]
    lines = [line for line in out.splitlines() if line.startswith("snakemake --report: ")]
    assert len(lines) == 1 and "does not exist: this report is of the profile of the last run" in lines[0], out[-3000:]


def test_a_command_without_configfile_uses_the_last_profile_and_says_so_first(tiny_run: Path, tmp_path: Path) -> None:
    """The README's table rebuild after the test profile read the default profile: 7 records "outside this
    profile's grid", runs "with no record yet", a table of the paper's rows alone."""
    wd = clone(tiny_run, tmp_path / "wd")
    for f in (wd / "results/tables").glob("table1_medical.*"):
        f.unlink()
    res = merged(wd, "--cores", "2", "results/tables/table1_medical.md")
    out = res.stdout
    assert res.returncode == 0, out[-3000:]
    assert first_line(out) == f"con2 workflow: {RECALLED}"
    assert "outside this profile's grid" not in out and "no record" not in out, out[-3000:]
    assert "train" not in job_stats(out)
    table = (wd / "results/tables/table1_medical.md").read_text()
    assert "outside this profile's grid" not in table
    assert given_as(wd / "results/last_profile.yaml") == "--configfile workflow/config/test.yaml"  # kept as given

    dry = merged(wd, "-n")  # `all`, dry: the test profile's grid, all finished
    out = dry.stdout
    assert dry.returncode == 0 and first_line(out) == f"con2 workflow: {RECALLED}", out[-3000:]
    assert "breastmnist" not in out, out[-3000:]

    (wd / "results/last_profile.yaml").unlink()  # none remembered: the default profile, as before, unsaid
    dry = snakemake(wd, "-n", "--config", "data_dir=no_such_dir")
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-3000:]
    assert "the profile of the last run" not in out
    assert re.search(r"data breastmnist at 28 px", out), out[-3000:]  # the default profile's datasets
