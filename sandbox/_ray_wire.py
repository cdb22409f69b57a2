"""What travels between the controller and a Ray node for one sandboxed run.

Out: the candidate's workspace and each read-only mount as a tar archive (bytes, regular files,
directories and symlinks only), plus the request as JSON. Back: the run's *facts* as JSON
bytes (exit status, captured output, the verdict channel's text as written, and the host-side
evidence only the node can see: whether its sandbox timed the run out or saw an OOM kill).

The controller never takes the node's word for a status: :func:`judge_reply` runs the same
``judge`` as every local backend on those facts, and a status can only get worse on the way
(a failure the node's sandbox saw is kept; an ``ok`` needs the controller's judge to agree).
Nothing here unpickles: the reply is JSON, checked field by field.
"""

from __future__ import annotations

import hashlib
import io
import json
import stat
import tarfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from recursor.types import RunStatus

from ._base import CandidateRuns, SandboxLimits, SandboxResult
from ._judge import judge

ARCHIVE_ROOT = "data"


def pack(source: Path) -> bytes:
    """``source`` (a file or a directory) as an uncompressed tar whose top entry is ``data``.

    Sockets, FIFOs and devices are left out, as the local sandboxes leave them out of a
    read-only mount's snapshot.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(str(source), arcname=ARCHIVE_ROOT, recursive=True, filter=_regular_only)
    return buffer.getvalue()


def _regular_only(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Regular files, directories and symlinks, with only names, modes and contents kept, so
    that the same content packs to the same bytes (and digest) wherever and whenever made."""
    if not (info.isfile() or info.isdir() or info.issym()):
        return None
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    return info


def unpack(blob: bytes, into: Path) -> Path:
    """Extract a :func:`pack` archive under ``into`` and return the path of its ``data`` entry.

    Python's ``data`` extraction filter refuses absolute names, ``..`` and links that leave the
    destination; modes keep their read bits (the sandbox's uid must read the files).
    """
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r") as tar:
        tar.extractall(into, filter="data")
    root = into / ARCHIVE_ROOT
    if not root.exists() and not root.is_symlink():
        raise ValueError("the shipped archive holds no 'data' entry")
    return root


def digest(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


def is_special(path: Path) -> bool:
    """A socket, FIFO or device: nothing that can be shipped as bytes."""
    mode = path.stat().st_mode
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def limits_to_dict(limits: SandboxLimits) -> dict[str, Any]:
    return asdict(limits)


def limits_from_dict(data: dict[str, Any]) -> SandboxLimits:
    return SandboxLimits(**data)


def candidates_to_dict(spec: CandidateRuns | None) -> dict[str, Any] | None:
    """The candidate runs' settings as JSON (read-only data for them cannot be shipped)."""
    if spec is None:
        return None
    return {"limits": None if spec.limits is None else limits_to_dict(spec.limits),
            "max_runs": spec.max_runs, "max_parallel": spec.max_parallel,
            "hide_modules": list(spec.hide_modules)}


def candidates_from_dict(data: dict[str, Any] | None) -> CandidateRuns | None:
    if data is None:
        return None
    limits = data.get("limits")
    return CandidateRuns(limits=None if limits is None else limits_from_dict(limits),
                         max_runs=int(data["max_runs"]), max_parallel=int(data["max_parallel"]),
                         hide_modules=tuple(str(m) for m in data["hide_modules"]))


def encode_reply(result: SandboxResult, placement: dict[str, str]) -> bytes:
    """The node's side: the facts of one run (see the module docstring) as JSON bytes."""
    return json.dumps({
        "status": result.status.value, "error": result.error, "exit_code": result.exit_code,
        "stdout": result.stdout, "stderr": result.stderr, "wall_time_s": result.wall_time_s,
        "output_truncated": result.output_truncated,
        "timed_out": result.status is RunStatus.TIMEOUT,
        "oom_killed": result.status is RunStatus.OOM,
        "verdict": result.verdict_text, "verdict_truncated": result.verdict_truncated,
        "placement": placement, "candidate_statuses": list(result.candidate_statuses),
    }).encode()


_FIELDS: dict[str, tuple[type, ...]] = {
    "status": (str,), "error": (str, type(None)), "exit_code": (int, type(None)),
    "stdout": (str,), "stderr": (str,), "wall_time_s": (int, float),
    "output_truncated": (bool,), "timed_out": (bool,), "oom_killed": (bool,),
    "verdict": (str, type(None)), "verdict_truncated": (bool,), "placement": (dict,),
    "candidate_statuses": (list,),
}
CANDIDATE_STATUSES = frozenset({"ok", "crashed", "timeout", "oom", "killed"})


def decode_reply(blob: bytes) -> dict[str, Any]:
    """The reply as a dict whose fields all have their expected types; ValueError otherwise."""
    data = json.loads(blob)
    if not isinstance(data, dict):
        raise ValueError(f"the reply is a JSON {type(data).__name__}, not an object")
    for name, types in _FIELDS.items():
        if name not in data:
            raise ValueError(f"the reply lacks {name!r}")
        value = data[name]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise ValueError(f"the reply's {name!r} is {type(value).__name__}")
    RunStatus(data["status"])  # ValueError for an unknown status
    placement = data["placement"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in placement.items()):
        raise ValueError("the reply's placement is not a mapping of strings")
    if not all(status in CANDIDATE_STATUSES for status in data["candidate_statuses"]):
        raise ValueError("the reply's candidate_statuses hold an unknown status")
    return data


def judge_reply(reply: dict[str, Any], limits: SandboxLimits) -> SandboxResult:
    """A decoded reply judged here with the local backends' ``judge`` (module docstring)."""
    facts = SandboxResult(RunStatus.OK, reply["exit_code"], reply["stdout"], reply["stderr"],
                          float(reply["wall_time_s"]), None, None, reply["output_truncated"])
    result = judge(facts, reply["timed_out"], limits.wall_time_s, reply["verdict"],
                   reply["verdict_truncated"], oom_killed=reply["oom_killed"])
    seen = RunStatus(reply["status"])
    if seen is not RunStatus.OK:
        # The node's sandbox saw a failure its facts may not show (a lost container agent, a
        # run it removed): never upgraded. Its own words explain a failure best.
        if result.status is RunStatus.OK:
            result.status = seen
        result.error = reply["error"] or result.error
    result.placement = dict(reply["placement"])
    result.candidate_statuses = tuple(reply["candidate_statuses"])
    return result
