"""`p2pc live --metrics HOST:PORT`: the running totals as Prometheus metrics (docs/metrics.md).

Every counter is labelled proto, msg_type, codec and direction (in, out or transit, from the
interface's own addresses). Message counters are counted per record; the saved bytes come from
the savings model (model.compute_rows, per codec) over the records so far, computed at each
scrape by a collector.
"""
from __future__ import annotations

import json
import subprocess

from prometheus_client import CollectorRegistry, Counter, start_http_server
from prometheus_client.core import CounterMetricFamily

from .live import LiveTotals
from .model import compute_rows
from .records import Message

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


class SavedCollector:
    """p2pc_saved_bytes_total{kind}, p2pc_undecoded_bytes_total and
    p2pc_capture_dropped_packets_total, computed from the totals at each scrape."""

    def __init__(self, totals: LiveTotals, local: set[str], model: str):
        self.totals, self.local, self.model = totals, local, model

    def collect(self):
        saved = CounterMetricFamily("p2pc_saved_bytes", "Bytes saved, by the savings model",
                                    labels=(*LABELS, "kind"))
        undecoded = CounterMetricFamily("p2pc_undecoded_bytes",
                                        "Bytes of P2P connections not decoded (state lost at a session reset, "
                                        "bytes after a hole in the capture, bytes that do not decode)",
                                        labels=("proto",))
        dropped = CounterMetricFamily("p2pc_capture_dropped_packets",
                                      "Packets the capture dropped (dumpcap's own counter, which "
                                      "dumpcap gives when the capture stops)")
        with self.totals.lock:
            rows = compute_rows(self.totals.agg, model=self.model, by_direction=True, by_codec=True)
            und = self.totals.undecoded()
            for proto in set(self.totals.p2p_dirs.values()):     # 0 for every protocol seen
                und.setdefault(proto, 0)
            drops = self.totals.dropped
        sums: dict = {}
        for r in rows:
            if r.msg_type == "undecoded":   # the plugin's records of bytes it could not decode
                und[r.proto] = und.get(r.proto, 0) + r.sums.wire
            src, dst = r.direction.split(">") if ">" in r.direction else (r.direction, "")
            d = direction_of(self.local, src.rsplit(":", 1)[0], dst.rsplit(":", 1)[0])
            acc = sums.setdefault((r.proto, r.msg_type, r.codec, d), [0.0, 0.0, 0.0])
            acc[0] += r.payload_saved
            acc[1] += r.header_saved
            acc[2] += r.ack_saved
        for labels, (payload, header, ack) in sorted(sums.items()):
            for kind, v in (("payload", payload), ("header", header), ("ack", ack)):
                saved.add_metric([*labels, kind], max(0.0, v))
        for proto, n in sorted(und.items()):
            undecoded.add_metric([proto], n)
        dropped.add_metric([], drops)
        yield saved
        yield undecoded
        yield dropped


class Metrics:
    def __init__(self, listen: str, totals: LiveTotals, iface: str, model: str):
        host, _, port = listen.rpartition(":")
        self.registry = CollectorRegistry()
        self.local = interface_addresses(iface)
        mk = lambda name, doc: Counter(name, doc, LABELS, registry=self.registry)
        self.messages = mk("p2pc_messages", "P2P messages decoded")
        self.wire = mk("p2pc_wire_bytes", "Bytes of the messages on the wire (header and payload as sent)")
        self.payload = mk("p2pc_payload_bytes", "Payload bytes as sent")
        self.raw = mk("p2pc_raw_bytes", "Payload bytes uncompressed")
        self.registry.register(SavedCollector(totals, self.local, model))
        self.server, self.thread = start_http_server(int(port), addr=host.strip("[]") or "0.0.0.0",
                                                     registry=self.registry)
        totals.on_message = self.add

    def add(self, m: Message) -> None:
        labels = (m.proto, m.msg_type, m.codec, direction_of(self.local, m.src, m.dst))
        self.messages.labels(*labels).inc()
        self.wire.labels(*labels).inc(m.wire_len)
        self.payload.labels(*labels).inc(m.payload_len)
        self.raw.labels(*labels).inc(m.raw_len)

    def close(self) -> None:
        self.server.shutdown()
