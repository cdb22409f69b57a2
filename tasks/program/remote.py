"""The candidate as a module the evaluator may import, whose functions run elsewhere.

Evaluators written for other systems (OpenEvolve's, for one) import the candidate into their
own process and call a function of it::

    spec = importlib.util.spec_from_file_location("program", program_path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    x, y, value = program.run_search()

Under the two-party contract that would run the candidate beside the evaluator's files and
verdict. :func:`install` makes such an import give a stand-in module instead: importing runs
nothing, and each call of one of its functions runs the candidate in a candidate run of its
own (:func:`recursor.guest.run_candidate`), where :mod:`wire` imports the candidate and calls
the function; arguments and the return value cross as JSON (:mod:`wire` says which types).
What the evaluator gets back is data from a hostile source, as any candidate output is.

Caught: ``importlib.util.spec_from_file_location`` on a Python file of the candidate's folder
(``/workspace``: the program's files), and an import by name of one of its modules from that
folder (``sys.path.insert(0, folder); import initial_program``, ``importlib.import_module``).
``exec`` of its exact text, ``runpy.run_path`` of its file and a loader made by hand give the
same stand-ins (:mod:`exec_shim`); anything else that would execute the candidate's code here
is still refused by the guard (:mod:`guard`). Standard library only.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from recursor.guest import run_candidate
from recursor.tasks.program.wire import MARKER, WireError, decode, encode

HELPER = "_recursor_call.py"
HELPER_SOURCE = (Path(__file__).resolve().parent / "wire.py").read_text(encoding="utf-8")
REPLY_BYTES = 16 << 20


class CandidateCallError(RuntimeError):
    """A call of the candidate's function did not return a value: it raised (the message is
    the candidate's, so data, never an instruction), or its run ended without a reply."""


class CandidateAttributeError(AttributeError):
    """The candidate defines no function of that name."""


def _reply(stdout: bytes) -> dict[str, Any] | None:
    marker = MARKER.encode()
    for line in reversed(stdout.splitlines()):
        if line.startswith(marker):
            try:
                reply = json.loads(line[len(marker):])
            except (ValueError, RecursionError):
                return None
            return reply if isinstance(reply, dict) else None
    return None


class RemoteFunction:
    """One of the candidate's functions; a call runs it in a candidate run of its own."""

    def __init__(self, program: str, name: str) -> None:
        self.program, self.__name__ = program, name

    def __repr__(self) -> str:
        return f"<the candidate's {self.__name__}(), run in a sandbox of its own per call>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            request = json.dumps({"args": encode(list(args)), "kwargs": encode(kwargs)},
                                 allow_nan=True)
        except WireError as exc:
            raise TypeError(f"cannot pass this argument to the candidate's "
                            f"{self.__name__}(): {exc}") from None
        helper = os.path.join(os.path.dirname(self.program), HELPER)
        run = run_candidate([sys.executable, "-I", helper, self.program, self.__name__],
                            input=request, files={HELPER: HELPER_SOURCE},
                            output_bytes=REPLY_BYTES)
        reply = _reply(run.stdout)
        if run.status == "timeout":
            raise TimeoutError(f"the candidate's {self.__name__}() ran out of time "
                               f"({run.wall_time_s:.1f} s)")
        if reply is None:
            raise CandidateCallError(f"the candidate's {self.__name__}() gave no reply (its run "
                                     f"ended {run.status}, exit code {run.exit_code})")
        return self._value(reply)

    def _value(self, reply: dict[str, Any]) -> Any:
        if "missing" in reply:
            raise CandidateAttributeError(f"the candidate defines no function "
                                          f"{self.__name__!r}")
        if "raised" in reply:
            raise CandidateCallError(f"the candidate's {self.__name__}() raised "
                                     f"{str(reply.get('raised'))[:80]}: "
                                     f"{str(reply.get('message'))[:2000]}")
        try:
            return decode(reply.get("value"))
        except (WireError, ValueError, RecursionError) as exc:
            raise CandidateCallError(f"the candidate's {self.__name__}() returned a value "
                                     f"that cannot be read: {exc}") from None


class RemoteLoader(importlib.abc.Loader):
    """Loads the stand-in module for the candidate at ``program`` (its path as the candidate's
    runs see it; runs nothing)."""

    def __init__(self, program: str) -> None:
        self.program = program

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        program = self.program

        def attribute(name: str) -> RemoteFunction:
            if name.startswith("_") or not name.isidentifier():
                raise AttributeError(name)
            return RemoteFunction(program, name)

        module.__file__ = program
        module.__getattr__ = attribute  # type: ignore[method-assign]


def _inside(location: Any, folder: str) -> str | None:
    """``location``'s real path when it is a Python file inside ``folder``, else None."""
    try:
        real = os.path.realpath(os.fspath(location))
    except (TypeError, ValueError):
        return None
    return real if real.startswith(folder) and real.endswith(".py") else None


class _CandidateFinder(importlib.abc.MetaPathFinder):
    """``import name`` of a module of the candidate's workspace, from a ``sys.path`` entry
    that is a folder of it."""

    def __init__(self, workspace: str) -> None:
        self.shown = workspace  # as the candidate's runs see it
        self.root = os.path.join(os.path.realpath(workspace), "")

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if path is not None or "." in fullname:
            return None
        for entry in sys.path:
            if not isinstance(entry, str):
                continue
            real = _inside(os.path.join(entry or ".", fullname + ".py"), self.root)
            if real is not None and os.path.isfile(real):
                file = os.path.join(self.shown, os.path.relpath(real, self.root))
                return importlib.util.spec_from_loader(fullname, RemoteLoader(file),
                                                       origin=file)
        return None


def install(workspace: str) -> None:
    """Make every import of a module of the candidate's ``workspace`` (``/workspace``: its
    files, as its runs see them) in this process give a stand-in module (see the module
    docstring). Call it before the evaluator is imported."""
    shown = workspace
    folder = os.path.join(os.path.realpath(shown), "")
    original: Callable[..., importlib.machinery.ModuleSpec | None] = (
        importlib.util.spec_from_file_location)

    def spec_from_file_location(name: str, location: Any = None, *args: Any,
                                **kwargs: Any) -> importlib.machinery.ModuleSpec | None:
        real = _inside(location, folder) if location is not None else None
        if real is not None:
            file = os.path.join(shown, os.path.relpath(real, folder))
            return importlib.util.spec_from_loader(name, RemoteLoader(file), origin=file)
        return original(name, location, *args, **kwargs)

    importlib.util.spec_from_file_location = spec_from_file_location
    sys.meta_path.insert(0, _CandidateFinder(workspace))


__all__ = ["CandidateAttributeError", "CandidateCallError", "RemoteFunction", "RemoteLoader",
           "install"]
