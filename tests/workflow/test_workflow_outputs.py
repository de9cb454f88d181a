"""The workflow's outputs from the tiny profile's real runs: every table and figure, the console, one
table rebuilt alone, baselines added by one rule or one config line, the HTML report, bad records
skipped, report settings that rebuild what they shape, another profile's runs kept out.

Every test works in a temporary copy of the workflow (tests/workflow_helpers.py); the tiny profile
runs once per session (the ``tiny_run`` fixture, tests/conftest.py).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from workflow_helpers import (
    ROOT,
    SNAKEMAKE,
    TEST_CONFIG,
    TOY_RULE,
    clone,
    copy_workflow,
    finished,
    job_stats,
    readme_block,
    records,
    snakemake,
    table_targets_of,
)

pytestmark = pytest.mark.slow

if shutil.which("snakemake") is None and subprocess.run([*SNAKEMAKE, "--version"], capture_output=True).returncode:
    pytest.skip("snakemake is not installed (pip install -e '.[workflow]')", allow_module_level=True)


def test_tiny_run_writes_every_table_and_figure(tiny_run: Path) -> None:
    from con2.report.artefacts import figure_targets, table_targets
    from con2.run.records import read_record

    cfg = yaml.safe_load((tiny_run / TEST_CONFIG).read_text())
    for target in table_targets(cfg["report"]) + figure_targets(cfg["report"]):
        assert (tiny_run / target).stat().st_size > 0, target
    recs = [read_record(tiny_run / p) for p in records(tiny_run)]
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
    from con2.training.device import cpu_has_native_bf16

    precision = "bfloat16-autocast" if cpu_has_native_bf16() else "float32"
    for r in recs:
        aurocs = r["metrics"]["auroc"]
        assert set(aurocs) == set(r["scoring"]["columns"]), (set(aurocs), r["scoring"])
        assert all(0 <= v <= 100 for v in aurocs.values()), aurocs
        assert r["precision"] == precision, (r["precision"], precision)
    per_class_md = (tiny_run / "results/tables/per_class_digits.md").read_text()
    assert "CON2 (NND)" in per_class_md and re.search(r"\| 0 \| \d+\.\d", per_class_md)
    assert "k = 3" in (tiny_run / "results/tables/multi_context.md").read_text()
    natural = (tiny_run / "results/tables/natural_summary.md").read_text()
    assert all(m in natural for m in ("CON2 (NND)", "CON2 (Best) (NND)", "SimCLR (kNN)", "SimCLR (SSD)", "CSI (CSI)"))
    assert "CON2 (Best) (NND)" in per_class_md
    assert "\\toprule" in (tiny_run / "results/tables/table1_medical.tex").read_text()
    # issue 26: each run's DeLong interval, and the paired comparisons read every run's scores.csv
    assert all(set(r["metrics"]["auroc_ci"]) == set(r["metrics"]["auroc"]) for r in recs)
    import pandas as pd

    compared = pd.read_csv(tiny_run / "results/tables/comparisons_digits.csv", keep_default_na=False)
    assert len(compared) and (compared["reason"] == "").all() and (compared["reference"] == "con2/nnd").all()
    bench = list((tiny_run / "results/benchmarks/train").rglob("*.tsv"))
    assert len(bench) == 7
    cost = (tiny_run / "results/tables/compute_cost.csv").read_text()
    assert "bench_max_rss_mb" in cost and "cpu_share" in cost
    # one resolved config per run, named by its hash, which is what `con2 train` read
    for p in records(tiny_run):
        key = p.removeprefix("results/runs/").removesuffix("/record.json")
        record = read_record(tiny_run / p)
        config_file = tiny_run / f"results/configs/{key}.{record['config_hash']}.yaml"
        assert record["config"]["epochs"] == yaml.safe_load(config_file.read_text())["epochs"]


def test_console_has_one_line_per_finished_run_and_logs_one_per_epoch(tiny_run: Path) -> None:
    console = (tiny_run / "console.txt").read_text()
    finished = re.findall(r"^digits/\d \S+/\S+ seed=\d: AUROC\[\w+\]=\d+\.\d.*$", console, re.M)
    assert len(finished) == len(records(tiny_run)) == 7, console[-3000:]
    assert "rule train:" not in console and "    wildcards:" not in console  # job blocks are one-line messages
    log_file = "results/logs/train/digits/0/con2/invert/seed0.log"
    log = (tiny_run / log_file).read_text()
    # the job's log (not a terminal) gets one line per epoch with its ETA, no carriage-return bar
    assert re.search(r"^epoch 1/1  loss=\S+.*  \d+ img/s  ETA \d+s$", log, re.M) and "\r" not in log, log
    # and the console the first epoch's line of each run, with its ETA and where its log is
    started = re.findall(
        r"^digits/\d \S+/\S+ seed=\d: epoch 1/1 .* ETA \d+s(?: \+ scoring ~\S+ = ~\S+ left)? \(log: (\S+)\)$",
        console,
        re.M,
    )
    assert len(started) == 7 and log_file in started, console[-3000:]


def test_the_table_marked_to_start_first_is_in_the_first_batch_after_the_aggregation(tiny_run: Path) -> None:
    """Issue 58: the operating-points table (1,000 bootstrap resamples of each run's AP, the longest step after
    the runs) ran last and alone, where the ETA's pace of a step did not see it; its rule's priority starts it
    with the first jobs that the grid's aggregation makes ready, and no table that is not marked so."""
    from con2.report.artefacts import TABLES

    console = (tiny_run / "console.txt").read_text()
    after = console[console.index("(Rule: aggregate)") :]
    first = after[after.index("Execute ") : after.index("Finished jobid")]  # the jobs started at once, first
    started = re.findall(r"^Job \d+: table (\w+)", first, re.M)
    marked = {name for name, t in TABLES.items() if t.starts_first}
    assert marked == {"operating_points"} and marked <= set(started), first


