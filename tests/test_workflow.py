"""The Snakemake workflow, through its command line (the Python API shifts between versions).

Every test works in a temporary copy of the workflow (Snakefile + workflow/), so results and
.snakemake/ never land in the repository. The tiny profile (workflow/config/test.yaml: digits,
16 px, width 8, one epoch) runs once per session; tests that change things copy its directory.
No test reaches the network: every Snakemake process (and every job it starts) imports a
``sitecustomize`` that makes opening a socket fail as it does offline, and sees no Kaggle
credentials.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
TEST_CONFIG = "workflow/config/test.yaml"

pytestmark = pytest.mark.slow

if shutil.which("snakemake") is None and subprocess.run([*SNAKEMAKE, "--version"], capture_output=True).returncode:
    pytest.skip("snakemake is not installed (pip install -e '.[workflow]')", allow_module_level=True)


def copy_workflow(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "Snakefile", dest / "Snakefile")
    shutil.copytree(ROOT / "workflow", dest / "workflow", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


OFFLINE = '''"""Test harness (tests/test_workflow.py): this machine is offline for every Python process."""
import socket


def _offline(*args, **kwargs):
    raise OSError(101, "Network is unreachable (tests/test_workflow.py blocks the network)")


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


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny profile run end to end once: every table and figure from real (tiny) runs."""
    wd = copy_workflow(tmp_path_factory.mktemp("tiny"))
    res = snakemake(wd, "--cores", "2", "--configfile", TEST_CONFIG)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    (wd / "console.txt").write_text(res.stdout + res.stderr)
    return wd


