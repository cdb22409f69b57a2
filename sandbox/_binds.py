"""What the process sandbox's file system shows: an allow-list, never the host's whole tree.

The root is bubblewrap's empty tmpfs, made read-only. Bound into it read-only, at their host
paths, are only:

* the system's program and library directories (``/usr``, ``/bin``, ``/sbin``, ``/lib*``;
  a merged-usr symlink is recreated as a symlink) and ``/sys/devices/system/cpu`` (CPU count);
* a few ``/etc`` entries the dynamic loader and the C library read (``ETC_ENTRIES``), plus
  stand-in ``passwd``, ``group`` and ``hosts`` (no host accounts). The stand-ins never exist as
  host files: bubblewrap reads each from a pipe the run was handed (``--ro-bind-data``), so
  no path anyone could plant or replace is ever written or bound;
* the interpreter running Recursor: its base prefix, and of a virtual environment only
  ``bin``, ``lib*`` and ``pyvenv.cfg``;
* the ``recursor`` package directories (``PACKAGES``; an editable install maps each one to a
  component folder of the project). Never the project root: not ``.git``, not ``campaigns/``,
  not ``tests``, not any other file that lives beside the packages.

Writable space is one tmpfs per run, capped in bytes (``scratch_mb``) and in inodes, mounted by a
setup step that runs inside the namespaces with ``CAP_SYS_ADMIN`` and ``CAP_SETPCAP`` (both
meaningful only inside the run's own user namespace): its ``workspace``, ``tmp`` and ``shm``
folders are bound at ``/workspace``, ``/tmp`` (``/var/tmp`` links there) and ``/dev/shm``, so
all RAM-backed files of a run share the one cap. The setup step then drops every capability
(bounding set, inheritable, ambient; ``noroot`` securebits locked) and execs the command.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from ._base import SandboxLimits

SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives",
               "nsswitch.conf")
PACKAGES = ("recursor", "recursor.archive", "recursor.executors", "recursor.orchestrator",
            "recursor.proposers", "recursor.sandbox", "recursor.tasks")
STANDINS = {
    "passwd": ("root:x:0:0:sandbox:/tmp:/bin/sh\n"
               "candidate:x:65533:65533:candidate:/tmp:/bin/sh\n"
               "nobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n"),
    "group": "root:x:0:\ncandidate:x:65533:\nnogroup:x:65534:\n",
    "hosts": "127.0.0.1 localhost\n::1 localhost\n",
}
INPUT_TARGET = "/recursor-input"
SCRATCH = "/.recursor-scratch"
TEMPLATE_TMP_BYTES = 8 << 20  # the warm template's own /tmp (``template_dirs``)
SCRATCH_ROOTS = ("/tmp", "/var/tmp")
KEEP = "/.recursor-keep"
INODES_PER_MB = 64
MIN_INODES = 1024
SETPRIV = "/usr/bin/setpriv"
SHELL = "/bin/bash"

# Runs (under bash, which closes descriptors of any number) as the namespace's root with the
# capabilities below: close the descriptors the command must not inherit (``$4``, bubblewrap
# leaves its ``--userns`` one open), mount the run's one capped tmpfs, bind its folders, then
# give up every capability for good (and become ``$3`` unless it is "keep") and exec the command.
_SETUP = f"""set -e
size=$1 inodes=$2 who=$3
for fd in $4; do eval "exec $fd<&-"; done
shift 4
mount -n -t tmpfs -o "size=$size,nr_inodes=$inodes,mode=0755,nosuid,nodev" recursor {SCRATCH}
mkdir -m 1777 {SCRATCH}/workspace {SCRATCH}/tmp {SCRATCH}/shm
mount -n --bind {SCRATCH}/workspace /workspace
mount -n --bind {SCRATCH}/tmp /tmp
mount -n --bind {SCRATCH}/shm /dev/shm
groups=$1
shift 1
while [ "$groups" -gt 0 ]; do
  top=$1 count=$2
  shift 2
  mkdir -p "$top"
  mount -n -t tmpfs -o "size=1m,nr_inodes=1024,mode=0755" recursor-keep "$top"
  while [ "$count" -gt 0 ]; do
    if [ -d "$1" ]; then mkdir -p "$2"; else mkdir -p "$(dirname "$2")" && : > "$2"; fi
    mount -n --rbind "$1" "$2"
    mount -n -o remount,bind,ro "$2"
    shift 2
    count=$((count - 1))
  done
  mount -n -o remount,ro "$top"
  groups=$((groups - 1))
