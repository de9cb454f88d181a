"""`con2 plan`: the cost arithmetic on a tiny profile, checked against numbers worked out by hand."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
import yaml

from con2.cli.main import main
from con2.data import normal_classes
from con2.data.cache import cache_dir
from con2.errors import ConfigError
from con2.grid import cost_tables, plan
from con2.grid.experiments import drop_runs_without_weights, expand_grid

ROOT = Path(__file__).resolve().parents[2]

# Two digit classes, 600 epochs at N = 50; CON2 (invert: 2 contexts, 4 views an image; k3: 3
# contexts, 6 views), SimCLR (2 views); one variant at 32 px, whose rate is extrapolated.
PROFILE = {
    "seeds": [0, 1],
    "run": {"image_size": 16, "width": 8, "epochs": 600, "batch_size": 50, "tta": 6},
    "datasets": {"digits": {"normal_classes": ["0", "1"]}},
    "variants": {
        "invert": {"params": {"contexts": ["invert"]}},
        "k3": {"params": {"n_contexts": 3}},
        "big": {"params": {"contexts": ["invert"]}, "image_size": 32},
    },
    "experiments": {
        "main": {"datasets": ["digits"], "methods": {"con2": ["invert"], "simclr": ["default"]}},
        "ablation": {"datasets": ["digits"], "normal_classes": ["0"], "methods": {"con2": ["invert", "k3", "big"]}},
    },
}
SIZES = "dataset,normal_class,n_train,source\ndigits,0,120,by hand\ndigits,1,101,by hand\n"
# 10 images/s of 4 views each: 40 views/s at 16 px, width 8, N = 50
THROUGHPUT = "device,image_size,width,batch_size,views_per_image,compile,images_per_s,source\n"
THROUGHPUT += "Test GPU,16,8,50,4,false,10.0,by hand\n"
PAPER = "method,dataset,gpu_hours_per_run\nCON2,digits,2.0\n"


@pytest.fixture
def tables(tmp_path: Path) -> dict[str, Path]:
    paths = {"sizes": tmp_path / "sizes.csv", "throughput": tmp_path / "tp.csv", "paper": tmp_path / "paper.csv"}
    for name, text in (("sizes", SIZES), ("throughput", THROUGHPUT), ("paper", PAPER)):
        paths[name].write_text(text)
    return paths


def test_costs_of_a_tiny_profile_match_the_hand_computed_numbers(tables: dict[str, Path]) -> None:
    runs = expand_grid(PROFILE, normal_classes)
    sizes, _ = cost_tables.train_sizes(runs, cost_tables.read_sizes(tables["sizes"]), None)
    rates = plan.device_rates(cost_tables.read_rates(tables["throughput"]), "test gpu", False)
    rate_of = {s: plan.estimate_rate(rates, *s) for s in {plan.setting_of(r.config) for r in runs}}
    costs = plan.cost_runs(runs, sizes, rate_of, cost_tables.paper_hours_per_run(tables["paper"], runs))
    by_key = {c.key: c for c in costs}

    # class 0: 120 images -> 2 steps of 50 -> 100 images an epoch -> 60,000 in 600 epochs;
    # class 1: 101 images -> also 2 steps -> 60,000.
    assert by_key["digits/0/con2/invert/seed0"].images == 60_000
    assert by_key["digits/1/simclr/default/seed1"].images == 60_000
    # views: CON2 invert 4 an image, k3 6, SimCLR 2
    assert by_key["digits/0/con2/invert/seed0"].views == 240_000
    assert by_key["digits/0/con2/k3/seed0"].views == 360_000
    assert by_key["digits/1/simclr/default/seed0"].views == 120_000
    # hours at 40 views/s: 240,000 / 40 / 3600 = 5/3; k3 2.5; SimCLR 5/6
    assert math.isclose(by_key["digits/0/con2/invert/seed0"].hours, 5 / 3)
    assert math.isclose(by_key["digits/0/con2/k3/seed0"].hours, 2.5)
    assert math.isclose(by_key["digits/1/simclr/default/seed0"].hours, 5 / 6)
    # 32 px from the 16 px measurement: 40 x (16/32)^2 = 10 views/s -> 240,000 / 10 / 3600
    assert math.isclose(by_key["digits/0/con2/big/seed0"].hours, 240_000 / 10 / 3600)
    # the paper's 2 GPU-h per CON2 run on digits, none for SimCLR
    assert by_key["digits/0/con2/k3/seed0"].paper_hours == 2.0
    assert by_key["digits/0/simclr/default/seed0"].paper_hours is None

    totals = {s.name: s for s in plan.per_experiment(costs)}
    # main: 2 classes x 2 seeds x (CON2 + SimCLR) = 8 runs, 8 x 60,000 images,
    # 4 x 240,000 + 4 x 120,000 views, 4 x 5/3 + 4 x 5/6 = 10 h; the paper covers the 4 CON2 runs: 8 h
    main = totals["main"]
    assert (main.runs, main.images, main.views) == (8, 480_000, 1_440_000)
    assert math.isclose(main.hours, 10.0)
    assert (main.runs_with_paper_hours, main.paper_hours) == (4, 8.0)
    assert math.isclose(main.hours_on_paper_runs, 4 * 5 / 3)
    # ablation: class 0 x 2 seeds x (invert, k3, big) = 6 runs; invert is also main's (counted in both)
    abl = totals["ablation"]
    assert (abl.runs, abl.images, abl.views) == (6, 360_000, 2 * (240_000 + 360_000 + 240_000))
    assert math.isclose(abl.hours, 2 * (5 / 3 + 2.5 + 240_000 / 10 / 3600))
    # total: unique runs: 8 + 4 (k3, big on class 0) = 12
    total = totals["total"]
    assert total.runs == 12 and total.images == 12 * 60_000
    assert math.isclose(total.hours, 10.0 + 2 * (2.5 + 240_000 / 10 / 3600))


def test_con2_plan_prints_the_table(tables: dict[str, Path], tmp_path: Path, capsys) -> None:
    profile = tmp_path / "tiny.yaml"
    profile.write_text(yaml.safe_dump(PROFILE))
    args = ["plan", "--configfile", str(profile), "--device", "test gpu"]
    args += ["--throughput", str(tables["throughput"]), "--sizes", str(tables["sizes"])]
    assert main([*args, "--paper-hours", str(tables["paper"])]) == 0
    out = capsys.readouterr().out
    main_line = next(line for line in out.splitlines() if line.startswith("main "))
    assert main_line.split()[:5] == ["main", "8", "480,000", "1,440,000", "10.0"]
    assert "4 runs: 6.67 / 8" in main_line
    assert "from 16 px x (16/32)^2 pixels" in out


def test_rate_extrapolation_scales_by_pixels_then_width() -> None:
    rates = [
        cost_tables.Rate("GPU", 224, 64, 64, 4, False, 3000.0, "a"),
        cost_tables.Rate("GPU", 32, 64, 512, 4, False, 16000.0, "b"),
    ]
    assert plan.estimate_rate(rates, 224, 64, 64).views_per_s == 12000.0
    est = plan.estimate_rate(rates, 128, 64, 128)  # nearer 224 than 32 (log scale): 12000 x (224/128)^2
    assert math.isclose(est.views_per_s, 12000.0 * (224 / 128) ** 2) and "224 px" in est.how
    est = plan.estimate_rate(rates, 32, 32, 512)  # width 32: 64000 x (64/32)^2
    assert math.isclose(est.views_per_s, 64000.0 * 4) and "(64/32)^2 width" in est.how


def test_the_throughput_table_is_the_measured_json_lines() -> None:
    measured = ROOT / "benchmarks" / "measured"
    derived = []
    for path in sorted(measured.glob("*.jsonl")):
        derived += cost_tables.rates_from_jsonl(path.read_text().splitlines(), path.name)
    table = cost_tables.read_rates(
        cost_tables.THROUGHPUT_CSV
    )  # package data (con2/resources), derived from these lines
    assert len(table) == len(derived) > 0
    for row, ref in zip(table, derived):
        assert (row.device, row.image_size, row.width, row.batch_size, row.views_per_image, row.compile) == (
            ref.device,
            ref.image_size,
            ref.width,
            ref.batch_size,
            ref.views_per_image,
            ref.compile,
        )
        assert abs(row.images_per_s - ref.images_per_s) < 0.06 and row.source == ref.source


def test_every_paper_dataset_has_a_training_set_size() -> None:
    paper = yaml.safe_load((ROOT / "workflow" / "config" / "paper.yaml").read_text())
    runs = expand_grid(paper, normal_classes)
    sizes, where = cost_tables.train_sizes(runs, cost_tables.read_sizes(cost_tables.SIZES_CSV), None)
    assert {r.dataset for r in runs} == set(where) and all(n > 0 for n in sizes.values())


@pytest.mark.parametrize(
    "args, message",
    [
        (  # every device of the committed throughput table, read here with the csv module, in name order
            ["--device", "a100"],
            "no throughput measured on a device matching 'a100'; measured: "
            + ", ".join(
                sorted({row["device"] for row in csv.DictReader(cost_tables.THROUGHPUT_CSV.read_text().splitlines())})
            ),
        ),
        (["--configfile", "no/such.yaml"], "cannot read --configfile no/such.yaml: No such file or directory"),
    ],
)
def test_bad_input_is_one_error_line(args: list[str], message: str, capsys) -> None:
    base = {"--configfile": str(ROOT / "workflow" / "config" / "paper.yaml"), "--device": "h200"}
    base.update(dict(zip(args[::2], args[1::2])))
    assert main(["plan", *[x for kv in base.items() for x in kv]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"con2: error: {message}"]


def test_a_missing_size_names_the_table(tables: dict[str, Path]) -> None:
    seven = {**PROFILE, "datasets": {"digits": {"normal_classes": ["7"]}}}
    runs = expand_grid({**seven, "experiments": {"main": PROFILE["experiments"]["main"]}}, normal_classes)
    with pytest.raises(ConfigError, match="no training-set size for digits class 7.*train_set_sizes.csv"):
        cost_tables.train_sizes(runs, cost_tables.read_sizes(tables["sizes"]), None)


def test_a_prepared_split_manifest_gives_the_size(tables: dict[str, Path], tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CON2_CACHE_DIR", str(tmp_path / "cache"))  # never the user's own cache
    splits = cache_dir(tmp_path, "digits", 16) / "splits"
    splits.mkdir(parents=True)
    (splits / "0__seed0.json").write_text('{"n_train": 77}')  # class 0 prepared; class 1 only in the table
    runs = expand_grid(PROFILE, normal_classes)
    sizes, where = cost_tables.train_sizes(runs, cost_tables.read_sizes(tables["sizes"]), tmp_path)
    assert sizes[("digits", "0")] == 77 and sizes[("digits", "1")] == 101
    assert where["digits"] == "split manifest of the prepared data"


def test_a_dataset_without_a_size_is_left_out_and_named(tables: dict[str, Path], tmp_path: Path, capsys) -> None:
    """As the workflow skips a dataset it cannot have, con2 plan plans the rest and says what it left out."""
    seven = {**PROFILE, "datasets": {**PROFILE["datasets"], "pneumoniamnist": {"normal_classes": ["0"]}}}
    seven["experiments"] = {"main": {**PROFILE["experiments"]["main"], "datasets": ["digits", "pneumoniamnist"]}}
    profile = tmp_path / "two.yaml"
    profile.write_text(yaml.safe_dump(seven))
    args = ["plan", "--configfile", str(profile), "--device", "test gpu", "--data-dir", str(tmp_path / "none")]
    args += ["--throughput", str(tables["throughput"]), "--sizes", str(tables["sizes"])]
    assert main([*args, "--paper-hours", str(tables["paper"])]) == 0
    out = capsys.readouterr().out.splitlines()
    left = [line for line in out if line.startswith("left out: ")]
    assert len(left) == 1 and left[0].startswith("left out: pneumoniamnist (no training-set size for pneumoniamnist")
    assert next(line for line in out if line.startswith("main ")).split()[1] == "8"  # digits' runs only
    only = {**seven, "experiments": {"main": {**seven["experiments"]["main"], "datasets": ["pneumoniamnist"]}}}
    profile.write_text(yaml.safe_dump(only))
    assert main([*args, "--paper-hours", str(tables["paper"])]) == 2
    assert capsys.readouterr().err.startswith("con2: error: nothing to plan: no training-set size for pneumoniamnist")


def test_con2_plan_defaults_to_the_default_profile(capsys, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # the default profile is the checkout's, read from its root
    assert main(["plan"]) == 0
    out = capsys.readouterr().out
    default = yaml.safe_load((ROOT / "workflow" / "config" / "default.yaml").read_text())
    assert plan.DEFAULT_PROFILE == Path("workflow/config/default.yaml") and (ROOT / plan.DEFAULT_PROFILE).is_file()
    left_out = {line.split()[2] for line in out.splitlines() if line.startswith("left out: ")}  # a dataset, or a count
    kept, _ = drop_runs_without_weights(expand_grid(default, normal_classes))  # as the workflow: weights on disk
    runs = [r for r in kept if r.dataset not in left_out]
    assert out.splitlines()[0].startswith(f"{len(runs):,} training runs on one")


def test_a_run_that_trains_nothing_costs_nothing() -> None:
    """max_steps caps the steps (0: the floors and zero-shot baselines): no images, no views, 0.0 GPU-h, not n/a."""
    assert plan.images_per_run(399, 64, 10) == 10 * (399 // 64) * 64
    assert plan.images_per_run(399, 64, 10, max_steps=7) == 7 * 64
    assert plan.images_per_run(399, 64, 10, max_steps=0) == 0
    assert plan.images_per_run(399, 64, 10, max_steps=1000) == 10 * (399 // 64) * 64


def test_a_new_method_is_priced_by_its_spec_without_touching_the_grid(monkeypatch) -> None:
    """Issue 45, item 4: the plan, the ETA and the job order read a method's cost off its spec: a baseline
    registered from the docs gets an estimate and a planned priority; one whose spec prices nothing gets
    neither (it starts first, so that its pace is known early)."""
    from dataclasses import dataclass

    from con2.methods import MethodSpec, registry
    from con2.workflow.eta import weighed_run

    @dataclass
    class Params:
        rotations: int = 4

    monkeypatch.setattr(registry, "METHODS", dict(registry.all_methods()))
    for name, views in (("rot_views", lambda p: 2 * p.rotations), ("unpriced", None)):
        registry.register_spec(MethodSpec(name, Params, "nowhere:Nothing", ("s",), views_per_image=views))
    assert plan.views_per_image("rot_views", {}) == 8 and plan.views_per_image("rot_views", {"rotations": 2}) == 4
    assert plan.views_per_image("unpriced", {}) is None and plan.views_per_image("no_such_method", {}) is None
    config = {"epochs": 2, "batch_size": 10, "tta": 1, "image_size": 32, "width": 16, "params": {"rotations": 3}}
    priced, unpriced = (
        weighed_run("k", name, config, n_train=100, views_per_s=600.0) for name in ("rot_views", "unpriced")
    )
    images = plan.images_per_run(100, 10, 2)
    assert priced.priced and priced.prior_seconds == pytest.approx(images * 6 / 600.0)
    assert not unpriced.priced and unpriced.prior_seconds is None
    assert plan.views_per_image("con2", {"contexts": ["invert", "flip"]}) == 6  # the built-ins through the same path


def test_plan_marks_studies_and_sums_what_all_trains(tables: dict[str, Path], tmp_path: Path, capsys) -> None:
    """Issue 36, point 9: an experiment of report.scopes is a study (`all` leaves it out): marked, and
    an `all` line sums the runs `snakemake all` trains; names of any length stay in their column."""
    profile = {**PROFILE, "report": {"scopes": {"ablation_table": ["ablation"]}}}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(profile))
    args = ["plan", "--configfile", str(path), "--device", "test gpu"]
    args += ["--throughput", str(tables["throughput"]), "--sizes", str(tables["sizes"])]
    assert main([*args, "--paper-hours", str(tables["paper"])]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(line for line in lines if line.startswith("experiment"))
    assert "hours (Test GPU)" in head and "GPU-h" not in head
    rows = {line.split()[0]: line for line in lines if line.split() and line.split()[0] in ("main", "ablation", "all")}
    assert rows["ablation"].startswith("ablation *") and not rows["main"].startswith("main *")
    assert rows["all"].split()[1] == "8"  # main's 8 runs; ablation's 4 own runs are a study's
    assert len({line.index(" runs") for line in lines if line.startswith("experiment")}) == 1
    ends = {len(rows[k].rstrip()) for k in rows}
    assert len(ends) == 1  # every row ends in the same column
    assert any(line.startswith("* a study (report.scopes)") for line in lines)


def test_hours_keep_two_significant_digits_when_small() -> None:
    assert [plan.hours_text(h) for h in (0, 8.7e-5, 0.0312, 0.5, 3.14159, 12.34, 1349.2)] == [
        "0", "0.000087", "0.031", "0.50", "3.14", "12.3", "1,349.2",
    ]  # fmt: skip


def test_a_cpu_is_matched_by_model_and_how_it_trains() -> None:
    """Issue 36, point 2: the bf16 EPYC's row is no rate for an EPYC without native bf16."""
    from con2.run.provenance import cpu_precision

    row = "AMD EPYC (1 thread(s); bf16 autocast)"
    assert plan.device_matches(row, "AMD EPYC 9B14 (bf16 autocast)")
    assert not plan.device_matches(row, "AMD EPYC 7B13 (float32)")
    assert plan.device_matches(row, "AMD EPYC")  # a name without a precision: the model decides
    assert not plan.device_matches(row, "Intel(R) Xeon(R) Platinum 8481C (bf16 autocast)")
    assert plan.device_matches("NVIDIA H200", "NVIDIA H200 NVL")
    assert cpu_precision("processor: 0\nflags\t: fpu sse avx2 avx512f amx_bf16\n") == "bf16 autocast"
    assert cpu_precision("flags\t: fpu sse avx2 avx512f avx512_vnni\n") == "float32"  # AVX512 alone: emulated
    assert cpu_precision("") == "float32"


