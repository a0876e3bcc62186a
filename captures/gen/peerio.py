"""Socket helpers the generators' peers share."""
from __future__ import annotations

import socket


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly n bytes from sock; EOFError when the peer closes first."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)
