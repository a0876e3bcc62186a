"""One key log file for both of libp2p's security layers, split for tshark.

A node may write its Noise keys (the WireGuard key log format p2pc's Noise dissector reads:
``LOCAL_STATIC_PRIVATE_KEY = <base64>``, ``LOCAL_EPHEMERAL_PRIVATE_KEY = <base64>``) and its TLS
secrets (the NSS key log format: ``CLIENT_RANDOM``, ``CLIENT_TRAFFIC_SECRET_0``, ...) to one file.
Wireshark reads them through two preferences, so ``split`` writes each kind to a file of its
own and ``KeylogFiles.options`` gives the tshark options:
``-o libp2p_noise.keylog_file:<noise file>`` and ``-o tls.keylog_file:<tls file>``.
Blank lines and ``#`` comments are dropped; any other line is an error that names it.
A key log is a regular file of at most KEYLOG_MAX bytes: a FIFO, a device or another kind of file
is refused before it is read (opened without blocking, checked again once open), so that
``--keylog /dev/zero`` or a FIFO is a one-line error, not a read without end or a hang.
"""
from __future__ import annotations

import base64
import binascii
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import private

NOISE_LABELS = ("LOCAL_STATIC_PRIVATE_KEY", "LOCAL_EPHEMERAL_PRIVATE_KEY")
# NSS key log labels (Wireshark's TLS dissector reads all of them).
NSS_LABELS = ("CLIENT_RANDOM", "RSA", "PMS_CLIENT_RANDOM", "CLIENT_EARLY_TRAFFIC_SECRET",
              "CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0",
              "SERVER_TRAFFIC_SECRET_0", "EARLY_EXPORTER_SECRET", "EXPORTER_SECRET")
# The largest key log read: about 3 million Noise key lines (73 bytes) or 300,000 TLS 1.3
# connections (5 NSS lines each), while split() holds it a few times over in memory.
KEYLOG_MAX = 256 << 20


class KeylogInvalid(ValueError):
    """A key log line that is neither kind, or a file that cannot be read (a usage error: the
    commands report it in one line, exit code 2)."""


@dataclass
class KeylogFiles:
    noise: Path | None      # None: the file had no line of that kind
    tls: Path | None
    source: Path | None = None  # the key log they were split from
    offset: int = 0         # the bytes of it read (whole lines)
    lines: int = 0          # the lines of it read

    def options(self, readable: Callable[[Path], str] = str) -> list[str]:
        """tshark's -o options for these files; `readable` makes a path tshark can open
        (Wireshark.readable when tshark runs as another user)."""
        opts: list[str] = []
        if self.noise:
            opts += ["-o", f"libp2p_noise.keylog_file:{readable(self.noise)}"]
        if self.tls:
            opts += ["-o", f"tls.keylog_file:{readable(self.tls)}"]
        return opts


def _noise_line(line: str, where: str) -> str:
    label, sep, value = line.partition("=")
    try:
        key = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not sep or len(key) != 32:
        raise KeylogInvalid(f"{where}: a Noise key must be '{label.strip()} = <base64 of 32 bytes>'")
    return f"{label.strip()} = {value.strip()}\n"


def _kind(raw: str, where: str) -> tuple[str, str] | None:
    """("noise" | "tls", the line as the part file gets it) for a key log line; None for a
    blank line or a comment; KeylogInvalid for anything else."""
    line = raw.strip()
    if not line or line.startswith("#"):
        return None
    label = line.replace("=", " ").split()[0]
    if label in NOISE_LABELS:
        return "noise", _noise_line(line, where)
    if label in NSS_LABELS:
        return "tls", line + "\n"
    raise KeylogInvalid(f"{where}: '{label}' is neither a Noise key ({', '.join(NOISE_LABELS)}) "
                        "nor an NSS TLS key log line")


def _read(path: Path, offset: int = 0) -> bytes:
    """The bytes of the regular file `path` from `offset` (OSError, or KeylogInvalid for a file
    that is not regular or is larger than KEYLOG_MAX).  O_NONBLOCK: a FIFO put there after any
    check does not block the open; fstat() then refuses it."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with open(fd, "rb", closefd=True) as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise KeylogInvalid(f"{path} is not a regular file (a FIFO, a device or a folder): not read")
        if st.st_size > KEYLOG_MAX:
            raise KeylogInvalid(f"{path} is {st.st_size} bytes, more than a key log's {KEYLOG_MAX >> 20} MiB: "
                                "not read")
        f.seek(offset)
        return f.read(KEYLOG_MAX - offset)   # the bound also for a file still growing


def split(path: Path, workdir: Path, both: bool = False) -> KeylogFiles:
    """Read the key log at `path`; write its Noise lines to workdir/noise.keys and its NSS
    lines to workdir/tls.keys (only those it has, or `both` files always: lines may come later,
    see follow()), readable by p2pc's tshark only (private.py)."""
    try:
        data = _read(Path(path))
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise KeylogInvalid(f"cannot read the key log {path}: {e}") from None
    parts: dict[str, list[str]] = {"noise": [], "tls": []}
    for n, raw in enumerate(text.splitlines(), 1):
        got = _kind(raw, f"{path}:{n}")
        if got:
            parts[got[0]].append(got[1])
    whole = data.rfind(b"\n") + 1            # follow() goes on after the last whole line
    files = KeylogFiles(None, None, Path(path), whole, data.count(b"\n", 0, whole))
    workdir = Path(workdir)
    if parts["noise"] or both:
        files.noise = private.write_text(workdir / "noise.keys", "".join(parts["noise"]))
    if parts["tls"] or both:
        files.tls = private.write_text(workdir / "tls.keys", "".join(parts["tls"]))
    return files


def follow(files: KeylogFiles, stop: threading.Event, warn: Callable[[str], None],
           every: float = 0.5) -> None:
    """Until `stop` is set: the lines a node appends to its key log go to the parts split() wrote
    (both of them, made with both=True), as they come, so a connection whose keys arrive while
    `p2pc live` runs decrypts (the plugin reads its key log incrementally, Wireshark's TLS reads
    its own again on a miss).  A replaced or truncated key log is read again from its start
    (keys already copied are copied again; both readers keep the first).  A bad line is skipped
    with warn(one line); a key log replaced by a file that is not regular, or grown past
    KEYLOG_MAX, is read no further (warn(one line))."""
    source, offset, line_no = files.source, files.offset, files.lines
    ident = None
    while not stop.wait(every):
        try:
            st = os.stat(source)
            if ident is not None and (ident != (st.st_dev, st.st_ino) or st.st_size < offset):
                offset, line_no = 0, 0
            ident = (st.st_dev, st.st_ino)
            data = _read(source, offset)
        except OSError as e:
            warn(f"--keylog {source}: {e.strerror or e}; keys added later are not read")
            return
        except KeylogInvalid as e:
            warn(f"--keylog: {e}; keys added later are not read")
            return
        whole = data[:data.rfind(b"\n") + 1]
        if not whole:
            continue
        offset += len(whole)
        out: dict[str, list[str]] = {"noise": [], "tls": []}
        for raw in whole.decode("utf-8", "replace").splitlines():
            line_no += 1
            try:
                got = _kind(raw, f"{source}:{line_no}")
            except KeylogInvalid as e:
                warn(f"--keylog: {e}: skipped")
                continue
            if got:
                out[got[0]].append(got[1])
        for kind, part in (("noise", files.noise), ("tls", files.tls)):
            if out[kind] and part:
                with open(part, "a") as f:
                    f.write("".join(out[kind]))
