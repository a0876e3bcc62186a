"""`--keylog FILE`: one key log holding TLS and Noise secrets, split for tshark.

TLS lines (NSS key log format: CLIENT_RANDOM, CLIENT_HANDSHAKE_TRAFFIC_SECRET, ...) go to
`tls.keylog_file`; Noise lines (`LOCAL_STATIC_PRIVATE_KEY = ...`,
`LOCAL_EPHEMERAL_PRIVATE_KEY = ...`) go to `libp2p_noise.keylog_file`. Each part is written
beside the original (world-readable when tshark runs as another user) and named by an `-o`.
"""
from __future__ import annotations

import os
import tempfile

NOISE_KEYS = ("LOCAL_STATIC_PRIVATE_KEY", "LOCAL_EPHEMERAL_PRIVATE_KEY")


class KeylogError(ValueError):
    """The key log cannot be read."""


def split_keylog(path: str, folder: str | None = None) -> list[str]:
    """tshark `-o` arguments that hand the TLS and the Noise lines of `path` to their
    dissectors; the parts are written in `folder` (default: a new temporary folder)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise KeylogError(f"{path}: {e.strerror}") from None
    noise = [l for l in lines if l.split("=", 1)[0].strip() in NOISE_KEYS]
    tls = [l for l in lines if l.strip() and not l.startswith("#") and l not in noise]
    folder = folder or tempfile.mkdtemp(prefix="p2pc-keylog-")
    os.makedirs(folder, exist_ok=True)
    os.chmod(folder, 0o755)
    args = []
    for pref, part, name in (("tls.keylog_file", tls, "tls.keys"),
                             ("libp2p_noise.keylog_file", noise, "noise.keys")):
        if part:
            out = os.path.join(folder, name)
            with open(out, "w") as f:
                f.write("\n".join(part) + "\n")
            os.chmod(out, 0o644)
            args += ["-o", f"{pref}:{out}"]
    return args
