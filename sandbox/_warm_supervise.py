"""The warm path's supervision of one run, on the controller (``_warm`` has the parts): fork
it from its template, move it into the run's cgroups before it may go on, collect its output
and verdict, and kill it at the wall-time limit or on cancel."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from recursor.types import RunStatus

from ._base import SandboxLimits, SandboxRequest, SandboxResult
from ._binds import inodes_for, scratch_mb
from ._cgroups import RunCgroups
from ._feeds import feed_pipes
from ._judge import MAX_RESULT_BYTES
from ._role import BWRAP_OWN_PROCESSES, Role, run_environment
from ._spawn import FILE_SIZE_LIMIT, Ended, user_process_count
from ._warm import CHANNEL_FD, VERDICT_FD, WarmPlan, WarmRun, run_header
from .agent import OutputReader


@dataclass
class _Streams:
    """What one warm run is handed (``fds``, by name) and what this side reads from it."""

    fds: dict[str, int] = field(default_factory=dict)
    ours: list[int] = field(default_factory=list)  # closed once the template holds copies
    readers: list[OutputReader] = field(default_factory=list)
    verdict: OutputReader | None = None


def _streams(role: Role, limits: SandboxLimits, drops_uid: bool) -> _Streams:
    """Its standard streams (pipes read here, or a candidate run's own ``stdio``), its
    verdict pipe (owned by the run's uid, which reopens it through ``/proc``) and its
    candidate channel."""
    streams = _Streams()
    if role.stdio is None:
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        streams.fds.update(stdin=os.open(os.devnull, os.O_RDONLY), stdout=out_write,
                           stderr=err_write)
        streams.ours += [streams.fds["stdin"], out_write, err_write]
        streams.readers = [OutputReader(os.fdopen(out_read, "rb"), limits.output_bytes),
                           OutputReader(os.fdopen(err_read, "rb"), limits.output_bytes)]
    else:
        streams.fds.update(stdin=role.stdio[0], stdout=role.stdio[1], stderr=role.stdio[2])
    if role.verdict:
        verdict_read, verdict_write = os.pipe()
        streams.fds["verdict"] = verdict_write
        streams.ours.append(verdict_write)
        if drops_uid:
            os.fchown(verdict_write, role.uid, role.uid)
        streams.verdict = OutputReader(os.fdopen(verdict_read, "rb"), MAX_RESULT_BYTES)
        streams.readers.append(streams.verdict)
    if role.channel is not None:
        streams.fds["channel"] = role.channel
    return streams


def _header(request: SandboxRequest, input_name: str, role: Role, drops_uid: bool,
            cgroups: RunCgroups, warm: WarmPlan, feeds: Sequence[str]) -> dict[str, object]:
    limits = request.limits
    nproc = (user_process_count(role.uid if drops_uid else os.getuid())
             + limits.max_processes + BWRAP_OWN_PROCESSES)
    size = scratch_mb(limits)
    return run_header(
        warm, input_name, role.uid if drops_uid else None,
        run_environment(request.env, VERDICT_FD if role.verdict else None,
                        None if role.channel is None else CHANNEL_FD),
        size << 20, inodes_for(size), request.workdir,
        {"core": 0, "fsize": FILE_SIZE_LIMIT, "nproc": nproc,
         "as": None if cgroups.limits_memory else limits.memory_mb << 20},
        trusted_command=role.verdict, feeds=feeds)


def _enter_cgroups(pid: int, cgroups: RunCgroups) -> None:
    for fd in cgroups.open_procs():
        try:
            os.write(fd, str(pid).encode())
        finally:
            os.close(fd)


def supervise_warm(request: SandboxRequest, input_name: str, role: Role, drops_uid: bool,
                   cgroups: RunCgroups, started: Callable[[], None] | None,
                   warm: WarmPlan, feeds: Mapping[str, bytes]
                   ) -> tuple[SandboxResult, Ended, OutputReader | None]:
    """Fork the run from its template, move it into ``cgroups`` before it may go on,
    collect its output and verdict, and kill it at the wall-time limit (or on cancel).
    ``feeds``: each feed's target and its drained bytes (``_feeds``). Raises
    ``WarmUnavailable`` when the run never started."""
    header = _header(request, input_name, role, drops_uid, cgroups, warm, list(feeds))
    run = WarmRun()
    try:
        streams = _streams(role, request.limits, drops_uid)
        begun = time.monotonic()
        pipes = feed_pipes(feeds, role.uid if drops_uid else None)
        try:
            warm.template.submit(header, {"hello": run.theirs.fileno(), **streams.fds},
                                 pipes)
        finally:
            for fd in [*streams.ours, *pipes]:
                os.close(fd)
        for reader in streams.readers:
            reader.start()
        try:
            _enter_cgroups(run.hello(), cgroups)
            run.go()
            run.ready()
            if started is not None:
                started()
            ended = run.wait(request.limits.wall_time_s, role.cancel)
        finally:
            code = run.finish()
        wall = time.monotonic() - begun
        for reader in streams.readers:
            reader.join(timeout=5)
    finally:
        run.close()
    own = role.stdio is None
    out, err = (streams.readers[0], streams.readers[1]) if own else (None, None)
    result = SandboxResult(RunStatus.OK, code, out.text() if out else "",
                           err.text() if err else "", wall, None, None,
                           bool(out and err and (out.truncated or err.truncated)))
    return result, ended, streams.verdict


__all__ = ["supervise_warm"]
