"""Helpers of the workflow tests (tests/test_workflow_*.py and the other tests that run Snakemake).

The workflow runs through its command line (the Python API shifts between versions), always in a
temporary copy (Snakefile + workflow/ + profiles/), so results and .snakemake/ never land in the
repository. No test reaches the network: every Snakemake process (and every job it starts) imports a
``sitecustomize`` that makes opening a socket fail as it does offline, and sees no Kaggle
credentials.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
TEST_CONFIG = "workflow/config/test.yaml"


def copy_workflow(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "Snakefile", dest / "Snakefile")
    for folder in ("workflow", "profiles"):  # profiles/default: the workflow profile Snakemake loads by itself
        shutil.copytree(ROOT / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


OFFLINE = '''"""Test harness (tests/workflow_helpers.py): this machine is offline for every Python process."""
import socket


def _offline(*args, **kwargs):
    raise OSError(101, "Network is unreachable (tests/workflow_helpers.py blocks the network)")


socket.socket.connect = _offline
socket.socket.connect_ex = _offline
socket.create_connection = _offline
socket.getaddrinfo = _offline
'''


def workflow_env(cwd: Path) -> dict[str, str]:
    """The environment of a Snakemake run: offline, no Kaggle credentials, a private data cache,
    and this interpreter's `con2` first on PATH (the train rule calls it)."""
    site = cwd / ".offline"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(OFFLINE)
    home = cwd / ".home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAGGLE_") and k != "CON2_DATA_DIR"}
    env.update(
        PYTHONWARNINGS="ignore",
        PYTHONPATH=os.pathsep.join(p for p in (str(site), str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        KAGGLE_CONFIG_DIR=str(home / "kaggle"),
        CON2_CACHE_DIR=str(cwd / ".con2-cache"),
    )
    return env


def snakemake(cwd: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = workflow_env(cwd)
    return subprocess.run([*SNAKEMAKE, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def job_stats(output: str) -> Counter:
    """Parse Snakemake's 'Job stats' table into {rule: count} (without the total)."""
    m = re.search(r"Job stats:\n.*?\n-+\s+-+\n(.*?)\n\s*\n", output, re.S)
    if not m:
        return Counter()
    counts = Counter()
    for line in m.group(1).splitlines():
        name, count = line.split()
        if name != "total":
            counts[name] = int(count)
    return counts


def finished(output: str) -> Counter:
    """{rule: jobs finished} from Snakemake's log (also the jobs added after a checkpoint, which the
    'Job stats' table printed at the start does not list)."""
    return Counter(re.findall(r"Finished jobid: \d+ \(Rule: (\w+)\)", output))


def records(root: Path) -> dict[str, float]:
    """record.json path -> mtime."""
    return {str(p.relative_to(root)): p.stat().st_mtime for p in (root / "results" / "runs").rglob("record.json")}


def start(wd: Path, cmd: list[str]) -> subprocess.Popen:
    """``cmd`` started in ``wd`` in a session of its own (so a signal reaches Snakemake and its jobs)."""
    return subprocess.Popen(
        cmd,
        cwd=wd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=workflow_env(wd),
        # Ctrl-C must reach the workflow even if something in this pytest process set SIGINT to
        # "ignore", a disposition that children inherit across exec.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def incomplete_outputs(wd: Path) -> list[str]:
    """The outputs Snakemake has marked incomplete (jobs started, not finished) in ``wd``."""
    import base64

    inc = wd / ".snakemake" / "incomplete"
    return [base64.b64decode(p.name).decode(errors="replace") for p in inc.iterdir()] if inc.is_dir() else []


def clone(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest


# ------------------------------------------------------------------------------------- dry runs
def expected_paper_train_jobs(cfg: dict, skip: tuple[str, ...] = ()) -> int:
    """Training runs of a profile counted straight from its YAML (independently of con2.grid.experiments),
    leaving out the experiments in ``skip``."""
    from con2.data import normal_classes

    cells = set()
    for name, exp in cfg["experiments"].items():
        if name in skip:
            continue
        seeds = exp.get("seeds", cfg["seeds"])
        methods = dict(exp.get("methods", {}))
        if exp.get("extra_methods"):
            for m in cfg.get("extra_methods") or []:
                methods.setdefault(m, ["default"])
        for d in exp["datasets"]:
            classes = cfg["datasets"][d].get("normal_classes", "all")
            classes = normal_classes(d) if classes == "all" else classes
            for m, variants in methods.items():
                cells |= {(d, c, m, v, s) for c in classes for v in variants for s in seeds}
    return len(cells)


# ------------------------------------------------------------------------------------- real tiny run


TOY_RULE = """
rule toy:
    input:
        data=data_marker_for("toy"),
    output:
        record="results/runs/{dataset}/{normal_class}/toy/{variant}/seed{seed}/record.json",
    log:
        "results/logs/toy/{dataset}/{normal_class}/{variant}/seed{seed}.log",
    shell:
        "PYTHON -c 'import sys; from pathlib import Path; from con2.run.records import write_record; "
        "d, c, v, s, out = sys.argv[1:]; write_record(dict(schema_version=1, dataset=d, normal_class=c, "
        "method=\\"toy\\", variant=v, seed=int(s), metrics=dict(auroc=dict(pixels=61.5 + int(s))), "
        "timing=dict(fit_seconds=0.0, score_seconds=0.1, wall_seconds=0.1), n_train=100, n_test=600, "
        "n_anomalous=540, config=dict(), config_hash=\\"toy\\"), Path(out))' "
        "{wildcards.dataset:q} {wildcards.normal_class:q} {wildcards.variant:q} {wildcards.seed:q} {output.record:q} "
        "> {log:q} 2>&1"
"""


# ------------------------------------------------------------------------------------- failure modes


# ------------------------------------------------------------------------------------- data and aggregation
def small_profile(wd: Path, datasets: dict, experiments: dict, name: str = "small.yaml", **top) -> str:
    """The tiny profile with other datasets and experiments (written into ``wd``)."""
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg.update(datasets=datasets, experiments=experiments, **top)
    cfg["report"].update(medical=[d for d in datasets if d != "digits"], per_class=[], pca=["digits"])
    (wd / name).write_text(yaml.safe_dump(cfg))
    return name


def runs_csv_records(wd: Path) -> dict[str, bool]:
    """record path -> in_grid, from results/evaluation/runs.csv."""
    import pandas as pd

    df = pd.read_csv(wd / "results/evaluation/runs.csv")
    return {r: bool(g) for r, g in zip(df["record"], df["in_grid"])}


# ------------------------------------------------------------------------------------- issue 16
def tree(root: Path, skip: tuple[str, ...] = ()) -> dict[str, int]:
    """Every file below ``root`` (relative path -> size), but those below the folders in ``skip``."""
    return {
        str(p.relative_to(root)): p.stat().st_size
        for p in root.rglob("*")
        if p.is_file() and not any(part in skip for part in p.relative_to(root).parts)
    }


def two_profiles(wd: Path) -> tuple[str, str]:
    """Two profiles of the same two runs (digits 0 and 1, CON2 invert), one with 1 epoch, one with 2."""
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["experiments"] = {"main": {"datasets": ["digits"], "methods": {"con2": ["invert"]}}}
    cfg["run"].update(epochs=1)
    (wd / "one.yaml").write_text(yaml.safe_dump(cfg))
    cfg["run"].update(epochs=2)
    (wd / "two.yaml").write_text(yaml.safe_dump(cfg))
    return "one.yaml", "two.yaml"


def table_targets_of(wd: Path) -> list[str]:
    from con2.report.artefacts import figure_targets, table_targets

    report = yaml.safe_load((wd / TEST_CONFIG).read_text())["report"]
    return table_targets(report) + figure_targets(report)


# ------------------------------------------------------------------------------------- the README's baseline
def readme_block(after: str, lang: str) -> str:
    """The first fenced ``lang`` block of docs/methods.md (moved there from the README) after ``after``."""
    text = (ROOT / "docs" / "methods.md").read_text()
    start = text.index(after)
    m = re.compile(rf"^```{lang}\n(.*?)^```$", re.M | re.S).search(text, start)
    assert m, f"no ```{lang} block after {after!r} in docs/methods.md"
    return m.group(1)


# ------------------------------------------------------------------------------------- issue 27


# Strings a label or a profile value could smuggle into the HTML report: a script element, an image with
# a handler, a reST link to a javascript: URL (the escaping tests); HOSTILE_LABEL: all three in one label.
HOSTILE = {
    "script": "</script><script>alert(1)</script>",
    "img": "<img src=x onerror=alert(2)>",
    "rest": "`x <javascript:alert(1)>`_",
}
HOSTILE_LABEL = " ".join(HOSTILE.values())

# One CON2 run on digits, class 0, as a workflow profile; records outside its grid (an external run a
# test adds) are shown too: the hostile-label and report-landing tests build their reports from it.
ONE_RUN_PROFILE = """\
device: cpu
threads: 1
download: false
seeds: [0]
eval_batch_size: 512
run: {image_size: 16, width: 8, epochs: 1, batch_size: 64, tta: 2, csi_views: 2}
datasets:
  digits: {normal_classes: ["0"]}
experiments:
  main: {datasets: [digits], methods: {con2: [default]}}
report:
  {subject: con2, medical: [], natural: [digits], per_class: [], pca: [], curves: [], contexts: [invert],
   include_outside_grid: true}  # the external record below is no run of this grid
score_runtime: {dim: 16, views: 2, batch_size: 32, n_train: [1, 10], n_batches: [1], batches_n_train: 100, repeats: 1}
"""


def fake_breastmnist(data: Path) -> tuple[dict, dict]:
    """A small BreastMNIST-shaped npz under ``data`` (70 normal training images >= batch 64) and the
    ``(datasets, main experiment)`` of a profile of digits class 0 and that BreastMNIST, CON2 invert."""
    from data_fixtures import write_medmnist_npz

    write_medmnist_npz(data / "medmnist" / "breastmnist.npz", {"train": [30, 70], "val": [2, 2], "test": [20, 25]})
    datasets = {"digits": {"normal_classes": ["0"]}, "breastmnist": {"run": {"image_size": 28}}}
    return datasets, {"datasets": ["digits", "breastmnist"], "methods": {"con2": ["invert"]}}


# ------------------------------------------------------------------ profiles and records, no launch
def profile_error(cfg: dict[str, Any]) -> str:
    """The one line a launch stops on for the profile ``cfg``, asked of the typed layer without a launch:
    the profile check (the Snakefile's :func:`con2.workflow.startup.check_profile`), then the grid
    (common.smk's :class:`con2.workflow.session.Session`, its GridError said as common.smk says it).
    tests/workflow/test_workflow_grid.py's ``test_an_invalid_profile_stops_the_launch_before_any_job_naming_the_key``
    shows a launch saying it."""
    from snakemake.exceptions import WorkflowError

    from con2.grid.checks import GridError
    from con2.workflow import startup
    from con2.workflow.session import Session

    try:
        startup.check_profile(cfg, ROOT / "workflow/schemas/config.schema.yaml")
        Session(cfg, ROOT, lambda: [], lambda: {})
    except WorkflowError as exc:
        return str(exc)
    except GridError as exc:
        return f"invalid workflow config: {exc}"
    raise AssertionError("the profile passed every check")


def external_record(wd: Path, method: str, label: str) -> None:
    """A record of method ``method`` labelled ``label``, as ``python -m con2.run.external`` writes it;
    a label the command refuses (``<``, a backtick: tests/report/test_escaping.py) is then written into the
    record's ``method_card`` by hand, as an edited or foreign record would carry it."""
    scores = wd / f"{method}.csv"
    scores.write_text("label,nnd\n" + "".join(f"{i % 2},{(i * 7) % 10 / 10}\n" for i in range(20)))
    cmd = [sys.executable, "-m", "con2.run.external", "--scores", str(scores), "--dataset", "digits"]
    cmd += ["--normal-class", "0", "--method", method, "--seed", "0", "--n-train", "10", "--label", label]
    cmd += ["--run-dir", f"results/runs/digits/0/{method}/default/seed0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run(cmd, cwd=wd, capture_output=True, text=True, env=env)
    if res.returncode == 2 and "--label: " in res.stderr:  # refused: written plain, then edited
        res = subprocess.run([*cmd[:-3], "Plain", *cmd[-2:]], cwd=wd, capture_output=True, text=True, env=env)
        path = wd / cmd[-1] / "record.json"
        record = json.loads(path.read_text())
        record["method_card"]["label"] = label
        path.write_text(json.dumps(record))
    assert res.returncode == 0, res.stderr


def report_of(wd: Path, html: str = "report.html") -> tuple[str, dict[str, str]]:
    """``snakemake --report`` of the one-run profile into ``html``: (the report's HTML, {embedded file name: text})."""
    res = snakemake(wd, "--report", html, "--configfile", "one.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    page = (wd / html).read_text(errors="replace")
    start = page.index("var results = ", page.index('<script id="results">')) + len("var results = ")
    results, _ = json.JSONDecoder().raw_decode(page, start)
    files = {}
    for path, entry in results.items():
        if entry["mime_type"] in ("text/html", "text/csv"):
            files[Path(path).name] = base64.b64decode(entry["data_uri"].split("base64,", 1)[1]).decode()
    return page, files
