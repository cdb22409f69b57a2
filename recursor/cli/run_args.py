"""What ``recursor run``'s positional files mean.

``recursor run`` takes a campaign file (``campaign.yaml``, or an OpenEvolve ``config.yaml``),
or the program and its evaluator in OpenEvolve's order (``recursor run initial_program.py
evaluator.py --config config.yaml --iterations 50``, as ``openevolve-run.py`` takes them), or
neither (the built-in campaign); ``--program``/``--evaluator`` say the same by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from recursor.errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class RunInputs:
    """The campaign file (None: the built-in one), and the program and evaluator given."""

    campaign: Path | None
    program: Path | None
    evaluator: Path | None


CAMPAIGN_SUFFIXES = (".yaml", ".yml", ".json")


def _is_program(path: Path) -> bool:
    """A program file (any file but a campaign file) or a program folder."""
    return path.is_dir() or path.suffix.lower() not in CAMPAIGN_SUFFIXES


def one_of(name: str, value: T | None, alias: str, aliased: T | None) -> T | None:
    """The value of an option given by its name or by its alias (OpenEvolve's), not both."""
    if value is not None and aliased is not None:
        raise ConfigError(f"{name} and {alias} are the same option: give one")
    return value if value is not None else aliased


def read_run_inputs(files: list[Path] | None, config: Path | None, program: Path | None,
                    evaluator: Path | None) -> RunInputs:
    """The inputs of ``recursor run`` (see the module docstring); ConfigError saying how to
    write them when they cannot be read one way."""
    files = list(files or [])
    if len(files) > 2:
        raise ConfigError(f"recursor run takes a campaign file, or PROGRAM EVALUATOR; got "
                          f"{len(files)} files ({', '.join(map(str, files[:4]))})")
    if len(files) == 2:
        if program is not None or evaluator is not None:
            raise ConfigError("give the program and the evaluator once: as PROGRAM EVALUATOR "
                              "or with --program and --evaluator")
        first, second = files
        if not (_is_program(first) and second.suffix == ".py"):
            raise ConfigError(f"recursor run {first} {second}: two files are PROGRAM EVALUATOR "
                              f"(a program file or folder, then a .py file); give a campaign "
                              f"file with --config FILE")
        return RunInputs(config, first, second)
    if not files:
        return RunInputs(config, program, evaluator)
    (file,) = files
    if (file.is_dir() and evaluator is not None) or (
            not file.is_dir() and file.suffix.lower() not in CAMPAIGN_SUFFIXES):
        if program is not None:
            raise ConfigError(f"{file} and --program {program}: give the program once")
        if evaluator is None:
            raise ConfigError(f"{file} is a program, not a campaign file: give its evaluator "
                              f"too, as `recursor run {file} evaluator.py` (or --program {file} "
                              "--evaluator evaluator.py)")
        return RunInputs(config, file, evaluator)
    if config is not None:
        raise ConfigError(f"two campaign files, {file} and --config {config}: give one")
    return RunInputs(file, program, evaluator)


__all__ = ["RunInputs", "one_of", "read_run_inputs"]
