"""What stayed encrypted, said as such.

A security layer the plugin could not decrypt counts its messages as records of msg_type
`<layer> (encrypted)` (libp2p `noise`, `tls` and `quic`, FISCO's `tls`: docs/tap-format.md), so
their bytes are in the report.  `warnings` says so per protocol and names the key log that would
open them; with --keylog, it names that file when records stayed encrypted all the same, or when
it holds no key at all: a key log that decrypted nothing is never silent.
"""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .keylog import KeylogFiles
    from .model import Aggregate

SUFFIX = " (encrypted)"
NOISE = "noise"
TLS = "tls"
# The layer an encrypted record names -> the kind of key log that opens it.
KIND = {"noise": NOISE, "tls": TLS, "quic": TLS}
WHAT = {NOISE: "the nodes' Noise keys (LOCAL_STATIC_PRIVATE_KEY and LOCAL_EPHEMERAL_PRIVATE_KEY "
               "lines: docs/libp2p-decryption.md)",
        TLS: "the nodes' TLS secrets (an NSS key log, as SSLKEYLOGFILE writes it)"}
MISSING = {NOISE: "it holds no Noise key", TLS: "it holds no NSS TLS line"}


def summary(agg: Aggregate) -> dict[tuple[str, str], list[int]]:
    """(proto, key log kind) -> [records, wire bytes] of the records that stayed encrypted."""
    out: dict = defaultdict(lambda: [0, 0])
    for types in agg.by_dir.values():
        for (proto, msg_type, _), s in types.items():
            if msg_type.endswith(SUFFIX):
                acc = out[(proto, KIND.get(msg_type[:-len(SUFFIX)], TLS))]
                acc[0] += s.messages
                acc[1] += s.wire
    return dict(sorted(out.items()))


def _only_encrypted(agg: Aggregate) -> bool:
    return all(msg_type.endswith(SUFFIX) or msg_type == "undecoded"
               for types in agg.by_dir.values() for (_, msg_type, _) in types)


def warnings(agg: Aggregate, keylog: str | None, files: KeylogFiles | None) -> list[str]:
    """The warnings for the report: what stayed encrypted, per protocol and kind of key log;
    with a key log (`keylog` the file given, `files` its parts), what it did not open."""
    enc = summary(agg)
    if not keylog:
        return [f"{proto}: {n:,} records ({b:,} bytes) are encrypted and were not decrypted: "
                f"--keylog with {WHAT[kind]} opens them" for (proto, kind), (n, b) in enc.items()]
    parts = {NOISE: files.noise, TLS: files.tls} if files else {NOISE: None, TLS: None}
    if not any(parts.values()):
        head = f"--keylog {keylog} holds no keys (no Noise key, no NSS TLS line): it decrypted nothing"
    elif not enc:
        return []
    elif _only_encrypted(agg):
        head = f"--keylog {keylog} decrypted nothing"
    else:
        head = (f"--keylog {keylog} did not open every connection (no key for them, or their "
                "decryption failed: see the expert items)")
    return [head + "".join(
        ("; " if i else ": ") + f"{proto}: {n:,} records ({b:,} bytes) stayed encrypted"
        + (f" ({MISSING[kind]})" if parts[kind] is None and any(parts.values()) else "")
        for i, ((proto, kind), (n, b)) in enumerate(enc.items()))]
