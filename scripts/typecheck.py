"""Run mypy over every package of ``recursor``: ``python scripts/typecheck.py [mypy args]``.

The installed package maps its subpackages to folders of their own (``recursor.layout``,
from pyproject's ``[tool.setuptools] package-dir``: ``recursor.tasks`` is ``tasks/``), which
mypy cannot follow: it names a module after the folders a file sits in. So this builds
``.mypy-tree/recursor``, a tree of symlinks laid out as the installed package (``recursor/*``
beside one link per mapped folder), rebuilt on every run so that a new module or package is
never missed, and then runs mypy on it (the ``files`` of pyproject's ``[tool.mypy]``).

mypy's incremental cache lives in ``~/.cache/recursor/mypy`` (``RECURSOR_MYPY_CACHE``, or a
``--cache-dir`` given, overrides it), shared by every checkout of the machine: a fresh clone's
check then reuses what an earlier one learned of the dependencies (about 70 s of one core
cold, 2 s warm). mypy checks each cached module's source hash, so a changed file is always
checked again (a planted error in a file the cache had seen clean is reported).
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


def cache_args(argv: list[str]) -> list[str]:
    """``--cache-dir`` for mypy unless ``argv`` names one (see the module docstring)."""
    if any(arg == "--cache-dir" or arg.startswith("--cache-dir=") for arg in argv):
        return []
    cache = os.environ.get("RECURSOR_MYPY_CACHE") or str(
        Path.home() / ".cache" / "recursor" / "mypy")
    return ["--cache-dir", cache]


def main() -> None:
    build_tree()
    mypy = Path(sys.executable).with_name("mypy")
    os.chdir(ROOT)
    args = sys.argv[1:]
    os.execv(mypy, [str(mypy), *cache_args(args), *args])


if __name__ == "__main__":
    main()
