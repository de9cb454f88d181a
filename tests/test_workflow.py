"""The Snakemake workflow, through its command line (the Python API shifts between versions).

Every test works in a temporary copy of the workflow (Snakefile + workflow/), so results and
.snakemake/ never land in the repository. The tiny profile (workflow/config/test.yaml: digits,
16 px, width 4, one epoch) runs once per session; tests that change things copy its directory.
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


def snakemake(cwd: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
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


def records(root: Path) -> dict[str, float]:
    """record.json path -> mtime."""
    return {str(p.relative_to(root)): p.stat().st_mtime for p in (root / "results" / "runs").rglob("record.json")}


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny profile run end to end once: every table and figure from real (tiny) runs."""
    wd = copy_workflow(tmp_path_factory.mktemp("tiny"))
    res = snakemake(wd, "--cores", "2", "--configfile", TEST_CONFIG)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    return wd


def clone(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest


# ------------------------------------------------------------------------------------- dry runs
def expected_paper_train_jobs(cfg: dict) -> int:
    """Training runs of a profile counted straight from its YAML (independently of con2.report.grid)."""
    from con2.data import normal_classes

    cells = set()
    for exp in cfg["experiments"].values():
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
    from con2.report.artefacts import TABLES
    from con2.report.grid import data_targets, expand_grid
    from con2.data import normal_classes

    wd = copy_workflow(tmp_path)
    res = snakemake(wd, "-n", "--configfile", "workflow/config/paper.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    stats = job_stats(res.stdout + res.stderr)
    cfg = yaml.safe_load((wd / "workflow/config/paper.yaml").read_text())
    runs = expand_grid(cfg, normal_classes)
    n_train = expected_paper_train_jobs(cfg)
    assert n_train == 1194  # 70 (dataset, class) x 3 methods x 3 seeds + contexts 420 + loss 36 + k 108
    assert stats["train"] == n_train == len(runs)
    assert stats["prepare_data"] == len(data_targets(runs)) == 11
    per_class = len(cfg["report"]["per_class"])
    expected = {
        "check_runs": 1, "evaluate": 1, "score_runtime": 1, "score_runtime_table": 1, "score_runtime_figure": 1,
        "per_class_table": per_class, "per_class_figure": per_class, "silhouette_figure": 1, "pca_figure": 1, "all": 1,
        **{f"table_{t}": 1 for t in TABLES if t != "score_runtime"},
    }  # fmt: skip
    for rule, count in expected.items():
        assert stats[rule] == count, (rule, stats)
    assert sum(stats.values()) == n_train + 11 + sum(expected.values())


def test_default_profile_skips_missing_data_and_restricts_datasets(tmp_path: Path) -> None:
    wd = copy_workflow(tmp_path)
    res = snakemake(wd, "-n", "--config", "data_dir=no_such_dir")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "skipping datasets not found" in res.stderr and "breastmnist" in res.stderr
    only = snakemake(wd, "-n", "--config", "data_dir=no_such_dir", "only_datasets=digits")
    assert only.returncode == 0 and "skipping" not in only.stderr
    assert job_stats(only.stdout + only.stderr)["train"] == job_stats(res.stdout + res.stderr)["train"] > 0  # digits only either way


# ------------------------------------------------------------------------------------- real tiny run
def test_tiny_run_writes_every_table_and_figure(tiny: Path) -> None:
    from con2.records import read_record
    from con2.report.artefacts import figure_targets, table_targets

    cfg = yaml.safe_load((tiny / TEST_CONFIG).read_text())
    per_class = cfg["report"]["per_class"]
    for target in table_targets(per_class) + figure_targets(per_class):
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
    assert "bench_max_rss_mb" in cost


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
    stats = job_stats(res.stdout + res.stderr)
    assert stats["toy"] == 2 and stats["train"] == 0 and stats["check_runs"] == 0
    after = records(wd)
    assert {k: v for k, v in after.items() if "/toy/" not in k} == before  # no CON2 run retrained
    assert sum("/toy/" in k for k in after) == 2
    assert "toy" in (wd / "results/tables/natural_summary.md").read_text()
    assert "toy (pixels)" in (wd / "results/tables/per_class_digits.md").read_text()
    assert "toy" in (wd / "results/tables/compute_cost.md").read_text()


def test_lint_is_clean(tiny: Path) -> None:
    for args in (["--configfile", TEST_CONFIG], ["--configfile", "workflow/config/paper.yaml"], ["--config", "data_dir=x"]):
        res = snakemake(tiny, "--lint", *args)
        assert res.returncode == 0 and "Congratulations" in res.stdout + res.stderr, res.stdout + res.stderr


def test_html_report_has_tables_and_figures(tiny: Path, tmp_path: Path) -> None:
    wd = clone(tiny, tmp_path / "wd")
    res = snakemake(wd, "--report", "results/report.html", "--configfile", TEST_CONFIG)
    assert res.returncode == 0, res.stderr[-3000:]
    html = (wd / "results/report.html").read_text(errors="replace")
    for name in ("table1_medical.csv", "reproduction.csv", "per_class_digits.png", "pca_representations.png", "score_runtime.png"):
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
    log = (wd / "results/logs/check_runs.log").read_text()
    assert "temprature" in log
    assert not list((wd / "results").rglob("record.json"))
    assert not (wd / "results/runs").exists() or not list((wd / "results/runs").rglob("checkpoint.pt"))


def test_killed_run_resumes_with_the_same_command(tmp_path: Path) -> None:
    wd = copy_workflow(tmp_path)
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["run"].update(epochs=40, width=8, image_size=28, progress=True)  # ~0.5 s an epoch: time to interrupt
    cfg["datasets"]["digits"]["normal_classes"] = ["0"]
    cfg["experiments"] = {"main": {"datasets": ["digits"], "methods": {"con2": ["invert"]}}}
    (wd / "resume.yaml").write_text(yaml.safe_dump(cfg))
    cmd = [*SNAKEMAKE, "--cores", "1", "runs", "--configfile", "resume.yaml"]
    run_dir = wd / "results/runs/digits/0/con2/invert/seed0"
    proc = subprocess.Popen(
        cmd, cwd=wd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
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
    res = subprocess.run(cmd, cwd=wd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (run_dir / "record.json").exists()
    record = json.loads((run_dir / "record.json").read_text())
    assert record["resumed_from_epoch"] > 0, "the restarted run started from epoch 0"
    assert record["epochs"] == 40