done
ids=""
if [ "$who" != keep ]; then
  ids="--reuid=$who --regid=$who --clear-groups"
  chown "$who:$who" {SCRATCH}/workspace
fi
umount -n {SCRATCH}
exec {SETPRIV} $ids --bounding-set=-all --inh-caps=-all --ambient-caps=-all \\
  --securebits=+noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked,+keep_caps_locked \\
  -- /bin/sh -c 'cp -a {INPUT_TARGET}/. /workspace/ && cd "$0" && exec "$@"' "$@"
"""
SETUP_CAPS = ("CAP_SYS_ADMIN", "CAP_SETPCAP", "CAP_SETUID", "CAP_SETGID", "CAP_CHOWN")


def system_binds() -> list[str]:
    """Read-only binds of the system's program and library directories."""
    args: list[str] = []
    for name in SYSTEM_DIRS:
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args + ["--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]


def standin_fds() -> dict[str, int]:
    """For one run: a pipe per stand-in, holding its text (the read ends; the caller passes
    them to bubblewrap, which reads each to its end, and closes them)."""
    fds: dict[str, int] = {}
    for name, text in STANDINS.items():
        read, write = os.pipe()
        try:
            os.write(write, text.encode())  # far below a pipe's buffer
        finally:
            os.close(write)
        fds[name] = read
    return fds


def etc_args(standins: dict[str, int]) -> list[str]:
    """The ``/etc`` entries programs need, and the stand-ins read from ``standins``
    (:func:`standin_fds`). ``/etc`` itself is made readable first: the directory bubblewrap
    would make for the first bind is 0700, which a command dropped to an unprivileged uid
    cannot enter."""
    args: list[str] = ["--perms", "0755", "--dir", "/etc"]
    for name in ETC_ENTRIES:
        if os.path.exists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    for name, fd in standins.items():
        args += ["--perms", "0644", "--ro-bind-data", str(fd), f"/etc/{name}"]
    return args


def module_paths(names: Iterable[str]) -> list[Path]:
    """The files or folders that hold the importable modules or packages ``names`` (those
    that cannot be found are skipped: there is nothing to hide)."""
    found: list[Path] = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        if spec.submodule_search_locations:
            found += [Path(p).resolve() for p in spec.submodule_search_locations]
        elif spec.origin and os.path.exists(spec.origin):
            found.append(Path(spec.origin).resolve())
    return found


def visible_sources() -> list[Path]:
    """The host directories and files bound for the interpreter and the ``recursor`` package."""
    found: list[Path] = [Path(sys.base_prefix).resolve()]
    prefix = Path(sys.prefix).resolve()
    if prefix != found[0]:
        found += [prefix / name for name in ("bin", "lib", "lib64", "pyvenv.cfg")]
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            found.append(Path(location).resolve())
    unique = dict.fromkeys(p for p in found if p.exists() and not p.is_symlink())
    return [p for p in unique if not any(other in p.parents for other in unique)]


def under_scratch(path: Path) -> bool:
    """Whether ``path`` lies where the run's scratch space is mounted (``/tmp``, ``/var/tmp``):
    a checkout or virtualenv there would be covered by it."""
    return any(path == Path(root) or Path(root) in path.parents for root in SCRATCH_ROOTS)


def interpreter_binds(sources: Iterable[Path]) -> list[str]:
    """Read-only binds of ``sources`` (a venv's ``lib64`` symlink is recreated as one). A
    source under a scratch root is bound at ``KEEP/<n>`` instead, and the setup step binds it
    back at its own path over the scratch space (``kept_args``)."""
    sources = list(sources)
    args = walkable_parents(s for s in sources if not under_scratch(s))
    prefix = Path(sys.prefix).resolve()
    lib64 = prefix / "lib64"
    if lib64.is_symlink() and not under_scratch(lib64):
        args += ["--symlink", os.readlink(lib64), str(lib64)]
    for index, source in enumerate(sources):
        target = f"{KEEP}/{index}" if under_scratch(source) else str(source)
        args += ["--ro-bind", str(source), target]
    return args


def kept_args(sources: Iterable[Path]) -> list[str]:
    """The setup step's arguments for the sources under a scratch root: the number of groups,
    then per group its top directory (the first one under the root), how many sources it
    holds, and each one's stash and path. The setup step mounts a small tmpfs on each top,
    binds the sources into it read-only and makes it read-only, so a candidate can neither
    replace nor move them."""
    groups: dict[str, list[str]] = {}
    for index, source in enumerate(sources):
        if under_scratch(source):
            root = next(Path(r) for r in SCRATCH_ROOTS
                        if Path(r) in source.parents or source == Path(r))
            top = str(root / source.relative_to(root).parts[0])
            groups.setdefault(top, []).extend([f"{KEEP}/{index}", str(source)])
    args = [str(len(groups))]
    for top, pairs in groups.items():
        args += [top, str(len(pairs) // 2), *pairs]
    return args


def walkable_parents(targets: Iterable[Path | str]) -> list[str]:
    """Create the parents of bind targets as 0755: bubblewrap would give a parent it creates
    the mode of the host's (``/root`` is 0700), and the candidate, an unprivileged uid, must
    be able to walk down to what is bound."""
    parents = sorted({str(a) for t in targets for a in Path(t).parents if str(a) != "/"})
    args: list[str] = []
    for parent in parents:
        args += ["--perms", "0755", "--dir", parent]
    return args


def hide_args(paths: Iterable[Path], sources: Iterable[Path]) -> list[str]:
    """Cover each of ``paths`` that lies inside a bound source (others are not visible). A
    source under a scratch root is bound at ``KEEP/<n>`` first (``interpreter_binds``) and
    carried back to its own path with its submounts (the setup step's ``--rbind``), so a path
    inside it is covered at ``KEEP/<n>``: a cover at its own path would lie under the scratch
    space and be shadowed by the source bound back over it."""
    bound = list(sources)
    args: list[str] = []
    for path in paths:
        index = next((i for i, src in enumerate(bound) if path == src or src in path.parents),
                     None)
        if index is None:
            continue
        source = bound[index]
        target = (str(Path(f"{KEEP}/{index}") / path.relative_to(source))
                  if under_scratch(source) else str(path))
        if path.is_dir():
            args += ["--size", str(1 << 16), "--tmpfs", target, "--remount-ro", target]
        elif path.exists():
            args += ["--ro-bind", "/dev/null", target]
    return args


def scratch_mb(limits: SandboxLimits) -> int:
    """The size of the run's one scratch tmpfs: ``min(disk_mb, memory_mb // 2)`` MB (at least
    1). Its pages are charged to the run's memory cgroup, so a full scratch still leaves the
    processes at least half of ``memory_mb``; it gets ``INODES_PER_MB`` inodes per MB."""
    return max(1, min(limits.disk_mb, limits.memory_mb // 2))


def template_dirs() -> list[str]:
    """The mount points of the run's writable space, and the setup step's capabilities. The
    template's own ``/tmp`` is a small tmpfs (some imports need a usable temporary folder, and
    ``tempfile`` remembers the one it found); each run covers it with its own."""
    options = ["--dir", "/workspace", "--size", str(TEMPLATE_TMP_BYTES), "--tmpfs", "/tmp",
               "--dir", SCRATCH, "--dir", "/var", "--symlink", "../tmp", "/var/tmp"]
    for cap in SETUP_CAPS:
        options += ["--cap-add", cap]
    return options


def inodes_for(size_mb: int) -> int:
    """The inode cap of a scratch tmpfs of ``size_mb`` MB."""
    return max(MIN_INODES, size_mb * INODES_PER_MB)


def writable_args(size_mb: int, workdir: str, uid: int | None,
                  kept: Sequence[str] = ("0",), close: Sequence[int] = ()
                  ) -> tuple[list[str], list[str]]:
    """The bwrap options and the command prefix that build the run's writable space (a tmpfs
    of ``size_mb`` MB, see ``scratch_mb``) and bind back the sources under it (``kept``, from
    ``kept_args``); the command then runs as ``uid`` of the namespace (None: stays the
    namespace's root), without the descriptors ``close``."""
    options = template_dirs()
    inodes = inodes_for(size_mb)
    prefix = [SHELL, "-c", _SETUP, "setup", str(size_mb << 20), str(inodes),
              "keep" if uid is None else str(uid), " ".join(map(str, close)), *kept, workdir]
    return options, prefix


__all__ = ["INPUT_TARGET", "SHELL", "STANDINS", "etc_args", "hide_args", "inodes_for",
           "interpreter_binds",
           "kept_args", "module_paths", "scratch_mb", "standin_fds", "system_binds",
           "template_dirs", "under_scratch", "visible_sources", "walkable_parents",
           "writable_args"]
