"""con2.grid.experiments: the grid of a profile, each run's resolved config (written once, read by
``con2 train --config``), and ``con2 train --replace-stale``, the train rule's command."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from con2 import paths as P
from con2.config import RUNTIME_KEYS, load_config, make_config
from con2.errors import ConfigError
from con2.grid import experiments as E
from con2.grid.workflow_grid import check_report, workflow_grid

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "workflow" / "config"


def load_profile(name: str) -> dict:
    return yaml.safe_load((CONFIGS / f"{name}.yaml").read_text())


def test_grid_expands_the_paper_profile() -> None:
    from con2.data import normal_classes

    runs = E.expand_grid(load_profile("paper"), normal_classes)
    keys = [r.key for r in runs]
    assert len(keys) == len(set(keys))
    # 6 medical (1 class) + CIFAR-10 (10) + CIFAR-100 (20) + ImageNet30 (30) + 2 + 2 = 70 (dataset, class) pairs
    pairs = {(r.dataset, r.normal_class) for r in runs}
    assert len(pairs) == 70
    main = [r for r in runs if "main" in r.experiments]
    assert len(main) == 70 * 4 * 3  # con2 + simclr + csi + unicon_ha, 3 seeds
    cifar = next(r for r in runs if r.dataset == "cifar10")
    assert cifar.config["batch_size"] == 512 and cifar.config["image_size"] == 32 and cifar.config["epochs"] == 2048
    assert cifar.data_size == 32
    k3 = next(r for r in runs if r.variant == "k3")
    assert k3.config["params"] == {"n_contexts": 3} and k3.config["tta"] == 42
    assert E.data_targets(runs) == sorted({(r.dataset, r.config["image_size"]) for r in runs})


@pytest.mark.parametrize("profile", ["test", "default", "paper"])
def test_every_profile_runs_con2_best_on_every_class_of_its_context_tables(profile: str) -> None:
    """CON2 (Best): one variant, `contexts: [best]`, whose context each run chooses from its normal
    training images (con2.methods.contexts; the record's metrics.chosen_context): the grid keeps the marker,
    so a run's config hash never depends on data read while the DAG is built."""
    from con2.data import normal_classes

    cfg = load_profile(profile)
    runs = E.expand_grid(cfg, normal_classes)
    best = [r for r in runs if r.variant == "best"]
    assert best and all(r.method == "con2" and r.config["params"] == {"contexts": ["best"]} for r in best)
    for run in best[:1]:
        E.check_method(run.run_config)
    flips = {(r.dataset, r.normal_class, r.seed) for r in runs if r.variant == "flip"}
    assert flips <= {(r.dataset, r.normal_class, r.seed) for r in best}  # beside flip wherever flip runs
    assert "best" in cfg["report"]["contexts"]


def test_resolved_config_is_complete_and_round_trips_through_con2_train(tmp_path: Path) -> None:
    cfg = {
        "seeds": [1],
        "run": {"epochs": 2, "image_size": 16},
        "datasets": {"digits": {"normal_classes": ["3"], "run": {"width": 8}}},
        "variants": {"flip": {"params": {"contexts": ["flip"], "temperature": 0.2}}},
        "experiments": {"e": {"datasets": ["digits"], "methods": {"con2": ["flip"]}}},
    }
    (run,) = E.expand_grid(cfg, lambda d: ["0"])
    assert run.key == "digits/3/con2/flip/seed1"
    assert run.config_file == f"results/configs/digits/3/con2/flip/seed1.{run.config_hash}.yaml"
    # every RunConfig key but the runtime ones, defaults filled in (the default lr, tta...)
    assert set(run.config) == set(make_config({}).to_dict()) - set(RUNTIME_KEYS)
    assert run.config["lr"] == make_config({}).lr and run.config["width"] == 8
    path = tmp_path / run.config_file
    E.write_run_config(path, run.config)
    assert E.read_run_config(path) == run.config
    rc = load_config(path, ["data_dir=/elsewhere", "device=cpu", "threads=2", "progress=false"])  # what the rule passes
    assert (rc.dataset, rc.normal_class, rc.seed, rc.width, rc.epochs) == ("digits", "3", 1, 8, 2)
    assert rc.params == {"contexts": ["flip"], "temperature": 0.2}
    assert rc.config_hash() == run.config_hash  # runtime keys never change the hash
    assert (rc.data_dir, rc.threads, rc.progress) == ("/elsewhere", 2, False)


def test_every_runtime_key_is_a_top_level_key_of_the_profile_schema() -> None:
    """A runtime key is set per machine at a profile's top level: the schema must accept each one."""
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert set(RUNTIME_KEYS) <= set(schema["properties"]), set(RUNTIME_KEYS) - set(schema["properties"])
    assert "checkpoint_seconds" in RUNTIME_KEYS and "compile" in RUNTIME_KEYS


def test_grid_errors_name_the_key() -> None:
    cfg = {
        "seeds": [0],
        "run": {},
        "datasets": {"digits": {}},
        "variants": {},
        "experiments": {"e": {"datasets": ["digits"], "methods": {"con2": ["nope"]}}},
    }
    with pytest.raises(E.GridError, match="experiments.e.methods.con2: variant 'nope'"):
        E.expand_grid(cfg, lambda d: ["0"])
    cfg["experiments"]["e"] = {"datasets": ["cifar"], "methods": {"con2": ["default"]}}
    with pytest.raises(E.GridError, match="'cifar' is not a key of `datasets`"):
        E.expand_grid(cfg, lambda d: ["0"])
    cfg["experiments"]["e"] = {"datasets": ["digits"], "methods": {"con2": ["default"]}}
    cfg["run"] = {"epoch": 3}
    with pytest.raises(
        E.GridError, match=r"dataset 'digits', method 'con2', variant 'default': unknown config key.*'epoch'"
    ):
        E.expand_grid(cfg, lambda d: ["0"])


@pytest.mark.parametrize("where", ["run", "dataset", "variant"])
def test_runtime_keys_belong_to_the_top_level(where: str) -> None:
    cfg = {
        "seeds": [0],
        "run": {},
        "datasets": {"digits": {}},
        "variants": {"v": {}},
        "experiments": {"e": {"datasets": ["digits"], "methods": {"con2": ["v"]}}},
    }
    block = {
        "run": cfg["run"],
        "dataset": cfg["datasets"]["digits"].setdefault("run", {}),
        "variant": cfg["variants"]["v"],
    }
    block[where]["progress"] = False
    with pytest.raises(E.GridError, match=r"progress.*runtime key.*top level"):
        E.expand_grid(cfg, lambda d: ["0"])


def test_grid_extra_methods_and_filters() -> None:
    cfg = {
        "seeds": [0, 1],
        "run": {},
        "datasets": {"a": {}, "b": {}},
        "only_datasets": "a",
        "experiments": {
            "e": {"datasets": ["a", "b"], "methods": {"con2": ["default"]}, "extra_methods": True},
            "f": {"datasets": ["a"], "methods": {"con2": ["default"]}},
        },
        "extra_methods": ["toy"],
    }
    runs = E.expand_grid(cfg, lambda d: ["x"])
    assert sorted(r.key for r in runs) == [
        "a/x/con2/default/seed0",
        "a/x/con2/default/seed1",
        "a/x/toy/default/seed0",
        "a/x/toy/default/seed1",
    ]
    assert next(r for r in runs if r.method == "con2").experiments == ("e", "f")


def test_record_key_of_a_path() -> None:
    assert P.record_key("results/runs/digits/0/con2/invert/seed2/record.json") == "digits/0/con2/invert/seed2"
    assert P.record_key("/x/results/runs/a/b/c/d/seed0/record.json") == "a/b/c/d/seed0"
    assert P.record_key("results/runs/digits/0/con2/record.json") is None


def test_check_method_names_a_bad_param_before_any_training() -> None:
    parsed = E.resolve_config({"dataset": "digits", "params": {"contexts": ["invert"]}})
    E.check_method(parsed)
    good = E.config_values(parsed)
    with pytest.raises(ConfigError, match="temprature"):
        E.check_method({**good, "params": {"temprature": 0.1}})
    with pytest.raises(ConfigError, match="'tta'"):  # 40 views over 3 contexts: the method refuses when built
        E.check_method({**good, "params": {"n_contexts": 3}, "tta": 40})
    with pytest.raises(ConfigError, match="unknown method 'nope'"):
        E.check_method({**good, "method": "nope"})


# ----------------------------------------------------------------------------- one parse per run
def count_parses(monkeypatch: pytest.MonkeyPatch) -> tuple[Counter, list]:
    """Wrap con2.config.make_config and load_config (and every module's own binding of them) with
    counters: ``(parses by run identity, load_config calls)``."""
    from con2 import config as C

    make, load = C.make_config, C.load_config
    parses: Counter = Counter()
    loads: list = []

    def counted_make(values: dict) -> object:
        parses[tuple(str(values.get(k)) for k in P.IDENTITY_KEYS)] += 1
        return make(values)

    def counted_load(*args: object, **kwargs: object) -> object:
        loads.append(args)
        return load(*args, **kwargs)  # its make_config call is counted too

    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in ("con2", "baselines"):
            for attr, original, counted in (("make_config", make, counted_make), ("load_config", load, counted_load)):
                if getattr(module, attr, None) is original:
                    monkeypatch.setattr(module, attr, counted)
    return parses, loads


def test_the_workflow_parses_each_run_config_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the Snakefile does at parse time on the paper profile (expand the grid, check every
    name, class and the report block, every method's weights and params, hash every run for the
    two aggregation rules) parses each run's config once and writes nothing (the run_config jobs
    write the configs, under Snakemake's lock); a config file written from a run holds its hash."""
    from con2.data import normal_classes
    from con2.report.artefacts import TABLES
    from con2.workflow.status import unknown_class

    cfg = load_profile("paper")
    own_rules = [p.stem for p in (ROOT / "workflow" / "rules" / "methods").glob("*.smk")]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(E, "_METHODS_CHECKED", set())  # a new process
    parses, loads = count_parses(monkeypatch)
    grid = workflow_grid(cfg, normal_classes, own_rules, bool(cfg["strict"]), unknown_class, TABLES)
    hashes = [grid.hashes(), grid.hashes()]  # rules aggregate and aggregate_scope
    identities = Counter(tuple(str(getattr(r, k)) for k in P.IDENTITY_KEYS) for r in grid.runs)
    assert len(grid.runs) == 1741 and not grid.missing_weights  # 1,671 trained + 70 floor runs (one per class)
    assert parses == identities, ([k for k, n in parses.items() if n > 1][:3], len(parses))
    assert loads == []
    assert hashes[0] == hashes[1] and len(set(hashes[0].values())) > 100
    assert list(tmp_path.iterdir()) == []  # nothing written before Snakemake takes its lock
    some = next(r for r in grid.runs if r.variant == "k3")
    E.write_run_config(some.config_file, some.run_config, check=False)  # what its run_config job does
    assert Path(some.config_file).name == f"seed{some.seed}.{hashes[0][some.key]}.yaml"
    assert load_config(tmp_path / some.config_file).config_hash() == hashes[0][some.key]


# ----------------------------------------------------------------------------- names, classes, report
def small_profile() -> dict:
    return {
        "seeds": [0],
        "run": {},
        "datasets": {"digits": {"normal_classes": ["0"]}},
        "variants": {"v": {}},
        "experiments": {"e": {"datasets": ["digits"], "methods": {"con2": ["v"]}}},
        "report": {"subject": "con2", "natural": ["digits"], "per_class": ["digits"], "pca": ["digits"]},
    }


HOSTILE = [
    "0||touch PWNED;#",
    "../../../../outside/TRAVERSAL",
    "..",
    ".hidden",
    "a b",
    "$(id)",
    "x`id`",
    "-rf",
    "",
    "é",
]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize(
    ("where", "edit"),
    [
        ("datasets.digits.normal_classes", lambda c, v: c["datasets"]["digits"].update(normal_classes=[v])),
        ("datasets", lambda c, v: c["datasets"].update({v: {}})),
        ("variants", lambda c, v: c["variants"].update({v: {}})),
        ("experiments.e.methods", lambda c, v: c["experiments"]["e"]["methods"].update({v: ["v"]})),
    ],
)
def test_every_name_that_becomes_a_path_matches_one_pattern(where: str, edit, value: str) -> None:
    """Issue 16, cases 1-2: a class, dataset, variant or method name that is no safe path component
    and shell word stops the grid, naming the key and the pattern (before any file is written)."""
    cfg = small_profile()
    edit(cfg, value)
    with pytest.raises(
        E.GridError,
        match=rf"^{re.escape(where)}.*{re.escape(repr(value))} is not a valid name.*{re.escape(P.NAME_PATTERN)}",
    ):
        E.expand_grid(cfg, lambda d: ["0"])


def test_the_registry_s_classes_and_negative_seeds_are_checked_too() -> None:
    cfg = small_profile()
    cfg["datasets"]["digits"] = {}  # `all`: the registry's classes
    with pytest.raises(E.GridError, match=r"the registry's normal classes of 'digits'.*'a/b' is not a valid name"):
        E.expand_grid(cfg, lambda d: ["0", "a/b"])
    cfg = small_profile()
    cfg["seeds"] = [-1]
    with pytest.raises(E.GridError, match=r"^seeds: -1 is not a seed"):
        E.expand_grid(cfg, lambda d: ["0"])
    cfg = small_profile()
    cfg["experiments"]["e"]["seeds"] = ["0;x"]
    with pytest.raises(E.GridError, match=r"^experiments.e.seeds: '0;x' is not a seed"):
        E.expand_grid(cfg, lambda d: ["0"])


def test_the_schema_and_the_workflow_use_the_grid_s_one_name_pattern() -> None:
    import jsonschema

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    defs = schema["definitions"]
    assert defs["name"]["pattern"] == defs["class_name"]["pattern"] == P.NAME_PATTERN == f"^{P.NAME_REGEX}$"
    for name in ("digits", "muffin-vs-chihuahua", "aquatic_mammals", "0+1", "NORMAL", "k3"):
        assert P.is_name(name)
    validator = jsonschema.Draft202012Validator(schema)
    for profile in ("default", "paper", "test"):
        assert not list(validator.iter_errors(load_profile(profile))), profile
    edits = [
        (["datasets", "digits", "normal_classes", 0], lambda c, v: c["datasets"]["digits"].update(normal_classes=[v])),
        (["report", "per_class", 0], lambda c, v: c["report"].update(per_class=[v])),
        (["report", "subject"], lambda c, v: c["report"].update(subject=v)),
        (["only_datasets"], lambda c, v: c.update(only_datasets=f"digits,{v}")),
        (
            ["experiments", "main", "normal_classes", 0],
            lambda c, v: c["experiments"]["main"].update(normal_classes=[v]),
        ),
    ]
    for value in HOSTILE:
        for path, edit in edits:
            cfg = load_profile("test")
            edit(cfg, value)
            errors = list(validator.iter_errors(cfg))
            assert [list(e.absolute_path) for e in errors] == [path], (value, path, [e.message for e in errors])
            assert errors[0].validator == "pattern"
    snakefile = (ROOT / "Snakefile").read_text()
    for wildcard in ("dataset", "normal_class", "method", "variant", "scope"):
        assert f"    {wildcard}=P.NAME_REGEX," in snakefile


def test_a_class_the_dataset_lacks_fails_naming_the_key() -> None:
    """Issue 16, case 15: digits has the classes 0-9; `normal_classes: ["11"]` stops the grid."""
    from con2.data import normal_classes
    from con2.workflow.status import unknown_class

    cfg = small_profile()
    cfg["datasets"]["digits"]["normal_classes"] = ["0", "11"]
    with pytest.raises(
        E.GridError, match=r"^datasets.digits.normal_classes: digits: unknown normal class '11'; classes: 0, 1"
    ):
        E.expand_grid(cfg, normal_classes, unknown_class)
    assert unknown_class("digits", "3") is None and unknown_class("cifar10", "cat") is None
    assert unknown_class("cifar10", "3") is None and unknown_class("digits", "0+1") is None  # an index, a '+'-list
    assert "unknown normal class 'kat'" in unknown_class("cifar10", "kat")
    assert [
        r.normal_class
        for r in E.expand_grid(
            {**cfg, "datasets": {"digits": {"normal_classes": ["0", "9"]}}}, normal_classes, unknown_class
        )
    ] == ["0", "9"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.update(subject="con3"), r"report.subject: 'con3' is not a method of the experiments.*\(con2\)"),
        (
            lambda r: r.update(per_class=["digitz"]),
            r"report.per_class: 'digitz' is not a key of `datasets`.*\(digits\)",
        ),
        (lambda r: r.update(pca=["cifar10"]), r"report.pca: 'cifar10' is not a key of `datasets`"),
        (lambda r: r.update(medical=["breastmnist"]), r"report.medical: 'breastmnist'"),
        (lambda r: r.update(natural=["x"]), r"report.natural: 'x'"),
        (
            lambda r: r.update(main_variants={"con2": "nope"}),
            r"report.main_variants.con2: 'nope' is not a key of `variants`",
        ),
        (lambda r: r.update(scopes={"fidelity": ["nope"]}), r"report.scopes.fidelity: 'nope' is not an experiment"),
        (lambda r: r.update(scopes={"tabel1": ["e"]}), r"report.scopes: 'tabel1' is not a table"),
        (
            lambda r: r.update(
                fidelity={
                    "datasets": ["digits"],
                    "rows": [{"label": "a", "method": "simclr", "variant": "v", "score": "knn"}],
                }
            ),
            r"report.fidelity.rows\[0\].method: 'simclr' is not a method",
        ),
    ],
)
def test_the_report_block_names_only_what_the_profile_has(edit, message: str) -> None:
    """Issue 16, case 9: an unknown subject or dataset in `report:` built empty tables without a word."""
    from con2.report.artefacts import TABLES

    cfg = small_profile()
    check_report(cfg, TABLES)
    edit(cfg["report"])
    with pytest.raises(E.GridError, match=message):
        check_report(cfg, TABLES)


