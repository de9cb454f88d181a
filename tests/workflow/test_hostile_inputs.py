"""Issue 25 (points 1, 3, 7-10): hostile or oversized inputs end in one line, before memory or a job.

Each command-line case runs ``con2`` in a subprocess and checks: exit 2, ONE ``con2: error:`` line
that names the problem and the fix, within 10 s and 1 GB (the child's peak resident memory, from
``wait4``). Each workflow case runs ``snakemake -n`` on a copy of the workflow and checks that it
stops before any job with Snakemake's one-line error. The report case builds ``snakemake --report``
from a one-run profile, once with a plain external record and once with a hostile label, and
compares the two reports' script elements and links.
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from workflow_helpers import HOSTILE, ONE_RUN_PROFILE, profile_error

import con2.grid.experiments as E
import con2.paths as P
from con2.config import MAX_IMAGE_SIZE, unknown_encoder
from con2.errors import ConfigError, DataError
from con2.grid.checks import check_profile_text
from con2.yaml_files import check_size

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
TEST_CONFIG = "workflow/config/test.yaml"

# nine levels of nine aliases: 9**9 (387 million) strings from 10 lines ("billion laughs")
BOMB_LINES = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'] + [
    f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)
]
BOMB_FLOW = (
    "[&a [x,x,x,x,x,x,x,x,x], "
    + ", ".join(f"&{b} [{','.join([f'*{a}'] * 9)}]" for a, b in zip("abcdefg", "bcdefgh"))
    + "]"
)


# A small Python between pytest and the CLI: a child's peak resident memory counts the pages it had
# when forked, so measured straight from pytest (torch loaded by earlier tests: 1.1 GB) it would
# say more about pytest than about the command. The wrapper starts at ~10 MB and reports the CLI's.
MEASURE = (
    "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)"
)


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, float, float]:
    """``con2 ARGS`` in a subprocess: (exit status, stderr, seconds, peak resident memory in MB)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "CON2_CACHE_DIR": str(cwd / ".cache"), **(env or {})}
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", MEASURE, sys.executable, "-m", "con2", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
    )
    seconds = time.monotonic() - t0
    err = proc.stderr.decode(errors="replace")
    out = proc.stdout.decode(errors="replace").split()
    mb = int(out[-1]) / 1024 if out else float("nan")
    return proc.returncode, err, seconds, mb


def assert_one_line(result: tuple[int, str, float, float], *needles: str) -> str:
    code, err, seconds, mb = result
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("con2: error: ") and "Traceback" not in err, err[-3000:]
    assert code == 2, (code, err)
    assert "Fix: " in lines[0], lines[0]
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    assert seconds < 10 and mb < 1024, (seconds, mb)
    return lines[0]


# ------------------------------------------------------------------------------------------ 7: names
@pytest.mark.parametrize("kind", ["dataset", "class", "method", "variant"])
def test_a_name_with_a_trailing_newline_is_refused_by_the_grid_and_by_the_schema(kind: str) -> None:
    """`$` accepts a trailing newline; names are matched in full, in Python and in the schema."""
    import jsonschema

    assert P.is_name("inv") and not P.is_name("inv\n") and not P.is_name("0\n")
    with pytest.raises(E.GridError, match="is not a valid name"):
        E.check_name("inv\n", kind)
    cfg = yaml.safe_load((ROOT / TEST_CONFIG).read_text())
    hostile = {"dataset": "digits\n", "class": "0\n", "method": "con2\n", "variant": "invert\n"}[kind]
    if kind == "dataset":
        cfg["datasets"][hostile] = cfg["datasets"].pop("digits")
    elif kind == "class":
        cfg["datasets"]["digits"]["normal_classes"] = [hostile]
    elif kind == "method":
        cfg["experiments"]["main"]["methods"] = {hostile: ["invert"]}
    else:
        cfg["variants"][hostile] = cfg["variants"].pop("invert")
    schema = yaml.safe_load(SCHEMA.read_text())
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(cfg))
    assert errors and any(repr(hostile) in e.message for e in errors), [e.message for e in errors]
    with pytest.raises(E.GridError, match="is not a valid name"):
        E.expand_grid(cfg, lambda name: ["0"])
    ok = yaml.safe_load((ROOT / TEST_CONFIG).read_text())
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(ok))  # the plain profile passes


