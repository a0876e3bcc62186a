"""`p2pc live --metrics HOST:PORT`: the running totals as Prometheus metrics (docs/metrics.md).

Every series is labelled proto, msg_type, codec and direction (in, out or transit, from the
interface's own addresses). Message counters are counted per record; the saved bytes are a gauge,
the savings model's estimate (model.direction_savings, per connection direction, message type and
codec) over the records so far, set again as each record comes: the header and ACK parts of a
direction depend on all of its segments and ACKs, so the estimate can go down as well as up.
"""
from __future__ import annotations

import json
import socket
import subprocess
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, make_wsgi_app

from .model import LinkParams, direction_savings, record_layer
from .records import BudgetPart, Message, TcpDirection

LABELS = ("proto", "msg_type", "codec", "direction")


def interface_addresses(iface: str) -> set[str]:
    """The interface's own IPv4/IPv6 addresses (`ip -j addr`): what tells in from out."""
    res = subprocess.run(["ip", "-j", "addr", "show", "dev", iface], capture_output=True, text=True)
    try:
        return {a["local"] for link in json.loads(res.stdout or "[]") for a in link.get("addr_info", [])}
    except (ValueError, KeyError, TypeError):
        return set()


def direction_of(local: set[str], src: str, dst: str) -> str:
    return "out" if src in local else "in" if dst in local else "transit"


# The reasons of p2pc_undecoded_bytes_total: the plugin's (p2pc.undecoded_reason), "reset" also
# for what live estimates a reset cut, and "undecodable" for records with no reason.
UNDECODED_REASONS = ("evicted", "reset", "bound", "undecodable")


class Highest:
    """The children of a prometheus_client Counter, each raised to a figure that is an estimate
    (it may dip as more of its connection is seen): by what the figure grew past the highest
    value it had, so the counter never goes down."""

    def __init__(self, counter: Counter):
        self.counter, self.shown = counter, {}

    def raise_to(self, key, labels: tuple, value: float) -> None:
        child = self.counter.labels(*labels)        # 0 from the first figure on
        grown = value - self.shown.get(key, 0.0)
        if grown > 0:
            child.inc(grown)
            self.shown[key] = value


class Estimate:
    """The children of a prometheus_client Gauge, each the sum of figures (one per connection
    direction) that are set again as they change: by what the figure changed."""

    def __init__(self, gauge: Gauge):
        self.gauge, self.shown = gauge, {}

    def set_to(self, key, labels: tuple, value: float) -> None:
        child = self.gauge.labels(*labels)          # 0 from the first figure on
        change = value - self.shown.get(key, 0.0)
        if change:
            child.inc(change)
            self.shown[key] = value


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args) -> None:   # a scrape is no event for live's output
        pass


def serve(listen: tuple[str, int], registry: CollectorRegistry) -> WSGIServer:
    """prometheus_client's own WSGI app on a threaded server, as its start_http_server makes;
    here because that one returns the server (to shut it down) only from 0.17 on, and Debian 12
    packages 0.16."""
    family = socket.getaddrinfo(listen[0], listen[1], type=socket.SOCK_STREAM)[0][0]
    server_class = type("Server", (_Server,), {"address_family": family})
    httpd = make_server(listen[0], listen[1], make_wsgi_app(registry), server_class, handler_class=_Quiet)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


