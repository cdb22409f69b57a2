"""The node's side of a Ray evaluation: rebuild the request from shipped bytes and run it in
the local sandbox of the campaign's kind, exactly as the controller's host would.

Runs inside a Ray worker process (trusted Recursor code on a cluster node); the candidate runs
only inside the sandbox it starts. Each worker process keeps one sandbox per configuration
(bubblewrap's probe and docker's warm pool are paid once). Each node keeps one unpacked copy of
each read-only mount, by content digest, in ``$TMPDIR/recursor-ray-mounts-<uid>`` (bound
read-only: no run can change it); the cache is never pruned, and holds one entry per distinct
mount content (the cfr task's trees: about 2 MB).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import socket
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any

from recursor.errors import SandboxError

from ._base import Mount, Sandbox, SandboxRequest
from ._ray_wire import ARCHIVE_ROOT, candidates_from_dict, encode_reply, limits_from_dict, unpack

_lock = threading.Lock()
_sandboxes: dict[str, Sandbox] = {}
_mounts: dict[str, Path] = {}


def run_shipped(spec_json: bytes, workspace: bytes | None, *mount_blobs: bytes) -> bytes:
    """Run one shipped request (``RaySandbox`` builds ``spec_json``); the reply's JSON bytes.

    Raises ``SandboxError`` when the sandbox cannot work on this node, as a local one would.
    """
    spec = json.loads(spec_json)
    sandbox = _sandbox(spec["sandbox"], spec["hidden_paths"])
    with tempfile.TemporaryDirectory(prefix="recursor-ray-ws-") as tmp:
        mounts = [Mount(_mount(entry["digest"], blob), entry["target"])
                  for entry, blob in zip(spec["mounts"], mount_blobs, strict=True)]
        request = SandboxRequest(
            command=list(spec["command"]),
            workspace=None if workspace is None else unpack(workspace, Path(tmp)),
            mounts=mounts, env=dict(spec["env"]), limits=limits_from_dict(spec["limits"]),
            workdir=spec["workdir"], candidates=candidates_from_dict(spec.get("candidates")))
        result = sandbox.run(request)
    return encode_reply(result, placement())


def placement() -> dict[str, str]:
    """This node as Ray and the network know it."""
    import ray

    context = ray.get_runtime_context()
    return {"executor": "ray", "ray_node_id": context.get_node_id(),
            "ray_worker_id": context.get_worker_id(),
            "node_ip": ray.util.get_node_ip_address(),  # type: ignore[no-untyped-call]
            "hostname": socket.gethostname()}


def _sandbox(config: dict[str, Any], hidden: list[str]) -> Sandbox:
    from pydantic import TypeAdapter

    from recursor.config import SandboxConfig
    from recursor.sandbox.factory import build_sandbox

    key = json.dumps([config, hidden], sort_keys=True)
    with _lock:
        sandbox = _sandboxes.get(key)
        if sandbox is None:
            parsed = TypeAdapter(SandboxConfig).validate_python(config)
            sandbox = build_sandbox(parsed, [Path(p) for p in hidden])
            if not _sandboxes:  # a worker that exits cleanly removes their scratch and pools
                atexit.register(_close)
            _sandboxes[key] = sandbox
        return sandbox


def _mount(key: str, blob: bytes) -> Path:
    """The unpacked copy of a shipped mount, in a per-node cache by content digest, shared by
    the node's Ray workers (a worker may be killed at any time: nothing per process to leak)."""
    with _lock:
        path = _mounts.get(key)
        if path is None:
            path = _mounts[key] = _cached(_cache_root(), key, blob)
        return path


def _cache_root() -> Path:
    """``$TMPDIR/recursor-ray-mounts-<uid>``, refused unless this uid owns it and nobody else
    may write it (on a shared node another user could otherwise plant a mount's content)."""
    root = Path(tempfile.gettempdir()) / f"recursor-ray-mounts-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        root.mkdir(mode=0o711)
    info = root.lstat()
    if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid()
            or info.st_mode & 0o022):
        raise SandboxError(f"{root} must be a directory of uid {os.getuid()} that only it "
                           "may write; remove it and rerun")
    return root


def _cached(root: Path, key: str, blob: bytes) -> Path:
    final = root / key
    if not final.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=root))
        staging.chmod(0o711)  # the sandbox's uid walks to the unpacked files
        unpack(blob, staging)
        try:
            staging.rename(final)
        except OSError:  # another worker of this node unpacked the same content first
            shutil.rmtree(staging, ignore_errors=True)
    return final / ARCHIVE_ROOT


def _close() -> None:
    for sandbox in _sandboxes.values():
        sandbox.close()
