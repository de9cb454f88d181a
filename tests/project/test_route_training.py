"""docs/architecture.md "The route of a training job" is what a training job runs (issue 60, item 5): rule
``train``'s shell command (``workflow/rules/train.smk``), run as the rule runs it on a run of the test profile
in a fresh interpreter, calls a function of each module of its numbered list, in the order the list gives, and
of no module it does not list; every other module of the project the job runs (its code only imported: class
and constant definitions) the section names too.

The order is that of each module's first call at run time (a call made while a module of the project is being
imported does not count: import order says nothing to a reader), recorded by a trace function; which modules
the job runs at all, by an audit hook (``exec``: a module's code run on import), as
``tests/project/test_architecture_route.py`` records the table job. ``test_route_figure.py`` follows a figure
job with the same recorder and checks."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import pytest
import yaml
from route_job import FRESH_JOB

from con2 import paths as P
from con2.run.records import read_record
from con2.workflow.session import Session

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs/architecture.md"
TITLE = "## The route of a training job"
RULE = "workflow/rules/train.smk"
PROFILE = yaml.safe_load((ROOT / "workflow/config/test.yaml").read_text())

# A job in a fresh interpreter: job.json names a command (the `con2` entry point's function and its arguments)
# or a rule's script (with its `snakemake` object). The audit hook records each file of the project's code
# (con2/, baselines/, workflow/) whose module code runs; the trace function, the first call of a function of
# each at run time: no frame of a module being imported below it (a module's own code, a class body, a call
# made at import time). A rule's script is run, not imported: its own code is its first call.
JOB = (
    r"""
import importlib, json, os, runpy, sys, threading
from types import SimpleNamespace
"""
    + FRESH_JOB
    + r"""
executed, called, seen = [], [], set()


def hook(event, args):
    if event == "exec" and hasattr(args[0], "co_filename"):
        path = args[0].co_filename
        if path.startswith(code) and path not in executed:
            executed.append(path)


script = os.path.join(root, job["script"]) if "script" in job else None  # run, not imported


def importing(frame):
    while frame is not None:
        name = frame.f_code.co_filename
        if frame.f_code.co_name == "<module>" and name.startswith(code) and name != script:
            return True
        frame = frame.f_back
    return False


def trace(frame, event, arg):
    path = frame.f_code.co_filename
    if path in seen:
        return None
    if not path.startswith(code):
        seen.add(path)
    elif (frame.f_code.co_name != "<module>" or path == script) and not importing(frame.f_back):
        seen.add(path)
        called.append(path)
    return None


sys.addaudithook(hook)
threading.settrace(trace)
sys.settrace(trace)
try:
    if "command" in job:
        module, name = job["command"].split(":")
        status = getattr(importlib.import_module(module), name)(job["argv"])
    else:
        snakemake = SimpleNamespace(
            **{k: Named(job[k]) for k in ("input", "output", "params", "wildcards")},
            log=[job["log"]], scriptdir=os.path.join(root, "workflow", "scripts"),
        )
        runpy.run_path(os.path.join(root, job["script"]), init_globals={"snakemake": snakemake}, run_name="__main__")
        status = 0
finally:
    sys.settrace(None)
    threading.settrace(None)
with open(out_file, "w") as fh:
    json.dump({"status": status, "executed": executed, "called": called}, fh)
"""
)


class Ran(NamedTuple):
    """What a job ran of the project (paths relative to the checkout; packages' ``__init__`` aside: Python runs
    one on the way to any module inside)."""

    called: list[str]  # the modules a function of which the job called, in the order of their first call
    imported: list[str]  # the modules whose code it ran, none of whose functions it called (in import order)


def run_job(job: dict[str, Any], workdir: Path, env: dict[str, str] | None = None) -> Ran:
    """Run ``job`` (see :data:`JOB`) in ``workdir`` in a fresh interpreter on this checkout's code."""
    (workdir / "job.json").write_text(json.dumps(job))
    base = {k: v for k, v in os.environ.items() if k not in ("CON2_FAULT", "CON2_DATASETS")}  # no fault point fires
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), base.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", JOB, str(ROOT), "job.json", "ran.json"],
        cwd=workdir,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = workdir / job["log"]
    assert done.returncode == 0, (done.stderr[-3000:], log.read_text()[-3000:] if log.is_file() else "")
    out = json.loads((workdir / "ran.json").read_text())
    assert out["status"] == 0, (done.stdout[-3000:], done.stderr[-3000:])

    def project(paths: list[str]) -> list[str]:
        return [str(Path(p).relative_to(ROOT)) for p in paths if Path(p).name != "__init__.py"]

    called = project(out["called"])
    return Ran(called, [p for p in project(out["executed"]) if p not in called])


def section(title: str, text: str | None = None) -> str:
    """The section of docs/architecture.md (or ``text``) that starts with the heading ``title``."""
    text = DOC.read_text() if text is None else text
    body = text[text.index(title) + len(title) :]
    return body[: body.index("\n## ")] if "\n## " in body else body


def listed(text: str) -> list[str]:
    """The module each numbered item of a section names first (``1. `con2/cli/main.py`: ...``)."""
    return re.findall(r"^\d+\.\s+`([^`\s]+)`", text, re.M)


def named(text: str) -> set[str]:
    """Every path a section names (in backquotes, with a slash)."""
    return {n for n in re.findall(r"`([^`\s]+)`", text) if "/" in n}


