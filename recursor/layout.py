"""Where each package of ``recursor`` lives: the one place that knows the folder mapping.

The project keeps its design's top-level component folders (``orchestrator/``, ``tasks/``,
...) and installs them into one ``recursor.*`` namespace through setuptools' ``package-dir``
(pyproject's ``[tool.setuptools]``). That table is the single source: :func:`package_dirs`
reads it from a source checkout, and a built installation (a wheel, where every package sits
inside ``recursor/`` already) needs no mapping at all. Everything that must know the layout
asks here: the type check's package tree (``scripts/typecheck.py``), the layering and
architecture tests, and the docker sandbox's staged source (``sandbox/images.py``).
Standard library only.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

PACKAGE = "recursor"
PYPROJECT = "pyproject.toml"


def checkout_root(package_folder: Path | None = None) -> Path | None:
    """The source checkout ``recursor/`` belongs to (the folder holding ``pyproject.toml``
    beside it, naming this project), or None for a built installation."""
    folder = (package_folder or Path(__file__).resolve().parent).resolve()
    candidate = folder.parent / PYPROJECT
    if not candidate.is_file():
        return None
    try:
        config = tomllib.loads(candidate.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return folder.parent if config.get("project", {}).get("name") == PACKAGE else None


def package_dirs(root: Path | None = None) -> dict[str, Path]:
    """Each package name mapped to a folder of its own (``recursor.tasks`` -> ``ROOT/tasks``),
    from ``root``'s pyproject (default: the checkout this module belongs to). For a built
    installation, only ``recursor`` itself: its subpackages are its subfolders."""
    root = root if root is not None else checkout_root()
    if root is None:
        return {PACKAGE: Path(__file__).resolve().parent}
    config = tomllib.loads((root / PYPROJECT).read_text())
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    return {name: (root / folder).resolve() for name, folder in mapping.items()}


def mapped_subpackages(root: Path | None = None) -> list[str]:
    """The packages mapped to a folder of their own, besides ``recursor`` (``recursor.tasks``,
    ...); sorted so that a parent comes before its children."""
    names = [name for name in package_dirs(root) if name != PACKAGE]
    return sorted(names, key=lambda name: (name.count("."), name))


__all__ = ["PACKAGE", "checkout_root", "mapped_subpackages", "package_dirs"]