def test_run_paths_with_a_trailing_newline_are_no_runs() -> None:
    assert P.path_identity("r/digits/0/con2/invert/seed0/record.json") is not None
    assert P.path_identity("r/digits/0/con2/invert/seed0\n/record.json") is None
    assert P.path_identity("r/digits/0\n/con2/invert/seed0/record.json") is None


# ------------------------------------------------------------------------------------------ 1: profile text
@pytest.mark.parametrize("value", list(HOSTILE.values()) + ["two\nlines"])
def test_profile_text_that_could_open_a_tag_or_a_link_is_refused_naming_the_key(value: str) -> None:
    cfg = yaml.safe_load((ROOT / TEST_CONFIG).read_text())
    cfg["run"]["encoder"] = value
    with pytest.raises(E.GridError, match=r"^run\.encoder: .* holds"):
        check_profile_text(cfg)
    cfg = yaml.safe_load((ROOT / TEST_CONFIG).read_text())
    cfg["report"]["contexts"] = ["invert", value]
    with pytest.raises(E.GridError, match=r"^report\.contexts\[1\]: "):
        check_profile_text(cfg)
    for name in ("default.yaml", "paper.yaml", "test.yaml"):  # every shipped profile passes
        check_profile_text(yaml.safe_load((ROOT / "workflow" / "config" / name).read_text()))


def test_an_unknown_encoder_is_refused_before_any_job() -> None:
    assert unknown_encoder("resnet18") is None and unknown_encoder("resnet18_cifar") is None
    assert "not an encoder name" in (unknown_encoder("</script>") or "")
    assert "neither resnet18 nor a timm model" in (unknown_encoder("notanencoder") or "")
    cfg = yaml.safe_load((ROOT / TEST_CONFIG).read_text())
    cfg["run"]["encoder"] = "notanencoder"
    runs = E.expand_grid(cfg, lambda name: ["0"])
    with pytest.raises(E.GridError, match=r"config key 'encoder': 'notanencoder' is neither resnet18"):
        E.check_run_methods(runs)


# ------------------------------------------------------------------------------------------ 3: Markdown cells
def test_markdown_cells_escape_tags_and_plain_cells_stay_as_they_were() -> None:
    import pandas as pd

    from con2.report.format import Table

    plain = Table("t", "T", ["method", "AUROC"], [["CON2 (ours)", "81.7 ± 0.9"], ["a->b", "1.0"]], pd.DataFrame())
    assert "| CON2 (ours) | 81.7 ± 0.9 |" in plain.markdown() and "| a->b | 1.0 |" in plain.markdown()
    rows = [[HOSTILE["img"], "1.0"], [HOSTILE["script"], "2.0"], ["R&D", "3.0"]]
    md = Table("t", "T", ["method", "AUROC"], rows, pd.DataFrame()).markdown()
    assert "<" not in md, md
    assert "&lt;img src=x onerror=alert(2)>" in md and "R&D" in md  # a bare '&' opens no entity: as written


# ------------------------------------------------------------------------------------------ 8: sizes
@pytest.fixture
def bomb(tmp_path: Path) -> Path:
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join([*BOMB_LINES, "experiments: {x: *a8}", ""]))
    return path


def test_check_size_counts_aliases_as_they_expand() -> None:
    check_size(yaml.safe_load((ROOT / "workflow" / "config" / "paper.yaml").read_text()), "paper", "-")
    with pytest.raises(ConfigError, match=r"expands to more than 100,000 values"):
        check_size(yaml.safe_load(BOMB_FLOW), "the value", "write it out")


