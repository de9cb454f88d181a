"""The console of a real workflow run while a job works without printing (issue 46, point 2): a slow fake
scorer, a rule-based method whose job takes seconds and writes one progress line a second to its log,
run by the project's Snakefile with a quiet time of 2 s instead of 45 (``$CON2_QUIET_SECONDS``)."""

from __future__ import annotations

import re
import subprocess

import pytest
from workflow_helpers import SNAKEMAKE, TEST_CONFIG, copy_workflow, workflow_env

pytestmark = pytest.mark.slow

PASSES = 12
SLOW_RULE = """# Slow: a fake scorer that scores for seconds, one progress line a second (a test's stand-in).
import sys


rule slow:
    output:
        record="results/runs/{dataset}/{normal_class}/slow/{variant}/seed{seed}/record.json",
    log:
        "results/logs/slow/{dataset}/{normal_class}/{variant}/seed{seed}.log",
    message:
        "slow fake scorer {wildcards.dataset}/{wildcards.normal_class} seed {wildcards.seed}"
    params:
        python=sys.executable,
    shell:
        "{params.python:q} slow_scorer.py {output.record:q} > {log:q} 2>&1"
"""
SLOW_SCORER = f'''"""A fake scorer: {PASSES} passes of about a second, each a line in the log, then a record."""
import sys
import time
from pathlib import Path

import numpy as np

from con2.run.external import write_external_run

for k in range(1, {PASSES} + 1):
    time.sleep(1.0)
    print(f"scoring: pass {{k}} of {PASSES}", flush=True)
labels = np.r_[np.zeros(20), np.ones(10)].astype(int)
write_external_run(
    Path(sys.argv[1]).parent, dataset="digits", normal_class="0", method="slow", variant="default", seed=0,
    labels=labels, scores={{"nnd": np.arange(30, dtype=float)}}, n_train=20,
)
'''


def test_a_quiet_job_gets_a_sign_of_life_naming_it_and_what_its_log_says(tmp_path) -> None:
    wd = copy_workflow(tmp_path / "wd")
    (wd / "workflow/rules/methods/slow.smk").write_text(SLOW_RULE)
    (wd / "slow_scorer.py").write_text(SLOW_SCORER)
    target = "results/runs/digits/0/slow/default/seed0/record.json"
    env = {**workflow_env(wd), "CON2_QUIET_SECONDS": "2"}
    cmd = [*SNAKEMAKE, "--cores", "1", target, "--configfile", TEST_CONFIG]
    res = subprocess.run(cmd, cwd=wd, capture_output=True, text=True, timeout=600, env=env)
    console = res.stdout + res.stderr
    assert res.returncode == 0, console[-3000:]
    assert (wd / target).is_file()
    beats = re.findall(
        r"^con2 grid: still working \(2 s without a line\): slow fake scorer digits/0 seed 0, (\d+) s in, "
        r'(?:log: "scoring: pass (\d+) of 12"|nothing in its log yet)$',
        console,
        re.M,
    )
    # 12 s of scoring and nothing printed by the job: a line after every 2 s of quiet (5 or so), at least 2
    assert len(beats) >= 2, console[-3000:]
    passes = [int(p) for _, p in beats if p]
    assert passes and passes == sorted(passes), beats  # what it does, as its log says it, advancing
    assert [int(s) for s, _ in beats] == sorted(int(s) for s, _ in beats)
    finished_at = console.index("Finished jobid")
    assert all(console.index(f"{s} s in") < finished_at for s, _ in beats)  # while the job ran, not after
