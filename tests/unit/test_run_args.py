"""``recursor run``'s positional files: a campaign file, or PROGRAM EVALUATOR in OpenEvolve's
order, or neither; anything else is an error saying how to write it."""

from __future__ import annotations

from pathlib import Path

import pytest

from recursor.cli.run_args import RunInputs, one_of, read_run_inputs
from recursor.errors import ConfigError

P, E, C = Path("initial.py"), Path("evaluator.py"), Path("config.yaml")


@pytest.mark.parametrize(("files", "config", "program", "evaluator", "expected"), [
    (None, None, None, None, RunInputs(None, None, None)),
    ([C], None, None, None, RunInputs(C, None, None)),
    ([C], None, P, E, RunInputs(C, P, E)),
    ([P, E], None, None, None, RunInputs(None, P, E)),
    ([P, E], C, None, None, RunInputs(C, P, E)),  # openevolve-run.py's form
    ([P], None, None, E, RunInputs(None, P, E)),
    (None, C, P, E, RunInputs(C, P, E)),
])
def test_the_forms_a_user_writes_are_read(files: list[Path] | None, config: Path | None,
                                          program: Path | None, evaluator: Path | None,
                                          expected: RunInputs) -> None:
    assert read_run_inputs(files, config, program, evaluator) == expected


def test_a_program_folder_counts_as_a_program(tmp_path: Path) -> None:
    assert read_run_inputs([tmp_path, E], None, None, None) == RunInputs(None, tmp_path, E)
    assert read_run_inputs([tmp_path], None, None, E) == RunInputs(None, tmp_path, E)
    # alone, a folder is read as a campaign file (whose reader says to give the file inside)
    assert read_run_inputs([tmp_path], None, None, None) == RunInputs(tmp_path, None, None)


def test_an_option_and_its_openevolve_name_are_one_option() -> None:
    assert one_of("--max-evals", None, "--iterations", 5) == 5
    assert one_of("--max-evals", 3, "--iterations", None) == 3
    with pytest.raises(ConfigError, match="--dir and --output are the same option"):
        one_of("--dir", P, "--output", E)


@pytest.mark.parametrize(("files", "config", "program", "evaluator", "says"), [
    ([P], None, None, None, "is a program, not a campaign file: give its evaluator"),
    ([P, E, C], None, None, None, "got 3 files"),
    ([P, E], None, P, None, "give the program and the evaluator once"),
    ([C, P], None, None, None, "two files are PROGRAM EVALUATOR"),
    ([C], Path("other.yaml"), None, None, "two campaign files"),
    ([P], None, Path("x.py"), E, "give the program once"),
])
def test_other_forms_are_clear_errors(files: list[Path], config: Path | None,
                                      program: Path | None, evaluator: Path | None,
                                      says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        read_run_inputs(files, config, program, evaluator)
