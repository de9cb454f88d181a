"""The reproduction report's verdict and Table 1's budget line, generated from records (no training)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from con2.aggregate.collect import collect_runs
from con2.aggregate.score_files import RUN_FOLDERS
from con2.builders.method_tables import table1_medical
from con2.builders.reproduction import NOTHING_TO_COMPARE, reproduction
from con2.report.artefacts import ReportInputs
from con2.report.budget import PAPER_IMAGE_SIZES, budget_note, budget_of
from con2.report.methods import method_names
from con2.report.paper import load_paper_numbers
from con2.run.records import write_record

ROOT = Path(__file__).resolve().parents[2]
CON2 = {0: 57.0, 1: 58.4, 2: 57.5}  # seed -> nnd (as printed): mean 57.63
CONTENT = {0: 64.0, 1: 66.0, 2: 63.8}  # content only: mean 64.6
SIMCLR = {0: 62.7, 1: 67.1, 2: 67.9}  # knn: mean 65.9


def record(method: str, variant: str, seed: int, aurocs: dict, params: dict, epochs: int = 10, size: int = 28):
    rec = {
        "schema_version": 1,
        "dataset": "breastmnist",
        "normal_class": "1",
        "method": method,
        "variant": variant,
        "seed": seed,
        "metrics": {"auroc": aurocs},
        "timing": {"fit_seconds": 1.0, "score_seconds": 1.0, "wall_seconds": 2.0},
        "n_train": 10,
        "n_test": 5,
        "n_anomalous": 2,
        "epochs": epochs,
        "config": {"image_size": size, "width": 16, "tta": 40, "params": params},
        "config_hash": "x",
    }
    if variant == "invert":  # a learning curve that climbs to the final score
        points = [{"epoch": e, "auroc": {"nnd": aurocs["nnd"] - 10 + e}} for e in (2, 5, 10)]
        rec["curve"] = {"views": 2, "points": points}
    return rec


@pytest.fixture
def runs(tmp_path: Path) -> pd.DataFrame:
    inv = {"contexts": ["invert"]}
    recs = []
    for seed in (0, 1, 2):
        recs.append(record("con2", "invert", seed, {"nnd": CON2[seed], "nnd@encoder/original": 66.8, "lh": 41.9}, inv))
        recs.append(record("con2", "content_only", seed, {"nnd": CONTENT[seed]}, {**inv, "loss": "content_only"}))
        recs.append(record("simclr", "default", seed, {"knn": SIMCLR[seed], "ssd": 56.7}, {}))
    paths = []
    for i, r in enumerate(recs):
        p = tmp_path / "runs" / str(i) / "record.json"
        write_record(r, p)
        paths.append(p)
    return collect_runs(paths)


CONFIG = {
    "report": {
        "subject": "con2",
        "medical": ["breastmnist"],
        "main_variants": {"con2": "invert", "simclr": "default"},
        "paper_epochs": 2048,
        "fidelity": {
            "datasets": ["breastmnist"],
            "rows": [
                {"label": "as printed", "method": "con2", "variant": "invert", "score": "nnd"},
                {"label": "x^C vs original", "method": "con2", "variant": "invert", "score": "nnd@encoder/original"},
                {"label": "content only", "method": "con2", "variant": "content_only", "score": "nnd"},
                {"label": "SimCLR + kNN", "method": "simclr", "variant": "default", "score": "knn"},
            ],
        },
    }
}


@pytest.fixture
def paper() -> pd.DataFrame:
    return load_paper_numbers(ROOT / "con2" / "resources" / "paper_numbers.csv")


def test_reproduction_opens_with_a_verdict_per_method_from_the_records(runs, paper) -> None:
    table = reproduction(ReportInputs(runs=runs, paper=paper, config=CONFIG, scores=RUN_FOLDERS))
    md = table.markdown()
    lead = "\n".join(table.lead)
    assert md.index("**Verdict**") < md.index("**Summary") < md.index("| Table |")  # the report opens with it
    assert "the paper trained 2048 epochs at 224 px, ResNet18 width 64 (512-d), 3 seeds" in lead
    con2 = next(line for line in table.lead if line.startswith("- **CON2 (NND)**"))
    # budget, gap to the paper (81.7), the readings tried and the best one, what stays unexplained
    assert "at 10 epochs at 28 px, ResNet18 width 16, 3 seeds" in con2
    assert "BreastMNIST 57.6 vs 81.7 (-24.1)" in con2
    assert "Readings tried: 3 (fidelity study, BreastMNIST)" in con2
    assert "Best reading on BreastMNIST: 'x^C vs original' 66.8 (-14.9 from the paper)" in con2
    assert "Unexplained after every reading tried: BreastMNIST -24.1" in con2
    assert "learning curve 49.6 (epoch 2) -> 57.6 (epoch 10)" in con2
    assert "length and resolution are not ruled out" in con2
    simclr = next(line for line in table.lead if line.startswith("- **SimCLR (kNN)**"))
    assert "BreastMNIST 65.9 vs 74.7 (-8.8)" in simclr and "Readings tried: 1" in simclr
    ssd = next(line for line in table.lead if line.startswith("- **SimCLR (SSD)**"))
    assert (
        "BreastMNIST 56.7 vs 44.6 (+12.1)" in ssd
        and "Unexplained (the fidelity study has not run this method): BreastMNIST +12.1" in ssd
    )
    assert con2.count("BreastMNIST 57.6 vs 81.7") == 1  # one line per dataset, however many paper tables repeat it


def test_the_verdict_follows_the_records(runs, paper) -> None:
    """A reading that reaches the paper closes the gap; at the paper's budget nothing is blamed on it."""
    runs = runs.copy()
    runs.loc[(runs["variant"] == "content_only"), "auroc"] += 20.0  # content only: 84.6, above the paper's 81.7
    runs["epochs"], runs["image_size"] = 2048, 224
    lead = "\n".join(reproduction(ReportInputs(runs=runs, paper=paper, config=CONFIG, scores=RUN_FOLDERS)).lead)
    assert "'content only' 84.6 (+2.9 from the paper)" in lead and "the gap closes under that reading" in lead
    assert "at 2048 epochs at 224 px" in lead
    simclr = next(line for line in lead.splitlines() if line.startswith("- **SimCLR (kNN)**"))
    assert "at the paper's budget" in simclr and "not ruled out" not in simclr


