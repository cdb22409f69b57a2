"""A seccomp filter for the process sandbox, assembled here as classic BPF (standard library only).

bubblewrap installs it (``--seccomp FD``) on the sandboxed command right before ``exec``, with
``no_new_privs`` set, so every candidate process inherits it and cannot remove it. It denies:

* ``unshare`` and ``clone`` with ``CLONE_NEWUSER``: a nested user namespace would hand the
  candidate every capability inside it (a large kernel attack surface). ``clone3`` passes its
  flags in memory a filter cannot read, so it fails with ``ENOSYS`` and the C library falls
  back to ``clone``, which is checked.
* ``io_uring_setup/enter/register``: io_uring bypasses per-syscall filtering and has a long
  record of kernel bugs.
* ``keyctl``, ``add_key``, ``request_key``: the kernel keyrings are not namespaced by the mount
  or pid namespace; a candidate must neither read the host's keys nor leave keys behind.
* every syscall of another ABI (32-bit ``int 0x80``, x32): those would bypass the numbers below.

Only x86_64 and aarch64 are known; on another architecture ``filter_program`` returns None and
the sandbox runs without a filter (``ProcessSandbox`` documents it).
"""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass

# classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
RET_KILL_PROCESS = 0x80000000
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
# offsets into struct seccomp_data
_NR, _ARCH, _ARG0 = 0, 4, 16
CLONE_NEWUSER = 0x10000000
X32_SYSCALL_BIT = 0x40000000


@dataclass(frozen=True)
class _Abi:
    audit_arch: int
    numbers: dict[str, int]
    has_x32: bool = False


_ABIS = {
    "x86_64": _Abi(0xC000003E, {
        "clone": 56, "unshare": 272, "clone3": 435, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "add_key": 248, "request_key": 249,
        "keyctl": 250}, has_x32=True),
    "aarch64": _Abi(0xC00000B7, {
        "clone": 220, "unshare": 97, "clone3": 435, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "add_key": 217, "request_key": 218,
        "keyctl": 219}),
}
DENIED = ("io_uring_setup", "io_uring_enter", "io_uring_register", "add_key", "request_key",
          "keyctl")


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _abi() -> _Abi | None:
    return _ABIS.get(platform.machine())


def syscall_number(name: str) -> int | None:
    """The number of syscall ``name`` on this machine, or None where it is not known here."""
    abi = _abi()
    return abi.numbers.get(name) if abi else None


def filter_program() -> bytes | None:
    """The filter as bytes of ``struct sock_filter`` (what ``bwrap --seccomp`` reads)."""
    abi = _abi()
    if abi is None:
        return None
    deny, nosys = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
    code = [_insn(_LD_W_ABS, _ARCH), _insn(_JEQ_K, abi.audit_arch, jt=1),
            _insn(_RET_K, RET_KILL_PROCESS), _insn(_LD_W_ABS, _NR)]
    if abi.has_x32:
        code += [_insn(_JGE_K, X32_SYSCALL_BIT, jf=1), _insn(_RET_K, deny)]
    # Each rule: "if nr == N" followed by a body that always returns, so that the
    # accumulator (overwritten by the body) never reaches the next rule.
    rules: list[tuple[int, list[bytes]]] = [(abi.numbers[name], [_insn(_RET_K, deny)])
                                            for name in DENIED]
    rules.append((abi.numbers["clone3"], [_insn(_RET_K, nosys)]))
    flag_check = [_insn(_LD_W_ABS, _ARG0), _insn(_JSET_K, CLONE_NEWUSER, jf=1),
                  _insn(_RET_K, deny), _insn(_RET_K, RET_ALLOW)]
    rules += [(abi.numbers["clone"], flag_check), (abi.numbers["unshare"], flag_check)]
    for number, body in rules:
        code += [_insn(_JEQ_K, number, jf=len(body)), *body]
    code.append(_insn(_RET_K, RET_ALLOW))
    return b"".join(code)


__all__ = ["filter_program", "syscall_number"]
