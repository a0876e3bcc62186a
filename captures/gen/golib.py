"""What the generators built on Go libp2p peers share: building the peer program, and reading
the listener's multiaddr once it has written it."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "_work"


def go_build(src: str, name: str) -> Path:
    """Build the Go module in captures/gen/<src> into _work/<name> (never committed)."""
    WORK.mkdir(exist_ok=True)
    exe = WORK / name
    env = dict(os.environ, GOFLAGS="-mod=mod")
    subprocess.run(["go", "build", "-o", str(exe), "."], cwd=HERE / src, check=True, env=env)
    return exe


def listener_addr(idfile: Path, host: str, timeout: float = 10.0) -> str:
    """The multiaddr the listener wrote to idfile, with its wildcard address made `host`."""
    deadline = time.monotonic() + timeout
    while not (idfile.exists() and idfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    addr = idfile.read_text()
    return addr.replace("/ip4/0.0.0.0/", f"/ip4/{host}/").replace("/ip4/127.0.0.1/", f"/ip4/{host}/")
