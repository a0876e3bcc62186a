"""`--by-peer`: the savings rows per remote address.

The node being audited is the capture's own address: given (live: the interface's addresses),
else the address that takes part in the most connections. A row's peer is the other end of
each of its connection directions; the rows are the model's per-direction rows added up.
"""
from __future__ import annotations

from collections import Counter

from .model import Aggregate, Row, Sums, compute_rows


def _addr(endpoint: str) -> str:
    return endpoint.rsplit(":", 1)[0]


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


def peer_rows(agg: Aggregate, model: str, local: set[str] | None = None) -> list[tuple[str, Row]]:
    """(peer address, row) per protocol, message type and peer."""
    local = local or local_addresses(agg)
    out: dict = {}
    for r in compute_rows(agg, model=model, by_direction=True):
        src, _, dst = r.direction.partition(">")
        src, dst = _addr(src), _addr(dst) if dst else ""
        peer = dst if src in local and dst and dst not in local else src
        key = (r.proto, r.msg_type, peer)
        acc = out.get(key)
        if acc is None:
            acc = out[key] = Row(r.proto, r.msg_type, None, Sums())
        acc.sums.merge(r.sums)
        acc.p2p_header_saved += r.p2p_header_saved
        acc.tcp_header_saved += r.tcp_header_saved
        acc.ack_saved += r.ack_saved
    return [(k[2], out[k]) for k in sorted(out)]
