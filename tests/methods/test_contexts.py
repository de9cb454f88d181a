"""CON2's assumptions measured (con2.methods.contexts), the CON2 (Best) rule, `con2 contexts` and the `best` variant."""

from __future__ import annotations

import numpy as np
import pytest

from con2.errors import ConfigError
from con2.methods import contexts as C

SIZE = 16
YY, XX = np.mgrid[0:SIZE, 0:SIZE]


def one_blob(n: int, seed: int = 0, amplitude: tuple[float, float] = (0.8, 0.8)) -> np.ndarray:
    """``[n, 1, 16, 16]``: one Gaussian blob per image at a random place (random brightness in
    ``amplitude``): images that differ only where (and how bright) the blob is."""
    rng = np.random.default_rng(seed)
    out = np.zeros((n, 1, SIZE, SIZE), np.float32)
    for i in range(n):
        cy, cx = rng.uniform(2, SIZE - 2, 2)
        out[i, 0] = rng.uniform(*amplitude) * np.exp(-((YY - cy) ** 2 + (XX - cx) ** 2) / 8.0)
    return out


def top_bottom_symmetric(n: int, seed: int = 0) -> np.ndarray:
    """Images equal to their vertical mirror: the flip context is the identity on them."""
    x = one_blob(n, seed, (0.2, 0.5))
    return x + x[:, :, ::-1]


PERM = np.random.default_rng(1).permutation(SIZE * SIZE)


def permute_pixels(x: np.ndarray) -> np.ndarray:
    """One fixed permutation of the pixels of every image: the same values, no spatial structure."""
    return x.reshape(len(x), x.shape[1], -1)[..., PERM].reshape(x.shape)


def test_an_identity_context_is_indistinguishable_and_perfectly_aligned() -> None:
    m = C.measure_context(one_blob(40), lambda x: x, seed=0)
    assert m["distinctiveness"] == pytest.approx(50.0, abs=1e-9)
    assert m["alignment"] == pytest.approx(1.0)


def test_a_pixel_permutation_is_not_aligned_in_the_spatial_feature_space() -> None:
    x = one_blob(60)
    permuted = C.measure_context(x, permute_pixels, seed=0)
    flipped = C.measure_context(x, "flip", seed=0)
    assert permuted["alignment"] < 0.3 < flipped["alignment"]
    assert permuted["distinctiveness"] > 95  # told apart easily, yet useless as a context: not aligned


def test_invert_on_images_of_varied_intensity_is_distinctive() -> None:
    m = C.measure_context(one_blob(60, amplitude=(0.2, 0.9)), "invert", seed=0)
    assert m["distinctiveness"] > 95


def test_the_measures_are_reproducible_and_follow_the_seed() -> None:
    x = one_blob(250, amplitude=(0.2, 0.9))  # more than MAX_IMAGES: the seed draws the sample
    a, b = C.measure_context(x, "flip", seed=3), C.measure_context(x, "flip", seed=3)
    assert a == b
    assert C.measure_context(x, "flip", seed=4) != a


def test_the_rule_takes_the_most_aligned_distinctive_context() -> None:
    m = [
        {"context": "invert", "distinctiveness": 99.0, "alignment": 0.6},
        {"context": "flip", "distinctiveness": 60.0, "alignment": 0.99},  # aligned but not distinctive
        {"context": "equalize", "distinctiveness": 80.0, "alignment": 0.7},
    ]
    assert C.choose(m) == "equalize"
    assert C.choose(m, threshold=90) == "invert"
    assert C.choose(m, threshold=50) == "flip"
    assert C.choose(m, threshold=100) == "invert"  # none distinctive enough: the most distinctive
    with pytest.raises(ValueError, match="no context"):
        C.choose([])


def test_the_rule_skips_a_context_that_changes_nothing_on_the_data() -> None:
    """On top-bottom symmetric images flip is the identity: perfectly aligned, never distinguishable;
    the rule must not pick it (and at 16 px torchvision's equalize changes almost nothing either)."""
    choice = C.choose_context(top_bottom_symmetric(60), seed=0)
    by_name = {m["context"]: m for m in choice["measures"]}
    assert by_name["flip"]["distinctiveness"] == pytest.approx(50.0, abs=1e-9)
    assert by_name["flip"]["alignment"] == pytest.approx(1.0)
    assert choice["context"] == "invert" and by_name["invert"]["distinctiveness"] >= C.DISTINCT_MIN
    assert choice["rule"] == C.RULE and choice["threshold"] == C.DISTINCT_MIN


@pytest.mark.parametrize(
    "images, message",
    [
        (np.zeros((8, 16, 16), np.float32), r"\[n >= 4, c, h, w\]"),
        (np.zeros((2, 1, 16, 16), np.float32), r"\[n >= 4, c, h, w\]"),
        (np.full((8, 1, 16, 16), 255, np.uint8), "float in \\[0, 1\\]"),
    ],
)
def test_bad_images_are_refused(images: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        C.measure_context(images, "flip")


def test_con2_contexts_prints_both_measures_and_the_choice(capsys) -> None:
    from con2.cli.main import main

    assert main(["contexts", "--dataset", "digits", "--normal-class", "0", "--size", "16"]) == 0
    out = capsys.readouterr().out
    assert "digits normal class 0" in out and "<- chosen" in out
    for name in ("invert", "flip", "equalize"):
        assert name in out


def test_con2_contexts_bad_input_is_one_error_line(capsys) -> None:
    from con2.cli.main import main

    assert main(["contexts", "--dataset", "digits", "--normal-class", "11"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("con2: error: digits: unknown normal class '11'")


# ------------------------------------------------------------------------------------------ the `best` variant
def test_best_stands_alone_in_the_params() -> None:
    from con2.methods.con2_spec import Con2Params, check
    from con2.methods.spec import MethodSettings

    cfg = MethodSettings(image_size=16, tta=2)
    check(Con2Params(contexts=("best",)), cfg)
    for bad in (Con2Params(contexts=("best", "flip")), Con2Params(contexts=("best",), n_contexts=3)):
        with pytest.raises(ConfigError, match="'best' .* stands alone"):
            check(bad, cfg)


def test_con2_best_chooses_its_context_from_the_training_images_before_training() -> None:
    import torch

    from con2.config import make_config
    from con2.methods.registry import build_method

    cfg = make_config({"dataset": "digits", "image_size": 16, "width": 8, "tta": 2, "params": {"contexts": ["best"]}})
    method = build_method(cfg)
    with pytest.raises(RuntimeError, match="prepare"):
        method.contexts[1](torch.zeros(1, 1, 16, 16, dtype=torch.uint8))
    train = torch.from_numpy(np.rint(top_bottom_symmetric(40) * 255).astype(np.uint8))
    method.prepare(train)
    assert method.context_choice is not None and method.context_choice["context"] == "invert"
    assert method.context_names == ["invert"] and torch.equal(method.contexts[1](train), 255 - train)


def test_too_few_images_for_best_is_a_config_error_naming_the_fix() -> None:
    import torch

    from con2.config import make_config
    from con2.methods.registry import build_method

    cfg = make_config({"dataset": "digits", "image_size": 16, "width": 8, "tta": 2, "params": {"contexts": ["best"]}})
    with pytest.raises(ConfigError, match=r"cannot choose a context from 3 training images.*Fix: name the context"):
        build_method(cfg).prepare(torch.zeros(3, 1, 16, 16, dtype=torch.uint8))
