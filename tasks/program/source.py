"""Static checks of a user's program and evaluator: marked regions, the fixed frame, ``evaluate``.

Nothing here executes the text it looks at: it runs on the controller's host for every
proposal (``Task.static_check``) and once on the user's files when the task is built.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from recursor import pyast
from recursor.mutation import BLOCK_END, BLOCK_START

MAX_PROGRAM_CHARS = 500_000
PLACEHOLDER = "\0evolve-block\0"


class SourceError(ValueError):
    """The program or evaluator text is unusable; the message says why and how to fix it."""


def _parse(source: str, label: str) -> ast.Module:
    if len(source) > MAX_PROGRAM_CHARS:
        raise SourceError(f"{label} has {len(source)} characters; the limit is "
                          f"{MAX_PROGRAM_CHARS}")
    try:
        return pyast.parse(source)
    except SyntaxError as exc:
        raise SourceError(f"{label} does not parse: {exc.msg} (line {exc.lineno})") from None
    except (MemoryError, RecursionError, ValueError) as exc:
        raise SourceError(f"{label} does not parse: {type(exc).__name__} "
                          "(nested too deeply?)") from None


def frame(source: str, label: str) -> list[str]:
    """The program's lines with each EVOLVE block's inside replaced by one placeholder.

    Two versions of a program with the same frame differ only inside their marked regions.
    Raises SourceError when a marker is unpaired or no region is marked.
    """
    out: list[str] = []
    inside = False
    blocks = 0
    for number, line in enumerate(source.splitlines(), start=1):
        text = line.strip()
        if text.startswith(BLOCK_START):
            if inside:
                raise SourceError(f"{label}: line {number} opens an EVOLVE block inside "
                                  "another; close the first with " + BLOCK_END)
            inside, blocks = True, blocks + 1
            out += [line, PLACEHOLDER]
        elif text.startswith(BLOCK_END):
            if not inside:
                raise SourceError(f"{label}: line {number} closes an EVOLVE block that was "
                                  "never opened")
            inside = False
            out.append(line)
        elif not inside:
            out.append(line)
    if inside:
        raise SourceError(f"{label}: an EVOLVE block is never closed; add a line "
                          f"'{BLOCK_END}' after its code")
    if blocks == 0:
        raise SourceError(f"{label} has no marked region: put the lines proposers may change "
                          f"between '{BLOCK_START}' and '{BLOCK_END}' comment lines")
    return out


def check_program(source: str, label: str, starting_frame: list[str] | None = None) -> None:
    """Raise SourceError unless ``source`` parses, has well-formed marked regions and (when
    ``starting_frame`` is given) is unchanged outside them."""
    _parse(source, label)
    mine = frame(source, label)
    if starting_frame is not None and mine != starting_frame:
        changed = next((i for i, (a, b) in enumerate(zip(mine, starting_frame, strict=False))
                        if a != b), min(len(mine), len(starting_frame)))
        raise SourceError(f"{label} changes code outside its EVOLVE-BLOCK regions (near frame "
                          f"line {changed + 1}); only the marked regions may change")


STAGES = ("evaluate_stage1", "evaluate_stage2", "evaluate_stage3")  # a cascade's, in order


@dataclass(frozen=True)
class EvaluatorShape:
    """What the evaluator's source defines: whether it is told the split, and the stages of
    a cascade (``evaluate_stage1`` and each next one; empty when it has none)."""

    passes_split: bool
    stages: tuple[str, ...] = ()
    entry: str = "evaluate"  # what the runner calls: evaluate, the stages, main or script


def _function(module: ast.Module, name: str, label: str) -> ast.FunctionDef | None:
    defined = [n for n in module.body
               if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name]
    if not defined:
        return None
    fn = defined[-1]
    if isinstance(fn, ast.AsyncFunctionDef):
        raise SourceError(f"{label}: {name} must be a plain function, not async")
    positional = [*fn.args.posonlyargs, *fn.args.args]
    if not positional and fn.args.vararg is None:
        raise SourceError(f"{label}: {name}() takes no positional argument; it is called "
                          f"as {name}(path)")
    return fn


def _takes_split(fn: ast.FunctionDef) -> bool:
    names = {a.arg for a in [*fn.args.args, *fn.args.kwonlyargs]}
    return "split" in names or fn.args.kwarg is not None


def _shinka_main(module: ast.Module) -> bool:
    """Whether the module defines ShinkaEvolve's ``main(program_path, results_dir)``: a plain
    top-level ``main`` taking two positional arguments (a program's own ``main()`` does not)."""
    mains = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    return bool(mains) and len([*mains[-1].args.posonlyargs, *mains[-1].args.args]) >= 2


def _shinka_script(module: ast.Module) -> bool:
    """Whether the module is a script ShinkaEvolve would run as ``python evaluate.py
    --program_path P --results_dir R``: a top-level ``if __name__ == "__main__":`` block and
    a ``--results_dir`` option (a string naming it)."""
    if not any(isinstance(node, ast.Constant) and isinstance(node.value, str)
               and "results_dir" in node.value for node in ast.walk(module)):
        return False
    for node in module.body:
        test = node.test if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
                and test.left.id == "__name__" and len(test.comparators) == 1
                and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value == "__main__"):
            return True
    return False


