"""A folder at a name con2 writes a file to is left as it is (issue 47, item 6).

``R/checkpoint.pt/important.txt`` was removed recursively without a word (``--force``, or the
atomic rename of the new checkpoint, cleared the folder first). Now a run directory holding a
folder at a run file's name is refused before anything is read or written, and the one atomic
write never puts a file where a folder is, whoever writes (a run, a table).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import TINY

from con2.atomic import write_text_atomic
from con2.cli.main import main
from con2.config import make_config
from con2.errors import RunDirError
from con2.report.format import Table
from con2.run.runner import CHECKPOINT, RECORD, SCORES, run


def someone_s_folder(path: Path) -> Path:
    """A folder at ``path`` holding a file of someone's; returns that file."""
    path.mkdir(parents=True)
    kept = path / "important.txt"
    kept.write_text("keep me")
    return kept


@pytest.mark.parametrize("name", [CHECKPOINT, RECORD, SCORES])
@pytest.mark.parametrize("force", [False, True])
def test_a_run_refuses_a_folder_at_a_run_file_s_name(tmp_path: Path, name: str, force: bool) -> None:
    kept = someone_s_folder(tmp_path / "run" / name)
    with pytest.raises(RunDirError, match=rf"{name} is a folder \(1 entry\) where con2 writes a file.*Fix: move it"):
        run(make_config(TINY), tmp_path / "run", force=force)
    assert kept.read_text() == "keep me"
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [name], "the refused run wrote something"


def test_con2_train_force_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kept = someone_s_folder(tmp_path / "run" / CHECKPOINT)
    argv = ["train", "--run-dir", str(tmp_path / "run"), "--force", "--set"]
    argv += [f"{k}={v}" for k, v in TINY.items()]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a folder" in err, err
    assert kept.read_text() == "keep me"


def test_no_file_is_written_over_a_folder(tmp_path: Path) -> None:
    kept = someone_s_folder(tmp_path / "tables" / "t.md")
    with pytest.raises(IsADirectoryError, match="where con2 writes a file"):
        write_text_atomic(tmp_path / "tables" / "t.md", "text")
    table = Table("t", "T", ["m"], [["1.0"]], pd.DataFrame({"m": [1.0]}))
    with pytest.raises(IsADirectoryError):
        table.write(tmp_path / "tables" / "t.csv", tmp_path / "tables" / "t.md", tmp_path / "tables" / "t.tex")
    assert kept.read_text() == "keep me"
    assert not [p for p in (tmp_path / "tables").iterdir() if ".partial-" in p.name]