def medmnist_like(path: Path, shape: tuple[int, ...], body: int, compress: bool = False) -> Path:
    """An npz whose train_images header declares ``shape`` and holds ``body`` zero bytes (written in
    blocks: this process never holds them, so the child's peak memory is its own); the other arrays empty."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", compression=method) as z:
        for key in ("train_images", "train_labels", "val_images", "val_labels", "test_images", "test_labels"):
            head = io.BytesIO()
            declared = shape if key == "train_images" else (0,)
            np.lib.format.write_array_header_1_0(head, {"descr": "|u1", "fortran_order": False, "shape": declared})
            with z.open(f"{key}.npy", "w", force_zip64=True) as member:
                member.write(head.getvalue())
                left = body if key == "train_images" else 0
                block = bytes(1 << 20)
                while left > 0:
                    member.write(block[: min(left, len(block))])
                    left -= len(block)
    return path


@pytest.mark.parametrize(
    ("case", "args", "needles"),
    [
        ("bomb-plan", ["plan", "--configfile", "{bomb}"], ["expands to more than 100,000 values"]),
        ("bomb-config", ["train", "--config", "{bomb}", "--run-dir", "r"], ["expands to more than 100,000 values"]),
        (
            "bomb-set",
            ["train", "--set", f"params.contexts={BOMB_FLOW}", "--run-dir", "r"],
            ["override params.contexts"],
        ),
        ("dev-zero-plan", ["plan", "--configfile", "/dev/zero"], ["/dev/zero is not a regular file"]),
        ("image-size", ["train", "--set", "image_size=100000", "--run-dir", "r"], [f"at most {MAX_IMAGE_SIZE} px"]),
        ("data-size", ["train", "--set", "data_size=100000", "--run-dir", "r"], ["'data_size'", "at most"]),
        ("data-get-size", ["data", "get", "digits", "--size", "100000"], ["--size 100000", "Fix: --size 224"]),
        (
            "npz-header",
            ["data", "get", "breastmnist", "--no-download", "--data-dir", "{data}"],
            ["declares shape (100000000, 28, 28)", "delete"],
        ),
        ("npz-zip-bomb", ["data", "get", "breastmnist", "--no-download", "--data-dir", "{zipbomb}"], ["zip bomb"]),
    ],
)
def test_size_bombs_end_in_one_line_before_memory_is_committed(
    tmp_path: Path, bomb: Path, case: str, args: list[str], needles: list[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    medmnist_like(data / "breastmnist.npz", (10**8, 28, 28), 1000)
    zipbomb = tmp_path / "zipbomb"
    zipbomb.mkdir()
    if case == "npz-zip-bomb":
        n = 100 * 2**20 // 784  # 100 MB of zeros: ~100 kB compressed
        medmnist_like(zipbomb / "breastmnist.npz", (n, 28, 28), n * 784, compress=True)
    filled = [a.format(bomb=bomb, data=data, zipbomb=zipbomb) for a in args]
    assert_one_line(cli(*filled, cwd=tmp_path), *needles)


# ------------------------------------------------------------------------------------------ 9: tracebacks
@pytest.mark.parametrize(
    ("option", "content", "needle"),
    [
        ("--configfile", b"\x7fELF\x02\x01\x01\x00\xff\xfe", "is not a YAML text file"),
        ("--throughput", b"device,image_size\nh200,28\n", "lacks the column(s) width"),
        ("--throughput", b"\x00\xff\xfe binary", "is not a CSV text file"),
        ("--sizes", b"dataset,normal_class\nx,0\n", "lacks the column(s) n_train, source"),
        ("--sizes", b"dataset,normal_class,n_train,source\ndigits,*,many,x\n", "line 2: column n_train is 'many'"),
        ("--paper-hours", b"method\nx\n", "lacks the column(s) dataset, gpu_hours_per_run"),
        ("--paper-hours", b"\xff\xfe\x00\x01", "is not a CSV text file"),
    ],
)
def test_con2_plan_refuses_a_bad_table_or_profile_in_one_line(
    tmp_path: Path, option: str, content: bytes, needle: str
) -> None:
    bad = tmp_path / "bad.file"
    bad.write_bytes(content)
    profile = "workflow/config/test.yaml" if option != "--configfile" else str(bad)
    args = ["plan", "--configfile", str(ROOT / profile) if option != "--configfile" else profile]
    if option != "--configfile":
        args += [option, str(bad)]
    assert_one_line(cli(*args, cwd=tmp_path), needle)


LOGGED = """
import errno, sys
sys.path.insert(0, {scripts!r})
from _log import logged
class S:
    log = [{log!r}]