def test_table1_states_the_budget_of_ours(runs, paper) -> None:
    t1 = table1_medical(ReportInputs(runs=runs, paper=paper, config=CONFIG, scores=RUN_FOLDERS))
    note = next(n for n in t1.notes if n.startswith("Budget of ours"))
    assert note == (
        "Budget of ours: 10 epochs at 28 px, ResNet18 width 16, 3 seeds; "
        "the paper's: 2048 epochs at 224 px, ResNet18 width 64 (512-d), 3 seeds."
    )
    runs = runs.copy()
    runs.loc[runs["method"] == "simclr", "epochs"] = 15
    t1 = table1_medical(ReportInputs(runs=runs, paper=paper, config=CONFIG, scores=RUN_FOLDERS))
    assert "Budget of ours: 10 epochs (SimCLR 15) at 28 px" in "\n".join(t1.notes)


@pytest.mark.parametrize("which", ["no runs", "no counterpart"])
def test_an_empty_verdict_says_what_is_missing_and_the_command(runs, paper, which) -> None:
    """Issue 27 (7): no '**Verdict** ...:' heading over nothing, no '0 of the 0'."""
    if which == "no runs":
        runs = runs.iloc[0:0]
    else:  # runs of a dataset the paper has no number for
        runs = runs.assign(dataset="digits")
    lead = reproduction(ReportInputs(runs=runs, paper=paper, config=CONFIG, scores=RUN_FOLDERS)).lead
    assert lead[0] == NOTHING_TO_COMPARE and "snakemake --cores 2 all" in lead[0]
    assert lead[-1].startswith("**Summary: none of the") and "0 of the 0" not in " ".join(lead)
    assert not any(line.startswith("**Verdict** (the paper trained") for line in lead)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # issue 36 (11): numpy's "All-NaN axis encountered"
