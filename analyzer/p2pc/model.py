"""Layer 2: accounting.  Integer sums per capture (exactly mergeable across files and
processes), and the savings model computed from them at the end (docs/savings-model.md).

payload saved = Σ (raw − sent)
header saved  = Σ (batch_count − 1) × the protocol's per-message header
              + link/IP/TCP header bytes of the segments the smaller stream no longer needs
ACK saved     = pure ACKs the receiver no longer sends for those segments

Segments and ACKs are counted with what the capture shows for each connection direction: its
MSS (largest TCP payload seen), its per-segment header bytes, the receiver's pure ACKs per data
segment and their frame size.  `bip` is the BIP draft's flat 24 + 52 bytes per batched message.
"""
from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass, field

from .records import BudgetPart, GossipPart, Message, PeerIdentity, TcpDirection, Violation

# Per-message P2P header bytes that batching avoids for each item merged into a batch.
PROTOCOL_HEADER = {"bitcoin": 24, "fisco": 16, "eth2": 0, "libp2p": 0}
# The BIP draft's estimate of one TCP ACK (bytes) saved per batched message.
BIP_ACK_BYTES = 52

# Message types a protocol can merge into batches (for `whatif`'s batching estimate).
BATCHABLE = {"bitcoin": {"tx"}, "fisco": {"BlockSync.Transactions"}}

# Message types that carry blocks (for `whatif --strategy block`): Bitcoin's block (cblock: the
# same, compressed), FISCO 2.x's BlockSync.Blocks and 3.x's BlockResponsePacket, eth2's gossiped
# beacon_block and the block-by-range/root responses, and a Bitswap message with blocks (its
# msg_type names its parts joined by "+", docs/bitswap.md).  The whole record is the block's:
# a Bitswap message's CIDs and wantlist around its blocks are compressed with them.
BLOCKS = {
    "bitcoin": {"block", "cblock"},
    "fisco": {"BlockSync.Blocks"},
    "fisco3": {"BlockSync.BlockResponsePacket"},
    "eth2": {"gossip beacon_block", "beacon_blocks_by_range/1 response", "beacon_blocks_by_range/2 response",
             "beacon_blocks_by_root/1 response", "beacon_blocks_by_root/2 response"},
    "bitswap": {"blocks"},
}


def is_block(proto: str, msg_type: str) -> bool:
    return any(part in BLOCKS.get(proto, ()) for part in msg_type.split("+"))


# For `compare`: which message types carry the same content compressed and not.
FAMILY = {
    "bitcoin": {"cblock": "block", "block": "block", "ctxcat": "tx", "txcat": "tx", "tx": "tx",
                "cxthinblock": "xthinblock", "xthinblock": "xthinblock",
                "get_cxthin": "get_xthin", "get_xthin": "get_xthin"},
}

SIZE_RANGES = [(0, 250), (250, 500), (500, 1000), (1000, 10_000), (10_000, 100_000),
               (100_000, 500_000), (500_000, 1_000_000), (1_000_000, 2_000_000),
               (2_000_000, None)]


def size_range_label(lo: int, hi: int | None) -> str:
    def fmt(n: int) -> str:
        return f"{n // 1_000_000}MB" if n >= 1_000_000 and n % 1_000_000 == 0 else (
            f"{n // 1000}KB" if n >= 1000 and n % 1000 == 0 else str(n))
    return f"{fmt(lo)}-{fmt(hi)}" if hi else f">{fmt(lo)}"


def size_range(n: int) -> int:
    for i, (lo, hi) in enumerate(SIZE_RANGES):
        if hi is None or n < hi:
            return i
    return len(SIZE_RANGES) - 1


def family(proto: str, msg_type: str) -> str:
    return FAMILY.get(proto, {}).get(msg_type, msg_type)


# compare's family of the bytes a libp2p connection spends before its first message (the
# transport's negotiation, attribution.py), a cost the model counts.
SETUP = "connection setup"


# One Sums per connection direction and message type, the most numerous object of a merged
# aggregate: without a __dict__ (Python 3.10 and later) each is about 130 bytes smaller.
_SLOTS = {"slots": True} if sys.version_info >= (3, 10) else {}