def test_progress_knows_its_step_total_from_the_start_and_gives_the_grids_eta(tiny_run: Path) -> None:
    """The data on disk are scheduled before the data check, so Snakemake's "N of M steps" keeps one
    M from its first line; the grid's ETA line comes first, then after each finished training job."""
    console = (tiny_run / "console.txt").read_text()
    totals = {int(m) for m in re.findall(r"^\d+ of (\d+) steps \(\d+%\) done$", console, re.M)}
    assert len(totals) == 1, sorted(totals)
    # issue 46, point 7: the README's step count for this profile is the one it has (it said 43 for 44)
    said = re.search(r"Its (\d+) steps \((\d+) training runs\)", (ROOT / "README.md").read_text())
    assert said and (int(said.group(1)), int(said.group(2))) == (totals.pop(), len(records(tiny_run))), said
    grid = re.findall(r"^con2 grid: (\d+) of (\d+) training runs done(.*)$", console, re.M)
    n = len(records(tiny_run))
    # before any run: this CPU's measured throughput where it was measured, else a promise
    assert grid[0][:2] == ("0", str(n)) and ("at least" in grid[0][2] or "once a training run" in grid[0][2]), grid
    assert console.index("con2 grid: 0 of") < console.index(" steps (")
    assert grid[-1] == (str(n), str(n), ""), grid
    # issue 46, point 3: the ETA counts the aggregation, tables and figures after the runs, and goes on
    # once every run is done
    after = (
        r"\+ \d+ steps? after the runs \(aggregation, tables, figures\): \d+ (s|min|min \d0 s) at \d+\.\d s each "
        r"\((from the \d+ finished|a prior until one finishes)\)"
    )
    duration = r"\d+ (s|min|min \d0 s)"
    paced = [g for g in grid if "from the pace of the" in g[2]]
    assert paced and all(
        re.fullmatch(
            rf"; about {duration} left \(2 at a time; from the pace of the \d+ finished runs?; {after}\)", g[2]
        )
        for g in paced
    ), paced
    tables = [g for g in grid if g[0] == str(n) and g[2]]
    assert tables and all(re.fullmatch(rf"; about {duration} left \(2 at a time; {after}\)", g[2]) for g in tables), (
        grid
    )
    assert [int(g[0]) for g in grid] == sorted(int(g[0]) for g in grid)  # done only grows


def test_changed_settings_are_scheduled_at_once_after_another_profile(tiny_run: Path, tmp_path: Path) -> None:
    """As the default profile after the test profile (the README's order): every run's setting
    changes, and so do data_dir and download. A dry run lists every retraining at once (Snakemake
    checks a job below a data check that must run only through that check, and the embedded digits'
    check depends on neither setting, so it does not run again)."""
    wd = clone(tiny_run, tmp_path / "wd")
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["run"]["epochs"] = 2
    cfg.update(data_dir="elsewhere", download=True)
    (wd / "changed.yaml").write_text(yaml.safe_dump(cfg))
    dry = snakemake(wd, "-n", "runs", "--configfile", "changed.yaml")
    assert dry.returncode == 0, dry.stderr[-3000:]
    stats = job_stats(dry.stdout + dry.stderr)
    assert stats["train"] == len(records(tiny_run)) == 7 and "prepare_data" not in stats, stats


def test_deleting_one_table_rebuilds_only_that_table(tiny_run: Path, tmp_path: Path) -> None:
    wd = clone(tiny_run, tmp_path / "wd")
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


def test_a_toy_baseline_joins_with_one_rule_and_one_config_line(tiny_run: Path, tmp_path: Path) -> None:
    wd = clone(tiny_run, tmp_path / "wd")
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


