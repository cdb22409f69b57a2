"""Whether bytes a candidate wrote are safe for an evaluator's ``pickle.load``.

Loading a pickle calls whatever callables it names (``find_class``), so a pickle a candidate
wrote can run any code in the process that loads it. Evaluators written for other systems
read their candidate's results that way (OpenEvolve's circle-packing example pickles numpy
arrays). :func:`refusal` reads the bytes with an unpickler that names nothing but plain data:
Python's containers and numbers, ``complex``, ``datetime`` values, ``collections``' ordered
and counting dicts and numpy arrays, dtypes and scalars. Loading is safe with that unpickler
(every callable it can reach is one of those), and a pickle it reads whole names nothing
else, so the evaluator's own unrestricted ``pickle.load`` of the same bytes runs nothing
else either. Every pickle in the bytes is read, one after another (an evaluator may call
``load`` more than once on one file); bytes that are not a pickle from some point on are
left alone, since ``pickle.load`` fails there too before calling anything.

Standard library only (numpy is imported only when a pickle names it).
"""

from __future__ import annotations

import _compat_pickle
import io
import pickle
from typing import Any

ALLOWED: frozenset[tuple[str, str]] = frozenset({
    ("builtins", "complex"), ("builtins", "set"), ("builtins", "frozenset"),
    ("builtins", "bytearray"), ("builtins", "slice"), ("builtins", "range"),
    ("collections", "OrderedDict"), ("collections", "Counter"), ("collections", "deque"),
    ("datetime", "date"), ("datetime", "datetime"), ("datetime", "time"),
    ("datetime", "timedelta"), ("datetime", "timezone"),
    ("_codecs", "encode"),  # how protocols 0-2 write bytes
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
})
# numpy's scalar types and dtype classes (``numpy.float64``, ``numpy.dtypes.Float64DType``)
# are data types, not functions: allowed by name under these modules
NUMPY_TYPE_MODULES = frozenset({"numpy", "numpy.dtypes"})


class Refused(pickle.UnpicklingError):
    """The pickle names something other than plain data."""


def _numpy_type(module: str, name: str) -> bool:
    if module not in NUMPY_TYPE_MODULES:
        return False
    import numpy

    found = getattr(numpy if module == "numpy" else numpy.dtypes, name, None)
    return isinstance(found, type) and (issubclass(found, numpy.generic)
                                        or issubclass(found, numpy.dtype))


def _python3_name(module: str, name: str) -> tuple[str, str]:
    """The name as Python 3 reads it (protocols 0-2 may say ``__builtin__.set``)."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        module, name = _python3_name(module, name)
        if (module, name) in ALLOWED or _numpy_type(module, name):
            return super().find_class(module, name)
        raise Refused(f"{module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise Refused("a persistent id")


def refusal(data: bytes) -> str | None:
    """None when ``data`` is safe to unpickle; else what it names that is not plain data."""
    stream = io.BytesIO(data)
    while stream.tell() < len(data):
        try:
            _PlainData(stream).load()
        except Refused as exc:
            return str(exc)
        except Exception:  # noqa: BLE001 - not a pickle from here: load() fails there too
            return None
    return None


__all__ = ["ALLOWED", "Refused", "refusal"]