@dataclass(**_SLOTS)
class Sums:
    messages: int = 0
    wire: int = 0
    header: int = 0
    payload: int = 0
    raw: int = 0
    items: int = 0
    batched_headers: int = 0     # Σ (batch_count − 1) × protocol header
    batched_items: int = 0       # Σ (batch_count − 1)

    def add(self, m: Message) -> None:
        hdr = PROTOCOL_HEADER.get(m.proto, m.header_len)
        self.messages += 1
        self.wire += m.wire_len
        self.header += m.header_len
        self.payload += m.payload_len
        self.raw += m.raw_len
        self.items += m.batch_count
        self.batched_items += m.batch_count - 1
        self.batched_headers += (m.batch_count - 1) * hdr

    def merge(self, o: "Sums") -> None:
        for k in self.__dataclass_fields__:
            setattr(self, k, getattr(self, k) + getattr(o, k))

    @property
    def delta_bytes(self) -> int:
        """Bytes the uncompressed, unbatched stream would have carried on top of this one."""
        return (self.raw - self.payload) + self.batched_headers


RATIO_BIN = 0.01
# The bandwidth figure keeps one sum per connection direction and time bin.  Past this many sums
# the bins double in width (the sums stay exact, the figure gets coarser), so hours or days of
# traffic keep memory bounded: at most this many, or one bin per direction.
BANDWIDTH_CELLS = 200_000
# Rows of the gossip section kept with their own topic: a peer names topics at will, so past
# this many (sender, kind, topic) rows a new topic's parts are summed under OTHER_TOPICS.
GOSSIP_ROWS = 4096
OTHER_TOPICS = "(other topics)"
# Message IDs remembered per capture to tell duplicates (a node given a message it already sent
# or received) and what IDONTWANT did (GossipSeen): past this many, later messages are not
# checked (a warning says so).
GOSSIP_SEEN_IDS = 1_000_000


# Module-level factories, so an Aggregate pickles across worker processes.
def _type_map() -> defaultdict:
    return defaultdict(Sums)


def _zero3() -> list:
    return [0, 0, 0]


class GossipSeen:
    """The gossip message IDs of a capture so far, to tell duplicates and what IDONTWANT did:
    which node (an address) had each message and from whom (its source: the first sender to it;
    "" when the node sent it before it got it), each message's first sender in the capture, its
    topic and bytes, which node sent it to which, and the IDONTWANTs each node was sent (by
    connection direction, and by node: whether counted as saved now).  At most GOSSIP_SEEN_IDS
    entries in all (then `full`)."""

    def __init__(self) -> None:
        self.source: dict[str, dict[str, str]] = {}     # node -> message ID -> its source
        self.first: dict[str, tuple] = {}               # message ID -> (first sender, topic, bytes)
        self.sent: set[tuple] = set()                   # (sender, receiver, message ID)
        self.ways: dict[str, set] = {}                  # message ID -> connection directions asked not to
        self.wanted: dict[str, dict[tuple, bool]] = {}  # message ID -> (asked, asker) -> counted saved
        self.n = 0
        self.full = False
        self.warned = False

    def _room(self) -> bool:
        if self.n >= GOSSIP_SEEN_IDS:
            self.full = True
            return False
        self.n += 1
        return True

    def published(self, g: GossipPart) -> tuple[bool, list]:
        """A publish part, in capture order: whether its receiver already had the message (a
        duplicate), and the changes it makes to the IDONTWANT sums, as (sender, topic, sent
        after an IDONTWANT and its bytes, saved and its bytes): sent on a connection after the
        receiver's IDONTWANT for it there, no longer saved once sent to the asker, and saved
        where the receiver now has the message and IDONTWANTs it was sent keep it from sending."""
        m = g.message_id
        changes = []
        if (g.stream, g.src, g.srcport, g.dst, g.dstport) in self.ways.get(m, ()):
            changes.append((g.src, g.topic, 1, g.bytes, 0, 0))
        wanted = self.wanted.get(m, {})
        if wanted.get((g.src, g.dst)):
            wanted[(g.src, g.dst)] = False
            changes.append((g.src, self.first[m][1], 0, 0, -1, -self.first[m][2]))
        if (g.src, g.dst, m) not in self.sent and self._room():
            self.sent.add((g.src, g.dst, m))
        if m not in self.first and self._room():
            self.first[m] = (g.src, g.topic, g.bytes)
        again = m in self.source.get(g.dst, {})
        for node, source in ((g.src, ""), (g.dst, g.src)):
            had = self.source.setdefault(node, {})
            if m not in had and self._room():
                had[m] = source
                changes += self._saved(node, m)
        return again, changes

    def dont_want(self, g: GossipPart) -> list:
        """An IDONTWANT part: g.src asks g.dst not to send the message IDs it carries; the
        changes to the sums, as published() gives them."""
        changes = []
        for m in filter(None, g.message_id.split(",")):
            ways = self.ways.setdefault(m, set())
            if (way := (g.stream, g.dst, g.dstport, g.src, g.srcport)) not in ways and self._room():
                ways.add(way)
            wanted = self.wanted.setdefault(m, {})
            if (g.dst, g.src) not in wanted and self._room():
                wanted[(g.dst, g.src)] = False
                changes += self._saved(g.dst, m)
        return changes

    def _saved(self, node: str, m: str) -> list:
        """The IDONTWANTs for m that node was sent and that now count as saved: node has m, got
        it from someone else than the IDONTWANT's sender, who is not m's first sender either
        (gossipsub forwards to neither), and has not sent m to it."""
        source = self.source.get(node, {}).get(m)
        if source is None or m not in self.first:
            return []
        first, topic, size = self.first[m]
        out = []
        for (x, y), counted in (wanted := self.wanted.get(m, {})).items():
            if x == node and not counted and y not in (source, first) and (x, y, m) not in self.sent:
                wanted[(x, y)] = True
                out.append((node, topic, 0, 0, 1, size))
        return out