def test_the_shipped_profiles_pass_the_report_check() -> None:
    from con2.report.artefacts import TABLES

    for profile in ("default", "paper", "test"):
        check_report(load_profile(profile), TABLES)


def test_records_on_disk_counts_only_run_directories(tmp_path: Path) -> None:
    """Issue 16, case 6: a copied `seed0.bak` (or a record elsewhere under results/runs) is never a seed."""
    root = tmp_path / "results" / "runs"
    good = [root / "digits/0/con2/invert/seed0/record.json", root / "digits/0/con2/invert/seed12/record.json"]
    other = [
        root / "digits/0/con2/invert/seed0.bak/record.json",
        root / "digits/0/con2/invert/seed0 (copy)/record.json",
        root / "digits/0/con2/invert/seedx/record.json",
        root / "digits/0/con2/record.json",
        root / "digits/0/con2/invert/seed0/old/record.json",
        root / "dig its/0/con2/invert/seed0/record.json",
    ]
    for p in good + other:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("{}")
    runs, others = P.records_on_disk(root)
    assert runs == sorted(map(str, good)) and sorted(others) == sorted(map(str, other))
    assert P.record_key(good[1]) == "digits/0/con2/invert/seed12"
    assert all(P.record_key(p) is None for p in other)


# ----------------------------------------------------------------------------- con2 train --replace-stale
def _train(args: list[str]) -> int:
    from con2.cli.main import main

    return main(["train", *args])