with logged(S()):
    print("building the table")
    raise OSError({errno}, "cannot write", {target!r})
"""
JOB_NO_SPACE_FIX = (
    "free space on that file system (or move the workflow's folder, results/ with it, to a larger one and run it "
    "there; prepared data: CON2_CACHE_DIR on a larger one), then rerun the same snakemake command: finished jobs "
    "are not redone"
)
JOB_NOT_WRITABLE_FIX = (
    "make that folder writable (or run the workflow from a writable copy of its folder; prepared data: "
    "CON2_CACHE_DIR to a writable folder), then rerun the same snakemake command"
)


@pytest.mark.parametrize(
    ("log", "code", "problem", "fix"),
    [
        ("table.log", errno.ENOSPC, "no space left on device writing {}", JOB_NO_SPACE_FIX),
        ("/dev/full", errno.ENOSPC, "no space left on device writing {}", JOB_NO_SPACE_FIX),
        ("table.log", errno.EDQUOT, "disk quota exceeded writing {}", JOB_NO_SPACE_FIX),
        ("table.log", errno.EROFS, "cannot write {}: read-only file system", JOB_NOT_WRITABLE_FIX),
        ("table.log", errno.EACCES, "cannot write {}: permission denied", JOB_NOT_WRITABLE_FIX),
    ],
    ids=["full", "full-log-too", "quota", "read-only", "refused"],
)
def test_a_full_disk_in_a_workflow_script_is_one_line_and_no_traceback(
    tmp_path: Path, log: str, code: int, problem: str, fix: str
) -> None:
    """The table script's write meets ENOSPC (and, with /dev/full, so does its log), a quota, a
    read-only or refused folder: one line on the console, exit 1, no traceback from the script or
    from the log helper; the fix fits a job Snakemake runs (issue 32, point 15: it named another
    --run-dir, which a table job has not)."""
    target = str(tmp_path / "results" / "tables" / "t.md")
    code_text = LOGGED.format(scripts=str(ROOT / "workflow" / "scripts"), log=log, target=target, errno=code)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-c", code_text], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert res.returncode == 1, res.stderr
    assert res.stderr.splitlines() == [f"con2: error: {problem.format(target)}. Fix: {fix}"], res.stderr
    assert "--run-dir" not in res.stderr
    if log == "table.log":
        text = (tmp_path / "table.log").read_text()
        assert "building the table" in text and "con2: error: " in text and "Traceback" not in text


# ------------------------------------------------------------------------------------------ 10: wrong words
def test_weights_dir_that_is_a_file_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from con2 import weights

    file = tmp_path / "passwd"
    file.write_text("root:x:0:0\n")
    monkeypatch.setenv(weights.ENV_DIR, str(file))
    with pytest.raises(ConfigError, match=rf"^CON2_WEIGHTS_DIR={re.escape(str(file))} is not a folder\. Fix: set"):
        weights.resolve("", "torchvision/resnet18-imagenet1k-v1")


def test_an_unreadable_weights_or_data_folder_is_a_read_failure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """(As root, chmod 000 reads anyway: the refusal is simulated where the file system gives it.)"""
    from pathlib import Path as P

    from con2 import weights
    from con2.data import find_source

    real = P.is_file

    def refused(self: P) -> bool:
        if str(self).startswith(str(tmp_path)):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(P, "is_file", refused)
    monkeypatch.setenv(weights.ENV_DIR, str(tmp_path))
    with pytest.raises(ConfigError) as err:
        weights.resolve("", "torchvision/resnet18-imagenet1k-v1")
    assert "cannot read" in str(err.value) and "writable" not in str(err.value) and "do not delete it" in str(err.value)
    with pytest.raises(DataError) as err:
        find_source("breastmnist", tmp_path, 28)
    assert "cannot read" in str(err.value) and "writable" not in str(err.value)


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "config"])
def test_a_data_dir_or_config_that_is_no_folder_or_file_says_what_it_is(tmp_path: Path, target: str) -> None:
    os.mkfifo(tmp_path / "fifo")
    if target == "config":
        line = assert_one_line(cli("train", "--config", "/dev/zero", "--run-dir", "r", cwd=tmp_path))
        assert "config file /dev/zero is not a regular file" in line and "not found" not in line
        return
    where = target if target.startswith("/") else str(tmp_path / target)
    line = assert_one_line(cli("data", "get", "breastmnist", "--no-download", "--data-dir", target, cwd=tmp_path))
    assert f"data_dir {where} is a device, a pipe or a socket, not a folder" in line and "network" not in line


def test_the_skipped_data_fix_for_a_data_dir_that_is_a_file_names_another_folder(tmp_path: Path) -> None:
    from con2.workflow.status import fix_command

    assert fix_command("breastmnist", 28, tmp_path) == f"con2 data get breastmnist --data-dir {tmp_path} --size 28"
    file = tmp_path / "passwd"
    file.write_text("x")
    fix = fix_command("breastmnist", 28, file)
    assert f"--data-dir {file}" not in fix and "--config data_dir=DIR" in fix and f"{file} is not one" in fix


def test_a_symlink_loop_under_the_runs_finds_each_record_once(tmp_path: Path) -> None:
    runs = tmp_path / "results" / "runs"
    run = runs / "digits" / "0" / "con2" / "invert" / "seed0"
    run.mkdir(parents=True)
    (run / "record.json").write_text("{}")
    (runs / "digits" / "0" / "loop").symlink_to("../..")
    elsewhere = tmp_path / "elsewhere" / "digits" / "1" / "con2" / "invert" / "seed0"
    elsewhere.mkdir(parents=True)
    (elsewhere / "record.json").write_text("{}")
    (runs / "digits" / "1").symlink_to(tmp_path / "elsewhere" / "digits" / "1")  # runs kept on another disk
    found, others = P.records_on_disk(runs)
    assert found == [str(run / "record.json"), str(runs / "digits" / "1" / "con2" / "invert" / "seed0" / "record.json")]
    assert others == []


# ------------------------------------------------------------------------------------------ the workflow
def workflow_copy(dest: Path) -> Path:
    from workflow_helpers import copy_workflow

    return copy_workflow(dest)


def snakemake(cwd: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    from workflow_helpers import snakemake as run

    return run(cwd, *args, timeout=timeout)


LAUNCHED = ("script", "bomb")  # the cases of the next test run through `snakemake -n`


def test_workflow_cases_stop_before_any_job_with_one_error(tmp_path: Path) -> None:
    """Each hostile profile stops before any job with one line naming the key; nothing is written.
    Launched (`snakemake -n`, within 10 s, no traceback): one bad key and the two bombs, which only a launch
    shows ending before memory is committed; the other keys are asked of the same typed checks."""
    wd = workflow_copy(tmp_path / "wd")
    base = yaml.safe_load((wd / TEST_CONFIG).read_text())
    cases: dict[str, tuple[str, str]] = {}

    def profile(name: str, edit, needle: str) -> None:
        cfg = json.loads(json.dumps(base))
        edit(cfg)
        (wd / f"{name}.yaml").write_text(yaml.safe_dump(cfg))
        cases[name] = (f"{name}.yaml", needle)

    profile("script", lambda c: c["run"].update(encoder=HOSTILE["script"]), "run.encoder: ")
    profile("rest", lambda c: c["run"].update(encoder=HOSTILE["rest"]), "run.encoder: ")
    profile("fidelity", lambda c: c["report"].update(contexts=[HOSTILE["img"]]), "report.contexts[0]: ")
    profile("variant", lambda c: c["variants"].update({"inv\n": {}}), "'inv\\n' should not be valid")
    profile("klass", lambda c: c["datasets"]["digits"].update(normal_classes=["0\n"]), "'0\\n' should not be valid")
    profile("size", lambda c: c["run"].update(image_size=100000), "at most 512 px")
    (wd / "bomb.yaml").write_text("\n".join([*BOMB_LINES, (wd / TEST_CONFIG).read_text(), "x: *a8", ""]))
    cases["bomb"] = ("bomb.yaml", "the profile expands to more than 100,000 values")
    for name, (file, needle) in cases.items():
        if name not in LAUNCHED:  # the typed checks a launch makes before its first rule (one line, no launch)
            line = profile_error(yaml.safe_load((wd / file).read_text()))
            assert line.startswith("invalid workflow config: ") and needle in line, (name, line)
            continue
        t0 = time.monotonic()
        res = snakemake(wd, "-n", "--configfile", file)
        out = res.stdout + res.stderr
        assert res.returncode == 1 and needle in out, (name, out[-2000:])
        assert "Job stats" not in out and "Traceback" not in out, (name, out[-2000:])
        assert time.monotonic() - t0 < 10 + 10, name  # Snakemake's own start-up is ~4 s of it
    t0 = time.monotonic()
    res = snakemake(wd, "-n", "--configfile", TEST_CONFIG, "--config", f"data_dir={BOMB_FLOW}")
    out = res.stdout + res.stderr
    assert res.returncode == 1 and "the profile expands to more than 100,000 values" in out, out[-2000:]
    assert time.monotonic() - t0 < 20
    assert not (wd / "results").exists()


def live_elements(page: str) -> dict[str, int]:
    """How many script, link, image and frame elements an HTML page opens, and how many of its tags
    carry a ``javascript:`` URL (text that shows one, escaped, is no element and is not counted)."""
    counts = {tag: len(re.findall(rf"<{tag}\b", page, re.I)) for tag in ("script", "a", "img", "iframe")}
    counts["javascript: in a tag"] = len(re.findall(r"<[^<>]*javascript:", page, re.I))
    return counts


@pytest.mark.slow  # its set-up builds labelled_reports: two workflow runs and reports, 163 s (issue 58, item 6)
def test_the_report_and_markdown_tables_hold_no_tag_or_link_a_hostile_label_brings(
    labelled_reports: dict[str, Any], tmp_path: Path
) -> None:
    """A record label holding </script>, <img onerror> and a reST javascript: link (the session's
    ``labelled_reports``, tests/conftest.py): the HTML report has no script element or link more than with a
    plain label, the embedded table pages escape it, the .md table holds no raw tag; the same strings in
    the profile stop it before any job."""
    plain, hostile = labelled_reports["plain"], labelled_reports["hostile"]
    assert "Plain label" in plain["md"]
    assert live_elements(hostile["page"]) == live_elements(plain["page"])
    table = hostile["files"]["natural_summary.html"]
    assert live_elements(table) == live_elements(plain["files"]["natural_summary.html"])
    assert "<img" not in table and "&lt;img src=x onerror=alert(2)&gt;" in table
    md = hostile["md"]
    assert "&lt;img src=x onerror=alert(2)>" in md and "&lt;/script>" in md
    assert not re.search(r"<[A-Za-z/]", md), md
    for value in HOSTILE.values():  # the same strings in the profile: refused before any job (the typed checks)
        cfg = yaml.safe_load(ONE_RUN_PROFILE)
        cfg["run"]["encoder"] = value
        assert "run.encoder: " in profile_error(cfg), value
    wd = workflow_copy(tmp_path / "wd")  # and `snakemake --report` itself stops on that line, writing no report
    cfg = yaml.safe_load(ONE_RUN_PROFILE)
    cfg["run"]["encoder"] = HOSTILE["script"]
    (wd / "script.yaml").write_text(yaml.safe_dump(cfg))
    res = snakemake(wd, "--report", "script.html", "--configfile", "script.yaml")
    out = res.stdout + res.stderr
    assert res.returncode == 1 and "run.encoder: " in out and not (wd / "script.html").exists(), out[-2000:]