@dataclass
class Aggregate:
    """Everything one or more captures contribute, as integer sums keyed by file-unique keys."""
    # (file, stream, src, srcport) direction -> (proto, msg_type, codec) -> Sums
    by_dir: dict = field(default_factory=lambda: defaultdict(_type_map))
    # (file, stream, src, srcport) -> TcpDirection
    tcp: dict = field(default_factory=dict)
    # (proto, msg_type, range index) -> [messages, raw, payload]
    sizes: dict = field(default_factory=lambda: defaultdict(_zero3))
    # (proto, msg_type, ratio bin) -> messages, ratio = raw / payload (compressed messages)
    ratios: dict = field(default_factory=lambda: defaultdict(int))
    # (bin start, epoch second; "src:port>dst:port") -> wire bytes, in bins of bandwidth_bin s
    bandwidth: dict = field(default_factory=lambda: defaultdict(int))
    bandwidth_bin: int = 1          # seconds, a power of two
    span: list = field(default_factory=list)    # [first, last] second of the messages
    # (file, stream, src, srcport) endpoint -> the libp2p peer ID its handshake stated
    peers: dict = field(default_factory=dict)
    # (file, p2pc.spec.* check) -> [failures, first frame]
    conformance: dict = field(default_factory=dict)
    # (sender address, gossipsub part kind, topic) -> [count, message IDs, bytes, duplicates,
    # duplicate bytes, sent after IDONTWANT, their bytes, IDONTWANT saved, its bytes]
    gossip: dict = field(default_factory=dict)
    # (proto, layer, kind) -> bytes of the B lines: each layer's own bytes no message carries
    budget: dict = field(default_factory=lambda: defaultdict(int))
    files: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    def add_message(self, file: str, m: Message) -> None:
        d = (file, *m.key)
        self.by_dir[d][(m.proto, m.msg_type, m.codec)].add(m)
        s = self.sizes[(m.proto, m.msg_type, size_range(m.raw_len))]
        s[0] += 1
        s[1] += m.raw_len
        s[2] += m.payload_len
        if m.codec != "none" and m.payload_len > 0:
            self.ratios[(m.proto, m.msg_type, int(m.raw_len / m.payload_len / RATIO_BIN))] += 1
        t, span = int(m.time), self.span
        self.bandwidth[(t - t % self.bandwidth_bin, m.endpoints)] += m.wire_len
        if not span:
            span += [t, t]
        elif t < span[0]:
            span[0] = t
        elif t > span[1]:
            span[1] = t
        if len(self.bandwidth) > BANDWIDTH_CELLS:
            self._widen()

    # No wider bins (live trims its oldest seconds instead).
    _widens = True

    def _widen(self) -> None:
        """Double the bandwidth bins' width while there are more than BANDWIDTH_CELLS sums and
        the bins still divide the messages' time span.  The width reached is the smallest for
        which that holds, whatever the order of the messages, so shards merge to the same."""
        while (self._widens and len(self.bandwidth) > BANDWIDTH_CELLS and self.span
               and self.span[1] - self.span[0] >= self.bandwidth_bin):
            self._rebin(2 * self.bandwidth_bin)

    def _rebin(self, width: int) -> None:
        out: defaultdict = defaultdict(int)
        for (t, d), v in self.bandwidth.items():
            out[(t - t % width, d)] += v
        self.bandwidth, self.bandwidth_bin = out, width

    def add_tcp(self, file: str, t: TcpDirection) -> None:
        self.tcp[(file, *t.key)] = t

    def add_peer(self, file: str, p: PeerIdentity) -> None:
        self.peers[(file, *p.key)] = p.peer_id

    def add_violation(self, file: str, v: Violation) -> None:
        c = self.conformance.setdefault((file, v.check), [0, v.frame])
        c[0] += 1
        c[1] = min(c[1], v.frame)

    def has_p2p(self) -> bool:
        """Whether the captures held P2P traffic p2pc reads: a message, or a gossipsub RPC (a
        capture of gossip control only has no message record)."""
        return any(self.by_dir.values()) or bool(self.gossip)

    def add_gossip(self, g: GossipPart) -> None:
        """A gossip part, in the capture's order: a publish part delivered to a node (its dst
        address) that already sent or received its message ID, on any connection of this
        capture, is a duplicate; one sent to a node on a connection where that node had sent an
        IDONTWANT for it is sent after IDONTWANT; an IDONTWANT a node was sent for a message it
        has and did not send back is saved (docs/savings-model.md, IDONTWANT)."""
        dup, changes = False, []
        if g.kind == "publish" and g.message_id:
            dup, changes = self._seen().published(g)
        elif g.kind == "idontwant" and g.message_id:
            changes = self._seen().dont_want(g)
        elif g.kind == "idontwant" and g.message_ids and "_idontwant_ids_missing" not in vars(self):
            self._idontwant_ids_missing = True
            self.warnings.append("the dump's IDONTWANTs carry no message IDs (a plugin before them): "
                                 "after_idontwant and idontwant_saved are not counted")
        self._add_gossip((g.src, g.kind, g.topic), (g.count, g.message_ids, g.bytes, int(dup), g.bytes * dup,
                                                    0, 0, 0, 0))
        for src, topic, after, after_bytes, saved, saved_bytes in changes:
            self._add_gossip((src, "publish", topic), (0, 0, 0, 0, 0, after, after_bytes, saved, saved_bytes))
        seen = vars(self).get("_gossip_seen")
        if seen is not None and seen.full and not seen.warned:
            seen.warned = True
            self.warnings.append(f"gossip duplicates and IDONTWANTs are counted over the first "
                                 f"{GOSSIP_SEEN_IDS:,} message IDs the nodes sent, received or were sent "
                                 "IDONTWANTs for")

    def add_budget(self, b: BudgetPart) -> None:
        """A layer's own bytes in one frame (a B line; negative: taken by a message since)."""
        self.budget[(b.proto, b.layer, b.kind)] += b.bytes

    def _seen(self) -> GossipSeen:
        seen = vars(self).get("_gossip_seen")
        if seen is None:
            seen = self._gossip_seen = GossipSeen()
        return seen

    def __getstate__(self) -> dict:
        """What crosses to another process (a worker's aggregate): not the message IDs seen,
        which only the capture's own reading needs."""
        state = dict(vars(self))
        state.pop("_gossip_seen", None)
        return state

    def _add_gossip(self, key: tuple, sums) -> None:
        row = self.gossip.get(key)
        if row is None:
            if len(self.gossip) >= GOSSIP_ROWS:
                key = (*key[:2], OTHER_TOPICS)
            row = self.gossip.setdefault(key, [0] * 9)
        for i in range(9):
            row[i] += sums[i]

    def merge(self, o: "Aggregate") -> None:
        for d, types in o.by_dir.items():
            for k, s in types.items():
                self.by_dir[d][k].merge(s)
        self.tcp.update(o.tcp)
        self.peers.update(o.peers)
        for k, (n, first) in o.conformance.items():
            c = self.conformance.setdefault(k, [0, first])
            c[0] += n
            c[1] = min(c[1], first)
        for k, sums in o.gossip.items():
            self._add_gossip(k, sums)
        for k, n in o.budget.items():
            self.budget[k] += n
        for k, v in o.sizes.items():
            mine = self.sizes[k]
            for i in range(3):
                mine[i] += v[i]
        for k, v in o.ratios.items():
            self.ratios[k] += v
        if o.bandwidth_bin > self.bandwidth_bin:
            self._rebin(o.bandwidth_bin)
        w = self.bandwidth_bin
        for (t, d), v in o.bandwidth.items():
            self.bandwidth[(t - t % w, d)] += v
        if o.span:
            self.span[:] = [min(self.span[0], o.span[0]), max(self.span[1], o.span[1])] if self.span else o.span
        self._widen()
        self.files += o.files
        self.warnings += o.warnings


