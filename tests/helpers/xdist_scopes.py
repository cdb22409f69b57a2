"""Which tests of a module must share an xdist worker so that its module fixtures run once.

pytest-xdist gives each worker its own fixtures: a module-scoped fixture runs once on every
worker that gets a test of its module. Where that fixture trains a model or starts a server
(``tests/system/test_learned_proposer.py``'s ``trained`` takes about two minutes) spreading the
module's tests over three workers repeats it three times. The scheduler in ``tests/conftest.py``
therefore keeps together the tests that use a fixture set up once per module: one defined with
``scope="module"`` (or ``"package"``) in the module or a ``conftest.py`` above it, or with
``scope="session"`` in the module itself, or a fixture that depends on one of those. Other
tests of the module still go to any worker. The answer comes from the test files' syntax tree
(the controller collects nothing), so a fixture reached another way (``usefixtures``, a
fixture named by a string) is not seen; such a test only loses the sharing, never a result.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ONCE_PER_MODULE = frozenset({"module", "package"})


@functools.cache
def _fixtures(path: Path) -> dict[str, tuple[str, frozenset[str]]]:
    """Fixture name -> (scope, the fixtures it asks for), for the fixtures ``path`` defines."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return {}
    found: dict[str, tuple[str, frozenset[str]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            declared = _fixture_declaration(node)
            if declared is not None:
                name, scope = declared
                found[name] = (scope, frozenset(a.arg for a in node.args.args))
    return found


def _fixture_declaration(function: ast.FunctionDef | ast.AsyncFunctionDef
                         ) -> tuple[str, str] | None:
    """(name, scope) when ``function`` is decorated as a pytest fixture, else None."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if not (isinstance(target, ast.Attribute) and target.attr == "fixture"
                or isinstance(target, ast.Name) and target.id == "fixture"):
            continue
        name, scope = function.name, "function"
        if isinstance(decorator, ast.Call):
            for keyword in decorator.keywords:
                if isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value,
                                                                           str):
                    if keyword.arg == "scope":
                        scope = keyword.value.value
                    elif keyword.arg == "name":
                        name = keyword.value.value
        return name, scope
    return None


@functools.cache
def _test_arguments(path: Path) -> dict[str, frozenset[str]]:
    """Test function name -> its argument names (methods of test classes included)."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return {}
    return {node.name: frozenset(a.arg for a in node.args.args) for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test")}


@functools.cache
def _once_per_module(path: Path, root: Path) -> frozenset[str]:
    """The fixtures a test of ``path`` can use that are set up once per module there."""
    visible: dict[str, tuple[str, frozenset[str]]] = {}
    folder = path.parent
    conftests = []
    while folder == root or root in folder.parents:
        conftests.append(folder / "conftest.py")
        folder = folder.parent
    for conftest in reversed(conftests):  # nearer definitions override farther ones
        visible.update(_fixtures(conftest))
    own = _fixtures(path)
    visible.update(own)
    shared = {name for name, (scope, _) in visible.items()
              if scope in ONCE_PER_MODULE or (scope == "session" and name in own)}
    grew = True
    while grew:  # a fixture asking for a shared one is set up with it
        more = {name for name, (_, wants) in visible.items() if wants & shared} - shared
        shared |= more
        grew = bool(more)
    return frozenset(shared)


def module_scope(nodeid: str, root: Path) -> str | None:
    """The module's path when test ``nodeid`` uses a fixture set up once per module, else
    None (the test may go to any worker)."""
    path_part, _, rest = nodeid.partition("::")
    name = rest.rsplit("::", 1)[-1].split("[", 1)[0]
    path = root / path_part
    wants = _test_arguments(path).get(name, frozenset())
    return path_part if wants & _once_per_module(path, root) else None