def clone(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest


# ------------------------------------------------------------------------------------- dry runs
def expected_paper_train_jobs(cfg: dict, skip: tuple[str, ...] = ()) -> int:
    """Training runs of a profile counted straight from its YAML (independently of con2.experiments),
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


def test_paper_dry_run_builds_the_whole_grid(tmp_path: Path) -> None:
    from con2.data import normal_classes
    from con2.experiments import data_targets, expand_grid
    from con2.report.artefacts import FIGURES, TABLES

    wd = copy_workflow(tmp_path)
    res = snakemake(wd, "-n", "--configfile", "workflow/config/paper.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    stats = job_stats(res.stdout + res.stderr)
    cfg = yaml.safe_load((wd / "workflow/config/paper.yaml").read_text())
    assert cfg["strict"] is True  # the paper profile fails on a missing dataset: its DAG is known up front
    runs = expand_grid(cfg, normal_classes)
    n_train = expected_paper_train_jobs(cfg)
    # 70 (dataset, class) x 4 methods x 3 seeds + contexts 420 + loss 36 + k 108 + I-JEPA-AD 18
    # + the fidelity study's 24 more
    assert n_train == 1446 == len(runs)
    studies = [e for exps in cfg["report"]["scopes"].values() for e in exps]
    n_all = expected_paper_train_jobs(cfg, skip=tuple(studies))  # `all` leaves the studies' own runs out
    assert n_all == 1446 - 24
    assert stats["train"] == n_all
    assert stats["prepare_data"] == len(data_targets(runs)) == 11
    report = cfg["report"]
    expected = {
        "evaluate": 1,
        "score_runtime": 1,
        "all": 1,
        **{f"table_{t}": len(a.stems(report)) for t, a in TABLES.items() if t not in report["scopes"]},
        **{f"figure_{f}": len(a.stems(report)) for f, a in FIGURES.items()},
    }
    assert expected["table_per_class"] == expected["figure_per_class"] == len(report["per_class"]) >= 1
    for rule, count in expected.items():
        assert stats[rule] == count, (rule, stats)
    assert sum(stats.values()) == n_all + 11 + sum(expected.values())
    # one resolved config per run, written once; `con2 train` reads it
    assert len(list((wd / "results/configs").rglob("*.yaml"))) == n_train


def test_default_profile_checks_every_dataset_and_restricts_datasets(tmp_path: Path) -> None:
    wd = copy_workflow(tmp_path)
    res = snakemake(wd, "-n", "--config", "data_dir=no_such_dir")
    assert res.returncode == 0, res.stderr[-3000:]
    stats = job_stats(res.stdout + res.stderr)
    # what is on disk, downloadable or skipped is known once prepare_data ran (a checkpoint), not at parse time
    assert stats["prepare_data"] == 3 and stats["data_status"] == 1 and stats["train"] == 0
    assert "checkpoint jobs" in res.stdout + res.stderr
    only = snakemake(wd, "-n", "--config", "data_dir=no_such_dir", "only_datasets=digits")
    assert only.returncode == 0 and job_stats(only.stdout + only.stderr)["prepare_data"] == 1


# ------------------------------------------------------------------------------------- real tiny run
def test_tiny_run_writes_every_table_and_figure(tiny: Path) -> None:
    from con2.records import read_record
    from con2.report.artefacts import figure_targets, table_targets

    cfg = yaml.safe_load((tiny / TEST_CONFIG).read_text())
    for target in table_targets(cfg["report"]) + figure_targets(cfg["report"]):
        assert (tiny / target).stat().st_size > 0, target
    recs = [read_record(tiny / p) for p in records(tiny)]
    assert len(recs) == 6 and {r["method"] for r in recs} == {"con2", "simclr", "csi"}
    assert all(v > 50 for r in recs if r["method"] == "con2" for v in r["metrics"]["auroc"].values())
    per_class_md = (tiny / "results/tables/per_class_digits.md").read_text()
    assert "CON2 (NND)" in per_class_md and re.search(r"\| 0 \| \d+\.\d", per_class_md)
    assert "k = 3" in (tiny / "results/tables/multi_context.md").read_text()
    natural = (tiny / "results/tables/natural_summary.md").read_text()
    assert all(m in natural for m in ("CON2 (NND)", "SimCLR (kNN)", "SimCLR (SSD)", "CSI (CSI)"))
    assert "\\toprule" in (tiny / "results/tables/table1_medical.tex").read_text()
    bench = list((tiny / "results/benchmarks/train").rglob("*.tsv"))
    assert len(bench) == 6
    cost = (tiny / "results/tables/compute_cost.csv").read_text()
    assert "bench_max_rss_mb" in cost and "cpu_share" in cost
    # one resolved config per run, which is what `con2 train` read
    for p in records(tiny):
        key = p.removeprefix("results/runs/").removesuffix("/record.json")
        assert (
            read_record(tiny / p)["config"]["epochs"]
            == yaml.safe_load((tiny / f"results/configs/{key}.yaml").read_text())["epochs"]
        )


def test_console_has_one_line_per_finished_run_and_logs_one_per_epoch(tiny: Path) -> None:
    console = (tiny / "console.txt").read_text()
    finished = re.findall(r"^digits/\d \S+/\S+ seed=\d: AUROC\[\w+\]=\d+\.\d.*$", console, re.M)
    assert len(finished) == len(records(tiny)) == 6, console[-3000:]
    assert "rule train:" not in console and "    wildcards:" not in console  # job blocks are one-line messages
    log = (tiny / "results/logs/train/digits/0/con2/invert/seed0.log").read_text()
    assert "train: 100%" in log and "1/1 [" in log  # the engine's per-epoch progress goes to the job's log


def test_deleting_one_table_rebuilds_only_that_table(tiny: Path, tmp_path: Path) -> None:
    wd = clone(tiny, tmp_path / "wd")
    before = records(wd)
    (wd / "results/tables/nnd_vs_lh.md").unlink()
    res = snakemake(wd, "--cores", "1", "results/tables/nnd_vs_lh.md", "--configfile", TEST_CONFIG)
    assert res.returncode == 0, res.stderr[-3000:]
    assert job_stats(res.stdout + res.stderr) == Counter({"table_nnd_vs_lh": 1})
    assert (wd / "results/tables/nnd_vs_lh.md").is_file()
    assert records(wd) == before
    again = snakemake(wd, "-n", "--configfile", TEST_CONFIG)
    assert job_stats(again.stdout + again.stderr) == Counter() and "Nothing to be done" in again.stdout + again.stderr
    # runtime keys (where the data are, the device, threads, progress) never rerun anything
    moved = snakemake(
        wd,
        "-n",
        "--configfile",
        TEST_CONFIG,
        "--config",
        "data_dir=elsewhere",
        "device=auto",
        "threads=2",
        "progress=false",
    )
    assert "Nothing to be done" in moved.stdout + moved.stderr, moved.stdout[-2000:]


TOY_RULE = """
rule toy:
    input:
        data=data_marker_for("toy"),
    output:
        record="results/runs/{dataset}/{normal_class}/toy/{variant}/seed{seed}/record.json",
    log:
        "results/logs/toy/{dataset}/{normal_class}/{variant}/seed{seed}.log",
    shell:
        "PYTHON -c 'import sys; from pathlib import Path; from con2.records import write_record; "
        "d, c, v, s, out = sys.argv[1:]; write_record(dict(schema_version=1, dataset=d, normal_class=c, "
        "method=\\"toy\\", variant=v, seed=int(s), metrics=dict(auroc=dict(pixels=61.5 + int(s))), "
        "timing=dict(fit_seconds=0.0, score_seconds=0.1, wall_seconds=0.1), n_train=100, n_test=600, "
        "n_anomalous=540, config=dict(), config_hash=\\"toy\\"), Path(out))' "
        "{wildcards.dataset} {wildcards.normal_class} {wildcards.variant} {wildcards.seed} {output.record} > {log} 2>&1"
"""


def test_a_toy_baseline_joins_with_one_rule_and_one_config_line(tiny: Path, tmp_path: Path) -> None:
    wd = clone(tiny, tmp_path / "wd")
    before = records(wd)
    (wd / "workflow/rules/methods/toy.smk").write_text(TOY_RULE.replace("PYTHON", sys.executable))
    cfg_path = wd / TEST_CONFIG
    text = cfg_path.read_text()
    assert text.count("extra_methods: []\n") == 1
    cfg_path.write_text(text.replace("extra_methods: []\n", "extra_methods: [toy]\n"))
    res = snakemake(wd, "--cores", "2", "--configfile", TEST_CONFIG)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    stats = finished(res.stdout + res.stderr)
    assert stats["toy"] == 2 and stats["train"] == 0
    after = records(wd)
    assert {k: v for k, v in after.items() if "/toy/" not in k} == before  # no CON2 run retrained
    assert sum("/toy/" in k for k in after) == 2
    assert "toy" in (wd / "results/tables/natural_summary.md").read_text()
    assert "toy (pixels)" in (wd / "results/tables/per_class_digits.md").read_text()
    assert "toy" in (wd / "results/tables/compute_cost.md").read_text()


def test_lint_is_clean(tiny: Path) -> None:
    for args in (
        ["--configfile", TEST_CONFIG],
        ["--configfile", "workflow/config/paper.yaml"],
        ["--config", "data_dir=x"],
    ):
        res = snakemake(tiny, "--lint", *args)
        assert res.returncode == 0 and "Congratulations" in res.stdout + res.stderr, res.stdout + res.stderr


def test_html_report_has_tables_and_figures(tiny: Path, tmp_path: Path) -> None:
    wd = clone(tiny, tmp_path / "wd")
    res = snakemake(wd, "--report", "results/report.html", "--configfile", TEST_CONFIG)
    assert res.returncode == 0, res.stderr[-3000:]
    html = (wd / "results/report.html").read_text(errors="replace")
    for name in (
        "table1_medical.csv",
        "reproduction.csv",
        "per_class_digits.png",
        "pca_representations.png",
        "score_runtime.png",
    ):
        assert name in html, name


# ------------------------------------------------------------------------------------- failure modes
@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (lambda c: c["run"].update(epoch=3), "epoch"),  # unknown RunConfig key (con2.config)
        (lambda c: c["run"].update(tta=3), "tta"),  # invalid value (con2.config)
        (lambda c: c.update(seed=[0]), "seed"),  # unknown top-level key (JSON schema)
        (lambda c: c.update(device="gpu"), "device"),  # schema pattern
        (lambda c: c["variants"].update(k3={"params": {"n_contexts": 3}, "tta": 4}), "tta"),  # 4 views over 3 contexts
    ],
)
def test_invalid_config_fails_before_any_job_naming_the_key(tmp_path: Path, edit, key: str) -> None:
    wd = copy_workflow(tmp_path)
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    edit(cfg)
    (wd / "bad.yaml").write_text(yaml.safe_dump(cfg))
    res = snakemake(wd, "--cores", "1", "--configfile", "bad.yaml")
    assert res.returncode != 0
    assert f"'{key}'" in res.stderr or f"{key!r}" in res.stderr, res.stderr[-2000:]
    assert not (wd / "results").exists()  # nothing ran


def test_invalid_method_param_fails_before_training(tmp_path: Path) -> None:
    wd = copy_workflow(tmp_path)
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["variants"]["flip"] = {"params": {"contexts": ["flip"], "temprature": 0.1}}
    (wd / "bad.yaml").write_text(yaml.safe_dump(cfg))
    res = snakemake(wd, "--cores", "2", "--configfile", "bad.yaml")
    assert res.returncode != 0
    assert "temprature" in res.stderr and "variant 'flip'" in res.stderr, res.stderr[-2000:]
    assert not (wd / "results").exists()  # no job ran, no config was written


def test_killed_run_resumes_with_the_same_command(tmp_path: Path) -> None:
    wd = copy_workflow(tmp_path)
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["run"].update(epochs=40, width=8, image_size=28)  # ~0.5 s an epoch: time to interrupt
    cfg["datasets"]["digits"]["normal_classes"] = ["0"]
    cfg["experiments"] = {"main": {"datasets": ["digits"], "methods": {"con2": ["invert"]}}}
    (wd / "resume.yaml").write_text(yaml.safe_dump(cfg))
    cmd = [*SNAKEMAKE, "--cores", "1", "runs", "--configfile", "resume.yaml"]
    run_dir = wd / "results/runs/digits/0/con2/invert/seed0"
    proc = subprocess.Popen(
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
    try:
        deadline = time.time() + 240
        while not (run_dir / "checkpoint.pt").exists():
            assert proc.poll() is None and time.time() < deadline, "training never wrote a checkpoint"
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: Snakemake and the trainer stop, the lock is released
        assert proc.wait(timeout=120) != 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (run_dir / "checkpoint.pt").exists() and not (run_dir / "record.json").exists()
    res = subprocess.run(cmd, cwd=wd, capture_output=True, text=True, timeout=600, env=workflow_env(wd))
    assert res.returncode == 0, res.stderr[-3000:]
    assert (run_dir / "record.json").exists()
    record = json.loads((run_dir / "record.json").read_text())
    assert record["resumed_from_epoch"] > 0, "the restarted run started from epoch 0"
    assert record["epochs"] == 40


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


def test_no_record_ever_leaves_the_tables_and_a_grid_change_trains_at_once(tmp_path: Path) -> None:
    """Issue 9, cases 1 and 2: the README's one-table command without the data_dir override, and
    data that the profile cannot see, never drop a finished run; one call after a change trains."""
    from data_fixtures import write_medmnist_npz

    wd = copy_workflow(tmp_path / "wd")
    data = tmp_path / "data"
    write_medmnist_npz(
        data / "medmnist" / "breastmnist.npz", {"train": [30, 70], "val": [2, 2], "test": [20, 25]}
    )  # 70 normals >= batch 64
    datasets = {"digits": {"normal_classes": ["0"]}, "breastmnist": {"run": {"image_size": 28}}}
    main = {"datasets": ["digits", "breastmnist"], "methods": {"con2": ["invert"]}}
    prof = small_profile(wd, datasets, {"main": main})
    full = snakemake(wd, "--cores", "2", "all", "--configfile", prof, "--config", f"data_dir={data}")
    assert full.returncode == 0, full.stderr[-3000:]
    everything = runs_csv_records(wd)
    assert {Path(r).parts[2] for r in everything} == {"digits", "breastmnist"} and all(everything.values())

    # case 1: the README's single-table command, without --config data_dir=... (nothing under ./data, offline)
    (wd / "results/tables/table1_medical.md").unlink()
    one = snakemake(wd, "--cores", "1", "results/tables/table1_medical.md", "--configfile", prof)
    assert one.returncode == 0, one.stderr[-3000:]
    assert job_stats(one.stdout + one.stderr) == Counter({"table_table1_medical": 1})
    assert runs_csv_records(wd) == everything
    assert re.search(
        r"\| CON2 \(NND\) \| ours \| \d+\.\d \[1×1\]", (wd / "results/tables/table1_medical.md").read_text()
    )

    # the data are gone for this profile (markers deleted, nothing under ./data, offline): the runs stay
    shutil.rmtree(wd / "results/data")
    (wd / "results/evaluation/runs.csv").unlink()
    blind = snakemake(wd, "--cores", "2", "all", "--configfile", prof)
    assert blind.returncode == 0, blind.stderr[-3000:]
    assert finished(blind.stdout + blind.stderr)["train"] == 0
    assert runs_csv_records(wd) == everything
    assert "breastmnist (28 px)" in blind.stderr and "SKIPPED" in blind.stderr

    # case 2: a grid change (digits: another epoch count and a second seed), then ONE call trains it
    before = records(wd)
    datasets["digits"]["run"] = {"epochs": 2}
    changed = snakemake(
        wd,
        "--cores",
        "2",
        "all",
        "--configfile",
        small_profile(
            wd,
            datasets,
            {"main": main, "more": {"datasets": ["digits"], "seeds": [1], "methods": {"con2": ["invert"]}}},
        ),
        "--config",
        f"data_dir={data}",
    )
    assert changed.returncode == 0, changed.stderr[-3000:]
    assert finished(changed.stdout + changed.stderr)["train"] == 2
    after = records(wd)
    digits0 = "results/runs/digits/0/con2/invert/seed0/record.json"
    assert after[digits0] > before[digits0] and json.loads((wd / digits0).read_text())["epochs"] == 2
    assert {k: v for k, v in after.items() if "breastmnist" in k} == {
        k: v for k, v in before.items() if "breastmnist" in k
    }
    assert set(runs_csv_records(wd)) == set(after) and len(after) == 3

    # breastmnist leaves the grid: its record is still aggregated, flagged, and reported
    gone = snakemake(
        wd,
        "--cores",
        "1",
        "all",
        "--configfile",
        small_profile(
            wd,
            datasets,
            {
                "main": {**main, "datasets": ["digits"]},
                "more": {"datasets": ["digits"], "seeds": [1], "methods": {"con2": ["invert"]}},
            },
        ),
        "--config",
        f"data_dir={data}",
    )
    assert gone.returncode == 0, gone.stderr[-3000:]
    flags = runs_csv_records(wd)
    breast = "results/runs/breastmnist/1/con2/invert/seed0/record.json"
    assert set(flags) == set(after) and flags[breast] is False and sum(flags.values()) == 2
    assert f"{breast}: not a run of this profile's grid" in (wd / "results/logs/evaluate.log").read_text()
    assert "1 record(s) outside this profile's grid" in gone.stderr
    assert "outside this profile's grid" in (wd / "results/tables/table1_medical.md").read_text()

    # deleting that run's directory is what drops it: aggregation reruns on its own
    shutil.rmtree(wd / "results/runs/breastmnist")
    dropped = snakemake(wd, "--cores", "1", "all", "--configfile", "small.yaml", "--config", f"data_dir={data}")
    assert dropped.returncode == 0, dropped.stderr[-3000:]
    assert finished(dropped.stdout + dropped.stderr)["evaluate"] == 1
    assert set(runs_csv_records(wd)) == set(after) - {breast}


def test_offline_without_data_ends_with_the_skipped_data_summary(tmp_path: Path) -> None:
    wd = copy_workflow(tmp_path / "wd")
    empty = tmp_path / "data"
    empty.mkdir()
    datasets = {
        "digits": {"normal_classes": ["0"]},
        "breastmnist": {"run": {"image_size": 28}},
        "pneumonia": {"run": {"image_size": 28}},
    }
    prof = small_profile(
        wd, datasets, {"main": {"datasets": list(datasets), "methods": {"con2": ["invert"]}}}, download=True
    )
    res = snakemake(wd, "--cores", "2", "all", "--configfile", prof, "--config", f"data_dir={empty}")
    assert res.returncode == 0, res.stderr[-3000:]
    tail = [ln for ln in res.stderr.splitlines() if ln.strip()][-9:]
    text = "\n".join(tail)
    assert tail[-1].startswith("-----") and "2 dataset(s) SKIPPED" in text, text
    assert f"fix: con2 data get breastmnist --data-dir {empty} --size 28" in text
    assert f"fix: con2 data get pneumonia --data-dir {empty} --size 28" in text
    assert "no network" in text.lower() and "credentials" in text.lower()
    assert [Path(p).parts[2] for p in records(wd)] == ["digits"]  # the rest ran
    assert (wd / "results/tables/table1_medical.md").is_file()
    assert not list(empty.rglob("*.npz")) and not any(p.name.startswith(".") for p in empty.rglob("*"))

    strict = snakemake(wd, "--cores", "2", "all", "--configfile", prof, "--config", f"data_dir={empty}", "strict=true")
    assert strict.returncode != 0
    assert re.search(r"dataset (breastmnist|pneumonia) is unavailable and strict=true", strict.stderr), strict.stderr[
        -3000:
    ]
    assert "UNAVAILABLE with strict=true" in strict.stderr


def test_sigkill_during_table_aggregation_then_the_same_command_completes(tiny: Path, tmp_path: Path) -> None:
    """Issue 10's fault injection: Snakemake (and its job) killed with SIGKILL while the tables are
    being built; the same command (after --unlock) finishes with outputs identical to an
    uninterrupted run's."""
    import base64

    wd = clone(tiny, tmp_path / "wd")
    outputs = sorted(
        p.relative_to(tiny)
        for d in ("results/tables", "results/figures", "results/evaluation")
        for p in (tiny / d).iterdir()
    )
    shutil.rmtree(wd / "results/tables")
    (wd / "results/evaluation/runs.csv").unlink()
    cmd = [*SNAKEMAKE, "--cores", "1", "all", "--configfile", TEST_CONFIG]
    proc = subprocess.Popen(
        cmd, cwd=wd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=workflow_env(wd)
    )

    def building_a_table() -> bool:
        inc = wd / ".snakemake" / "incomplete"
        names = [base64.b64decode(p.name).decode(errors="replace") for p in inc.iterdir()] if inc.is_dir() else []
        return any(n.startswith("results/tables/") for n in names)

    try:
        deadline = time.time() + 300
        while not building_a_table():
            assert proc.poll() is None and time.time() < deadline, "no table job started"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    res = snakemake(wd, *cmd[3:])
    if res.returncode and "LockException" in res.stderr:
        assert snakemake(wd, "--unlock", "--configfile", TEST_CONFIG).returncode == 0
        res = snakemake(wd, *cmd[3:])
    assert res.returncode == 0, res.stderr[-3000:]
    assert finished(res.stdout + res.stderr)["train"] == 0
    for rel in outputs:
        assert (wd / rel).read_bytes() == (tiny / rel).read_bytes(), rel