@dataclass
class LinkParams:
    """What the capture shows for one connection direction (and its reverse, for ACKs)."""
    mss: int
    seg_overhead: float      # link+IP+TCP bytes per data segment
    ack_ratio: float         # receiver's pure ACKs per data segment
    ack_bytes: float         # bytes of one pure ACK frame

    @classmethod
    def from_tcp(cls, t: TcpDirection | None, rev: TcpDirection | None) -> "LinkParams | None":
        if t is None or t.data_segs == 0 or t.max_seg == 0:
            return None
        ack_ratio = (rev.pure_acks / t.data_segs) if rev else 0.0
        ack_bytes = (rev.pure_ack_bytes / rev.pure_acks) if rev and rev.pure_acks else 0.0
        return cls(t.max_seg, (t.data_frame_bytes - t.data_bytes) / t.data_segs, ack_ratio, ack_bytes)


@dataclass
class Row:
    proto: str
    msg_type: str
    direction: str | None
    sums: Sums
    codec: str | None = None     # compute_rows(by_codec=True)
    group: tuple | None = None   # compute_rows(group=...)
    p2p_header_saved: float = 0.0
    tcp_header_saved: float = 0.0
    ack_saved: float = 0.0
    explain: list = field(default_factory=list)

    @property
    def payload_saved(self) -> int:
        return self.sums.raw - self.sums.payload

    @property
    def header_saved(self) -> float:
        return self.p2p_header_saved + self.tcp_header_saved

    @property
    def total_saved(self) -> float:
        return self.payload_saved + self.header_saved + self.ack_saved

    def as_dict(self) -> dict:
        s = self.sums
        d = {
            "proto": self.proto, "msg_type": self.msg_type, "messages": s.messages,
            "items": s.items, "wire_bytes": s.wire, "header_bytes": s.header,
            "payload_bytes": s.payload, "raw_bytes": s.raw,
            "payload_saved": self.payload_saved,
            "header_saved": round(self.header_saved), "p2p_header_saved": round(self.p2p_header_saved),
            "tcp_header_saved": round(self.tcp_header_saved), "ack_saved": round(self.ack_saved),
            "total_saved": round(self.total_saved),
            "payload_saved_pct": pct(self.payload_saved, s.raw),
            "total_saved_pct": pct(self.total_saved, s.wire + self.total_saved),
        }
        if self.direction is not None:
            d["direction"] = self.direction
        return d


def pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def direction_savings(s: Sums, params: LinkParams | None, model: str = "capture") -> tuple[float, float, float]:
    """What one connection direction's messages of one type saved besides their payload:
    (P2P header saved, TCP header saved, ACK saved), by the model of docs/savings-model.md (its
    golden vectors, docs/savings-model-vectors.tsv, hold every implementation to it)."""
    if model == "bip":
        return float(s.batched_headers), 0.0, float(s.batched_items * BIP_ACK_BYTES)
    if params is None or not s.delta_bytes:
        return float(s.batched_headers), 0.0, 0.0
    segs = s.delta_bytes / params.mss
    return float(s.batched_headers), segs * params.seg_overhead, segs * params.ack_ratio * params.ack_bytes


def compute_rows(agg: Aggregate, model: str = "capture", by_direction: bool = False,
                 explain: bool = False, by_codec: bool = False, group=None) -> list[Row]:
    """One row per protocol and message type, and per direction, codec, or the tuple of strings
    group(direction key, its TcpDirection or None) gives (e.g. the remote peer), when asked.
    The model is linear in a direction's sums, so rows split by codec add up to their type's."""
    rows: dict = {}
    for d in sorted(agg.by_dir):
        file, stream, src, srcport = d
        t = agg.tcp.get(d)
        rev = agg.tcp.get((file, *t.reverse_key)) if t else None
        params = LinkParams.from_tcp(t, rev)
        dir_label = t.endpoints if t else f"{src}:{srcport}"
        types: dict = defaultdict(Sums)
        for (proto, mtype, codec), s in agg.by_dir[d].items():
            types[(proto, mtype, codec if by_codec else None)].merge(s)
        for (proto, mtype, codec), s in sorted(types.items(), key=lambda kv: (*kv[0][:2], kv[0][2] or "")):
            key = (proto, mtype, codec, dir_label if by_direction else None, group(d, t) if group else None)
            row = rows.get(key)
            if row is None:
                row = rows[key] = Row(proto, mtype, key[3], Sums(), codec=codec, group=key[4])
            row.sums.merge(s)
            p2p, tcp, ack = direction_savings(s, params, model)
            row.p2p_header_saved += p2p
            row.tcp_header_saved += tcp
            row.ack_saved += ack
            if explain:
                row.explain.append(explain_inputs(file, stream, dir_label, proto, s, params, model))
    return [rows[k] for k in sorted(rows, key=lambda k: (k[0], k[1], k[2] or "", k[3] or "", k[4] or ()))]


