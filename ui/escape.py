"""Escaping text that a candidate or a model wrote (hostile by design) for HTML and JSON.

Every untrusted string reaches a page through :func:`for_html` (server-rendered templates), or
as JSON data that the page's scripts put into the DOM with ``textContent`` only. Control
characters are stripped in both cases: they have no business in a page and some terminals and
viewers misbehave on them.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from markupsafe import Markup

from recursor import untrusted

# C0 controls except tab and newline, DEL, C1 controls, and the bidi overrides that can make
# text read differently from what it is
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def strip_controls(text: str) -> str:
    """``text`` without control characters (tab and newline kept; CR becomes newline)."""
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def for_html(value: Any) -> Markup:
    """``value`` as text safe to place in HTML element content or a quoted attribute (the
    shared rule, :func:`recursor.untrusted.for_html`: controls shown as visible escapes)."""
    return Markup(untrusted.for_html(value))


def jsonable(data: Any) -> Any:
    """``data`` with every non-finite float replaced by None (JSON has no NaN or infinity)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {str(k): jsonable(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [jsonable(v) for v in data]
    return data


def json_for_script(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<``, ``>``, ``&`` or line
    separators appear literally, so no string in it can close the element."""
    text = json.dumps(jsonable(data), separators=(",", ":"), default=str, allow_nan=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


__all__ = ["for_html", "json_for_script", "jsonable", "strip_controls"]
