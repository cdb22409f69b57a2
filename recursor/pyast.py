"""``ast.parse`` that several threads may call at once.

CPython 3.11 keeps the AST converter's recursion depth in per-interpreter state, so two threads
converting syntax trees at the same moment can fail with ``SystemError: AST constructor
recursion depth mismatch`` (python/cpython gh-106905). Trusted code parses candidate programs
in proposer and check threads; one such spurious failure made a seeded campaign's tree depend
on how its threads were timed (a failed proposal in one run, a candidate in the next). Every
parse in trusted code goes through :func:`parse`, which holds one process-wide lock.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal, overload

_LOCK = threading.Lock()


@overload
def parse(source: str, filename: str = ..., mode: Literal["exec"] = ...) -> ast.Module: ...


@overload
def parse(source: str, filename: str = ..., *, mode: Literal["eval"]) -> ast.Expression: ...


def parse(source: str, filename: str = "<unknown>",
          mode: Literal["exec", "eval"] = "exec") -> ast.Module | ast.Expression:
    """``ast.parse(source, filename, mode)``, one thread at a time; raises what it raises."""
    with _LOCK:
        if mode == "eval":
            return ast.parse(source, filename, "eval")
        return ast.parse(source, filename)


__all__ = ["parse"]
