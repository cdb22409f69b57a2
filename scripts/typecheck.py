"""Run mypy over every package of ``recursor``: ``python scripts/typecheck.py [mypy args]``.

The installed package maps its subpackages to folders of their own (``recursor.layout``,
from pyproject's ``[tool.setuptools] package-dir``: ``recursor.tasks`` is ``tasks/``), which
mypy cannot follow: it names a module after the folders a file sits in. So this builds
``.mypy-tree/recursor``, a tree of symlinks laid out as the installed package (``recursor/*``
beside one link per mapped folder), rebuilt on every run so that a new module or package is
never missed, and then runs mypy on it (the ``files`` of pyproject's ``[tool.mypy]``).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from recursor.layout import PACKAGE, package_dirs

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / ".mypy-tree"
SKIPPED = {"__pycache__"}


def build_tree() -> Path:
    """Lay out ``.mypy-tree/recursor`` as the installed package; return its path."""
    shutil.rmtree(TREE, ignore_errors=True)
    for package, source in sorted(package_dirs(ROOT).items(), key=lambda i: i[0].count(".")):
        target = TREE.joinpath(*package.split("."))
        if package == PACKAGE:  # the root package: link its entries one by one
            target.mkdir(parents=True)
            for entry in sorted(source.iterdir()):
                if entry.name not in SKIPPED and not target.joinpath(entry.name).exists():
                    target.joinpath(entry.name).symlink_to(entry)
        else:
            if target.is_symlink() or target.exists():
                raise SystemExit(f"typecheck: {package} is both a folder of recursor/ and the "
                                 f"mapped folder {source}/; remove one")
            target.symlink_to(source, target_is_directory=True)
    return TREE / "recursor"


def main() -> None:
    build_tree()
    mypy = Path(sys.executable).with_name("mypy")
    os.chdir(ROOT)
    os.execv(mypy, [str(mypy), *sys.argv[1:]])


if __name__ == "__main__":
    main()
