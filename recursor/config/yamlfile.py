"""Reading a user's YAML file with one-line errors: the file, the line and column, the fix.

PyYAML's own messages span several lines and quote the parser's state ("expected <block
end>, but found '<block mapping start>'"); a user needs the place and what to check there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from recursor.errors import ConfigError

_HINT = "check the indentation (spaces, not tabs) and the colons on that line and the one above"


def yaml_problem(err: yaml.YAMLError) -> str:
    """``line L, column C: PROBLEM; HINT`` for a PyYAML error (just the problem without a
    mark)."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = str(getattr(err, "problem", None) or getattr(err, "context", None) or err)
    problem = " ".join(problem.split())
    if mark is None:
        return f"{problem}; {_HINT}"
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}; {_HINT}"


def parse_yaml(text: str, source: str) -> Any:
    """``text`` parsed as YAML; ConfigError naming ``source`` and the place of a mistake."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: not valid YAML at {yaml_problem(err)}") from None


def read_yaml(path: Path | str, what: str) -> Any:
    """The YAML document in the file ``path`` (a ``what``: "campaign file", "job spec");
    ConfigError for a file that cannot be read, is not text, or is not YAML."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except IsADirectoryError:
        raise ConfigError(f"{path} is a folder; give the {what} inside it") from None
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; check the {what}'s path (relative paths "
                          f"start in {Path.cwd()})") from None
    except OSError as err:
        raise ConfigError(f"cannot read {what} {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not a text file (not UTF-8); give a YAML {what}") from None
    return parse_yaml(text, str(path))


__all__ = ["parse_yaml", "read_yaml", "yaml_problem"]