class Metrics:
    """The counters of docs/metrics.md, each a prometheus_client Counter that the records
    raise as they come (`totals`, live's LiveTotals, calls them under its lock: live.py imports
    this module, not this module live.py)."""

    def __init__(self, listen: tuple[str, int], totals, iface: str, model: str):
        self.totals, self.model = totals, model
        self.registry = CollectorRegistry()
        self.local = interface_addresses(iface)
        mk = lambda name, doc, labels=LABELS: Counter(name, doc, labels, registry=self.registry)  # noqa: E731
        self.messages = mk("p2pc_messages", "P2P messages decoded")
        self.wire = mk("p2pc_wire_bytes", "Bytes of the messages on the wire (header and payload as sent)")
        self.payload = mk("p2pc_payload_bytes", "Payload bytes as sent")
        self.raw = mk("p2pc_raw_bytes", "Payload bytes uncompressed")
        self.saved = Estimate(Gauge("p2pc_saved_bytes", "Bytes saved, by the savings model over the "
                                    "messages so far (an estimate: it can go down)", (*LABELS, "kind"),
                                    registry=self.registry))
        self.undecoded = mk("p2pc_undecoded_bytes",
                            "Bytes of P2P connections not decoded, by reason: evicted (their state "
                            "did not fit the live state budget at a session reset), reset (a session "
                            "reset dropped state that is not p2pc's: TLS, QUIC, a decompressor, or "
                            "--state-mib 0), bound (a decompression bound), undecodable (a hole in "
                            "the capture, bytes that do not decode)", ("proto", "reason"))
        self.cut = Highest(self.undecoded)
        self.layers = mk("p2pc_bytes", "Bytes of the P2P connections' frames, by layer (docs/savings-model.md, "
                         "the byte budget): messages, libp2p (identify, ping, ...), undecoded (their "
                         "records' wire bytes); negotiation, security, muxer, gossip (each layer's own "
                         "bytes no message carries); link_ip, tcp_header, udp_header, ack, retransmission "
                         "(the transport's bytes of each TCP frame or QUIC datagram)", ("proto", "layer"))
        self.layer_own = Highest(self.layers)
        self.layer_net: dict = {}
        self.drops = mk("p2pc_capture_dropped_packets", "Packets the capture dropped (dumpcap's own "
                        "counter, which dumpcap gives when the capture stops)", ())
        self.server = serve(listen, self.registry)
        totals.metrics = self

    def message(self, m: Message) -> None:
        labels = (m.proto, m.msg_type, m.codec, direction_of(self.local, m.src, m.dst))
        self.messages.labels(*labels).inc()
        self.wire.labels(*labels).inc(m.wire_len)
        self.payload.labels(*labels).inc(m.payload_len)
        self.raw.labels(*labels).inc(m.raw_len)
        for reason in UNDECODED_REASONS:     # 0 for every protocol seen
            self.undecoded.labels(m.proto, reason)
        if m.msg_type == "undecoded":   # the plugin's records of bytes it could not decode
            self.undecoded.labels(m.proto, m.reason or "undecodable").inc(m.wire_len)
        self.layers.labels(m.proto, record_layer(m.proto, m.msg_type)).inc(m.wire_len)
        self._savings((self.totals.source, *m.key), m.dst)

    def budget(self, b: BudgetPart) -> None:
        """A layer's own bytes: a B line may be negative (a message took bytes an earlier one
        reported), the counter follows the highest sum."""
        key = (b.proto, b.layer)
        self.layer_net[key] = self.layer_net.get(key, 0) + b.bytes
        self.layer_own.raise_to(key, key, self.layer_net[key])

    def tcp(self, t: TcpDirection) -> None:
        """A direction's segments changed: its savings, and its reverse's (the ACKs it sends)."""
        self._savings((self.totals.source, *t.key), t.dst)
        self._savings((self.totals.source, *t.reverse_key), t.src)

    def settled(self) -> None:
        """At a session reset, and at the end: the undecoded bytes of the directions a reset cut
        (LiveTotals.undecoded_of). Only then are they known: the session's tails are printed
        before its reset, while a running session holds bytes it decodes later."""
        for key, (proto, _) in self.totals.p2p_dirs.items():
            self.cut.raise_to(key, (proto, "reset"), self.totals.undecoded_of(key))

    def ended(self, dropped: int) -> None:
        self.settled()
        self.drops.inc(dropped)

    def _savings(self, d: tuple, dst: str) -> None:
        """The model's savings of direction d's messages (model.compute_rows, per codec)."""
        agg = self.totals.agg
        types = agg.by_dir.get(d)
        if not types:
            return
        t = agg.tcp.get(d)
        params = LinkParams.from_tcp(t, agg.tcp.get((d[0], *t.reverse_key)) if t else None)
        direction = direction_of(self.local, d[2], dst)
        for (proto, mtype, codec), s in types.items():
            p2p, tcp, ack = direction_savings(s, params, self.model)
            for kind, v in (("payload", s.raw - s.payload), ("header", p2p + tcp), ("ack", ack)):
                self.saved.set_to((d, proto, mtype, codec, kind), (proto, mtype, codec, direction, kind), v)

    def close(self) -> None:
        self.server.shutdown()