def test_runs_whose_weights_are_missing_are_left_out_as_the_workflow_leaves_them(
    tables: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46, point 7: `con2 plan` counted PANDA's runs, which the workflow leaves out without their
    ImageNet weights ("all 58" where 53 ran); now its totals are the runs that can start, and one line
    names the others, their count and why."""
    for var, sub in (("CON2_WEIGHTS_DIR", "w"), ("TORCH_HOME", "torch"), ("HF_HOME", "hf"), ("HOME", "home")):
        monkeypatch.setenv(var, str(tmp_path / sub))  # no model cache holds the weights
    monkeypatch.setenv("CON2_CACHE_DIR", str(tmp_path / "cache"))
    profile = {
        **PROFILE,
        "experiments": {"main": {"datasets": ["digits"], "methods": {"con2": ["invert"], "panda": ["default"]}}},
    }
    lines = plan.plan_lines(profile, "test gpu", tables["throughput"], tables["sizes"], tables["paper"])
    assert lines[0].startswith("4 training runs on one Test GPU")  # CON2's 2 classes x 2 seeds, not PANDA's 4
    main_row = next(line for line in lines if line.startswith("main "))
    assert main_row.split()[1] == "4", main_row
    left = [line for line in lines if line.startswith("left out: ")]
    assert len(left) == 1 and left[0].startswith(
        "left out: 4 run(s) of panda/default, as `snakemake all` leaves them out"
    )
    assert "needs the pretrained weights" in left[0]


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (lambda p: p.update(epochz=3), "epochz"),  # a typo at the top
        (lambda p: p["experiments"]["main"].update(seedz=[1]), "seedz"),
        (lambda p: p.update(seeds="0"), "seeds"),  # a wrong type
    ],
)
def test_con2_plan_refuses_what_the_workflow_s_schema_refuses(tmp_path: Path, capsys, edit, key: str) -> None:
    """Issue 57, item 6: con2 plan planned a profile with unknown keys that Snakemake then refused. One schema
    check for both: con2 plan's line is the workflow's (tests/workflow_helpers.py, profile_error)."""
    from workflow_helpers import profile_error

    profile = yaml.safe_load((ROOT / "workflow" / "config" / "test.yaml").read_text())
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(profile))
    assert main(["plan", "--configfile", str(path), "--device", "h200"]) == 0  # the profile as shipped plans
    capsys.readouterr()
    edit(profile)
    path.write_text(yaml.safe_dump(profile))
    assert main(["plan", "--configfile", str(path), "--device", "h200"]) == 2
    err = capsys.readouterr().err.splitlines()
    workflow = profile_error(profile).removeprefix("invalid workflow config: ")
    assert err == [f"con2: error: --configfile {path}: {workflow}"] and key in err[0], err
