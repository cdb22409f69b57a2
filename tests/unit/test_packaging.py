"""The package builds without a setuptools warning, ships its data files, and the layout has
one source (``recursor.layout``) that also describes a built installation."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from recursor.layout import PACKAGE, mapped_subpackages, package_dirs

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The project's wheel, built here (no isolation: the installed setuptools), and what the
    build printed."""
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("checkout") / "recursor"  # setuptools builds in place
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".mypy-tree", "build", "campaigns", "__pycache__", "*.egg-info"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-v", "-w", str(out), str(source)],
                           capture_output=True, text=True, env=env, check=True)
    [path] = out.glob("recursor-*.whl")
    return path, built.stdout + built.stderr


def test_the_build_prints_no_setuptools_warning(wheel: tuple[Path, str]) -> None:
    _, printed = wheel
    warnings = [line for line in printed.splitlines()
                if re.search(r"warning", line, re.IGNORECASE)
                and "Location 'file:" not in line]  # pip's own notes about local indexes
    assert warnings == [], "\n".join(warnings)


def test_the_wheel_holds_every_package_and_data_file(wheel: tuple[Path, str]) -> None:
    path, _ = wheel
    names = set(zipfile.ZipFile(path).namelist())
    for package in mapped_subpackages(ROOT):
        assert f"{package.replace('.', '/')}/__init__.py" in names, package
    for data in ("recursor/proposers/llm/templates/system.md", "recursor/ui/static/app.css",
                 "recursor/ui/templates/node.html", "recursor/tasks/worlds/seed/harness.py",
                 "recursor/tasks/cfr/hooks/vanilla.py", "recursor/tasks/psro/solvers/nash.py"):
        assert data in names, data


def test_the_layout_comes_from_pyproject_and_describes_a_built_installation(
        wheel: tuple[Path, str], tmp_path: Path) -> None:
    dirs = package_dirs(ROOT)
    assert dirs[PACKAGE] == ROOT / "recursor" and dirs["recursor.tasks"] == ROOT / "tasks"
    assert package_dirs() == dirs  # the checkout this module belongs to
    path, _ = wheel
    zipfile.ZipFile(path).extractall(tmp_path / "site")
    # -S: no site directory, so the only recursor on the path is the extracted wheel's
    probe = "from recursor.layout import package_dirs; print(sorted(package_dirs().items()))"
    shown = subprocess.run([sys.executable, "-S", "-c", probe], cwd=tmp_path,
                           env={"PYTHONPATH": str(tmp_path / "site")},
                           capture_output=True, text=True, check=True).stdout
    assert shown.strip() == str([(PACKAGE, tmp_path / "site" / "recursor")])


def test_no_second_copy_of_the_folder_mapping() -> None:
    """Only pyproject and ``recursor.layout`` (which reads it) name the mapped folders: a
    list of the components written out anywhere else would drift from them."""
    pattern = re.compile(r'"orchestrator",\s*"proposers"|"recursor\.orchestrator":\s*"')
    offenders = []
    for path in ROOT.rglob("*.py"):
        if {".venv", ".mypy-tree", "build"} & set(path.parts) or path.name == "test_packaging.py":
            continue
        if pattern.search(path.read_text(errors="replace")):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
