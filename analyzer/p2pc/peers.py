"""`--by-peer`: the savings rows per remote peer: its address, and its libp2p peer ID where a
security handshake stated it (Noise, TLS, plaintext: the records' `I` lines).

The node being audited is the capture's own address: given (live: the interface's addresses),
else the address that takes part in the most connections. A connection direction's peer is its
other end; the rows are the model's per-direction rows added up per peer.
"""
from __future__ import annotations

from collections import Counter

from .model import Aggregate, Row, compute_rows


def local_addresses(agg: Aggregate) -> set[str]:
    """The address in the most connections (ties: every such address)."""
    conns = Counter()
    seen = set()
    for (file, stream, *_), t in agg.tcp.items():
        for a in (t.src, t.dst):
            if (file, stream, a) not in seen:
                seen.add((file, stream, a))
                conns[a] += 1
    if not conns:
        return set()
    top = max(conns.values())
    return {a for a, n in conns.items() if n == top}


def peer_rows(agg: Aggregate, model: str, local: set[str] | None = None) -> list[tuple[str, str | None, Row]]:
    """(peer address, its peer ID or None, row) per protocol, message type and peer."""
    local = local or local_addresses(agg)

    def remote(d: tuple, t) -> tuple[str, str]:
        file, stream, src, _ = d
        end = (file, stream, t.dst, t.dstport) if t and src in local and t.dst not in local else d
        return end[2], agg.peers.get(end, "")

    return [(r.group[0], r.group[1] or None, r) for r in compute_rows(agg, model=model, group=remote)]