def check_evaluator(source: str, label: str) -> EvaluatorShape:
    """Raise SourceError unless ``source`` defines a top-level ``evaluate`` taking a path, or
    the stages of a cascade (``evaluate_stage1(path)``, ...).

    Says whether it accepts a ``split`` keyword (then it is told ``dev`` or ``heldout``):
    ``evaluate``'s, or with stages, whether every stage does.
    """
    module = _parse(source, label)
    stages: list[ast.FunctionDef] = []
    for name in STAGES:
        fn = _function(module, name, label)
        if fn is None:
            break
        stages.append(fn)
    evaluate = _function(module, "evaluate", label)
    if stages:
        return EvaluatorShape(all(_takes_split(fn) for fn in stages),
                              tuple(fn.name for fn in stages), "evaluate_stage1")
    if evaluate is None:
        if _shinka_main(module):
            return EvaluatorShape(False, (), "main")  # ShinkaEvolve's main(path, results_dir)
        if _shinka_script(module):
            return EvaluatorShape(False, (), "script")  # run as ShinkaEvolve runs it
        raise SourceError(f"{label} defines no top-level function evaluate(path); it must take "
                          "the path of a program file and return a mapping of metrics (or "
                          "define evaluate_stage1(path), ... for a cascade, or ShinkaEvolve's "
                          "main(program_path, results_dir), or be a script run as python "
                          f"{label} --program_path PATH --results_dir DIR)")
    return EvaluatorShape(_takes_split(evaluate))


def _parsed(source: str) -> ast.Module | None:
    """``source``'s syntax tree, or None when it does not parse (the static checks report
    that themselves)."""
    try:
        return pyast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def names_mentioned(source: str, wanted: frozenset[str]) -> set[str]:
    """Which of ``wanted`` the evaluator's source names as a string or a keyword (the
    metric names it may return: ``{"score": ...}``, ``dict(score=...)``). Parses only."""
    module = _parsed(source)
    if module is None:
        return set()
    found: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Constant) and node.value in wanted:
            found.add(str(node.value))
        elif isinstance(node, ast.keyword) and node.arg in wanted:
            found.add(str(node.arg))
    return found


def string_constants(source: str, limit: int = 2_000) -> set[str]:
    """The short string constants of the source (at most ``limit`` of them, each under 256
    characters): the names of the files it may open. Parses only."""
    module = _parsed(source)
    if module is None:
        return set()
    found: set[str] = set()
    for node in ast.walk(module):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and 0 < len(node.value) < 256 and "\0" not in node.value):
            found.add(node.value)
            if len(found) >= limit:
                break
    return found


def imports(source: str, package: str) -> bool:
    """Whether the source imports ``package`` or a module of it. Parses only."""
    module = _parsed(source)
    if module is None:
        return False
    for node in ast.walk(module):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if any(name == package or name.startswith(package + ".") for name in names):
            return True
    return False


def imported_names(source: str) -> set[str]:
    """The top-level module names the source imports (``import a.b``, ``from a import b``:
    ``a``; ``from . import b``, ``from .b import c``: ``b``). Parses only."""
    module = _parsed(source)
    if module is None:
        return set()
    names: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.name for alias in node.names)
    return names


__all__ = ["MAX_PROGRAM_CHARS", "STAGES", "EvaluatorShape", "SourceError", "check_evaluator",
           "check_program", "frame", "imported_names", "imports", "names_mentioned",
           "string_constants"]
