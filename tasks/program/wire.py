"""Values across the two parties: a call of one of the candidate's functions, as JSON.

An evaluator that imports the candidate and calls ``program.run_search()`` gets a stand-in
module (:mod:`recursor.tasks.program.remote`): each call runs this file, as
``_recursor_call.py``, in a candidate run of its own (a sandbox with the candidate's files and
nothing of the evaluator's), which imports the candidate *there*, calls the function and
prints the reply. So the candidate's code never runs in the evaluator's process, and what
comes back is data: JSON, decoded by :func:`decode` into numbers, strings, lists, tuples,
dicts, sets, bytes, numpy arrays of plain numeric dtypes and members of enums that both
sides import (a module beside the program and the evaluator, say), and nothing else (no
pickle, no object arrays, no classes). An enum member crosses by its class's module and name
and its own name; the receiving side looks the class up among the modules it has imported
already (never importing one for it) and takes the member by name.

The same file serves both sides: :func:`encode`/:func:`decode` on each, :func:`main` in the
candidate's run. Standard library only (numpy when a value holds an array).
"""

from __future__ import annotations

import base64
import enum
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

MARKER = "\x1e_recursor_reply "  # the reply's line on the run's stdout
MAX_DEPTH = 64
NUMERIC_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                            "uint32", "uint64", "float16", "float32", "float64"})
_TAGS = ("__tuple__", "__ndarray__", "__dict__", "__bytes__", "__set__", "__enum__")
SUPPORTED = ("numbers, strings, None, lists, tuples, dicts, sets, bytes, numpy arrays of "
             "numbers and members of enums both sides import")


class WireError(ValueError):
    """A value that cannot cross between the evaluator and the candidate."""


def _array(value: Any) -> dict[str, Any] | None:
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    if dtype is None or not isinstance(shape, tuple) or not hasattr(value, "tolist"):
        return None
    if str(dtype) not in NUMERIC_DTYPES:
        raise WireError(f"a numpy array of dtype {dtype} cannot cross; only {SUPPORTED}")
    return {"__ndarray__": value.tolist(), "dtype": str(dtype)}