def explain_inputs(file: str, stream: int, dir_label: str, proto: str, s: Sums,
                   params: LinkParams | None, model: str) -> dict:
    """The inputs direction_savings() used for one row (--explain)."""
    e = {"file": file, "stream": stream, "direction": dir_label}
    if model == "bip":
        e.update(batched_items=s.batched_items, header_per_item=PROTOCOL_HEADER.get(proto),
                 ack_per_item=BIP_ACK_BYTES)
        return e
    e.update(delta_bytes=s.delta_bytes, batched_headers=s.batched_headers)
    if params:
        e.update(mss=params.mss, seg_overhead=round(params.seg_overhead, 2),
                 ack_ratio=round(params.ack_ratio, 4), ack_frame_bytes=round(params.ack_bytes, 2),
                 segments_saved=round(s.delta_bytes / params.mss, 3))
    else:
        e["tcp"] = "no TCP data for this direction: segments and ACKs not modelled"
    return e


def totals(rows: list[Row]) -> Row:
    t = Row("ALL", "ALL", None, Sums())
    for r in rows:
        t.sums.merge(r.sums)
        t.p2p_header_saved += r.p2p_header_saved
        t.tcp_header_saved += r.tcp_header_saved
        t.ack_saved += r.ack_saved
    return t


def size_table(agg: Aggregate) -> list[dict]:
    out = []
    for (proto, mtype, idx), (n, raw, payload) in sorted(agg.sizes.items()):
        lo, hi = SIZE_RANGES[idx]
        out.append({"proto": proto, "msg_type": mtype, "range": size_range_label(lo, hi),
                    "messages": n, "avg_raw": round(raw / n), "avg_sent": round(payload / n),
                    "compression_pct": pct(raw - payload, raw)})
    return out


