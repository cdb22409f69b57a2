"""A user's program as files: one file, or a folder of them with several evolvable files.

A folder's files are read once, when the task is built (relative path -> text). The ones
with ``EVOLVE-BLOCK`` regions are what proposers may change (each only inside its regions);
every other file is fixed, as is the set of files. The evaluator is given one of them, the
*entry* (``task.entry``; by default the first of :data:`ENTRY_NAMES` the folder holds, or its
only file with marked regions): the path of that file in ``/workspace``, where every file of
the program sits beside it in the candidate's runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from recursor.errors import ConfigError
from recursor.mutation import BLOCK_START

MAX_FILES = 64
MAX_TOTAL_CHARS = 2_000_000
ENTRY_NAMES = ("main.py", "initial_program.py", "initial.py", "program.py")
_SKIPPED_PARTS = ("__pycache__",)


def read_text(path: Path, what: str) -> str:
    """``path``'s UTF-8 text; ConfigError naming ``task.<what>`` when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"task.{what}: {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"task.{what}: cannot read {path} as UTF-8 text: {exc}") from None


def _listed(folder: Path) -> list[Path]:
    files = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(p.startswith(".") or p in _SKIPPED_PARTS for p in rel.parts):
            continue
        if path.is_symlink():
            raise ConfigError(f"task.program: {path} is a symbolic link; a program folder "
                              "holds regular files only")
        if path.is_file() and path.suffix != ".pyc":
            files.append(path)
    return files


def read_program(path: Path) -> dict[str, str]:
    """The program's files (relative path -> text): ``{name: text}`` for a file, every
    regular file under a folder (hidden ones and ``__pycache__`` left out) for a folder."""
    if not path.is_dir():
        return {path.name: read_text(path, "program")}
    listed = _listed(path)
    if not listed:
        raise ConfigError(f"task.program: the folder {path} holds no files")
    if len(listed) > MAX_FILES:
        raise ConfigError(f"task.program: the folder {path} holds {len(listed)} files; the "
                          f"limit is {MAX_FILES}")
    files = {p.relative_to(path).as_posix(): read_text(p, "program") for p in listed}
    if sum(map(len, files.values())) > MAX_TOTAL_CHARS:
        raise ConfigError(f"task.program: the folder {path} holds more than "
                          f"{MAX_TOTAL_CHARS} characters of text")
    return files


def has_marker(text: str) -> bool:
    """Whether ``text`` opens a marked region."""
    return any(line.strip().startswith(BLOCK_START) for line in text.splitlines())


def evolvable(files: dict[str, str]) -> list[str]:
    """The Python files that mark regions for proposers (sorted)."""
    return sorted(p for p, text in files.items() if p.endswith(".py") and has_marker(text))


MAX_SIBLINGS = 50


def sibling_modules(anchor: Path, source: str, excluded: Sequence[Path],
                    imported: Callable[[str], set[str]]) -> list[Path]:
    """The modules of ``anchor``'s folder that its ``source`` imports (and that those
    import, in turn), as ``python anchor`` would find them: ``name.py`` files and package
    folders beside it; never ``anchor``, an ``excluded`` file or a folder holding one.
    ``imported`` reads a source's imported top-level names."""
    folder, found = anchor.parent, list[Path]()
    kept_out = [anchor.resolve(), *(path.resolve() for path in excluded)]
    todo = sorted(imported(source))
    seen: set[str] = set()
    while todo and len(found) < MAX_SIBLINGS:
        name = todo.pop(0)
        if name in seen or not name.isidentifier():
            continue
        seen.add(name)
        for path in (folder / f"{name}.py", folder / name):
            resolved = path.resolve()
            if (any(out == resolved or out.is_relative_to(resolved) for out in kept_out)
                    or not (path.is_file() or (path / "__init__.py").is_file())):
                continue
            found.append(path)
            if path.is_file():
                todo += sorted(imported(read_text(path, "a module beside it")))
            break
    return found


MAX_NAMED_BYTES = 64 << 20
MAX_NAMED_FILES = 2_000


def _entry_named(folder: Path, name: str) -> Path | None:
    """The top entry of ``folder`` that the relative path ``name`` lies in, when that path
    exists there (no hidden part, no ``..``, no symbolic link on the way)."""
    for text in {name, name.removeprefix("./"), name.lstrip("/")}:
        parts = Path(text).parts if text and not text.startswith("/") else ()
        if (not parts or any(p in ("..", ".") or p.startswith(".") or p in _SKIPPED_PARTS
                             for p in parts) or "\n" in text):
            continue
        path, walked = folder, []
        for part in parts:
            path = path / part
            walked.append(path)
        if any(step.is_symlink() for step in walked) or not path.exists():
            continue
        return folder / parts[0]
    return None


def _size(path: Path) -> tuple[int, int]:
    """Bytes and files under ``path`` (a file or a folder; links not followed)."""
    if path.is_file():
        return path.stat().st_size, 1
    total = count = 0
    for item in path.rglob("*"):
        if item.is_file() and not item.is_symlink():
            total, count = total + item.stat().st_size, count + 1
    return total, count


def named_files(anchor: Path, names: set[str], excluded: Sequence[Path],
                ) -> tuple[list[Path], list[Path]]:
    """The files and folders beside ``anchor`` that it names by a relative path among
    ``names`` (``"cases.json"``, ``"data/train.csv"``: the folder ``data``), as ``python
    anchor`` run from its folder would find them; never ``anchor``, an ``excluded`` path or a
    folder holding one. Returns them and those left out for size (over
    :data:`MAX_NAMED_BYTES` or :data:`MAX_NAMED_FILES` in all)."""
    folder = anchor.parent
    kept_out = [anchor.resolve(), *(path.resolve() for path in excluded)]
    entries = {entry for name in sorted(names) if (entry := _entry_named(folder, name))}
    found: list[Path] = []
    too_big: list[Path] = []
    total = count = 0
    for entry in sorted(entries):
        resolved = entry.resolve()
        if any(out == resolved or out.is_relative_to(resolved) for out in kept_out):
            continue
        size, files = _size(entry)
        if total + size > MAX_NAMED_BYTES or count + files > MAX_NAMED_FILES:
            too_big.append(entry)
            continue
        total, count = total + size, count + files
        found.append(entry)
    return found, too_big


def module_files(paths: Sequence[Path]) -> dict[str, str]:
    """The text of each module of ``paths`` (a ``.py`` file, or a package folder's ``.py``
    files), by its path relative to their folder."""
    files: dict[str, str] = {}
    for path in paths:
        sources = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for source in sources[:MAX_FILES]:
            files[source.relative_to(path.parent).as_posix()] = read_text(source, "module")
    return files


def entry_of(files: dict[str, str], entry: str | None, program: Path) -> str:
    """Which file ``evaluate(path)`` is given (see the module docstring)."""
    if entry is not None:
        if entry not in files:
            raise ConfigError(f"task.entry: {entry!r} is not a file of {program} (its files: "
                              f"{', '.join(sorted(files)[:10])})")
        return entry
    if len(files) == 1:
        return next(iter(files))
    named = next((name for name in ENTRY_NAMES if name in files), None)
    if named is not None:
        return named
    marked = evolvable(files)
    if len(marked) == 1:
        return marked[0]
    raise ConfigError(f"task.entry: the program folder {program} has no {ENTRY_NAMES[0]}; "
                      "name the file evaluate(path) is given with task.entry")


__all__ = ["ENTRY_NAMES", "MAX_FILES", "entry_of", "evolvable", "has_marker", "read_program",
           "module_files", "named_files", "read_text", "sibling_modules"]
