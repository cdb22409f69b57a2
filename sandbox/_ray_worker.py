"""The node's side of a Ray evaluation: rebuild the request from shipped bytes and run it in
the local sandbox of the campaign's kind, exactly as the controller's host would.

Runs inside a Ray worker process (trusted Recursor code on a cluster node); the candidate runs
only inside the sandbox it starts. Each worker process keeps one sandbox per configuration
(bubblewrap's probe and docker's warm pool are paid once) and one unpacked copy of each
read-only mount, by content digest (read-only binds: no run can change them).
"""

from __future__ import annotations

import atexit
import json
import shutil
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

from ._base import Mount, Sandbox, SandboxRequest
from ._ray_wire import encode_reply, limits_from_dict, unpack

_lock = threading.Lock()
_sandboxes: dict[str, Sandbox] = {}
_mounts: dict[str, Path] = {}
_mount_root: Path | None = None


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
            workdir=spec["workdir"])
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
            _sandboxes[key] = sandbox
        return sandbox


def _mount(key: str, blob: bytes) -> Path:
    global _mount_root
    with _lock:
        path = _mounts.get(key)
        if path is None:
            if _mount_root is None:
                _mount_root = Path(tempfile.mkdtemp(prefix="recursor-ray-mounts-"))
                _mount_root.chmod(0o711)  # the sandbox's uid walks to the unpacked files
                atexit.register(_close)
            folder = _mount_root / key
            folder.mkdir(mode=0o711)
            path = _mounts[key] = unpack(blob, folder)
        return path


def _close() -> None:
    for sandbox in _sandboxes.values():
        sandbox.close()
    if _mount_root is not None:
        shutil.rmtree(_mount_root, ignore_errors=True)
