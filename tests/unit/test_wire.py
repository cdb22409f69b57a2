"""The JSON wire between an evaluator and the candidate's function (``tasks/program/wire.py``):
what crosses round-trips exactly; what a hostile reply may hold is refused, never built."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from recursor.tasks.program.wire import WireError, decode, encode


def _across(value: Any) -> Any:
    return decode(json.loads(json.dumps(encode(value), allow_nan=True)))


@pytest.mark.parametrize("value", [
    None, True, 3, -2.5, "text", [1, [2, 3]], (1, (2.0, "x")), {"a": (1, 2)}, {1: "one", (2, 3): 4},
    {"__tuple__": 1}, b"\x00\xff", {1, 2}, float("inf"),
])
def test_plain_values_round_trip(value: Any) -> None:
    assert _across(value) == value and type(_across(value)) is type(value)


def test_nan_and_numpy_values_round_trip() -> None:
    assert math.isnan(_across(float("nan")))
    array = np.arange(6, dtype=np.int32).reshape(2, 3)
    back = _across(array)
    assert isinstance(back, np.ndarray) and back.dtype == np.int32 and (back == array).all()
    assert _across(np.float64(0.25)) == 0.25 and _across((np.float32(1.5),)) == (1.5,)


@pytest.mark.parametrize("value", [object(), np.array([object()], dtype=object), len,
                                   np.array(["a"])])
def test_what_cannot_cross_is_a_clear_error(value: Any) -> None:
    with pytest.raises(WireError, match="cannot cross"):
        encode(value)


@pytest.mark.parametrize("reply", [
    {"__ndarray__": [1], "dtype": "object"},
    {"__ndarray__": [1], "dtype": "<U1"},
    {"__ndarray__": [1], "dtype": ["f8"]},
    {"__ndarray__": [[1], [2, 3]], "dtype": "float64"},
    {"__ndarray__": [300], "dtype": "int8"},
    {"__bytes__": "not base64!"},
    {"__dict__": [[1]]},
    {"__set__": [[1]]},
    {"__tuple__": "abc"},
])
def test_a_hostile_reply_is_refused(reply: Any) -> None:
    with pytest.raises((WireError, ValueError)):
        decode(reply)


def test_a_deep_reply_is_refused_not_a_crash() -> None:
    deep: Any = 1
    for _ in range(200):
        deep = [deep]
    with pytest.raises(WireError, match="deeper"):
        decode(deep)
    with pytest.raises(WireError, match="deeper"):
        encode(deep)


class Move(__import__("enum").Enum):
    UP = 0
    DOWN = 1


def test_an_enum_both_sides_import_crosses_by_name() -> None:
    assert _across([Move.UP, (Move.DOWN,)]) == [Move.UP, (Move.DOWN,)]
    assert _across(Move.DOWN) is Move.DOWN
    here = f"{__name__}:Move"
    for forged, why in [
        ({"__enum__": "a_module_never_imported:Move", "name": "UP"}, "has not imported"),
        ({"__enum__": here, "name": "SIDEWAYS"}, "has no member"),
        ({"__enum__": f"{__name__}:_across", "name": "UP"}, "is not an enum"),
        ({"__enum__": "os:system", "name": "x"}, "is not an enum"),
        ({"__enum__": here}, "not given as"),
        ({"__enum__": f"{__name__}:Move.__class__.__init__", "name": "x"}, "is not an enum"),
    ]:
        with pytest.raises(WireError, match=why):
            decode(forged)
