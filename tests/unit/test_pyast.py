"""Trusted code parses candidate programs through ``recursor.pyast`` (one lock): CPython 3.11's
AST converter can fail spuriously when threads parse at once, which made a seeded campaign's
tree depend on thread timing."""

from __future__ import annotations

import ast
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from recursor import pyast
from recursor.layout import package_dirs

ROOT = Path(__file__).resolve().parents[2]
DIRECT = re.compile(r"\bast\.parse\(")


def test_trusted_code_parses_only_through_the_locked_parser() -> None:
    found = [f"{path.relative_to(ROOT)}:{n}" for top in package_dirs(ROOT).values()
             for path in sorted(top.rglob("*.py")) if path.name != "pyast.py"
             for n, line in enumerate(path.read_text().splitlines(), 1) if DIRECT.search(line)]
    assert not found, ("call recursor.pyast.parse instead of ast.parse (thread-safe on "
                       f"CPython 3.11): {found}")


def test_parses_from_many_threads_agree_with_ast() -> None:
    source = "def f(x):\n" + "".join(f"    x = [x, ({i}, {{'k': x}})]\n" for i in range(200))
    expected = ast.dump(ast.parse(source))
    with ThreadPoolExecutor(8) as pool:
        dumps = list(pool.map(lambda _: ast.dump(pyast.parse(source)), range(64)))
    assert dumps == [expected] * 64
    assert isinstance(pyast.parse("1 + 2", mode="eval"), ast.Expression)