def encode(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-ready data; WireError for anything else."""
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested deeper than {MAX_DEPTH} levels cannot cross")
    if isinstance(value, enum.Enum):
        kind = type(value)
        return {"__enum__": f"{kind.__module__}:{kind.__qualname__}", "name": value.name}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple | set | frozenset):
        items = [encode(v, depth + 1) for v in value]
        return items if isinstance(value, list) else {
            "__tuple__" if isinstance(value, tuple) else "__set__": items}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and not set(value) & set(_TAGS):
            return {k: encode(v, depth + 1) for k, v in value.items()}
        return {"__dict__": [[encode(k, depth + 1), encode(v, depth + 1)]
                             for k, v in value.items()]}
    if isinstance(value, bytes | bytearray):
        return {"__bytes__": base64.b64encode(bytes(value)).decode()}
    array = _array(value)
    if array is not None:
        return array if value.shape != () else value.item()
    raise WireError(f"a {type(value).__name__} cannot cross between the evaluator and the "
                    f"candidate; only {SUPPORTED}")


def _numpy_array(data: Any, dtype: Any) -> Any:
    if not isinstance(dtype, str) or dtype not in NUMERIC_DTYPES:
        raise WireError(f"an array of dtype {str(dtype)[:40]!r} is refused; only "
                        f"{sorted(NUMERIC_DTYPES)}")
    try:
        import numpy
    except ImportError:
        return data
    try:
        return numpy.asarray(data, dtype=dtype)
    except (ValueError, TypeError, OverflowError) as exc:
        raise WireError(f"an array that does not fit its dtype {dtype}: {exc}") from None


def decode(data: Any, depth: int = 0) -> Any:
    """The value ``data`` (parsed JSON from :func:`encode`) stands for; WireError for
    anything :func:`encode` cannot have made."""
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested deeper than {MAX_DEPTH} levels")
    if data is None or isinstance(data, bool | int | float | str):
        return data
    if isinstance(data, list):
        return [decode(v, depth + 1) for v in data]
    if not isinstance(data, dict):
        raise WireError(f"unexpected {type(data).__name__}")
    tag = next((t for t in _TAGS if t in data), None)
    if tag is None:
        return {str(k): decode(v, depth + 1) for k, v in data.items()}
    body = data[tag]
    if tag == "__enum__":
        return _member(body, data.get("name"))
    if tag == "__bytes__":
        if not isinstance(body, str):
            raise WireError("bytes not given as base64 text")
        return base64.b64decode(body, validate=True)
    if not isinstance(body, list):
        raise WireError(f"{tag} not given as a list")
    if tag == "__ndarray__":
        return _numpy_array(decode(body, depth + 1), data.get("dtype"))
    items = [decode(v, depth + 1) for v in body]
    if tag == "__tuple__":
        return tuple(items)
    if tag == "__set__":
        return _hashed(items, set)
    return _pairs(items)


def _member(where: Any, name: Any) -> Any:
    """The enum member ``name`` of the class ``module:qualname``, from a module this process
    has imported already."""
    if not isinstance(where, str) or not isinstance(name, str) or ":" not in where:
        raise WireError("an enum member not given as 'module:class' and a name")
    module_name, qualname = where.split(":", 1)
    kind: Any = sys.modules.get(module_name)
    if kind is None:
        raise WireError(f"an enum member of {module_name[:80]!r}, a module this side has not "
                        "imported")
    for part in qualname.split("."):
        kind = getattr(kind, part, None) if part.isidentifier() else None
    if not isinstance(kind, enum.EnumMeta):
        raise WireError(f"{where[:120]!r} is not an enum")
    try:
        return kind[name]
    except KeyError:
        raise WireError(f"{where[:120]!r} has no member {name[:80]!r}") from None


def _hashed(items: list[Any], kind: Callable[[list[Any]], Any]) -> Any:
    try:
        return kind(items)
    except TypeError as exc:
        raise WireError(f"unhashable item: {exc}") from None


def _pairs(items: list[Any]) -> dict[Any, Any]:
    if not all(isinstance(p, list) and len(p) == 2 for p in items):
        raise WireError("a dict not given as [key, value] pairs")
    pairs: dict[Any, Any] = _hashed([tuple(p) for p in items], dict)
    return pairs


def _reply(out: Any, reply: dict[str, Any]) -> None:
    out.write(MARKER + json.dumps(reply, allow_nan=True) + "\n")
    out.flush()


def _call(path: str, name: str, request: dict[str, Any]) -> dict[str, Any]:
    module_name = os.path.splitext(os.path.basename(path))[0] or "candidate"
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        return {"raised": "ImportError", "message": f"cannot load {path}"}
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
        function = getattr(module, name, None)
        if not callable(function):
            return {"missing": name}
        value = function(*decode(request.get("args", [])), **decode(request.get("kwargs", {})))
        return {"value": encode(value)}
    except BaseException as exc:  # the candidate's failure is the reply, not this run's
        return {"raised": type(exc).__name__, "message": str(exc)[:2000],
                "traceback": traceback.format_exc()[-4000:]}


def main() -> int:
    """Candidate side: ``python -I _recursor_call.py PROGRAM FUNCTION`` with the call's
    arguments on stdin; the reply on stdout's last marked line. The candidate's own prints go
    to stderr."""
    out, sys.stdout = sys.stdout, sys.stderr
    try:
        request = json.loads(sys.stdin.read())
    except ValueError as exc:
        _reply(out, {"raised": "ValueError", "message": f"unreadable call: {exc}"})
        return 1
    _reply(out, _call(sys.argv[1], sys.argv[2], request))
    return 0


if __name__ == "__main__":
    sys.exit(main())
