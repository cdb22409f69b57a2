"""``exec`` of the candidate's text, and ``runpy.run_path`` of its file, in the evaluator.

Quick evaluators often load the candidate by executing its text into a namespace::

    namespace = {}
    exec(open(program_path).read(), namespace)
    value = namespace["solve"](3)

(or ``runpy.run_path(program_path)["solve"]``, or a loader made by hand,
``SourceFileLoader(name, path).exec_module(module)``). Executing it there would run the candidate
beside the evaluator's files and verdict. :func:`install` makes both give what importing it
gives (:mod:`remote`): the namespace receives a stand-in for each function the candidate
defines at its top level, and each call runs the candidate in a candidate run of its own.
Nothing of the candidate runs in the evaluator's process: its other top-level statements
(constants, prints) are not executed there, so a name other than a function is not in the
namespace, and a name the namespace binds already keeps its value (an evaluator that executes
the candidate into its own ``globals()`` keeps its own functions: a candidate that defines
``check`` does not replace the evaluator's ``check``). Recognized: the candidate file's
exact text (``str`` or ``bytes``, as read), or code compiled from it or from a file of its
workspace (the guard's test, :func:`guard.candidates_code`). Executing any other text that
holds the candidate's code (``exec(text + more)``) is still refused by the guard.

This module has no ``from __future__`` import: ``exec`` of a text compiles it with the future
flags of the frame that calls the original, which is this module's wrapper.
"""

import ast
import builtins
import os
import runpy
import sys
import types
from collections.abc import Callable
from typing import Any

from recursor import pyast
from recursor.guest import read_candidate_file
from recursor.tasks.program.remote import RemoteFunction


def defined_functions(source: bytes) -> list[str]:
    """The names of the functions ``source`` defines at its top level (parsed only; none
    when it does not parse)."""
    try:
        module = pyast.parse(source.decode("utf-8"))
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
        return []
    return [node.name for node in module.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]


def _stand_ins(file: str) -> dict[str, Any]:
    """A stand-in for each top-level function of the candidate's ``file`` (none when it cannot
    be read as a regular file of at most 1 MB)."""
    try:
        source = read_candidate_file(file)
    except OSError:
        return {}
    return {name: RemoteFunction(file, name) for name in defined_functions(source)}


def _bind(namespace: Any, stand_ins: dict[str, Any]) -> None:
    """Put the stand-ins in ``namespace``, never over a name it binds already (unless to an
    earlier stand-in), a builtin's name (``abs``, ``len``: the namespace's code would call the
    candidate's) nor a dunder name: executing the candidate into the evaluator's own globals
    must not replace the evaluator's functions with the candidate's."""
    for name, stand_in in stand_ins.items():
        held = namespace.get(name)
        if (name.startswith("__") or hasattr(builtins, name)
                or (name in namespace and not isinstance(held, RemoteFunction))):
            continue  # never over the evaluator's names, nor a builtin its code calls
        namespace[name] = stand_in


def install(source: bytes, program: str, workspace: str,
            is_candidates_code: Callable[[types.CodeType], bool]) -> None:
    """Make ``exec`` of the candidate's text and ``runpy.run_path`` of one of its files give
    stand-ins (see the module docstring). ``source`` is the candidate file's bytes, ``program``
    its path and ``workspace`` the folder of its files, as the candidate's runs see them.
    Irreversible."""
    text = source.decode("utf-8", errors="replace")
    root = os.path.join(os.path.realpath(workspace), "")
    original_exec, original_run_path = builtins.exec, runpy.run_path

    def file_of(code: Any) -> str | None:
        """The candidate's file ``code`` is (or was compiled from), or None."""
        if isinstance(code, bytes | str):
            return program if code == (source if isinstance(code, bytes) else text) else None
        if not isinstance(code, types.CodeType) or not is_candidates_code(code):
            return None
        named = os.path.realpath(code.co_filename)
        return (os.path.join(workspace, os.path.relpath(named, root))
                if named.startswith(root) and named.endswith(".py") else program)

    def exec_(code: Any, globals_: Any = None, locals_: Any = None, /, **kwargs: Any) -> None:
        if globals_ is None:  # the caller's namespaces, as exec(text) uses them
            caller = sys._getframe(1)
            globals_ = caller.f_globals
            locals_ = caller.f_locals if locals_ is None else locals_
        file = file_of(code)
        if file is None:
            return original_exec(code, globals_, locals_, **kwargs)
        _bind(locals_ if locals_ is not None else globals_, _stand_ins(file))
        return None

    def run_path(path_name: Any, init_globals: Any = None, run_name: Any = None) -> Any:
        try:
            real = os.path.realpath(os.fspath(path_name))
        except (TypeError, ValueError):
            real = ""
        if not (real.startswith(root) and real.endswith(".py")):
            return original_run_path(path_name, init_globals, run_name)
        file = os.path.join(workspace, os.path.relpath(real, root))
        return {**(init_globals or {}), "__name__": run_name or "<run_path>",
                "__file__": file, **_stand_ins(file)}

    builtins.exec = exec_
    runpy.run_path = run_path


__all__ = ["defined_functions", "install"]
