"""Inside a candidate run: the command an evaluator started, as it asked for it.

:mod:`popen` hands this file to a candidate run with a spec (``sys.argv[1]``, JSON): the
files to place (the evaluator's script and the files its command line named, handed over in
``/workspace``) and where the evaluator had them, the script or ``-c`` code to run with its
arguments (or a program's command line), the working folder, the folders to watch, and a
nonce. It places the files, runs the script as ``python script.py`` would (``__main__``, its
folder first on ``sys.path``) or the program as it is, and then writes to stdout, last,
``<nonce>:`` followed by the base64 of a JSON object: the regular files the run created or
changed in the watched folders (bounded), which :mod:`popen` hands back to the evaluator
after its own checks. Everything here runs in the candidate's sandbox and everything it
writes is candidate output: nothing trusts it.

Standard library only, run as a file (``python -I``), like :mod:`wire`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import runpy
import sys
import traceback
from typing import Any

MAX_FILES = 32
MAX_BYTES = 16 << 20


def _place(files: dict[str, str], modes: dict[str, int]) -> dict[str, str]:
    """Copy each handed-over file (``<workspace>/<placed>``) to the path the evaluator had,
    with its mode bits; where that path cannot be written here, the file stays where it was
    handed over. The path each file has now, by the evaluator's path."""
    where = {}
    for target, placed in files.items():
        handed = os.path.abspath(placed)  # the run starts in its workspace
        where[target] = handed
        try:
            with open(handed, "rb") as handle:
                data = handle.read()
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            with open(target, "wb") as out:
                out.write(data)
            where[target] = target
        except OSError:
            continue
        with contextlib.suppress(OSError, TypeError, ValueError):
            os.chmod(where[target], int(modes.get(target, 0o644)) & 0o755)
    return where


def _listing(folders: list[str]) -> dict[str, tuple[int, int]]:
    """Path -> (size, mtime in ns) of the regular files directly in ``folders``."""
    seen: dict[str, tuple[int, int]] = {}
    for folder in folders:
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                with contextlib.suppress(OSError):
                    if entry.is_file(follow_symlinks=False):
                        info = entry.stat(follow_symlinks=False)
                        seen[entry.path] = (info.st_size, info.st_mtime_ns)
    return seen


def _written(folders: list[str], before: dict[str, tuple[int, int]]) -> dict[str, str]:
    """The files created or changed since ``before`` (path -> base64), within the bounds."""
    out: dict[str, str] = {}
    total = 0
    for path, stamp in sorted(_listing(folders).items()):
        if before.get(path) == stamp or len(out) >= MAX_FILES or total + stamp[0] > MAX_BYTES:
            continue
        with contextlib.suppress(OSError), open(path, "rb") as handle:
            data = handle.read(MAX_BYTES - total + 1)
            if len(data) <= MAX_BYTES - total:
                out[path] = base64.b64encode(data).decode("ascii")
                total += len(data)
    return out


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def _run_program(argv: list[str]) -> int:
    """Run a program's command line as it is, with this run's streams; its exit status
    (127 when there is no such program, as a shell says)."""
    import subprocess

    try:
        return subprocess.call(argv) & 0xFF
    except OSError as exc:
        print(f"{argv[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127


def _run(spec: dict[str, Any]) -> int:
    code, argv = spec.get("code"), list(spec["argv"])
    if spec.get("program"):
        if os.sep in argv[0]:  # a program file handed over: it runs with its mode
            with contextlib.suppress(OSError):
                os.chmod(argv[0], os.stat(argv[0]).st_mode | 0o500)
        return _run_program(argv)
    sys.argv = argv
    sys.path[0:0] = [str(p) for p in spec.get("pythonpath") or []]  # its PYTHONPATH (-I)
    if spec.get("unbuffered"):  # python -u, PYTHONUNBUFFERED: a line reaches it at once
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(AttributeError, ValueError):
                stream.reconfigure(line_buffering=True, write_through=True)  # type: ignore[union-attr]
    try:
        if isinstance(code, str):
            sys.path.insert(0, "")
            exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        return _exit_code(exc)
    except BaseException:  # noqa: BLE001 - reported as python would, then the exit status
        traceback.print_exc()
        return 1
    return 0


def main() -> None:
    spec = json.loads(sys.argv[1])
    where = _place(spec.get("files", {}), spec.get("modes") or {})
    spec["argv"] = [where.get(word, word) for word in spec["argv"]]
    folders = [str(f) for f in spec.get("watch", [])]
    for folder in folders:  # the folders the evaluator's paths lie in (-o /tmp/x/a.out)
        with contextlib.suppress(OSError):
            os.makedirs(folder, exist_ok=True)
    before = _listing(folders)
    if spec.get("cwd"):  # where it cannot be made (a read-only folder) the run stays put
        with contextlib.suppress(OSError):
            os.makedirs(spec["cwd"], exist_ok=True)
            os.chdir(spec["cwd"])
    status = _run(spec)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    trailer = base64.b64encode(json.dumps(_written(folders, before)).encode()).decode("ascii")
    view = memoryview(f"{spec['nonce']}:{trailer}\n".encode())
    with contextlib.suppress(OSError):
        while view:
            view = view[os.write(1, view):]
    os._exit(status)


if __name__ == "__main__":
    main()
