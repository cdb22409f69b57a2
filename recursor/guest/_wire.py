"""The framing of the candidate channel between an evaluator and its sandbox (standard library).

One message is a 4-byte big-endian length and that many bytes of a JSON object. File
descriptors travel beside a message as ``SCM_RIGHTS`` (a unix socket), attached to its first
bytes. Both ends use these two functions: the guest (:mod:`recursor.guest`) and the host's
broker (``recursor.sandbox``), which treats everything it receives as untrusted input.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from collections.abc import Sequence
from typing import Any

HEADER = struct.Struct(">I")
MAX_MESSAGE = 96 << 20  # the largest message either side reads (files travel inside one)
MAX_FDS = 4


class ChannelClosed(Exception):
    """The other end hung up (or the connection broke) before a whole message arrived."""


def send(sock: socket.socket, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
    """Send ``message`` (and ``fds``, which the caller still owns and closes)."""
    body = json.dumps(message, separators=(",", ":")).encode()
    if len(body) > MAX_MESSAGE:
        raise ValueError(f"message of {len(body)} bytes exceeds {MAX_MESSAGE}")
    data = HEADER.pack(len(body)) + body
    sent = socket.send_fds(sock, [data], list(fds)) if fds else sock.send(data)
    if sent < len(data):
        sock.sendall(data[sent:])


def receive(sock: socket.socket, limit: int = MAX_MESSAGE) -> tuple[dict[str, Any], list[int]]:
    """The next message and the descriptors that came with it (the caller owns them).

    Raises ChannelClosed at end of stream, ValueError for a message that is not a JSON object
    of at most ``limit`` bytes (any descriptors it carried are closed first).
    """
    header, fds = _receive_header(sock)
    try:
        (size,) = HEADER.unpack(header)
        if size > limit:
            raise ValueError(f"message of {size} bytes exceeds {limit}")
        body = _receive_exactly(sock, size)
        message = json.loads(body)
        if not isinstance(message, dict):
            raise ValueError("message is not a JSON object")
    except (ValueError, RecursionError, ChannelClosed) as exc:
        for fd in fds:
            os.close(fd)
        if isinstance(exc, RecursionError):
            raise ValueError("message is nested too deeply") from None
        raise
    return message, fds


def _receive_header(sock: socket.socket) -> tuple[bytes, list[int]]:
    data, fds, flags, _ = socket.recv_fds(sock, HEADER.size, MAX_FDS)
    if flags & socket.MSG_CTRUNC:
        for fd in fds:
            os.close(fd)
        raise ValueError("a message carried more descriptors than allowed")
    if not data:
        for fd in fds:
            os.close(fd)
        raise ChannelClosed("the other end hung up")
    try:
        if len(data) < HEADER.size:
            data += _receive_exactly(sock, HEADER.size - len(data))
    except ChannelClosed:
        for fd in fds:
            os.close(fd)
        raise
    return data, list(fds)


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ChannelClosed("the other end hung up mid-message")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


__all__ = ["HEADER", "MAX_FDS", "MAX_MESSAGE", "ChannelClosed", "receive", "send"]