def test_replace_stale_retrains_a_run_dir_of_another_config(
    tmp_path: Path, tiny: dict, capsys: pytest.CaptureFixture
) -> None:
    run_dir = tmp_path / "run"
    first = {**tiny, "epochs": 1}
    cfg_a, cfg_b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    cfg_a.write_text(yaml.safe_dump(first))
    cfg_b.write_text(yaml.safe_dump({**first, "lr": 3e-3}))
    assert _train(["--config", str(cfg_a), "--run-dir", str(run_dir), "--replace-stale"]) == 0
    hash_a = json.loads((run_dir / "record.json").read_text())["config_hash"]
    capsys.readouterr()
    # same config: nothing stale, the finished run stands
    assert _train(["--config", str(cfg_a), "--run-dir", str(run_dir), "--replace-stale"]) == 0
    assert "already complete" in capsys.readouterr().out
    # another config: one line names what is stale, then the run trains afresh under the new hash
    assert _train(["--config", str(cfg_b), "--run-dir", str(run_dir), "--replace-stale"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(
        "removing checkpoint.pt and record.json, written under another configuration" in line
        and "differing keys: lr" in line
        for line in out
    ), out
    rec = json.loads((run_dir / "record.json").read_text())
    assert rec["config_hash"] != hash_a and rec["config_hash"] == load_config(cfg_b).config_hash()
    assert rec["resumed_from_epoch"] == 0  # not resumed from the old checkpoint


def test_without_replace_stale_a_stale_checkpoint_is_still_refused(tmp_path: Path, tiny: dict) -> None:
    run_dir = tmp_path / "run"
    cfg_a, cfg_b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    cfg_a.write_text(yaml.safe_dump({**tiny, "epochs": 1}))
    cfg_b.write_text(yaml.safe_dump({**tiny, "epochs": 1, "lr": 3e-3}))
    assert _train(["--config", str(cfg_a), "--run-dir", str(run_dir)]) == 0
    (run_dir / "record.json").unlink()  # killed after its last checkpoint
    assert _train(["--config", str(cfg_b), "--run-dir", str(run_dir)]) == 2  # existing behaviour
    assert (run_dir / "checkpoint.pt").is_file() and not (run_dir / "record.json").exists()
    assert _train(["--config", str(cfg_b), "--run-dir", str(run_dir), "--replace-stale"]) == 0
    assert json.loads((run_dir / "record.json").read_text())["config_hash"] == load_config(cfg_b).config_hash()