def test_lint_is_clean(tiny_run: Path, tmp_path: Path) -> None:
    wd = clone(tiny_run, tmp_path / "wd")  # the session's run is shared by the workers: read, never written
    for args in (
        ["--configfile", TEST_CONFIG],
        ["--configfile", "workflow/config/paper.yaml"],
        ["--config", "data_dir=x"],
    ):
        res = snakemake(wd, "--lint", *args)
        assert res.returncode == 0 and "Congratulations" in res.stdout + res.stderr, res.stdout + res.stderr


def test_html_report_has_tables_and_figures(tiny_run: Path, tmp_path: Path) -> None:
    import base64
    import html as html_lib

    wd = clone(tiny_run, tmp_path / "wd")
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
    assert "Budget of ours: 1 epoch at 16 px" in natural and re.search(
        r"<td class=num>\d+\.\d( ± \d+\.\d)? \[", natural
    )
    assert not re.search(r"\d+\.\d{5,}", natural)  # no unrounded number (the CSV's 57.87385129490392)


def test_the_readmes_report_command_reports_the_profile_just_run(tiny_run: Path, tmp_path: Path) -> None:
    """Issue 46, point 1: after the test profile, the README's `snakemake --report results/report.html`
    (no --configfile) exited 1 after 70 warnings, looking for the default profile's tables. It reports
    the profile of the last run in the folder; where the files of the profile it reports were never
    built, it stops with one line naming the profile to give."""
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"(?:`|^)(snakemake --report [^`#\n]+?) *(?:`|#|$)", readme, re.M)  # in a sentence or a block
    assert command, "the README gives no report command"
    args = shlex.split(command.group(1))[1:]
    assert "--configfile" not in args and args == ["--report", "results/report.html"]
    wd = clone(tiny_run, tmp_path / "wd")
    res = snakemake(wd, *args)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "con2 report: the profile of the last run here, --configfile workflow/config/test.yaml" in out
    assert "Missing metadata" not in out and (wd / "results/report.html").stat().st_size > 0
    assert "natural_summary.html" in (wd / "results/report.html").read_text(errors="replace")
    # without the record of the last run's profile (results of an older version): the default profile's report,
    # of the files built here under its names, listing the others (issue 58, item 2: a partial grid's report)
    (wd / "results/last_profile.yaml").unlink()
    res = snakemake(wd, *args)
    out = res.stdout + res.stderr
    assert res.returncode == 0 and "Missing metadata" not in out, out[-3000:]
    lines = [ln for ln in out.splitlines() if ln.startswith("con2 report: ")]
    assert len(lines) == 1 and " report files of the default profile are not built yet (" in lines[0], out[-3000:]


def test_bad_records_are_skipped_and_every_table_still_builds(tiny_run: Path, tmp_path: Path) -> None:
    """Issue 16, cases 5-7: corrupt, binary, schema-invalid and NaN records, a copied `seed0.bak`
    and a seed folder copied under another seed: aggregation skips each with one line naming the
    file and the fix (log, last lines), keeps runs.csv and summary.csv, and every table builds."""
    wd = clone(tiny_run, tmp_path / "wd")
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
    assert finished(res.stdout + res.stderr)["aggregate"] == 1 and finished(res.stdout + res.stderr)["train"] == 0
    log = (wd / "results/logs/aggregate.log").read_text()
    tail = res.stderr[res.stderr.rindex("SKIPPED by the aggregation") :]
    for path in expected:
        line = next(ln for ln in log.splitlines() if ln.startswith(f"skipped {path}: "))
        assert "; fix: " in line, line
        assert f"  {path}: " in tail, tail
    assert "6 record(s) SKIPPED by the aggregation" in res.stderr
    import pandas as pd

    df = pd.read_csv(wd / "results/evaluation/runs.csv", dtype={"normal_class": str})
    assert sorted(df["record"].unique()) == sorted(records(tiny_run))
    summary = pd.read_csv(wd / "results/evaluation/summary.csv", dtype={"normal_class": str})
    assert set(summary["n"]) == {1}  # the copies are no seeds
    for target in table_targets_of(wd):
        assert (wd / target).is_file(), target
    assert re.search(r"\| 0 \| \d+\.\d \[1×1\]", (wd / "results/tables/per_class_digits.md").read_text())


