"""Where each package of ``recursor`` lives: the one place that knows the folder mapping.

The project keeps its design's top-level component folders (``orchestrator/``, ``tasks/``,
...) and installs them into one ``recursor.*`` namespace through setuptools' ``package-dir``
(pyproject's ``[tool.setuptools]``). That table is the single source: :func:`package_dirs`
reads it from a source checkout, and a built installation (a wheel, where every package sits
inside ``recursor/`` already) needs no mapping at all. Everything that must know the layout
asks here: the type check's package tree (``scripts/typecheck.py``), the layering and
architecture tests, and the docker sandbox's staged source (``sandbox/images.py``).

It also names the **guest side**, the code that runs inside a sandbox: the guest-side core
(:data:`GUEST_CORE`, what any evaluator may import), the container agent and each built-in
task's evaluator part (:data:`GUEST_PARTS`). The trust boundary is this package boundary: a
guest module imports only the guest-side core and its own part (``tests/unit/test_layers``
checks it on every module's source), and the docker sandbox stages exactly the guest side
into its containers (:func:`guest_files`), nothing of the controller, the archive or the
front ends. Standard library only.
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


# What any evaluator may import inside a sandbox (a package entry: all of it).
GUEST_CORE: tuple[str, ...] = ("recursor.plan", "recursor.guest", "recursor.types",
                               "recursor.content", "recursor.sandbox.guest")
# The docker container's PID 1 (run as a script from the staged tree).
CONTAINER_AGENT: tuple[str, ...] = ("recursor.sandbox.agent", "recursor.sandbox._agent_reset")
# Each built-in task's evaluator part: the modules its evaluations start in the sandbox and
# everything they import beyond the guest-side core.
GUEST_PARTS: dict[str, tuple[str, ...]] = {
    "cfr": ("recursor.tasks.cfr.evaluate", "recursor.tasks.cfr.child",
            "recursor.tasks.cfr.engine", "recursor.tasks.cfr.sequence",
            "recursor.tasks.cfr.games", "recursor.tasks.cfr.probe_game",
            "recursor.tasks.cfr._protocol"),
    "program": ("recursor.tasks.program.runner", "recursor.tasks.program.guard",
                "recursor.tasks.program.verdict", "recursor.tasks.program.cascade",
                "recursor.tasks.program.remote", "recursor.tasks.program.wire",
                "recursor.tasks.program.shinka_style", "recursor.tasks.program.popen",
                "recursor.tasks.program.popen_io", "recursor.tasks.program.popen_child",
                "recursor.tasks.program.pickles", "recursor.tasks.program.peers",
                "recursor.tasks.program.exec_shim", "recursor.tasks.program.popen_async",
                "recursor.pyast"),
    "psro": ("recursor.tasks.psro.evaluate", "recursor.tasks.psro.child",
             "recursor.tasks.psro.channel", "recursor.tasks.psro.engine",
             "recursor.tasks.psro.games", "recursor.tasks.psro._protocol",
             "recursor.tasks.cfr.games",  # the game trees psro shares with cfr
             "recursor.tasks.cfr.probe_game"),
    "worlds": ("recursor.tasks.worlds.evaluate", "recursor.tasks.worlds.child",
               "recursor.tasks.worlds.challenge",
               "recursor.tasks.worlds.data", "recursor.tasks.worlds.episodes",
               "recursor.tasks.worlds.policy", "recursor.tasks.worlds.protocol",
               "recursor.tasks.worlds.solver", "recursor.tasks.worlds.stage",
               "recursor.tasks.worlds.tools", "recursor.tasks.worlds.world",
               "recursor.feed"),  # the split's feed (``stage``)
}


def guest_modules() -> list[str]:
    """Every module and package name of the guest side, sorted."""
    parts = [name for part in GUEST_PARTS.values() for name in part]
    return sorted({*GUEST_CORE, *CONTAINER_AGENT, *parts})


def module_source(name: str, dirs: dict[str, Path] | None = None) -> Path:
    """The file (a module) or folder (a package) of module ``name`` in this layout."""
    dirs = dirs if dirs is not None else package_dirs()
    owner = max((p for p in dirs if name == p or name.startswith(p + ".")), key=len)
    rest = name[len(owner) + 1:].split(".") if name != owner else []
    base = dirs[owner].joinpath(*rest)
    return base if base.is_dir() else base.with_suffix(".py")


def guest_files(dirs: dict[str, Path] | None = None) -> dict[str, Path]:
    """The guest side as files: the path each has in an importable ``recursor`` tree (e.g.
    ``recursor/tasks/cfr/engine.py``) -> its source file. A package entry brings every
    module of the package; a package above a guest module that is not itself guest-side is
    left out here (the staging gives it an empty ``__init__.py``, so importing a guest module
    runs none of the trusted side's code)."""
    dirs = dirs if dirs is not None else package_dirs()
    out: dict[str, Path] = {}
    for name in guest_modules():
        source = module_source(name, dirs)
        target = Path(*name.split("."))
        if source.is_dir():
            for path in sorted(source.rglob("*.py")):
                if "__pycache__" not in path.parts:
                    out[str(target / path.relative_to(source))] = path
        elif source.is_file():
            out[str(target.with_suffix(".py"))] = source
    return out


__all__ = ["CONTAINER_AGENT", "GUEST_CORE", "GUEST_PARTS", "PACKAGE", "checkout_root",
           "guest_files", "guest_modules", "mapped_subpackages", "module_source",
           "package_dirs"]