def measured_tcp(agg: Aggregate) -> dict:
    """Connection-level totals straight from the capture (for compare), with the time from the
    first to the last frame of the P2P connections (the seeds' time to fetch)."""
    out = defaultdict(int)
    p2p = {(d[0], d[1]) for d, types in agg.by_dir.items() if types}
    spans = [(t.first_time, t.last_time) for (f, *_), t in agg.tcp.items() if (f, t.stream) in p2p]
    if spans:
        out["duration_ms"] = round(1000 * (max(b for _, b in spans) - min(a for a, _ in spans)))
    for t in agg.tcp.values():
        out["frames"] += t.frames
        out["bytes"] += t.bytes
        out["data_segments"] += t.data_segs
        out["tcp_payload_bytes"] += t.data_bytes
        out["segment_header_bytes"] += t.data_frame_bytes - t.data_bytes
        out["pure_acks"] += t.pure_acks
        out["pure_ack_bytes"] += t.pure_ack_bytes
    return dict(out)


def family_measured(agg: Aggregate) -> dict:
    """Per (proto, family): wire bytes, and the segment-header and ACK bytes of each direction
    attributed to it by its share of that direction's message bytes."""
    out: dict = defaultdict(lambda: defaultdict(float))
    for d, types in agg.by_dir.items():
        t = agg.tcp.get(d)
        rev = agg.tcp.get((d[0], *t.reverse_key)) if t else None
        total = sum(s.wire for s in types.values()) or 1
        for (proto, mtype, _codec), s in types.items():
            f = out[(proto, family(proto, mtype))]
            share = s.wire / total
            f["messages"] += s.messages
            f["items"] += s.items
            f["wire_bytes"] += s.wire
            f["raw_bytes"] += s.raw
            if t:
                f["segment_header_bytes"] += share * (t.data_frame_bytes - t.data_bytes)
            if rev:
                f["ack_bytes"] += share * rev.pure_ack_bytes
    return out


def family_bytes(agg: Aggregate) -> dict:
    """Per (proto, family): the TCP payload bytes its messages took, each direction's bytes no
    message holds (stream negotiations, muxer stream opens, closes and window updates; the
    handshake before a compressed stream) shared among its families by their wire bytes, so the
    families add up to every TCP payload byte of the directions that carry messages."""
    out: dict = defaultdict(float)
    for d, types in agg.by_dir.items():
        t = agg.tcp.get(d)
        wire = sum(s.wire for s in types.values())
        scale = t.data_bytes / wire if t and wire else 1.0
        for (proto, mtype, _codec), s in types.items():
            out[(proto, family(proto, mtype))] += s.wire * scale
    return out


def bandwidth_table(base: Aggregate, comp: Aggregate, base_bytes: tuple | None = None,
                    comp_bytes: tuple | None = None) -> list[dict]:
    """The seed's bandwidth table (TCP payload bytes without and with compression) per protocol
    and family, and for all: the savings measured (BASELINE's bytes less COMPRESSED's) next to
    what the model predicts from COMPRESSED alone (payload saved, and the P2P headers batching
    saved: the bytes of the messages, not the segment headers or ACKs around them).
    base_bytes, comp_bytes: each capture's FrameAttribution result (attribution.py: the bytes
    no message holds go to the direction's next message, in both runs alike, and the
    transport's negotiation is a cost the model counts); without them, family_bytes."""
    bb = base_bytes[0] if base_bytes else family_bytes(base)
    bc = comp_bytes[0] if comp_bytes else family_bytes(comp)
    modelled: dict = defaultdict(float)
    for r in compute_rows(comp):
        modelled[(r.proto, family(r.proto, r.msg_type))] += r.payload_saved + r.p2p_header_saved
    if comp_bytes and comp_bytes[1]:
        modelled[("libp2p", SETUP)] -= comp_bytes[1]
    keys = sorted(set(bb) | set(bc))
    rows = [(k[0], k[1], bb.get(k, 0.0), bc.get(k, 0.0), modelled.get(k, 0.0)) for k in keys]
    rows.append(("ALL", "ALL", sum(bb.values()), sum(bc.values()), sum(modelled.values())))
    out = []
    for proto, fam, b, c, model in rows:
        measured = b - c
        out.append({"proto": proto, "family": fam, "baseline_bytes": round(b), "compressed_bytes": round(c),
                    "measured_saved": round(measured), "measured_saved_pct": pct(measured, b),
                    "modelled_saved": round(model),
                    "model_error_pct": pct(model - measured, measured) if abs(measured) >= 1 else None})
    return out


