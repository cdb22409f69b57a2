"""A sandbox whose runs happen on a Ray cluster: ``sandbox: {kind: ..., ray: {address: ...}}``.

Each ``run`` becomes one Ray task, placed by Ray on any node that has the CPUs and custom
resources the ``ray`` section asks for. What is shipped (as bytes, through Ray's object store):
the workspace (a tar of the candidate's files), each read-only mount (a tar, made once per
source and content, e.g. the cfr task's game trees) and the request (command, environment,
limits) as JSON. On the node, ``_ray_worker`` rebuilds the request and runs it in the sandbox of
the campaign's ``kind`` (process or docker), built by the same factory with the same limits and
the same hidden paths, so the isolation on the node is the local isolation.

What comes back is the run's facts as JSON (``_ray_wire``), judged on the controller by the
same ``judge`` as a local run, and the placement (Ray node id, address, host name) that the
archive records beside the evaluation. The node's Recursor is trusted (it must be installed
there, at the same interpreter path); the candidate's code is not, and it can affect the reply
only through what a local run lets it affect: its output, exit status and verdict text.

When a node or worker dies during a run, Ray reruns the task up to ``max_retries`` times on any
fitting node (a run has no side effects: writable mounts and feed FIFOs are refused, since they
cannot be shipped). When every attempt is lost, or no reply comes within the wall-time limit
plus ``wait_s``, the run ends ``crashed`` with the reason, as a dying local sandbox would; the
campaign goes on. A node that cannot build its sandbox raises ``SandboxError``, as locally.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

from recursor.config import RayPlacementConfig, SandboxConfig
from recursor.errors import SandboxError
from recursor.types import RunStatus

from ._base import Sandbox, SandboxRequest, SandboxResult, check_request
from ._ray_wire import (
    candidates_to_dict,
    decode_reply,
    digest,
    is_special,
    judge_reply,
    limits_to_dict,
    pack,
)

RAY_INIT_TIMEOUT_S = 60.0


class RaySandbox(Sandbox):
    """Runs each request on the Ray cluster of ``placement`` in a ``sandbox`` (its ``ray``
    field is ignored) on the node. Thread-safe; ``close`` disconnects what it connected.

    A process already connected to Ray (an application embedding Recursor that called
    ``ray.init``) keeps its connection: ``placement.address`` is then not consulted.
    """

    def __init__(self, sandbox: SandboxConfig, placement: RayPlacementConfig,
                 hidden_paths: list[Path]) -> None:
        try:
            import ray
        except ImportError as exc:
            raise SandboxError("sandbox.ray needs Ray on the controller and every node: "
                               "pip install 'recursor[ray]'") from exc
        self.kind = f"{sandbox.kind}@ray"
        self._placement = placement
        self._sandbox = sandbox.model_copy(update={"ray": None}).model_dump(mode="json")
        self._hidden = [str(p.resolve()) for p in hidden_paths]
        self._lock = threading.Lock()
        self._mounts: dict[str, Any] = {}  # content digest -> object reference
        self._connected = not ray.is_initialized()
        if self._connected:
            try:
                ray.init(address=placement.address, namespace="recursor",
                         logging_level=logging.ERROR, log_to_driver=False)
            except Exception as exc:  # ConnectionError, RuntimeError, ...: all mean the same
                raise SandboxError(
                    f"cannot reach the Ray cluster at {placement.address}: {exc}. Start one "
                    "(`ray start --head`) or fix sandbox.ray.address") from exc
        self._check_resources(ray.cluster_resources())  # type: ignore[no-untyped-call]
        from ._ray_worker import run_shipped

        self._task = ray.remote(run_shipped).options(
            num_cpus=placement.num_cpus, resources=dict(placement.resources),
            max_retries=placement.max_retries, retry_exceptions=False)

    def _check_resources(self, available: dict[str, float]) -> None:
        wanted = {"CPU": self._placement.num_cpus, **self._placement.resources}
        missing = [f"{name}={amount:g}" for name, amount in wanted.items()
                   if available.get(name, 0.0) < amount]
        if missing:
            raise SandboxError(
                f"the Ray cluster at {self._placement.address} offers no {', '.join(missing)} "
                f"(it has {available}); start nodes with them (`ray start --resources ...`) or "
                "change sandbox.ray")

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run ``request`` on a node (module docstring); never raises for candidate behaviour."""
        import ray
        from ray.exceptions import GetTimeoutError, RayError, RayTaskError

        check_request(request)
        spec, blobs = self._ship(request)
        started = time.monotonic()
        workspace = None if request.workspace is None else pack(request.workspace)
        ref = self._task.remote(json.dumps(spec).encode(), workspace, *blobs)
        wait = request.limits.wall_time_s + self._placement.wait_s
        try:
            reply = ray.get(ref, timeout=wait)
        except GetTimeoutError:
            ray.cancel(ref, force=True)
            return _lost(started, f"no reply from the Ray cluster within {wait:g} s (is a node "
                         f"with {self._wanted()} alive?); the task was cancelled")
        except RayTaskError as exc:
            if isinstance(exc.cause, SandboxError):
                raise SandboxError(f"a Ray node cannot run the sandbox: {exc.cause}") from exc
            return _lost(started, f"the evaluation failed on its Ray node: {_first_line(exc)}")
        except RayError as exc:  # the worker or its node died on every attempt
            attempts = self._placement.max_retries + 1
            return _lost(started, f"the Ray worker running the evaluation was lost on each of "
                         f"{attempts} attempts ({type(exc).__name__}: {_first_line(exc)})")
        try:
            return judge_reply(decode_reply(reply), request.limits)
        except (ValueError, TypeError) as exc:
            return _lost(started, f"the Ray node's reply is malformed: {exc}")

    def _ship(self, request: SandboxRequest) -> tuple[dict[str, Any], list[Any]]:
        """The request as JSON-able data, and one object-store reference per mount."""
        entries, blobs = [], []
        for mount in request.mounts:
            if mount.writable or mount.feed:
                raise SandboxError(
                    f"mount {mount.target} is {'writable' if mount.writable else 'a feed FIFO'}"
                    ": only read-only files and directories can be shipped to a Ray node; run "
                    "this task's evaluations without sandbox.ray")
            key, ref = self._mount_ref(mount.source)
            entries.append({"digest": key, "target": mount.target})
            blobs.append(ref)
        if request.candidates is not None and request.candidates.mounts:
            raise SandboxError("read-only data for candidate runs cannot be shipped to a Ray "
                               "node; run this task's evaluations without sandbox.ray")
        spec = {"sandbox": self._sandbox, "hidden_paths": self._hidden,
                "command": list(request.command), "env": dict(request.env),
                "workdir": request.workdir, "limits": limits_to_dict(request.limits),
                "mounts": entries, "candidates": candidates_to_dict(request.candidates)}
        return spec, blobs

    def _mount_ref(self, source: Path) -> tuple[str, Any]:
        """The mount's archive in the object store: packed per run (a directory's mtime does
        not show a change inside it), put once per content digest."""
        import ray

        source = source.resolve()
        if is_special(source):
            raise SandboxError(f"mount source {source} is a socket, FIFO or device; mount a "
                               "regular file or directory")
        blob = pack(source)
        key = digest(blob)
        with self._lock:
            ref = self._mounts.get(key)
            if ref is None:
                ref = self._mounts[key] = ray.put(blob)
        return key, ref

    def _wanted(self) -> str:
        wanted = {"CPU": self._placement.num_cpus, **self._placement.resources}
        return ", ".join(f"{name}={amount:g}" for name, amount in wanted.items())

    def close(self) -> None:
        """Drop the shipped mounts; disconnect from the cluster if this sandbox connected."""
        import ray

        with self._lock:
            self._mounts.clear()
        if self._connected and ray.is_initialized():
            ray.shutdown()
            self._connected = False


def _lost(started: float, reason: str) -> SandboxResult:
    return SandboxResult(RunStatus.CRASHED, None, "", "", time.monotonic() - started, None,
                         reason)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:500]


__all__ = ["RaySandbox"]