def test_the_budget_names_methods_that_train_nothing_and_the_machine(runs) -> None:
    """Issue 27 (8): 'no training' instead of '? epochs at ? px, width ?', and the CPU model / GPU name."""
    from con2.report.methods import method_names

    names = method_names(CONFIG, runs)
    base = runs.assign(machine="AMD EPYC", steps=60)
    pixel = base[base["method"] == "simclr"].assign(method="pixel_nn", epochs=float("nan"), steps=float("nan"))
    zero_shot = base[base["method"] == "simclr"].assign(method="clip_ad", steps=0, machine="NVIDIA H200")
    assert budget_of(pixel, names).text() == "no training (pixel_nn), 3 seeds, on AMD EPYC"
    mixed = budget_of(pd.concat([base, pixel, zero_shot]), names).text()
    assert mixed.startswith("10 epochs at 28 px, ResNet18 width 16, 3 seeds; no training: ")
    assert mixed.endswith("; no training: pixel_nn, clip_ad, on AMD EPYC, NVIDIA H200")
    one_seed = base[base["seed"] == base["seed"].min()]
    assert budget_of(one_seed, names).text() == "10 epochs at 28 px, ResNet18 width 16, 1 seed, on AMD EPYC"


def test_a_paper_number_inside_our_interval_is_a_match_not_unexplained(runs, paper) -> None:
    """Issue 36 (6): a small gap to a paper number without a usable std, inside our own 95% interval of
    the mean over seeds, reproduces; it is not listed as unexplained."""
    runs = runs.copy()
    ssd = runs["score"] == "ssd"
    # mean 51.3 against the paper's 44.6 ± 4.3: outside the paper's std, inside our wide interval
    runs.loc[ssd, "auroc"] = runs.loc[ssd, "seed"].map({0: 38.0, 1: 46.0, 2: 70.0})
    lead = "\n".join(reproduction(ReportInputs(runs=runs, paper=paper, config=CONFIG, scores=RUN_FOLDERS)).lead)
    ssd_line = next(line for line in lead.splitlines() if line.startswith("- **SimCLR (SSD)**"))
    assert "BreastMNIST 51.3 vs 44.6 (+6.7)" in ssd_line
    assert "BreastMNIST: reproduces (the paper's number lies inside our 95% interval)." in ssd_line
    assert "Unexplained" not in ssd_line


def test_the_papers_budget_names_its_input_size_per_dataset(runs) -> None:
    """CIFAR trained at its own 32 px in the paper: a note on CIFAR-10 runs must not say 224 px."""
    cifar = runs.assign(dataset="cifar10", image_size=32)
    note = budget_note(cifar, method_names(CONFIG, cifar), CONFIG["report"])
    assert note.endswith("the paper's: 2048 epochs at 32 px, ResNet18 width 64 (512-d), 3 seeds."), note
    both = pd.concat([runs, cifar])
    assert "the paper's: 2048 epochs at 224 px (CIFAR10 32)," in budget_note(
        both, method_names(CONFIG, both), CONFIG["report"]
    )


def test_the_papers_input_sizes_are_the_paper_profiles() -> None:
    """PAPER_IMAGE_SIZES (the report's) and workflow/config/paper.yaml (what the paper profile trains) agree."""
    paper_cfg = yaml.safe_load((ROOT / "workflow" / "config" / "paper.yaml").read_text())
    trained = {d: spec["run"]["image_size"] for d, spec in paper_cfg["datasets"].items()}
    assert trained == {d: PAPER_IMAGE_SIZES.get(d, paper_cfg["run"]["image_size"]) for d in trained}