def not_comparable(base: Aggregate, comp: Aggregate, base_name: str, comp_name: str) -> str | None:
    """Why `compare` cannot read these two captures as one stack's baseline (compression off)
    and compressed run, or None: different protocols, or a COMPRESSED without any compressed
    message (arguments swapped, when the baseline has some)."""
    def protos(agg: Aggregate) -> set:
        return {p for types in agg.by_dir.values() for (p, _, _), s in types.items() if s.messages}

    def compressed(agg: Aggregate) -> int:
        return sum(s.messages for types in agg.by_dir.values() for (_, _, c), s in types.items()
                   if c != "none")
    pb, pc = protos(base), protos(comp)
    if pb != pc:
        return (f"{base_name} carries {', '.join(sorted(pb))}, {comp_name} {', '.join(sorted(pc))}: "
                "compare takes one stack's captures with compression off and on")
    if not compressed(comp):
        return (f"{comp_name} has no compressed message" +
                (f" and {base_name} has {compressed(base)}: are BASELINE and COMPRESSED swapped?"
                 if compressed(base) else ": compare takes one stack's captures with compression off and on"))
    return None


def conformance_rows(agg: Aggregate) -> list[dict]:
    """The conformance section: per capture and p2pc.spec.* check that failed, how often and
    the first frame (Wireshark's filter for the check finds them all)."""
    return [{"file": f, "check": check, "count": n, "first_frame": first}
            for (f, check), (n, first) in sorted(agg.conformance.items())]


def record_layer(proto: str, msg_type: str) -> str:
    """The budget's layer of a message record (docs/savings-model.md, the byte budget): bytes
    p2pc could not decode or decrypt, a libp2p protocol of its own (identify, ping, a protocol
    no dissector names: the record's proto is libp2p), or the messages themselves."""
    if msg_type == "undecoded" or msg_type.endswith("(encrypted)"):
        return "undecoded"
    return "libp2p" if proto == "libp2p" else "messages"


def budget_rows(agg: Aggregate) -> list[dict]:
    """The budget section: per protocol, layer and kind, the bytes the connections' directions
    sent.  The records' wire bytes (the main table's, by layer: their header and payload bytes)
    and each layer's own bytes that no record carries (the B lines) add up to the bytes the
    protocols were handed (docs/savings-model.md)."""
    sums: dict = defaultdict(int)
    for types in agg.by_dir.values():
        for (proto, mtype, _codec), s in types.items():
            layer = record_layer(proto, mtype)
            if layer == "undecoded":
                sums[(proto, layer, mtype)] += s.wire
            else:
                sums[(proto, layer, "header")] += s.header
                sums[(proto, layer, "payload")] += s.payload
    for k, n in agg.budget.items():
        sums[k] += n
    total = sum(sums.values())
    return [{"proto": proto, "layer": layer, "kind": kind, "bytes": n, "pct": pct(n, total)}
            for (proto, layer, kind), n in sorted(sums.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0])) if n]


def gossip_rows(agg: Aggregate) -> list[dict]:
    """The gossip section: per sender address, gossipsub part kind and topic, the entries
    (counted as go-libp2p-pubsub's tracer counts them), the message IDs they carry and their
    protobuf bytes, and of the published messages those delivered to a node that already had
    them, those sent after the receiver's IDONTWANT for them and those IDONTWANT kept from being
    sent; the most bytes first."""
    return [{"src": src, "kind": kind, "topic": topic, "count": n, "message_ids": ids, "bytes": b,
             "duplicates": d, "duplicate_bytes": db, "after_idontwant": a, "after_idontwant_bytes": ab,
             "idontwant_saved": sv, "idontwant_saved_bytes": svb}
            for (src, kind, topic), (n, ids, b, d, db, a, ab, sv, svb)
            in sorted(agg.gossip.items(), key=lambda kv: (-kv[1][2], kv[0]))]
