"""Which files beside an evaluator go with it: those its source names by a relative path
(the top folder of a nested one), never the program, a hidden file, a path out of the folder
or through a link; over the size limit they are left out and reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from recursor.tasks.program import files as files_module
from recursor.tasks.program.files import named_files
from recursor.tasks.program.source import check_evaluator, string_constants


def _folder(tmp_path: Path) -> Path:
    for name in ("cases.json", "data/train.csv", "initial.py", ".secret", "big.bin"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    (tmp_path / "evaluate.py").write_text("")
    (tmp_path / "outside").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "outside")
    return tmp_path / "evaluate.py"


def test_named_files_beside_the_evaluator_are_found(tmp_path: Path) -> None:
    evaluator = _folder(tmp_path)
    source = '''import os
HERE = os.path.dirname(__file__)
CASES = "cases.json"
TRAIN = os.path.join(HERE, "data", "train.csv")
OTHER = "./data/train.csv"
PROGRAM = "initial.py"
HIDDEN, UP, LINK = ".secret", "../evaluate.py", "linked"
MISSING, ABSOLUTE = "nothing.txt", "/etc/passwd"
'''
    found, too_big = named_files(evaluator, string_constants(source), [tmp_path / "initial.py"])
    assert [p.name for p in found] == ["cases.json", "data"] and too_big == []


def test_the_program_folder_and_the_evaluator_itself_stay_out(tmp_path: Path) -> None:
    evaluator = _folder(tmp_path)
    found, _ = named_files(evaluator, {"data", "evaluate.py", "data/train.csv"},
                           [tmp_path / "data" / "train.csv"])
    assert found == []


def test_files_over_the_limit_are_left_out_and_reported(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    evaluator = _folder(tmp_path)
    monkeypatch.setattr(files_module, "MAX_NAMED_BYTES", len("big.bin") + len("cases.json"))
    found, too_big = named_files(evaluator, {"big.bin", "cases.json", "data"}, [])
    assert [p.name for p in found] == ["big.bin", "cases.json"]
    assert [p.name for p in too_big] == ["data"]


@pytest.mark.parametrize(("source", "entry"), [
    ('def main(program_path, results_dir):\n    pass\n', "main"),
    ('import sys\nif __name__ == "__main__":\n    print(sys.argv, "--results_dir")\n', "script"),
    ('def evaluate(path):\n    return {}\nif __name__ == "__main__":\n    pass\n', "evaluate"),
])
def test_an_evaluator_s_entry_is_read_from_its_source(source: str, entry: str) -> None:
    assert check_evaluator(source, "evaluate.py").entry == entry


@pytest.mark.parametrize("source", ["def helper():\n    pass\n",
                                    'if __name__ == "__main__":\n    print(1)\n'])
def test_a_file_with_no_entry_is_refused_naming_the_conventions(source: str) -> None:
    with pytest.raises(ValueError, match="--program_path PATH --results_dir DIR"):
        check_evaluator(source, "evaluate.py")