def test_report_settings_rebuild_what_they_shape_and_unknown_names_stop_the_workflow(
    tiny_run: Path, tmp_path: Path
) -> None:
    """Issue 16, case 9: `report:` settings are params of the artefacts they shape: a new subject
    rebuilds the tables and figures (no run retrains); an unknown subject or dataset in `report:`
    stops before any job, naming the key."""
    wd = clone(tiny_run, tmp_path / "wd")
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["report"]["subject"] = "simclr"
    (wd / "subject.yaml").write_text(yaml.safe_dump(cfg))
    res = snakemake(wd, "-n", "--configfile", "subject.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    stats = job_stats(res.stdout + res.stderr)
    assert stats["table_nnd_vs_lh"] == 1 and stats["figure_pca_representations"] == 1, stats
    assert stats["train"] == stats["run_config"] == stats["aggregate"] == 0, stats
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


def test_the_readmes_baseline_rule_and_overlay_run_as_written(tiny_run: Path, tmp_path: Path) -> None:
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

    wd = clone(tiny_run, tmp_path / "wd")
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


def test_the_add_a_baseline_recipe_adds_it_to_the_tables_the_user_has(tmp_path: Path, shared_data: Path) -> None:
    """Issue 46, point 4: docs/methods.md's command, as written, after the README's default run (here its
    BreastMNIST data check and floor run, with the README's `--config data_dir=../shared/data`) schedules
    the baseline's BreastMNIST runs and reruns nothing; the command without data_dir (what the recipe
    said before) checked the data again in ./data and scheduled no BreastMNIST run. Its runs then reach
    Table 1."""
    overlay = readme_block("`extra_methods` and `extra_rules` are lists", "yaml")
    command = readme_block("Then, in the folder of the README's default run:", "bash").strip()
    args = shlex.split(command)
    assert args[:4] == ["snakemake", "--cores", "2", "all"] and "data_dir=../shared/data" in args, command
    readme = (ROOT / "README.md").read_text()
    default_run = (
        r"snakemake --cores 2 all (--configfile workflow/config/default\.yaml )?--config data_dir=\.\./shared/data"
    )
    assert re.search(default_run, readme)  # the tables the recipe adds to (its profile named: issue 58, item 4)

    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data)  # ../shared/data, as beside the checkout
    wd = copy_workflow(tmp_path / "bench")
    shutil.copytree(ROOT / "baselines" / "examples", wd / "baselines" / "examples")
    (wd / "my.yaml").write_text(overlay)
    floor = "results/runs/breastmnist/1/floor_pixels/floor/seed0/record.json"
    first = snakemake(wd, "--cores", "2", floor, "--config", "data_dir=../shared/data")  # the default profile's
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    before = records(wd)

    dry = snakemake(wd, *args[1:], "-n")  # the recipe, as written, dry
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-3000:]
    assert sorted(re.findall(r"^Job \d+: pixel_nn breastmnist/1 seed (\d)$", out, re.M)) == ["0", "1", "2"], out[-3000:]
    assert "data breastmnist at 28 px" not in out and "train breastmnist/1 floor_pixels/floor seed 0" not in out
    without = snakemake(wd, *[a for a in args[1:] if a not in ("--config", "data_dir=../shared/data")], "-n")
    out = without.stdout + without.stderr
    assert without.returncode == 0, out[-3000:]
    assert re.search(r"data breastmnist at 28 px\nReason: Params have changed", out)  # the data checked again
    assert not re.search(r"^Job \d+: pixel_nn breastmnist/", out, re.M)  # and no BreastMNIST run of the baseline

    new = [f"results/runs/breastmnist/1/pixel_nn/default/seed{k}/record.json" for k in range(3)]
    res = snakemake(wd, "--cores", "2", *new, *args[4:])  # its runs, with the recipe's profile and data_dir
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert {k: v for k, v in records(wd).items() if k in before} == before  # nothing retrained
    table = snakemake(wd, "--cores", "2", "results/tables/table1_medical.md", *args[4:])
    assert table.returncode == 0, (table.stdout + table.stderr)[-3000:]
    rows = (wd / "results/tables/table1_medical.md").read_text()
    assert re.search(r"^\| Pixel NN \(NND\) \| ours \| 72\.0", rows, re.M), (
        rows
    )  # the floor's number, as docs/methods.md says


def test_another_profiles_runs_reach_none_of_this_profiles_tables(tiny_run: Path, tmp_path: Path) -> None:
    """Issue 27, point 1: after the test profile, another profile in the same results folder (here:
    seed 1 of CON2 only) builds its tables and figures from its own runs; the test profile's seven runs
    reach none of them and are counted in one note."""
    wd = clone(tiny_run, tmp_path / "wd")
    cfg = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cfg["seeds"] = [1]
    cfg["experiments"] = {"main": cfg["experiments"]["main"]}
    (wd / "other.yaml").write_text(yaml.safe_dump(cfg))
    targets = ["results/tables/natural_summary.md", "results/tables/learning_curve.csv"]
    res = snakemake(wd, "--cores", "2", "runs", *targets, "--configfile", "other.yaml")  # a table alone trains nothing
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
