"""docs/architecture.md against the code: every module it names exists, and it names every package
and every graph node.

What counts as naming a module: a file path (``orchestrator/graph.py``; a bare ``graph.py`` must
be some package file's name), a folder path in backticks whose first folder is one of the
repository's (``proposers/llm/``), and a dotted name (``recursor.tasks.worlds``,
``recursor.run``, ``recursor.tasks._base:Task``): the longest prefix that is a module must
define the rest (a top-level name, or a member of a class). Entry-point group names
(``recursor.sandboxes``, from ``recursor.plugins.KINDS``) are names too, though not modules.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from recursor.plugins import KINDS
from tests.unit.test_layers import ROOT, module_files, package_folders

DOC = ROOT / "docs" / "architecture.md"
FILE_PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)+[\w.-]+\.py)\b")
BARE_FILE = re.compile(r"(?<![\w./-])([A-Za-z_]\w*\.py)\b")
FOLDER = re.compile(r"`((?:[\w.-]+/)+)`")
DOTTED = re.compile(r"\b(recursor(?:\.[A-Za-z_]\w*)+)(?::([A-Za-z_][\w.]*))?")
ENTRY_POINT_GROUPS = frozenset(kind.group for kind in KINDS.values())


def _occurrences(pattern: re.Pattern[str], text: str) -> Iterator[tuple[int, re.Match[str]]]:
    for match in pattern.finditer(text):
        yield text.count("\n", 0, match.start()) + 1, match


def _defined_names(tree: ast.Module) -> dict[str, ast.AST]:
    """Top-level names a module defines or imports, and the names its ``__all__`` lists (a
    package may export a name lazily through ``__getattr__``)."""
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
                    if target.id == "__all__" and isinstance(node.value, ast.List | ast.Tuple):
                        for elt in node.value.elts:  # a definition above stays the entry
                            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                                names.setdefault(elt.value, node)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update({(alias.asname or alias.name).split(".")[0]: node
                          for alias in node.names})
    return names


def _resolve(dotted: str, modules: Mapping[str, Path]) -> str | None:
    """None when ``dotted`` (``module``, ``module.attr`` or ``module.Class.member``) exists,
    else what is missing."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in modules:
            break
    else:
        return f"no module {parts[0]}"
    rest = parts[cut:]
    if not rest:
        return None
    names = _defined_names(ast.parse(modules[module].read_text()))
    found = names.get(rest[0])
    if found is None:
        return f"{module} defines no {rest[0]!r}"
    if len(rest) > 1 and isinstance(found, ast.ClassDef):
        members = {n.name for n in found.body
                   if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
        members |= {n.target.id for n in found.body
                    if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
        members |= {t.id for n in found.body if isinstance(n, ast.Assign)
                    for t in n.targets if isinstance(t, ast.Name)}
        if rest[1] not in members:
            return f"{module}.{rest[0]} has no member {rest[1]!r}"
    return None


def missing_modules(text: str, root: Path, folders: Mapping[str, Path]) -> list[str]:
    """One message per module path, folder or dotted name in ``text`` that does not exist."""
    modules = module_files(folders)
    basenames = {path.name for path in modules.values()}
    top_folders = {p.name for p in root.iterdir() if p.is_dir()}
    out = []
    for line, match in _occurrences(FILE_PATH, text):
        if not (root / match[1]).is_file():
            out.append(f"line {line}: {match[1]} is not a file of the repository")
    for line, match in _occurrences(BARE_FILE, text):
        if match[1] not in basenames:
            out.append(f"line {line}: no package has a file {match[1]}")
    for line, match in _occurrences(FOLDER, text):
        if match[1].split("/")[0] in top_folders and not (root / match[1]).is_dir():
            out.append(f"line {line}: {match[1]} is not a folder of the repository")
    for line, match in _occurrences(DOTTED, text):
        name = match[1] + (f".{match[2]}" if match[2] else "")
        if match[1] in ENTRY_POINT_GROUPS and not match[2]:
            continue
        problem = _resolve(name, modules)
        if problem is not None:
            out.append(f"line {line}: {match[0]}: {problem}")
    return out


def unmentioned(text: str, root: Path, folders: Mapping[str, Path]) -> list[str]:
    """What the doc must name and does not: each top-level package (its folder ``tasks/`` or
    its dotted name), each subpackage directly in ``recursor/`` (``recursor/cli/``) and each
    graph node's module (``orchestrator/nodes/seed.py``)."""
    out = []
    folder_of = {name: path.relative_to(root).as_posix() for name, path in folders.items()}
    packages = set(folders)
    packages |= {p.parent.relative_to(folders["recursor"]).as_posix()
                 for p in folders["recursor"].glob("*/__init__.py")}
    for package in sorted(packages):
        name = package if package in folders else f"recursor.{package}"
        folder = folder_of.get(name, f"{folder_of['recursor']}/{package}")
        # the root package only by its folder: the bare word "recursor" is everywhere
        dotted = "." in name and re.search(rf"\b{re.escape(name)}\b", text)
        if f"{folder}/" not in text and not dotted:
            out.append(f"package {name} (folder {folder}/): say what it owns")
    nodes = folders["recursor.orchestrator"] / "nodes"
    for path in sorted(nodes.glob("*.py")):
        rel = path.relative_to(root).as_posix()
        if not path.name.startswith("_") and rel not in text:
            out.append(f"graph node {rel}: describe it in 'The rounds driver', in order")
    return out


def test_every_module_the_doc_names_exists() -> None:
    found = missing_modules(DOC.read_text(), ROOT, package_folders(ROOT))
    assert not found, ("docs/architecture.md names modules that do not exist (fix the name or "
                       "drop it):\n" + "\n".join(found))


def test_the_doc_names_every_package_and_graph_node() -> None:
    found = unmentioned(DOC.read_text(), ROOT, package_folders(ROOT))
    assert not found, "docs/architecture.md leaves out:\n" + "\n".join(found)


def test_a_planted_wrong_name_is_reported_with_its_line() -> None:
    text = ("The graph is `orchestrator/graph.py` and `recursor.orchestrator.graph.execute`;\n"
            "steps live in `orchestrator/steps.py`, `recursor.tasks.cfr.nothing_here`,\n"
            "`recursor.sandbox._base:Sandbox.run`, `recursor.sandbox._base:Sandbox.fly`,\n"
            "`recursor.nowhere`, `recursor.sandboxes`, `proposers/llm/`, `proposers/gone/`,\n"
            "`engine.py` and `no_such_module.py`.\n")
    found = missing_modules(text, ROOT, package_folders(ROOT))
    assert found == [
        "line 2: orchestrator/steps.py is not a file of the repository",
        "line 5: no package has a file no_such_module.py",
        "line 4: proposers/gone/ is not a folder of the repository",
        "line 2: recursor.tasks.cfr.nothing_here: recursor.tasks.cfr defines no 'nothing_here'",
        "line 3: recursor.sandbox._base:Sandbox.fly: recursor.sandbox._base.Sandbox has no "
        "member 'fly'",
        "line 4: recursor.nowhere: recursor defines no 'nowhere'",
    ], found


def test_a_doc_without_a_package_or_a_node_is_reported() -> None:
    folders = package_folders(ROOT)
    full = DOC.read_text()
    text = full.replace("orchestrator/nodes/judge.py", "the judge").replace("`ui/`", "")
    text = re.sub(r"\brecursor\.ui\b", "the UI", text).replace("ui/", "")
    found = unmentioned(text, ROOT, folders)
    assert found == ["package recursor.ui (folder ui/): say what it owns",
                     "graph node orchestrator/nodes/judge.py: describe it in 'The rounds "
                     "driver', in order"], found
