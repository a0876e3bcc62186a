"""One key log file for both of libp2p's security layers, split for tshark.

A node may write its Noise keys (the WireGuard key log format p2pc's Noise dissector reads:
``LOCAL_STATIC_PRIVATE_KEY = <base64>``, ``LOCAL_EPHEMERAL_PRIVATE_KEY = <base64>``) and its TLS
secrets (the NSS key log format: ``CLIENT_RANDOM``, ``CLIENT_TRAFFIC_SECRET_0``, ...) to one file.
Wireshark reads them through two preferences, so ``split`` writes each kind to a file of its
own and ``KeylogFiles.options`` gives the tshark options:
``-o libp2p_noise.keylog_file:<noise file>`` and ``-o tls.keylog_file:<tls file>``.
Blank lines and ``#`` comments are dropped; any other line is an error that names it.
"""
from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import private

NOISE_LABELS = ("LOCAL_STATIC_PRIVATE_KEY", "LOCAL_EPHEMERAL_PRIVATE_KEY")
# NSS key log labels (Wireshark's TLS dissector reads all of them).
NSS_LABELS = ("CLIENT_RANDOM", "RSA", "PMS_CLIENT_RANDOM", "CLIENT_EARLY_TRAFFIC_SECRET",
              "CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0",
              "SERVER_TRAFFIC_SECRET_0", "EARLY_EXPORTER_SECRET", "EXPORTER_SECRET")


class KeylogInvalid(ValueError):
    """A key log line that is neither kind, or a file that cannot be read (a usage error: the
    commands report it in one line, exit code 2)."""


@dataclass
class KeylogFiles:
    noise: Path | None      # None: the file had no line of that kind
    tls: Path | None

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


def split(path: Path, workdir: Path) -> KeylogFiles:
    """Read the key log at `path`; write its Noise lines to workdir/noise.keys and its NSS
    lines to workdir/tls.keys (only those it has), readable by p2pc's tshark only (private.py)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise KeylogInvalid(f"cannot read the key log {path}: {e}") from None
    noise: list[str] = []
    tls: list[str] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        label = line.replace("=", " ").split()[0]
        where = f"{path}:{n}"
        if label in NOISE_LABELS:
            noise.append(_noise_line(line, where))
        elif label in NSS_LABELS:
            tls.append(line + "\n")
        else:
            raise KeylogInvalid(f"{where}: '{label}' is neither a Noise key ({', '.join(NOISE_LABELS)}) "
                                "nor an NSS TLS key log line")
    files = KeylogFiles(None, None)
    workdir = Path(workdir)
    if noise:
        files.noise = private.write_text(workdir / "noise.keys", "".join(noise))
    if tls:
        files.tls = private.write_text(workdir / "tls.keys", "".join(tls))
    return files
