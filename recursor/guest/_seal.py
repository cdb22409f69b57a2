"""Sealing an evaluator's process against starting programs (standard library, Linux).

Under the two-party contract the evaluator never runs candidate code itself: every candidate
run goes through :func:`recursor.guest.run_candidate`, into a sandbox of its own. An evaluator
written to the old contract (``subprocess.run([sys.executable, path])`` beside its secrets)
must fail with a clear error instead of quietly sharing its sandbox with the candidate, so
trusted runners call :func:`deny_exec` once their evaluator is imported: from then on
``execve`` and ``execveat`` fail with ``EPERM`` in this process and in every child it forks.
Threads and ``fork`` without ``exec`` still work.
"""

from __future__ import annotations

import ctypes
import errno
import os

from recursor.guest._candidates import CANDIDATES_ENV, HOST_RUN_ENV

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
# name: (x86_64, aarch64)
_NUMBERS = {"execve": (59, 221), "execveat": (322, 281)}
_ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_BIT = 0x40000000
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_LD_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
EXEC_DENIED_HINT = ("the evaluator may not start programs in its own sandbox, which holds its "
                    "files and its verdict; run the candidate (or any program) with "
                    "recursor.guest.run_candidate([...]) or start_candidate([...]), which run "
                    "it in a sandbox of its own (docs/your-task.md)")


class _Instruction(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Instruction))]


def _program(machine: str) -> list[tuple[int, int, int, int]]:
    column = 0 if machine == "x86_64" else 1
    deny = _RET_ERRNO | errno.EPERM
    code = [(_LD_ABS, 0, 0, 4), (_JEQ, 1, 0, _ARCHES[machine]), (_RET, 0, 0, deny),
            (_LD_ABS, 0, 0, 0)]
    if machine == "x86_64":  # the x32 ABI numbers the same calls differently
        code += [(_JGE, 0, 1, _X32_BIT), (_RET, 0, 0, deny)]
    for name in _NUMBERS:
        code += [(_JEQ, 0, 1, _NUMBERS[name][column]), (_RET, 0, 0, deny)]
    return [*code, (_RET, 0, 0, _RET_ALLOW)]


def deny_exec() -> None:
    """From now on no program can be started by this process or its children (EPERM).

    Raises OSError where the filter cannot be installed (not Linux, another architecture,
    a kernel without seccomp): a runner must not go on without it. Does nothing for an
    evaluator run by hand on a development host (``RECURSOR_HOST_EVALUATOR=1`` and no
    candidate channel), whose candidate runs are local processes.
    """
    if os.environ.get(HOST_RUN_ENV) == "1" and not os.environ.get(CANDIDATES_ENV):
        return
    machine = os.uname().machine
    if machine not in _ARCHES:
        raise OSError(f"no exec filter for the {machine} architecture")
    program = _program(machine)
    instructions = (_Instruction * len(program))(*[_Instruction(*i) for i in program])
    fprog = _Program(len(program), instructions)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.prctl(
            PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"could not install the exec filter: {os.strerror(code)}")


__all__ = ["EXEC_DENIED_HINT", "deny_exec"]
