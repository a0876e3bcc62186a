"""`p2pc keys` and `p2pc live --keys-from`: session keys read from running, unmodified go-libp2p
processes (and processes linking OpenSSL's libssl dynamically) by the p2pc-keys helper (keys/, built by `make keys`; docs/libp2p-decryption.md, "Keys
from a running node").

The helper attaches entry uprobes, appends each key to a key log as it is made (NSS lines for TLS
and QUIC, p2pc's Noise lines) and, stopped by SIGINT or SIGTERM, detaches and writes the keys
still in flight before it exits.  This module finds it, runs it, and turns what it says into
p2pc's one-line errors.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from .errors import Exit, KeysUnavailable

HELPER = "p2pc-keys"
REPO_BUILD = Path(__file__).resolve().parents[2] / "build" / HELPER
ATTACH_TIMEOUT = 30.0   # seconds for the helper to read the programs and attach


def helper() -> str:
    """The helper: $P2PC_KEYS, else this repository's build, else p2pc-keys on PATH."""
    named = os.environ.get("P2PC_KEYS")
    if named:
        if not os.path.isfile(named):
            raise KeysUnavailable(f"P2PC_KEYS={named}: no such file")
        return named
    found = str(REPO_BUILD) if REPO_BUILD.is_file() else shutil.which(HELPER)
    if not found:
        raise KeysUnavailable("the p2pc-keys helper is not built: run `make keys` in the p2pc repository "
                              "(or set P2PC_KEYS to its path)")
    return found


def command(pids: list[int], output: str | os.PathLike, duration: int | None = None,
            uprobes: str = "auto") -> list[str]:
    argv = [helper()]
    for pid in pids:
        argv += ["--pid", str(pid)]
    argv += ["--output", str(output), "--uprobes", uprobes]
    if duration:
        argv += ["--duration", f"{duration}s"]
    return argv


def run(args) -> int:
    """`p2pc keys`: the helper in the foreground, its lines on stderr; SIGTERM to p2pc reaches it
    as SIGTERM, so it still writes what is in flight."""
    proc = subprocess.Popen(command(args.pid, args.output, args.duration, args.uprobes))
    previous = signal.signal(signal.SIGTERM, lambda *_: proc.send_signal(signal.SIGTERM))
    try:
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:   # the helper got the terminal's ^C as well: let it finish
                continue
    finally:
        signal.signal(signal.SIGTERM, previous)
    return Exit.KEYS if code == 2 else code     # the helper's one line said why


class Tracer:
    """`live --keys-from`: the helper in the background, appending to the key log live's tshark reads.
    start() returns once every process is probed (or raises KeysUnavailable with the helper's
    line); stop() makes it write what is in flight and end.  Its lines go to warn()."""

    def __init__(self, pids: list[int], output: Path, warn):
        self.argv = command(pids, output)
        self.pids = pids
        self.warn = warn
        self.proc: subprocess.Popen | None = None
        self.last = ""

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, errors="replace",
                                     start_new_session=True)   # ^C is live's to handle, not its
        attached: set[int] = set()
        timer = threading.Timer(ATTACH_TIMEOUT, self.proc.kill)
        timer.start()
        try:
            while len(attached) < len(self.pids):
                line = self.proc.stderr.readline()
                if not line:
                    self.proc.wait()
                    raise KeysUnavailable(self.last.removeprefix("p2pc keys: ") or
                                          f"p2pc-keys ended (status {self.proc.returncode})")
                self.last = line.strip()
                self.warn(self.last.removeprefix("p2pc keys: "))
                for pid in self.pids:
                    if self.last.startswith(f"p2pc keys: pid {pid} (") and ": probing " in self.last:
                        attached.add(pid)
        finally:
            timer.cancel()
        threading.Thread(target=self._relay, daemon=True).start()

    def _relay(self) -> None:
        for line in self.proc.stderr:
            self.last = line.strip()
            self.warn(self.last.removeprefix("p2pc keys: "))

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                print("p2pc live: keys: p2pc-keys did not stop; killed", file=sys.stderr)
