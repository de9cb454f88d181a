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
import shlex
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
    for folder in ("workflow", "profiles"):  # profiles/default: the workflow profile Snakemake loads by itself
        shutil.copytree(ROOT / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__"))
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


def test_paper_dry_run_builds_the_whole_grid(tmp_path: Path) -> None:
    from con2.data import normal_classes
    from con2.grid.experiments import data_targets, expand_grid
    from con2.report.artefacts import FIGURES, TABLES

    wd = copy_workflow(tmp_path)
    res = snakemake(wd, "-n", "--configfile", "workflow/config/paper.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    stats = job_stats(res.stdout + res.stderr)
    cfg = yaml.safe_load((wd / "workflow/config/paper.yaml").read_text())
    assert cfg["strict"] is True  # the paper profile fails on a missing dataset: its DAG is known up front
    runs = expand_grid(cfg, normal_classes)
    n_train = expected_paper_train_jobs(cfg)
    # 70 (dataset, class) x 4 methods x 3 seeds + contexts 630 (flip, equalize, best) + loss 36 + k 108 + I-JEPA-AD 18
    # + the fidelity study's 39 more
    assert n_train == 1671 == len(runs)
    studies = [e for exps in cfg["report"]["scopes"].values() for e in exps]
    n_all = expected_paper_train_jobs(cfg, skip=tuple(studies))  # `all` leaves the studies' own runs out
    assert n_all == 1671 - 39
    assert stats["train"] == n_all
    assert stats["prepare_data"] == len(data_targets(runs)) == 11
    report = cfg["report"]
    expected = {
        "evaluate": 1,
        "score_runtime": 1,
        "all": 1,
        "data_status": 1,  # results/data/status.json: the tables that say why a dataset has no runs read it
        **{f"table_{t}": len(a.stems(report)) for t, a in TABLES.items() if t not in report["scopes"]},
        **{f"figure_{f}": len(a.stems(report)) for f, a in FIGURES.items()},
    }
    assert expected["table_per_class"] == expected["figure_per_class"] == len(report["per_class"]) >= 1
    for rule, count in expected.items():
        assert stats[rule] == count, (rule, stats)
    assert stats["run_config"] == n_all  # one resolved config per run, written by its own job
    assert sum(stats.values()) == 2 * n_all + 11 + sum(expected.values())
    assert not (wd / "results").exists()  # a dry run writes nothing


def test_default_profile_checks_every_dataset_and_restricts_datasets(tmp_path: Path) -> None:
    wd = copy_workflow(tmp_path)
    res = snakemake(wd, "-n", "--config", "data_dir=no_such_dir")
    assert res.returncode == 0, res.stderr[-3000:]
    stats = job_stats(res.stdout + res.stderr)
    # what is on disk, downloadable or skipped is known once prepare_data ran (a checkpoint), not at parse time;
    # breastmnist at 28 and 64 px (the native-resolution study's file), pneumoniamnist and digits
    assert stats["prepare_data"] == 4 and stats["data_status"] == 1 and stats["train"] == 0
    assert "checkpoint jobs" in res.stdout + res.stderr
    only = snakemake(wd, "-n", "--config", "data_dir=no_such_dir", "only_datasets=digits")
    assert only.returncode == 0 and job_stats(only.stdout + only.stderr)["prepare_data"] == 1


# ------------------------------------------------------------------------------------- real tiny run
def test_tiny_run_writes_every_table_and_figure(tiny: Path) -> None:
    from con2.report.artefacts import figure_targets, table_targets
    from con2.run.records import read_record

    cfg = yaml.safe_load((tiny / TEST_CONFIG).read_text())
    for target in table_targets(cfg["report"]) + figure_targets(cfg["report"]):
        assert (tiny / target).stat().st_size > 0, target
    recs = [read_record(tiny / p) for p in records(tiny)]
    assert len(recs) == 7 and {r["method"] for r in recs} == {"con2", "simclr", "csi"}
    # CON2 (Best): the config keeps the marker, the record says which context it chose (issue 26)
    best = [r for r in recs if r["variant"] == "best"]
    assert len(best) == 1 and best[0]["config"]["params"]["contexts"] == ["best"]
    assert best[0]["metrics"]["chosen_context"] in ("invert", "flip", "equalize")
    assert best[0]["metrics"]["context_choice"]["context"] == best[0]["metrics"]["chosen_context"]
    # No threshold on a reading: a 1-epoch digits run scores differently in bf16 (CPUs with AMX or
    # AVX512-BF16, `amp`) and in fp32 (the rest), and `nnd@encoder/original` falls below chance on
    # some (README). What holds on every CPU: every reading the record declares is there, finite,
    # in [0, 100], and the record says which precision the run trained in (this is the amp part).
    from con2.training.engine import cpu_has_native_bf16

    precision = "bfloat16-autocast" if cpu_has_native_bf16() else "float32"
    for r in recs:
        aurocs = r["metrics"]["auroc"]
        assert set(aurocs) == set(r["scoring"]["columns"]), (set(aurocs), r["scoring"])
        assert all(0 <= v <= 100 for v in aurocs.values()), aurocs
        assert r["precision"] == precision, (r["precision"], precision)
    per_class_md = (tiny / "results/tables/per_class_digits.md").read_text()
    assert "CON2 (NND)" in per_class_md and re.search(r"\| 0 \| \d+\.\d", per_class_md)
    assert "k = 3" in (tiny / "results/tables/multi_context.md").read_text()
    natural = (tiny / "results/tables/natural_summary.md").read_text()
    assert all(m in natural for m in ("CON2 (NND)", "CON2 (Best) (NND)", "SimCLR (kNN)", "SimCLR (SSD)", "CSI (CSI)"))
    assert "CON2 (Best) (NND)" in per_class_md
    assert "\\toprule" in (tiny / "results/tables/table1_medical.tex").read_text()
    # issue 26: each run's DeLong interval, and the paired comparisons read every run's scores.csv
    assert all(set(r["metrics"]["auroc_ci"]) == set(r["metrics"]["auroc"]) for r in recs)
    import pandas as pd

    compared = pd.read_csv(tiny / "results/tables/comparisons_digits.csv", keep_default_na=False)
    assert len(compared) and (compared["reason"] == "").all() and (compared["reference"] == "con2/nnd").all()
    bench = list((tiny / "results/benchmarks/train").rglob("*.tsv"))
    assert len(bench) == 7
    cost = (tiny / "results/tables/compute_cost.csv").read_text()
    assert "bench_max_rss_mb" in cost and "cpu_share" in cost
    # one resolved config per run, named by its hash, which is what `con2 train` read
    for p in records(tiny):
        key = p.removeprefix("results/runs/").removesuffix("/record.json")
        record = read_record(tiny / p)
        config_file = tiny / f"results/configs/{key}.{record['config_hash']}.yaml"
        assert record["config"]["epochs"] == yaml.safe_load(config_file.read_text())["epochs"]


def test_console_has_one_line_per_finished_run_and_logs_one_per_epoch(tiny: Path) -> None:
    console = (tiny / "console.txt").read_text()
    finished = re.findall(r"^digits/\d \S+/\S+ seed=\d: AUROC\[\w+\]=\d+\.\d.*$", console, re.M)
    assert len(finished) == len(records(tiny)) == 7, console[-3000:]
    assert "rule train:" not in console and "    wildcards:" not in console  # job blocks are one-line messages
    log_file = "results/logs/train/digits/0/con2/invert/seed0.log"
    log = (tiny / log_file).read_text()
    # the job's log (not a terminal) gets one line per epoch with its ETA, no carriage-return bar
    assert re.search(r"^epoch 1/1  loss=\S+.*  \d+ img/s  ETA \d+s$", log, re.M) and "\r" not in log, log
    # and the console the first epoch's line of each run, with its ETA and where its log is
    started = re.findall(r"^digits/\d \S+/\S+ seed=\d: epoch 1/1 .* ETA \d+s \(log: (\S+)\)$", console, re.M)
    assert len(started) == 7 and log_file in started, console[-3000:]


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
        "PYTHON -c 'import sys; from pathlib import Path; from con2.run.records import write_record; "
        "d, c, v, s, out = sys.argv[1:]; write_record(dict(schema_version=1, dataset=d, normal_class=c, "
        "method=\\"toy\\", variant=v, seed=int(s), metrics=dict(auroc=dict(pixels=61.5 + int(s))), "
        "timing=dict(fit_seconds=0.0, score_seconds=0.1, wall_seconds=0.1), n_train=100, n_test=600, "
        "n_anomalous=540, config=dict(), config_hash=\\"toy\\"), Path(out))' "
        "{wildcards.dataset:q} {wildcards.normal_class:q} {wildcards.variant:q} {wildcards.seed:q} {output.record:q} "
        "> {log:q} 2>&1"
"""


def test_a_toy_baseline_joins_with_one_rule_and_one_config_line(tiny: Path, tmp_path: Path) -> None:
    wd = clone(tiny, tmp_path / "wd")
    before = records(wd)
    (wd / "workflow/rules/methods/toy.smk").write_text(TOY_RULE.replace("PYTHON", shlex.quote(sys.executable)))
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
    import base64
    import html as html_lib

    wd = clone(tiny, tmp_path / "wd")
    res = snakemake(wd, "--report", "results/report.html", "--configfile", TEST_CONFIG)
    assert res.returncode == 0, res.stderr[-3000:]
    html = (wd / "results/report.html").read_text(errors="replace")
    # the report's files: {path: {..., "mime_type", "data_uri"}} (self-contained: base64 data URIs)
    start = html.index("var results = ", html.index('<script id="results">')) + len("var results = ")
    results, _ = json.JSONDecoder().raw_decode(html, start)
    embedded = {Path(p).name: r for p, r in results.items()}
    for name in ("per_class_digits.png", "pca_representations.png", "score_runtime.png"):
        assert embedded[name]["mime_type"] == "image/png", name
    # every table as rendered: its HTML page (rounded cells and the Markdown's notes), not its CSV
    assert not [n for n in embedded if n.startswith(("table1_medical", "reproduction")) and n.endswith(".csv")]
    for name in ("table1_medical", "reproduction", "per_class_digits", "natural_summary"):
        entry = embedded[f"{name}.html"]
        assert entry["mime_type"] == "text/html", name
        page = base64.b64decode(entry["data_uri"].split("base64,", 1)[1]).decode("utf-8")
        assert page == (wd / f"results/tables/{name}.html").read_text(encoding="utf-8"), name
        text = html_lib.unescape(re.sub(r"<[^>]+>", "", page))
        for note in Path(wd / f"results/tables/{name}.md").read_text().splitlines():
            if note.startswith("- "):  # each Markdown note (and list line of the lead) is in the page
                assert note[2:].replace("**", "").replace("`", "") in text, (name, note)
    natural = base64.b64decode(embedded["natural_summary.html"]["data_uri"].split("base64,", 1)[1]).decode()
    assert "Budget of ours: 1 epochs at 16 px" in natural and re.search(
        r"<td class=num>\d+\.\d( ± \d+\.\d)? \[", natural
    )
    assert not re.search(r"\d+\.\d{5,}", natural)  # no unrounded number (the CSV's 57.87385129490392)


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


def test_killed_run_resumes_with_the_same_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C right after the checkpoint of epoch 1 (a fault point, con2.faults: no race with the
    clock) stops Snakemake and the trainer, leaving that checkpoint and no record; the same command
    resumes from it."""
    wd = copy_workflow(tmp_path)
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["run"].update(epochs=3, width=8)
    cfg.update(checkpoint_every=1, checkpoint_seconds=0)  # a checkpoint every epoch, however fast
    cfg["datasets"]["digits"]["normal_classes"] = ["0"]
    cfg["experiments"] = {"main": {"datasets": ["digits"], "methods": {"con2": ["invert"]}}}
    (wd / "resume.yaml").write_text(yaml.safe_dump(cfg))
    cmd = [*SNAKEMAKE, "--cores", "1", "runs", "--configfile", "resume.yaml"]
    run_dir = wd / "results/runs/digits/0/con2/invert/seed0"
    with monkeypatch.context() as m:  # the interrupted command's environment only (Snakemake passes it on)
        m.setenv("CON2_FAULT", "after_checkpoint:epoch=1:signal=SIGINT")  # Ctrl-C to the process group
        proc = start(wd, cmd)
    try:
        assert proc.wait(timeout=600) != 0  # Snakemake and the trainer stop, the lock is released
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (run_dir / "checkpoint.pt").exists() and not (run_dir / "record.json").exists()
    res = subprocess.run(cmd, cwd=wd, capture_output=True, text=True, timeout=600, env=workflow_env(wd))
    assert res.returncode == 0, res.stderr[-3000:]
    assert (run_dir / "record.json").exists()
    record = json.loads((run_dir / "record.json").read_text())
    assert record["resumed_from_epoch"] == 1, "the restarted run did not start from the checkpoint of epoch 1"
    assert record["epochs"] == 3


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
    # a data_dir with `..` in it (issue 19: paths were printed as /x/wd/../data/...)
    res = snakemake(wd, "--cores", "2", "all", "--configfile", prof, "--config", "data_dir=../wd/../data")
    assert res.returncode == 0, res.stderr[-3000:]
    tail = [ln for ln in res.stderr.splitlines() if ln.strip()][-10:]
    text = "\n".join(tail)
    assert tail[-1].startswith("-----") and "2 dataset(s) SKIPPED" in text, text
    assert "fix: con2 data get breastmnist --data-dir ../data --size 28" in text
    assert "fix: con2 data get pneumonia --data-dir ../data --size 28" in text
    assert "data already on disk elsewhere: add `--config data_dir=DIR` (or `export CON2_DATA_DIR=DIR`)" in text
    assert "no network" in text.lower() and "credentials" in text.lower()
    assert str(empty) in text and "/../" not in text, text  # every path normalised (the data layer's too)
    markers = [p.read_text() for p in (wd / "results/data").rglob("*px.json")]
    assert len(markers) == 3 and not any("/../" in m for m in markers), markers
    assert [Path(p).parts[2] for p in records(wd)] == ["digits"]  # the rest ran
    table1 = (wd / "results/tables/table1_medical.md").read_text()
    # Table 1 says which columns are skipped for missing data (why, the fix) and which are not in the profile
    fixes = (wd / "results/tables/missing.md").read_text()  # the long fixes: one file, which every short line names
    for name, label in (("breastmnist", "BreastMNIST"), ("pneumonia", "Pneumonia")):
        assert f"- {label}: skipped, its data are missing (how to get them: results/tables/missing.md).\n" in table1
        assert f"| {label}: its data (28 px) | skipped: " in fixes, fixes
        assert f"`con2 data get {name} --data-dir ../data --size 28`, or for data already on disk" in fixes
    assert "con2 data get" not in table1 and "in one file: results/tables/missing.md" in text
    assert "- Not in this profile: OctMNIST, Kvasir, BR35H, Melanoma (" in table1 and "Not run in" not in table1
    assert not list(empty.rglob("*.npz")) and not any(p.name.startswith(".") for p in empty.rglob("*"))

    strict = snakemake(wd, "--cores", "2", "all", "--configfile", prof, "--config", f"data_dir={empty}", "strict=true")
    assert strict.returncode != 0
    assert re.search(r"dataset (breastmnist|pneumonia) is unavailable and strict=true", strict.stderr), strict.stderr[
        -3000:
    ]
    assert "UNAVAILABLE with strict=true" in strict.stderr


def test_sigkill_during_table_aggregation_then_the_same_command_completes(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10's fault injection: Snakemake (and its job) killed with SIGKILL while the tables are
    being built (a fault point in the table job, con2.faults: no race with the clock); the same
    command (after --unlock) finishes with outputs identical to an uninterrupted run's."""
    wd = clone(tiny, tmp_path / "wd")
    outputs = sorted(
        p.relative_to(tiny)
        for d in ("results/tables", "results/figures", "results/evaluation")
        for p in (tiny / d).iterdir()
    )
    shutil.rmtree(wd / "results/tables")
    (wd / "results/evaluation/runs.csv").unlink()
    cmd = [*SNAKEMAKE, "--cores", "1", "all", "--configfile", TEST_CONFIG]
    with monkeypatch.context() as m:  # the killed command's environment only (Snakemake passes it on)
        m.setenv("CON2_FAULT", "table_build:signal=SIGKILL")  # the first table job kills its process group
        proc = start(wd, cmd)
    try:
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL, "Snakemake was not killed in a table job"
    assert any(n.startswith("results/tables/") for n in incomplete_outputs(wd)), incomplete_outputs(wd)
    res = snakemake(wd, *cmd[3:])
    if res.returncode and "LockException" in res.stderr:
        assert snakemake(wd, "--unlock", "--configfile", TEST_CONFIG).returncode == 0
        res = snakemake(wd, *cmd[3:])
    assert res.returncode == 0, res.stderr[-3000:]
    assert finished(res.stdout + res.stderr)["train"] == 0
    for rel in outputs:
        assert (wd / rel).read_bytes() == (tiny / rel).read_bytes(), rel


# ------------------------------------------------------------------------------------- issue 16
def tree(root: Path, skip: tuple[str, ...] = ()) -> dict[str, int]:
    """Every file below ``root`` (relative path -> size), but those below the folders in ``skip``."""
    return {
        str(p.relative_to(root)): p.stat().st_size
        for p in root.rglob("*")
        if p.is_file() and not any(part in skip for part in p.relative_to(root).parts)
    }


@pytest.mark.parametrize("hostile", ["0||touch PWNED;#", "../../../../outside/TRAVERSAL"])
def test_hostile_profile_values_stop_before_any_job_and_write_nothing(tmp_path: Path, hostile: str) -> None:
    """Issue 16, cases 1-2: a normal class that is a shell command or a path out of the working
    directory stops `snakemake -n` (and a real run) before any job, naming the key and the rule;
    no file appears, in the working directory or above it (Snakemake's own .snakemake/ aside)."""
    wd = copy_workflow(tmp_path / "a" / "b" / "wd")
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["datasets"]["digits"]["normal_classes"] = [hostile]
    (wd / "hostile.yaml").write_text(yaml.safe_dump(cfg))
    before = tree(tmp_path, skip=(".snakemake", ".offline", ".home"))
    for args in (["-n"], ["--cores", "1"]):
        res = snakemake(wd, *args, "--configfile", "hostile.yaml")
        out = res.stdout + res.stderr
        assert res.returncode == 1, out[-2000:]
        assert f"{hostile!r} does not match '^[A-Za-z0-9][A-Za-z0-9_+-]{{0,99}}$'" in out, out[-2000:]
        assert "On instance['datasets']['digits']['normal_classes'][0]" in out
        assert "Job stats" not in out
        assert tree(tmp_path, skip=(".snakemake", ".offline", ".home")) == before
    assert not list(tmp_path.rglob("PWNED")) and not list(tmp_path.rglob("TRAVERSAL"))


def test_the_baseline_example_quotes_what_it_passes_to_the_shell(tmp_path: Path) -> None:
    """Issue 16, case 1: `--config 'data_dir=/x;touch PWNED;#'` reaches pixel_nn.smk's shell
    command as one quoted argument, shown so by `-n -p` and never run as a command."""
    wd = tmp_path / "wd"
    wd.mkdir()
    target = "results/runs/digits/0/pixel_nn/default/seed0/record.json"
    smk = ["-s", str(ROOT / "baselines/examples/pixel_nn.smk"), "--config", "data_dir=/x;touch PWNED;#"]
    dry = snakemake(wd, "-n", "-p", *smk, "--", target)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "--data-dir '/x;touch PWNED;#' --dataset digits" in dry.stdout + dry.stderr
    real = snakemake(wd, "--cores", "1", *smk, "--", target)
    assert not list(tmp_path.rglob("PWNED")), real.stdout[-2000:] + real.stderr[-2000:]
    for rule_file in [ROOT / "baselines/examples/pixel_nn.smk", *(ROOT / "workflow/rules").glob("*.smk")]:
        text = rule_file.read_text()
        shells = re.findall(r"shell:\n((?:\s+\"[^\n]*\"\n)+)", text)
        for field in re.findall(r"\{((?:input|output|log|params|wildcards)[^}]*)\}", "".join(shells)):
            assert field.endswith(":q"), (rule_file.name, field)


def two_profiles(wd: Path) -> tuple[str, str]:
    """Two profiles of the same two runs (digits 0 and 1, CON2 invert), one with 1 epoch, one with 2."""
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["experiments"] = {"main": {"datasets": ["digits"], "methods": {"con2": ["invert"]}}}
    cfg["run"].update(epochs=1)
    (wd / "one.yaml").write_text(yaml.safe_dump(cfg))
    cfg["run"].update(epochs=2)
    (wd / "two.yaml").write_text(yaml.safe_dump(cfg))
    return "one.yaml", "two.yaml"


def test_a_second_invocation_never_changes_the_runs_of_the_first(tmp_path: Path) -> None:
    """Issue 16, case 4: a second `snakemake` in the same directory, started while the first holds
    its lock, is refused before it writes anything (it used to rewrite every results/configs file
    first, and the first invocation then trained its runs with the second's settings)."""
    wd = copy_workflow(tmp_path / "wd")
    one, two = two_profiles(wd)
    first = subprocess.Popen(
        [*SNAKEMAKE, "--cores", "1", "runs", "--configfile", one],
        cwd=wd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=workflow_env(wd),
    )
    try:
        deadline = time.time() + 240
        locks = wd / ".snakemake" / "locks"
        while not (locks.is_dir() and any(locks.iterdir())):  # the first holds its lock: jobs start now
            assert first.poll() is None and time.time() < deadline, "the first invocation never locked"
            time.sleep(0.05)
        configs_before = tree(wd / "results" / "configs") if (wd / "results" / "configs").is_dir() else {}
        second = snakemake(wd, "--cores", "1", "runs", "--configfile", two)
        out, _ = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode != 0 and "LockException" in second.stderr, second.stderr[-2000:]
    after = tree(wd / "results" / "configs")
    assert set(configs_before) <= set(after) and all(".yaml" in k for k in after)
    assert first.returncode == 0, out[-3000:]
    recs = {p: json.loads((wd / p).read_text()) for p in records(wd)}
    assert len(recs) == 2 and all(r["epochs"] == 1 and r["config"]["epochs"] == 1 for r in recs.values()), recs
    for p, r in recs.items():  # each record's config is its profile's: the file its hash names holds it
        key = p.removeprefix("results/runs/").removesuffix("/record.json")
        assert yaml.safe_load((wd / f"results/configs/{key}.{r['config_hash']}.yaml").read_text())["epochs"] == 1
    # the other profile, once the first is done: its own settings retrain both runs
    res = snakemake(wd, "--cores", "2", "runs", "--configfile", two)
    assert res.returncode == 0, res.stderr[-3000:]
    assert {json.loads((wd / p).read_text())["epochs"] for p in records(wd)} == {2}


def test_sigint_during_the_tables_then_the_same_command_finishes(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 16, case 8: Ctrl-C while a table is half-written (its CSV on disk, its job not yet
    finished; a fault point, con2.faults: no race with the clock) used to make the same command stop
    with IncompleteFilesException; the workflow profile Snakemake loads by itself (profiles/default:
    rerun-incomplete) lets it finish, with the tables of an uninterrupted run."""
    wd = clone(tiny, tmp_path / "wd")
    shutil.rmtree(wd / "results/tables")
    cmd = [*SNAKEMAKE, "--cores", "1", "all", "--configfile", TEST_CONFIG]
    with monkeypatch.context() as m:  # the interrupted command's environment only (Snakemake passes it on)
        m.setenv("CON2_FAULT", "table_csv_written:signal=SIGINT")  # Ctrl-C with the first table's CSV written
        proc = start(wd, cmd)
    try:
        assert proc.wait(timeout=600) != 0
        half = [n for n in incomplete_outputs(wd) if n.startswith("results/tables/")]
        assert any(n.endswith(".csv") and (wd / n).is_file() for n in half), half  # the CSV on disk
        assert any(n.endswith(".md") and not (wd / n).exists() for n in half), half  # the rest not yet
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    res = snakemake(wd, *cmd[3:])
    assert res.returncode == 0, res.stderr[-3000:]
    assert "IncompleteFilesException" not in res.stderr
    assert finished(res.stdout + res.stderr)["train"] == 0
    for table in (tiny / "results/tables").iterdir():
        assert (wd / "results/tables" / table.name).read_bytes() == table.read_bytes(), table.name


def test_bad_records_are_skipped_and_every_table_still_builds(tiny: Path, tmp_path: Path) -> None:
    """Issue 16, cases 5-7: corrupt, binary, schema-invalid and NaN records, a copied `seed0.bak`
    and a seed folder copied under another seed: aggregation skips each with one line naming the
    file and the fix (log, last lines), keeps runs.csv and summary.csv, and every table builds."""
    wd = clone(tiny, tmp_path / "wd")
    runs = wd / "results/runs/digits"
    good = json.loads((runs / "0/con2/invert/seed0/record.json").read_text())
    bad = {
        "5/con2/invert/seed0": b'{"schema_version": 1, "dat',
        "6/con2/invert/seed0": bytes(range(256)),
        "7/con2/invert/seed0": json.dumps({**good, "normal_class": "7", "n_train": 0}).encode(),
        "8/con2/invert/seed0": json.dumps(
            {**good, "normal_class": "8", "metrics": {**good["metrics"], "auroc": {"nnd": float("nan")}}}
        ).encode(),
    }
    for folder, content in bad.items():
        (runs / folder).mkdir(parents=True)
        (runs / folder / "record.json").write_bytes(content)
    shutil.copytree(runs / "0/con2/invert/seed0", runs / "0/con2/invert/seed0.bak")
    shutil.copytree(runs / "0/con2/invert/seed0", runs / "0/con2/invert/seed3")
    expected = [f"results/runs/digits/{f}/record.json" for f in bad] + [
        "results/runs/digits/0/con2/invert/seed0.bak/record.json",
        "results/runs/digits/0/con2/invert/seed3/record.json",
    ]
    res = snakemake(wd, "--cores", "1", "all", "--configfile", TEST_CONFIG)
    assert res.returncode == 0, res.stderr[-3000:]
    assert finished(res.stdout + res.stderr)["evaluate"] == 1 and finished(res.stdout + res.stderr)["train"] == 0
    log = (wd / "results/logs/evaluate.log").read_text()
    tail = res.stderr[res.stderr.rindex("SKIPPED by the aggregation") :]
    for path in expected:
        line = next(ln for ln in log.splitlines() if ln.startswith(f"skipped {path}: "))
        assert "; fix: " in line, line
        assert f"  {path}: " in tail, tail
    assert "6 record(s) SKIPPED by the aggregation" in res.stderr
    import pandas as pd

    df = pd.read_csv(wd / "results/evaluation/runs.csv", dtype={"normal_class": str})
    assert sorted(df["record"].unique()) == sorted(records(tiny))
    summary = pd.read_csv(wd / "results/evaluation/summary.csv", dtype={"normal_class": str})
    assert set(summary["n"]) == {1}  # the copies are no seeds
    for target in table_targets_of(wd):
        assert (wd / target).is_file(), target
    assert re.search(r"\| 0 \| \d+\.\d \[1×1\]", (wd / "results/tables/per_class_digits.md").read_text())


def table_targets_of(wd: Path) -> list[str]:
    from con2.report.artefacts import figure_targets, table_targets

    report = yaml.safe_load((wd / TEST_CONFIG).read_text())["report"]
    return table_targets(report) + figure_targets(report)


def test_report_settings_rebuild_what_they_shape_and_unknown_names_stop_the_workflow(
    tiny: Path, tmp_path: Path
) -> None:
    """Issue 16, case 9: `report:` settings are params of the artefacts they shape: a new subject
    rebuilds the tables and figures (no run retrains); an unknown subject or dataset in `report:`
    stops before any job, naming the key."""
    wd = clone(tiny, tmp_path / "wd")
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["report"]["subject"] = "simclr"
    (wd / "subject.yaml").write_text(yaml.safe_dump(cfg))
    res = snakemake(wd, "-n", "--configfile", "subject.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    stats = job_stats(res.stdout + res.stderr)
    assert stats["table_nnd_vs_lh"] == 1 and stats["figure_pca_representations"] == 1, stats
    assert stats["train"] == stats["run_config"] == stats["evaluate"] == 0, stats
    assert "params have changed" in (res.stdout + res.stderr).lower() or "Params have changed" in res.stdout
    for key, value, message in (
        ("subject", "con3", "report.subject: 'con3' is not a method of the experiments"),
        ("per_class", ["digitz"], "report.per_class: 'digitz' is not a key of `datasets`"),
        ("pca", ["breastmnist"], "report.pca: 'breastmnist' is not a key of `datasets`"),
    ):
        bad = yaml.safe_load((wd / TEST_CONFIG).read_text())
        bad["report"][key] = value
        (wd / "bad.yaml").write_text(yaml.safe_dump(bad))
        res = snakemake(wd, "-n", "--configfile", "bad.yaml")
        out = res.stdout + res.stderr
        assert res.returncode == 1 and message in out, out[-2000:]
        assert "Job stats" not in out


def test_a_class_the_dataset_lacks_fails_before_any_job_naming_the_key(tmp_path: Path) -> None:
    """Issue 16, case 15: digits has classes 0-9; the console used to show only "Error in rule train"."""
    wd = copy_workflow(tmp_path)
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["datasets"]["digits"]["normal_classes"] = ["0", "11"]
    (wd / "bad.yaml").write_text(yaml.safe_dump(cfg))
    res = snakemake(wd, "--cores", "1", "--configfile", "bad.yaml")
    assert res.returncode == 1
    out = res.stdout + res.stderr
    assert "datasets.digits.normal_classes: digits: unknown normal class '11'; classes: 0, 1, 2" in out, out[-2000:]
    assert not (wd / "results").exists()


# ------------------------------------------------------------------------------------- the README's baseline
def readme_block(after: str, lang: str) -> str:
    """The first fenced ``lang`` block of docs/methods.md (moved there from the README) after ``after``."""
    text = (ROOT / "docs" / "methods.md").read_text()
    start = text.index(after)
    m = re.compile(rf"^```{lang}\n(.*?)^```$", re.M | re.S).search(text, start)
    assert m, f"no ```{lang} block after {after!r} in docs/methods.md"
    return m.group(1)


def test_the_readmes_baseline_rule_and_overlay_run_as_written(tiny: Path, tmp_path: Path) -> None:
    """Issue 19, points 6-8: the README's rule file of way (b) is baselines/examples/pixel_nn.smk,
    and its text, with the README's overlay profile (plus a registered method), adds both methods
    to the grid: a dry run lists their jobs once the data status exists, the real run trains them
    and nothing else, the tables label the rule-based one from its records, and its log is written."""
    rule = readme_block("### (b) An external program wrapped by a Snakemake rule", "python")
    assert rule == (ROOT / "baselines/examples/pixel_nn.smk").read_text()
    overlay = readme_block("`extra_methods` and `extra_rules` are lists", "yaml")
    assert yaml.safe_load(overlay) == {
        "extra_methods": ["pixel_nn"],
        "extra_rules": ["baselines/examples/pixel_nn.smk"],
    }

    wd = clone(tiny, tmp_path / "wd")
    before = records(wd)
    (wd / "baselines/examples").mkdir(parents=True)
    (wd / "baselines/examples/pixel_nn.smk").write_text(rule)  # the README's text, not the file
    shutil.copy2(ROOT / "baselines/examples/pixel_nn.py", wd / "baselines/examples/pixel_nn.py")
    (wd / "my.yaml").write_text(overlay.replace("extra_methods: [pixel_nn]", "extra_methods: [pixel_nn, simclr]"))

    # `--configfile my.yaml` alone extends the default profile (digits: 10 classes, one seed)
    alone = snakemake(wd, "-n", "--configfile", "my.yaml", "--config", "only_datasets=digits", "strict=true")
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert job_stats(alone.stdout + alone.stderr)["pixel_nn"] == 10, alone.stdout[-3000:]

    args = ("--configfile", TEST_CONFIG, "my.yaml")
    dry = snakemake(wd, "-n", *args)  # the data status exists: the new runs are listed up front
    assert dry.returncode == 0, dry.stderr[-3000:]
    stats = job_stats(dry.stdout + dry.stderr)
    assert stats["pixel_nn"] == 2 and stats["train"] == 1, stats  # simclr on digits/1 (digits/0 ran already)

    res = snakemake(wd, "--cores", "2", *args)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert finished(out)["pixel_nn"] == 2 and finished(out)["train"] == 1, finished(out)
    after = records(wd)
    assert {k: v for k, v in after.items() if k in before} == before  # nothing retrained
    assert set(after) - set(before) == {
        "results/runs/digits/0/pixel_nn/default/seed0/record.json",
        "results/runs/digits/1/pixel_nn/default/seed0/record.json",
        "results/runs/digits/1/simclr/default/seed0/record.json",
    }
    assert re.search(r"^AUROC\[nnd\]=\d+\.\d -> results/runs/digits/0/pixel_nn/", out, re.M)  # its console line
    log = (wd / "results/logs/pixel_nn/digits/0/default/seed0.log").read_text()
    assert "AUROC[nnd]=" in log  # the rule's log: written
    per_class = (wd / "results/tables/per_class_digits.md").read_text()
    assert "Pixel NN (NND)" in per_class and "pixel_nn (nnd)" not in per_class, per_class


# ------------------------------------------------------------------------------------- issue 27
def test_another_profiles_runs_reach_none_of_this_profiles_tables(tiny: Path, tmp_path: Path) -> None:
    """Issue 27, point 1: after the test profile, another profile in the same results folder (here:
    seed 1 of CON2 only) builds its tables and figures from its own runs; the test profile's seven runs
    reach none of them and are counted in one note."""
    wd = clone(tiny, tmp_path / "wd")
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["seeds"] = [1]
    cfg["experiments"] = {"main": cfg["experiments"]["main"]}
    (wd / "other.yaml").write_text(yaml.safe_dump(cfg))
    targets = ["results/tables/natural_summary.md", "results/tables/learning_curve.csv"]
    res = snakemake(wd, "--cores", "2", *targets, "--configfile", "other.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    assert finished(res.stdout + res.stderr)["train"] == 2  # its own two runs (classes 0 and 1, seed 1)
    summary = (wd / "results/tables/natural_summary.md").read_text()
    ours = [line for line in summary.splitlines() if "| ours |" in line]
    assert [line.split("|")[1].strip() for line in ours] == ["CON2 (NND)", "CON2 (LH)"], summary
    assert all("[2×1]" in line for line in ours), summary  # two classes, one seed each: seed 1 only
    assert "7 run(s) outside this profile's grid left out" in summary
    import pandas as pd

    curve = pd.read_csv(wd / "results/tables/learning_curve.csv")  # what the learning-curve figure draws
    assert set(curve["method"]) == {"con2"} and set(curve["n"]) == {2}, curve
