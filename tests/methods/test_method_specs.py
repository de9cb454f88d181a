"""Method specs: listing and validating methods never imports torch; specs agree with their classes."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from con2.config import make_config
from con2.errors import ConfigError
from con2.methods import all_methods, get_method, get_spec, validate_run

REPO = Path(__file__).resolve().parents[2]


def test_listing_and_validating_methods_imports_no_torch():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["con2.methods"]
    code = (
        "import sys\n"
        "from con2.config import make_config\n"
        "from con2.methods import all_methods, validate_run\n"
        "from con2.errors import ConfigError\n"
        f"assert sorted(all_methods()) == {sorted(declared)}, sorted(all_methods())\n"
        "validate_run(make_config({'method': 'con2', 'params': {'loss': 'content_only'}}))\n"
        "validate_run(make_config({'method': 'unicon_ha', 'params': {'soft_form': 'anchor'}}))\n"
        "try:\n"
        "    validate_run(make_config({'method': 'panda', 'params': {'weights': '/nonexistent.pth'}}))\n"
        "except ConfigError as exc:\n"
        "    assert 'no file at /nonexistent.pth' in str(exc), exc\n"
        "heavy = sorted(m for m in ('torch', 'torchvision', 'kornia', 'timm') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert res.returncode == 0, res.stderr


def test_every_builtin_is_an_entry_point_of_pyproject_and_matches_its_class():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["con2.methods"]
    assert set(declared) <= set(all_methods())
    for name in declared:
        spec, cls = get_spec(name), get_method(name)
        assert (cls.name, cls.Params, tuple(cls.score_names)) == (spec.name, spec.Params, spec.score_names)


@pytest.mark.parametrize(
    "settings,message",
    [
        ({"params": {"loss": "contxt_only"}}, "params.loss must be one of"),
        ({"params": {"contexts": ["inverse"]}}, "unknown context 'inverse'"),
        ({"params": {"contexts": ["invert", "flip"]}, "tta": 40}, "cannot be split evenly over 3 contexts"),
        ({"params": {"n_contexts": 9}}, "must lie in 2..8"),
        ({"params": {"context_temperature": 0}}, "params.context_temperature must be > 0"),
        ({"params": {"alpha_schedule": "cosine"}}, "params.alpha_schedule must be one of"),
        ({"params": {"score_reference": "both"}}, "params.score_reference must be one of"),
        ({"params": {"temprature": 0.1}}, "unknown params \\['temprature'\\]"),
        ({"method": "simclr", "params": {"k": 0}}, "params.k must be >= 1"),
        ({"method": "csi", "params": {"samples": -2}}, "params.samples must be >= 0"),
    ],
)
def test_specs_check_params_before_anything_is_built(settings, message):
    with pytest.raises(ConfigError, match=message):
        validate_run(make_config({"method": "con2", **settings}))


def test_context_names_of_the_spec_are_the_augmentations():
    from con2.methods.con2_spec import CONTEXT_NAMES
    from con2.transforms.augment import BASE_CONTEXTS

    assert set(CONTEXT_NAMES) == set(BASE_CONTEXTS)


def test_the_card_names_labels_paper_rows_and_tags():
    spec = get_spec("con2")
    params = validate_run(make_config({"method": "con2", "params": {"contexts": ["flip"], "loss": "content_only"}}))
    card = spec.card(params)
    assert card["label"] == "CON2" and card["paper_rows"]["nnd"] == ["CON2", "NND"]
    assert card["tags"] == {"contexts": "flip", "n_contexts": 2, "loss": "content_only"}
    k4 = spec.card(validate_run(make_config({"method": "con2", "params": {"n_contexts": 4}})))
    assert k4["tags"]["contexts"] == "k4" and k4["tags"]["n_contexts"] == 4
    assert get_spec("simclr").card(validate_run(make_config({"method": "simclr"})))["paper_rows"] == {
        "knn": ["SimCLR", ""],
        "ssd": ["SSD", ""],
    }


def test_a_method_sees_its_settings_not_the_run_config(tiny):
    from dataclasses import fields

    from con2.config import RUNTIME_KEYS
    from con2.methods import build_method
    from con2.methods.spec import MethodSettings

    cfg = make_config({**tiny, "method": "con2", "data_dir": "/somewhere", "lr": 0.1, "split_seed": 7})
    method = build_method(cfg)
    assert isinstance(method.cfg, MethodSettings) and method.cfg == MethodSettings.from_config(cfg)
    names = {f.name for f in fields(MethodSettings)}
    harness_only = {
        "data_dir",
        "device",
        "threads",
        "dataset",
        "normal_class",
        "split_seed",
        "lr",
        "batch_size",
        "params",
    }
    assert not names & (harness_only | set(RUNTIME_KEYS) - {"eval_batch_size", "nn_chunk"})
    assert method.cfg.image_size == tiny["image_size"] and method.cfg.tta == tiny["tta"]