def route_problems(ran: Ran, text: str, start: str) -> list[str]:
    """How a section's route differs from what the job ran: its numbered list must be ``start`` (the rule's
    file) and then each module the job called a function of, in the order of their first calls; each module
    whose code the job only imported, it must name somewhere."""
    order, doc = [start, *ran.called], listed(text)
    problems = [f"{p}: the job calls it; the numbered list leaves it out" for p in order if p not in doc]
    problems += [f"{p}: in the numbered list; the job calls no function of it" for p in doc if p not in order]
    problems += [f"{p}: the job imports it; the section does not name it" for p in ran.imported if p not in named(text)]
    problems += [f"{p}: in the numbered list {doc.count(p)} times" for p in sorted(set(doc)) if doc.count(p) > 1]
    as_listed, as_run = [p for p in doc if p in order], [p for p in order if p in doc]
    for said, did in zip(as_listed, as_run):
        if said != did:
            problems.append(f"item {doc.index(said) + 1} is {said}; the job's next first call is into {did}")
            break
    return problems


# The training job.


def shell_of(rule_file: str, rule: str) -> str:
    """The shell command of ``rule`` in ``rule_file``, its string literals joined as Python joins them."""
    text = (ROOT / rule_file).read_text()
    body = text[text.index(f"rule {rule}:") :]
    body = body[body.index("shell:") + len("shell:") :]
    return "".join(re.findall(r'^\s+"(.*)"\s*$', body.split("\n\n")[0], re.M))


def quoted(value: str | list[str]) -> str:
    """A value as Snakemake's ``:q`` puts it into a shell command (a list: each item quoted)."""
    return " ".join(map(shlex.quote, value)) if isinstance(value, list) else shlex.quote(value)


def training_job(workdir: Path) -> tuple[dict[str, Any], str]:
    """The job of rule ``train`` for the test profile's CON2 run of digits class 0: its config file written as
    rule ``run_config`` writes it, its command line as the rule's shell gives it (every ``{...:q}`` filled as
    Snakemake fills it), run through the ``con2`` entry point's function. Returns the job and its run folder."""
    session = Session({**PROFILE, "data_dir": str(workdir / "data")}, ROOT, lambda: [], lambda: {})
    run = next(r for r in session.runs if (r.dataset, r.normal_class, r.method) == ("digits", "0", "con2"))
    wildcards = SimpleNamespace(
        dataset=run.dataset, normal_class=run.normal_class, method=run.method, variant=run.variant, seed=str(run.seed)
    )
    config = workdir / run.config_file
    config.parent.mkdir(parents=True)
    config.write_text(session.jobs.run_config_text(wildcards, SimpleNamespace(config=run.config_file)))
    values = {
        "input.config": run.config_file,
        "params.runtime": session.jobs.runtime_set(wildcards, PROFILE.get("threads", 1)),
        "params.run_dir": run.run_dir,
        "log": f"{P.LOG_ROOT}/{run.key}.log",
    }
    command = re.sub(r"\{([\w.]+):q\}", lambda m: quoted(values[m[1]]), shell_of(RULE, "train"))
    argv = shlex.split(command)
    assert argv[:2] == ["con2", "train"], command
    entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"][argv[0]]
    return {"command": entry, "argv": argv[1:], "log": values["log"]}, run.run_dir


@pytest.fixture(scope="module")
def training(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """What the training job runs (in a temporary folder, with its own prepared-data cache)."""
    workdir = tmp_path_factory.mktemp("route_training")
    (workdir / "data").mkdir()
    job, run_dir = training_job(workdir)
    ran = run_job(job, workdir, {"CON2_CACHE_DIR": str(workdir / "cache")})
    read_record(workdir / run_dir / "record.json")  # the job ends with the record, valid
    return ran


def test_the_training_route_names_every_module_the_job_runs_in_order(training: Ran) -> None:
    """The section's numbered list is the job's route, from the rule to ``record.json``; a failure names what
    differs, and ``training.called`` is the order to write."""
    # the recording sees the job: the command line, the training loop, the record
    assert {"con2/cli/main.py", "con2/training/engine.py", "con2/run/records.py"} <= set(training.called)
    problems = route_problems(training, section(TITLE), RULE)
    assert not problems, (problems, training)


def test_the_route_check_can_fail() -> None:
    """A list out of the job's order, one without a module the job calls, one naming a module the job only
    imports or none, and a section without a module the job imports: each is named."""
    ran = Ran(["con2/cli/main.py", "con2/run/runner.py", "con2/run/records.py"], ["con2/errors.py"])
    good = f"1. `{RULE}`: the rule.\n2. `con2/cli/main.py`: x.\n3. `con2/run/runner.py`: y.\n"
    good += "4. `con2/run/records.py`: z.\n\nImported only: `con2/errors.py`.\n"
    assert route_problems(ran, good, RULE) == []
    swapped = (
        good.replace("con2/cli/main.py", "@")
        .replace("con2/run/runner.py", "con2/cli/main.py")
        .replace("@", "con2/run/runner.py")
    )
    assert route_problems(ran, swapped, RULE) == [
        "item 2 is con2/run/runner.py; the job's next first call is into con2/cli/main.py"
    ]
    missing = good.replace("3. `con2/run/runner.py`: y.\n", "")
    assert route_problems(ran, missing, RULE) == [
        "con2/run/runner.py: the job calls it; the numbered list leaves it out"
    ]
    extra = good.replace("4. `con2/run/records.py`: z.\n", "4. `con2/run/records.py`: z.\n5. `con2/paths.py`: w.\n")
    assert route_problems(ran, extra, RULE) == ["con2/paths.py: in the numbered list; the job calls no function of it"]
    unnamed = good.replace("Imported only: `con2/errors.py`.", "")
    assert route_problems(ran, unnamed, RULE) == ["con2/errors.py: the job imports it; the section does not name it"]
    # the section is parsed from its heading to the next one
    doc = f"# A\n\n{TITLE}\n\n{good}\n## Next\n\n5. `con2/paths.py`: elsewhere.\n"
    assert listed(section(TITLE, doc)) == [RULE, *ran.called]
