"""The import rules between Recursor's layers, checked on every module's source with ``ast``.

Layers, bottom to top (docs/architecture.md):

- **core**: the modules directly in ``recursor/`` (``types``, ``errors``, ``plan``, ``guest``,
  ``content``, ...) and the ``recursor.config`` package. It imports no other layer.
- **components**: ``archive``, ``sandbox``, ``executors``, ``proposers``, ``tasks``. Each imports
  the core and itself, never another component.
- **orchestrator**: imports the core and a component only through its package (its contract,
  ``from recursor.tasks import Task``), never a component's module (``recursor.tasks.worlds``).
- **front ends**: ``recursor`` itself, ``recursor.api``, ``recursor.cli``, ``recursor.ui``:
  anything below them. ``recursor.replay`` sits with the orchestrator (it runs the loop's rules
  over a recorded tree, and the loop's retune step replays the campaign's own archive).
- **the archive's insides**: nothing outside ``recursor.archive`` imports its tables
  (``models``) or migrations; readers and writers deal in its frozen records.

Every import counts, including those inside functions and under ``TYPE_CHECKING``: a lazy import
is still a dependency. ``import recursor`` alone is allowed everywhere (it names the installed
package, e.g. to find its folder).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from recursor.layout import package_dirs

ROOT = Path(__file__).resolve().parents[2]
COMPONENTS = frozenset({"archive", "sandbox", "executors", "proposers", "tasks"})
# core modules grown into a package of their own (their submodules are core too)
CORE_PACKAGES = frozenset({"config", "guest"})
# the loop and its simulator: replay runs the loop's rules over a recorded tree, and the loop's
# retune step replays its own archive
ORCHESTRATOR = frozenset({"orchestrator", "replay"})
FRONT_ENDS = frozenset({"api", "cli", "ui"})
# the archive's tables and migrations: read and written only through its reader and writer
ARCHIVE_PRIVATE = frozenset({"recursor.archive.models", "recursor.archive.migrations",
                             "recursor.archive.schema_v5"})


def package_folders(root: Path) -> dict[str, Path]:
    """The installed package name -> source folder (``recursor.layout``)."""
    return package_dirs(root)


def module_files(folders: Mapping[str, Path]) -> dict[str, Path]:
    """Every module's dotted name -> its file. A folder mapped to a package of its own (a
    component inside ``recursor/`` would be one) is walked under that package only."""
    out: dict[str, Path] = {}
    for package, folder in sorted(folders.items(), key=lambda item: len(item[0])):
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([package, *parts])
            out.setdefault(name, path)
    return out


def layer(module: str, modules: Mapping[str, Path]) -> str:
    """``root``, ``core``, ``component:<name>``, ``orchestrator`` or ``front end``; ValueError
    for a package no rule covers (classify it in this file)."""
    parts = module.split(".")
    if parts == ["recursor"]:
        return "root"
    top = parts[1]
    if top in COMPONENTS:
        return f"component:{top}"
    if top in CORE_PACKAGES:
        return "core"
    if top in ORCHESTRATOR:
        return "orchestrator"
    if top in FRONT_ENDS:
        return "front end"
    if len(parts) == 2 and module in modules and modules[module].name != "__init__.py":
        return "core"
    raise ValueError(f"{module} belongs to no layer: add its package to COMPONENTS or FRONT_ENDS "
                     "in tests/unit/test_layers.py (a subpackage of recursor/ is not core)")


def imported(module: str, path: Path, modules: Mapping[str, Path]) -> Iterator[tuple[int, str]]:
    """(line, module) for every first-party module that ``module`` imports."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield node.lineno, sub if sub in modules else base


def rule_broken(source: str, target: str, modules: Mapping[str, Path]) -> str | None:
    """The rule that ``source`` importing ``target`` breaks, or None."""
    if target != "recursor" and not target.startswith("recursor."):
        return None
    if target in ARCHIVE_PRIVATE and not source.startswith("recursor.archive"):
        return ("the archive's tables and migrations stay inside it: read through "
                "recursor.archive.ArchiveReader, write through recursor.archive.Archive "
                "(both deal in the frozen records of recursor.archive)")
    mine, theirs = layer(source, modules), layer(target, modules)
    if theirs == "root" or mine in ("root", "front end") or theirs == "core":
        return None
    if mine == theirs and mine != "core":
        return None
    if mine == "core":
        return "the core imports no component, controller or front end"
    if mine.startswith("component:"):
        return ("a component imports only the core and itself (move what two components "
                "share into the core, or pass it in)")
    if mine == "orchestrator" and theirs.startswith("component:"):
        package = "recursor." + theirs.split(":")[1]
        if target == package:
            return None
        return (f"the orchestrator imports a component only through its package: export the "
                f"name from {package} and import it from there")
    return "the orchestrator imports no front end"


def violations(folders: Mapping[str, Path]) -> list[str]:
    modules = module_files(folders)
    out = []
    for name, path in sorted(modules.items()):
        for line, target in sorted(set(imported(name, path, modules))):
            reason = rule_broken(name, target, modules)
            if reason:
                out.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:"
                           f"{line}: {name} imports {target}: {reason}")
    return out


