"""A local multi-node Ray cluster for tests: nodes started with the `ray` CLI under a temp dir of
their own, and stopped by killing exactly the processes of that cluster (never `ray stop`,
which stops every Ray process of the user on the machine, other tests' clusters included)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = str(Path(sys.executable).parent / "ray")
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            "utf-8", "replace")
    except OSError:
        return ""


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # the command name may hold spaces and parentheses: the ppid follows the last ')'
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        tree.setdefault(ppid, []).append(int(stat.parent.name))
    return tree


def with_descendants(roots: list[int]) -> list[int]:
    """``roots`` and every process below them, parents first."""
    tree, found, todo = _children(), [], list(roots)
    while todo:
        pid = todo.pop(0)
        if pid not in found:
            found.append(pid)
            todo.extend(tree.get(pid, []))
    return found


def kill_tree(roots: list[int]) -> None:
    """SIGKILL ``roots`` and their descendants (collected first, then killed at once)."""
    for pid in with_descendants(roots):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


class LocalCluster:
    """A head node (no evaluation resources) plus the worker nodes tests add."""

    def __init__(self) -> None:
        # short: Ray's unix sockets live under it, and their paths must fit in 107 bytes
        self.temp = Path(tempfile.mkdtemp(prefix="rr", dir="/tmp"))
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
                    "PYTHONPATH": os.pathsep.join(
                        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        self._ray(["--head", f"--port={self.port}", "--num-cpus=1",
                   "--include-dashboard=false"])

    def _ray(self, args: list[str]) -> None:
        subprocess.run([RAY, "start", "--node-ip-address=127.0.0.1", "--disable-usage-stats",
                        f"--temp-dir={self.temp}", *args], env=self.env, check=True,
                       capture_output=True, text=True, timeout=180)

    def add_node(self, resources: dict[str, float], num_cpus: int = 1) -> int:
        """Start a worker node offering ``resources``; its node-manager port names it."""
        manager = free_port()
        self._ray([f"--address={self.address}", f"--num-cpus={num_cpus}",
                   f"--resources={json.dumps(resources)}", f"--node-manager-port={manager}"])
        return manager

    def raylet(self, manager_port: int) -> int | None:
        marker = f"--node_manager_port={manager_port} "
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            text = _cmdline(int(cmdline.parent.name)) + " "
            if "raylet" in text and marker in text and str(self.temp) in text:
                return int(cmdline.parent.name)
        return None

    def node_ids(self, resource: str) -> list[str]:
        """The ids of the alive nodes that offer ``resource``."""
        code = (f"import json, ray; ray.init(address={self.address!r}, logging_level='ERROR'); "
                "print('NODES', json.dumps([n['NodeID'] for n in ray.nodes() "
                f"if n['Alive'] and {resource!r} in n['Resources']]))")
        out = subprocess.run([sys.executable, "-c", code], env=self.env, capture_output=True,
                             text=True, check=True, timeout=120)
        # Ray may print warnings (about a node just killed) on stdout too
        line = next(ln for ln in out.stdout.splitlines() if ln.startswith("NODES "))
        return list(json.loads(line.removeprefix("NODES ")))

    def processes(self) -> list[int]:
        """This cluster's processes: those naming its temp dir, and everything below them
        (workers retitle themselves ``ray::...``, but they are the raylets' children)."""
        roots = [int(c.parent.name) for c in Path("/proc").glob("[0-9]*/cmdline")
                 if str(self.temp) in _cmdline(int(c.parent.name))]
        return with_descendants(roots)

    def stop(self) -> None:
        """Kill every process of this cluster, wait for them to go, remove the temp dir."""
        deadline = time.monotonic() + 30
        while (left := self.processes()) and time.monotonic() < deadline:
            kill_tree(left)
            time.sleep(0.5)
        shutil.rmtree(self.temp, ignore_errors=True)
