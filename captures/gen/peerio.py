"""Socket helpers the generators' peers share."""
from __future__ import annotations

import socket
import time


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly n bytes from sock; EOFError when the peer closes first."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def connect_retry(host: str, port: int, tries: int = 50) -> socket.socket:
    """Connect, retrying while the listener in the other namespace starts."""
    for _ in range(tries - 1):
        try:
            return socket.create_connection((host, port), timeout=30)
        except OSError:
            time.sleep(0.1)
    return socket.create_connection((host, port), timeout=30)