def test_every_import_follows_the_layer_rules() -> None:
    found = violations(package_folders(ROOT))
    assert not found, "imports that break the layer rules:\n" + "\n".join(found)


# What the sandbox image lacks: an evaluator that imports one of these fails there
NOT_IN_THE_IMAGE = ("pydantic", "yaml", "sqlalchemy", "git")


def evaluator_modules(folders: Mapping[str, Path]) -> list[str]:
    """The modules that tasks start inside a sandbox: every literal module name passed to
    ``trusted_module_command`` or ``candidate_module_command`` (or bound to a ``RUNNER``
    constant) under ``tasks/``."""
    pattern = re.compile(
        r'(?:(?:trusted|candidate)_module_command\(\s*|RUNNER = )"(recursor\.[\w.]+)"')
    found = {m for path in folders["recursor.tasks"].rglob("*.py")
             for m in pattern.findall(path.read_text())}
    return sorted(found)


def test_the_modules_evaluators_start_import_nothing_the_sandbox_image_lacks() -> None:
    """The core types tasks share (``recursor.plan``, ``recursor.guest``, ...) are standard
    library only, and a package ``__init__`` on an evaluator's import path loads nothing that
    needs pydantic, PyYAML, SQLAlchemy or GitPython (the docker image has none of them)."""
    modules = [*evaluator_modules(package_folders(ROOT)), "recursor.sandbox.guest",
               "recursor.guest.__main__"]
    assert {"recursor.tasks.cfr.evaluate", "recursor.tasks.program.runner",
            "recursor.tasks.psro.child", "recursor.tasks.worlds.child"} <= set(modules), modules
    for module in modules:
        probe = (f"import sys, {module}\n"
                 f"print(sorted({{m.split('.')[0] for m in sys.modules}} "
                 f"& {set(NOT_IN_THE_IMAGE)}))")
        out = subprocess.run([sys.executable, "-P", "-s", "-c", probe], capture_output=True,
                             text=True, check=True).stdout.strip()
        assert out == "[]", f"importing {module} (as an evaluator does) loads {out}"


def _plant(root: Path, files: Mapping[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return {"recursor": root / "recursor", "recursor.tasks": root / "tasks",
            "recursor.sandbox": root / "sandbox", "recursor.orchestrator": root / "orch"}


def test_a_planted_cross_component_import_is_named_with_its_rule(tmp_path: Path) -> None:
    folders = _plant(tmp_path, {
        "recursor/__init__.py": "", "recursor/types.py": "",
        "sandbox/__init__.py": "from recursor.types import X\n",
        "sandbox/limits.py": "", "orch/__init__.py": "",
        "tasks/__init__.py": "def f():\n    from recursor.sandbox.limits import L\n",
    })
    [found] = violations(folders)
    assert "recursor.tasks imports recursor.sandbox.limits" in found
    assert "a component imports only the core and itself" in found
    assert found.startswith(f"{tmp_path / 'tasks' / '__init__.py'}:2:")


def test_planted_core_and_orchestrator_violations_are_caught(tmp_path: Path) -> None:
    folders = _plant(tmp_path, {
        "recursor/__init__.py": "from recursor.cli import app\n",
        "recursor/types.py": "from . import config\nfrom recursor import tasks\n",
        "recursor/config.py": "", "recursor/cli/__init__.py": "",
        "sandbox/__init__.py": "", "sandbox/docker.py": "from ._base import B\n",
        "sandbox/_base.py": "",
        "tasks/__init__.py": "", "tasks/loading.py": "",
        "orch/__init__.py": "from recursor.tasks import Task\n",
        "orch/run.py": "import recursor.tasks.loading\nfrom recursor.cli import app\n",
    })
    found = violations(folders)
    assert len(found) == 3, found
    assert "recursor.types imports recursor.tasks: the core imports no component" in found[2]
    assert ("recursor.orchestrator.run imports recursor.tasks.loading: the orchestrator imports "
            "a component only through its package") in found[0]
    assert "imports recursor.cli: the orchestrator imports no front end" in found[1]


def test_a_planted_read_of_the_archive_tables_is_caught(tmp_path: Path) -> None:
    folders = _plant(tmp_path, {
        "recursor/__init__.py": "", "recursor/ui.py": "", "orch/__init__.py": "",
        "archive/__init__.py": "from recursor.archive.models import NodeRow\n",
        "archive/models.py": "",
        "recursor/cli/__init__.py": "from recursor.archive.models import NodeRow\n",
    })
    folders["recursor.archive"] = tmp_path / "archive"
    [found] = violations(folders)
    assert "recursor.cli imports recursor.archive.models" in found
    assert "the archive's tables and migrations stay inside it" in found


def test_a_package_of_no_layer_is_reported(tmp_path: Path) -> None:
    folders = _plant(tmp_path, {"recursor/__init__.py": "", "recursor/newpkg/__init__.py": "",
                                "recursor/types.py": "from recursor.newpkg import x\n",
                                "sandbox/__init__.py": "", "tasks/__init__.py": "",
                                "orch/__init__.py": ""})
    try:
        violations(folders)
    except ValueError as exc:
        assert "recursor.newpkg belongs to no layer" in str(exc)
    else:
        raise AssertionError("an unclassified package passed the layer check")
