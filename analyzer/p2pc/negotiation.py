"""How each TCP connection of a diff side was set up (#28): multistream-select's offers and
answers (the security protocol, the muxer, the application protocols of the muxed streams),
early muxer negotiation (Noise extensions, TLS ALPN), whether multistream was lazy, who spoke
first, the gossipsub version and the signing policy of its gossip messages.

All of it from the plugin's display fields, in one tshark pass per side (`-T fields`), with the
side's filter (--a / --b) and tshark's options: not -Y, which selects messages, and the
negotiation's frames carry none.  A connection is reported when it carries a message of the
side (after -Y and the side's filter); connections that are not TCP (QUIC) are not.

Lazy: the proposer sent bytes of the protocol it proposed before the other side's answer (the
echo that accepts it) had arrived: go-multistream's "lazy" client writes its proposal and its
first bytes together.  On the connection (the security protocol, then the muxer) the proposer
is the dialer, and its bytes of the protocol are a frame of its, before the echo's frame, that
has a layer inside the multistream that negotiated it (frame.protocols); on a muxed stream the
proposer is the side that proposed first, and its bytes of the protocol are the stream's data
(yamux Data frames, mplex messages) it sent before the echo's frame beyond its multistream
messages.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .records import ReadResult, read_fields
from .tsharkopts import TsharkOptions
from .wsenv import Wireshark

HEADER = "/multistream/1.0.0"
FIELDS = ["frame.number", "tcp.stream", "ip.src", "ipv6.src", "tcp.srcport", "tcp.flags.syn",
          "tcp.flags.ack", "tcp.len", "frame.protocols", "multistream.message", "multistream.length",
          "multistream.stream", "yamux.type", "yamux.stream", "yamux.length", "mplex.stream",
          "mplex.flag", "mplex.length", "libp2p_noise.stream_muxer", "libp2p_noise.early_muxer",
          "tls.handshake.extensions_alpn_str", "eth2.gossip.message_id", "gossipsub.seqno",
          "p2pc.spec.gossip.strict_no_sign"]
YAMUX_DATA = "0"                # yamux spec, "Message Type": 0x0 Data
MPLEX_DATA = {"1", "2"}         # mplex spec: MessageReceiver, MessageInitiator
TLS_ALPN_LIBP2P = "libp2p"      # libp2p TLS spec: the ALPN every libp2p peer offers

COLUMNS = ["side", "connection", "dialer", "listener", "first_speaker", "security_offered", "security",
           "muxer_offered", "muxer", "early_muxer", "protocols_offered", "protocols_accepted", "lazy",
           "lazy_streams", "gossipsub", "signing"]
# The columns compared between A and B (the others name the connection, or count what the
# workload decides), with the words of their difference.
COMPARED = (("first_speaker", "who spoke first"), ("security_offered", "security offered"),
            ("security", "security"), ("muxer_offered", "muxer offered"), ("muxer", "muxer"),
            ("early_muxer", "early muxer negotiation"), ("protocols_offered", "protocols offered"),
            ("protocols_accepted", "protocols accepted"), ("lazy", "lazy multistream"),
            ("gossipsub", "gossipsub version"), ("signing", "signing"))
# The columns that are sets of protocol IDs (space-separated).
SETS = {"protocols_offered", "protocols_accepted"}


def _uvarint_size(n: int) -> int:
    size = 1
    while n >= 0x80:
        n, size = n >> 7, size + 1
    return size


@dataclass
class Negotiation:
    """One multistream-select negotiation: what the proposer offered, what the other side echoed
    (accepted), and in which frames."""
    proposer: tuple | None = None
    offered: list = field(default_factory=list)
    accepted: str | None = None
    echo_frame: int | None = None

    def hear(self, frame: int, src: tuple, text: str) -> None:
        if text == HEADER or not text.startswith("/") or self.accepted:
            return
        if self.proposer is None:
            self.proposer = src
        if src == self.proposer:
            if text not in self.offered:
                self.offered.append(text)
        elif text in self.offered:
            self.accepted, self.echo_frame = text, frame


@dataclass
class Connection:
    stream: int
    syn: tuple | None = None                    # (addr, port) of the SYN without ACK
    first_payload: tuple | None = None
    levels: list = field(default_factory=lambda: [Negotiation(), Negotiation()])   # security, muxer
    frames: list = field(default_factory=list)  # (frame, src, frame.protocols) with payload
    # A muxed stream is its id (yamux), or its id and whether the dialer opened it (mplex: each
    # side numbers the streams it opens, so both may have a stream 3).
    streams: dict = field(default_factory=lambda: defaultdict(Negotiation))
    ms_bytes: dict = field(default_factory=lambda: defaultdict(list))   # (src, stream) -> [(frame, n)]
    data: dict = field(default_factory=lambda: defaultdict(list))       # (src, stream) -> [(frame, n)]
    mplex_key: dict = field(default_factory=dict)                       # (src, id) -> its latest stream
    noise_offers: dict = field(default_factory=dict)                    # src -> [muxer]
    noise_agreed: str | None = None
    alpn: dict = field(default_factory=dict)                            # src -> [ALPN]
    gossip: int = 0
    signed: int = 0

    @property
    def dialer(self) -> tuple | None:
        return self.syn or self.levels[0].proposer

    def add(self, f: dict) -> None:
        frame = int(f["frame.number"][0])
        src = ((f["ip.src"] or f["ipv6.src"])[0], int(f["tcp.srcport"][0]))
        if f["tcp.flags.syn"][:1] == ["1"] and f["tcp.flags.ack"][:1] == ["0"]:
            self.syn = src
        if f["tcp.len"] and int(f["tcp.len"][0]):
            self.first_payload = self.first_payload or src
            self.frames.append((frame, src, f["frame.protocols"][0] if f["frame.protocols"] else ""))
        # mplex: an even flag comes from the stream's opener, an odd one from the other side
        # (mplex spec); the dialer is known by now (its SYN, or its first proposal).
        for sid, flag, n in zip(f["mplex.stream"], f["mplex.flag"], f["mplex.length"]):
            key = self.mplex_key[(src, sid)] = (int(sid), (src == self.dialer) == (int(flag) % 2 == 0))
            if flag in MPLEX_DATA:
                self.data[(src, key)].append((frame, int(n)))
        msgs, lengths, sids = f["multistream.message"], f["multistream.length"], f["multistream.stream"]
        # Connection-level messages are dissected before the muxer's, whose streams they carry.
        on_conn = len(msgs) - len(sids)
        for i, (text, n) in enumerate(zip(msgs, lengths)):
            if i < on_conn:
                level = next((lv for lv in self.levels if not lv.accepted), None)
                if level is not None:
                    level.hear(frame, src, text)
            else:
                sid = sids[i - on_conn]
                sid = self.mplex_key.get((src, sid), int(sid))
                self.streams[sid].hear(frame, src, text)
                self.ms_bytes[(src, sid)].append((frame, int(n) + _uvarint_size(int(n))))
        for kind, sid, n in zip(f["yamux.type"], f["yamux.stream"], f["yamux.length"]):
            if kind == YAMUX_DATA:
                self.data[(src, int(sid))].append((frame, int(n)))
        if f["libp2p_noise.stream_muxer"]:
            self.noise_offers.setdefault(src, f["libp2p_noise.stream_muxer"])
        if f["libp2p_noise.early_muxer"]:
            self.noise_agreed = f["libp2p_noise.early_muxer"][0]
        if f["tls.handshake.extensions_alpn_str"]:
            self.alpn.setdefault(src, f["tls.handshake.extensions_alpn_str"])
        self.gossip += len(f["eth2.gossip.message_id"])
        self.signed += max(len(f["gossipsub.seqno"]), len(f["p2pc.spec.gossip.strict_no_sign"]))

    def _lazy_level(self, k: int) -> bool:
        """Whether the dialer sent bytes of the k-th connection-level protocol (1: security,
        2: muxer) before its echo: a frame with a layer inside the k-th multistream."""
        lv = self.levels[k - 1]
        if lv.accepted is None:
            return False
        for frame, src, protos in self.frames:
            if frame >= lv.echo_frame:
                break
            layers = protos.split(":")
            at = [i for i, p in enumerate(layers) if p == "multistream"]
            if src == lv.proposer and len(at) >= k and at[k - 1] + 1 < len(layers):
                return True
        return False

    def _lazy_stream(self, sid, ng: Negotiation) -> bool:
        key = (ng.proposer, sid)
        sent = sum(n for frame, n in self.data[key] if frame < ng.echo_frame)
        return sent > sum(n for frame, n in self.ms_bytes[key] if frame < ng.echo_frame)

    def row(self, label: str) -> dict:
        dialer = self.dialer
        listener = next((src for _, src, _ in self.frames if src != dialer), None)
        sec, mux = self.levels
        early, muxer_offered = "", mux.offered
        if self.noise_agreed:
            early = f"{self.noise_agreed} (noise)"
            muxer_offered = muxer_offered or self.noise_offers.get(dialer, [])
        tls_mux = [p for p in self.alpn.get(listener, []) if p != TLS_ALPN_LIBP2P]
        if tls_mux:
            early = f"{tls_mux[0]} (tls alpn)"
            muxer_offered = muxer_offered or [p for p in self.alpn.get(dialer, []) if p != TLS_ALPN_LIBP2P]
        lazy = [name for k, name in ((1, "security"), (2, "muxer")) if self._lazy_level(k)]
        counts = []
        for role, who in (("dialer", dialer), ("listener", listener)):
            mine = [(sid, ng) for sid, ng in self.streams.items() if ng.accepted and ng.proposer == who]
            n = sum(self._lazy_stream(sid, ng) for sid, ng in mine)
            if n:
                lazy.append(f"{role}'s streams")
            if mine:
                counts.append(f"{role} {n}/{len(mine)}")
        accepted = sorted({ng.accepted for ng in self.streams.values() if ng.accepted})
        signing = "" if not self.gossip else "StrictNoSign" if not self.signed else \
            "StrictSign" if self.signed >= self.gossip else "mixed"
        return {"side": label, "connection": self.stream, "dialer": _endpoint(dialer),
                "listener": _endpoint(listener),
                "first_speaker": "" if dialer is None or self.first_payload is None else
                                 "dialer" if self.first_payload == dialer else "listener",
                "security_offered": " ".join(sec.offered), "security": sec.accepted or "",
                "muxer_offered": " ".join(muxer_offered), "muxer": mux.accepted or self.noise_agreed or
                (tls_mux[0] if tls_mux else ""), "early_muxer": early,
                "protocols_offered": " ".join(sorted({p for ng in self.streams.values() for p in ng.offered})),
                "protocols_accepted": " ".join(accepted), "lazy": ", ".join(lazy),
                "lazy_streams": ", ".join(counts),
                "gossipsub": " ".join(p for p in accepted if p.startswith("/meshsub/")), "signing": signing}


def _endpoint(src: tuple | None) -> str:
    return f"{src[0]}:{src[1]}" if src else ""


def read_negotiation(ws: Wireshark, capture: str, label: str, side_filter: str | None,
                     opts: TsharkOptions, connections: set[int]) -> list[dict]:
    """The negotiation row of each of `connections` (tcp.stream) of a side's capture."""
    if not connections:
        return []
    conns: dict[int, Connection] = {}
    only = f"tcp.stream in {{{' '.join(map(str, sorted(connections)))}}}"
    flt = " && ".join(f"({f})" for f in (side_filter, only) if f)
    for cols in read_fields(ws, capture, FIELDS, TsharkOptions(flt, opts.args, opts.keylog), ReadResult()):
        f = dict(zip(FIELDS, cols))
        if f["tcp.stream"]:
            n = int(f["tcp.stream"][0])
            conns.setdefault(n, Connection(n)).add(f)
    return [conns[n].row(label) for n in sorted(conns)]


def differences(rows: list[dict]) -> list[dict]:
    """A negotiation difference per compared column whose values (over the side's connections)
    are not the same in A and B; of a set of protocol IDs, the IDs one side has and the other not."""
    out = []
    for col, words in COMPARED:
        values = {s: Counter(r[col] for r in rows if r["side"] == s) for s in ("A", "B")}
        if values["A"] == values["B"]:
            continue
        ids = {s: {p for v in values[s] for p in v.split()} for s in ("A", "B")}
        if col in SETS and ids["A"] != ids["B"]:
            what = "; ".join(f"{s} only: " + (" ".join(sorted(ids[s] - ids[o])) or "(none)")
                             for s, o in (("A", "B"), ("B", "A")))
        else:
            what = "; ".join(f"{s}: " + ", ".join(v or "(none)" for v in sorted(values[s])) for s in ("A", "B"))
        out.append({"difference": f"{words} differs", "messages": None, "types": what})
    return out
