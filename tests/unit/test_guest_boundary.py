"""The trust boundary is a package boundary: what runs inside a sandbox is the guest side
(``recursor.layout``: the guest-side core and each task's evaluator part), which imports only
the guest side, and the docker sandbox stages exactly that side into its containers."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from recursor.layout import CONTAINER_AGENT, GUEST_CORE, GUEST_PARTS, guest_files
from recursor.sandbox.images import stage_source
from tests.unit.test_layers import ROOT, evaluator_modules, imported, module_files, package_folders

CORE_RULE = "the guest-side core imports only itself"


def _members(names: Sequence[str], modules: Mapping[str, Path]) -> set[str]:
    """``names`` with every module of each package among them."""
    return {m for m in modules for n in names if m == n or m.startswith(n + ".")}


def guest_violations(folders: Mapping[str, Path], core: Sequence[str],
                     parts: Mapping[str, Sequence[str]]) -> list[str]:
    """Each first-party import of a guest module that leaves the guest side it may use: a
    core module only the core, a part's module the core and its own part."""
    modules = module_files(folders)
    core_set = _members(core, modules)
    checked = [(name, core_set, CORE_RULE) for name in sorted(core_set)]
    for part, names in parts.items():
        missing = [n for n in names if n not in modules]
        assert not missing, f"GUEST_PARTS[{part!r}] names modules that do not exist: {missing}"
        rule = (f"a sandboxed evaluator (part {part!r}) imports only the guest-side core "
                f"({', '.join(core)}) and its own part")
        checked += [(name, core_set | set(names), rule) for name in names]
    out = []
    for name, allowed, rule in checked:
        path = modules[name]
        for line, target in sorted(set(imported(name, path, modules))):
            if target.startswith("recursor.") and target not in allowed:
                out.append(f"{path}:{line}: {name} imports {target}: {rule}")
    return out


def test_guest_modules_import_only_the_guest_side() -> None:
    found = guest_violations(package_folders(ROOT), GUEST_CORE, GUEST_PARTS)
    assert not found, "guest modules that import the trusted side:\n" + "\n".join(found)


def test_every_module_a_task_starts_in_a_sandbox_is_in_a_guest_part() -> None:
    started = evaluator_modules(package_folders(ROOT))
    declared = {name for part in GUEST_PARTS.values() for name in part}
    assert started and set(started) <= declared, sorted(set(started) - declared)


def test_a_planted_import_of_the_trusted_side_is_named(tmp_path: Path) -> None:
    for rel, text in {"recursor/__init__.py": "", "recursor/plan.py": "",
                      "recursor/secrets.py": "",
                      "tasks/__init__.py": "", "tasks/toy/__init__.py": "",
                      "tasks/toy/evaluate.py": "from recursor.plan import x\n"
                                               "from recursor.tasks.toy import task\n",
                      "tasks/toy/task.py": "", "tasks/toy/child.py": "import recursor.secrets\n"
                      }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    folders = {"recursor": tmp_path / "recursor", "recursor.tasks": tmp_path / "tasks"}
    found = guest_violations(folders, ["recursor.plan"],
                             {"toy": ["recursor.tasks.toy.evaluate", "recursor.tasks.toy.child"]})
    assert len(found) == 2, found
    assert "recursor.tasks.toy.evaluate imports recursor.tasks.toy.task" in found[0]
    assert "recursor.tasks.toy.child imports recursor.secrets" in found[1]
    assert "imports only the guest-side core (recursor.plan) and its own part" in found[1]


def test_containers_get_the_guest_side_and_nothing_else(tmp_path: Path) -> None:
    staged = stage_source(tmp_path)
    files = {str(p.relative_to(staged)) for p in staged.rglob("*.py")}
    wanted = set(guest_files())
    stubs = files - wanted
    assert wanted <= files and all(Path(s).name == "__init__.py" for s in stubs), stubs
    for stub in stubs:  # a package above a guest module: empty, so importing runs nothing
        assert "import" not in (staged / stub).read_text()
    assert not any(f.startswith(("recursor/orchestrator", "recursor/archive", "recursor/ui",
                                 "recursor/cli", "recursor/proposers", "recursor/config"))
                   for f in files)
    assert {f"recursor/sandbox/{m.rsplit('.', 1)[1]}.py" for m in CONTAINER_AGENT} <= files
    for module in evaluator_modules(package_folders(ROOT)):  # each starts from the tree alone
        probe = (f"import json, sys; sys.path.insert(0, {str(staged)!r}); import {module}; "
                 "print(json.dumps(sorted({m.split('.')[1] for m in sys.modules "
                 "if m.startswith('recursor.')})))")
        run = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True,
                             text=True, cwd=tmp_path)
        assert run.returncode == 0, f"{module} does not import from the staged tree: " \
                                    f"{run.stderr[-800:]}"
        assert set(json.loads(run.stdout)) <= {"guest", "plan", "types", "content", "tasks",
                                               "pyast"}, (
            module, run.stdout)
