"""`p2pc diff A B`: two implementations' messages side by side, to debug interop (issue #28).

A side is a capture, optionally narrowed by a display filter (`--a`, `--b`): two captures of
one workload, or two peers or connections of one capture.  Each side's messages come from one
tshark pass running two taps: the records tap (`-z p2pc,records`: lengths, codec, frame time)
and the payloads tap (`-z p2pc,payloads`: the uncompressed payload, hashed here and not kept).  Messages are aligned by
protocol, message type and the SHA-256 of their uncompressed payload, in order of appearance
when a side sends the same content more than once; a message without a payload (undecoded
bytes) aligns by order within its type.  What is left over on either side is unmatched.

For each matched pair the report puts A's and B's wire, payload (as sent: compressed), raw and
header bytes, codec, muxer frames, Snappy chunks and muxed stream id next to each other, the payload ratio B/A (the two encoders' output on
the same content), and, for req/resp methods (message types `<method> request` / `… response`,
eth2), the time from the request to its first and last response chunk on that connection.

For each TCP connection that carries a side's messages, the negotiation section reports how it
was set up (negotiation.py: offers and answers, muxer, lazy multistream, early muxer, who spoke
first, gossipsub version, signing), from a second tshark pass per side over the plugin's fields.
"""
from __future__ import annotations

import hashlib
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, replace

from . import negotiation
from .errors import NoP2PTraffic
from .records import Message, ReadResult, Violation, open_wireshark, read_records, start_capture
from .report import SCHEMA
from .tsharkopts import TsharkOptions
from .wsenv import Wireshark

# The fields compared in a matched pair (the payload's content is equal by construction).
COMPARED = (("codec", "codec"), ("wire_len", "wire"), ("payload_len", "payload"),
            ("raw_len", "raw"), ("header_len", "header"))

# How the framing cut a matched pair's message up, compared per message (not summed per type:
# a count of frames means something only next to its message's size).
FRAMING = (("mux_frames", "frames"), ("snappy_chunks", "chunks"))


@dataclass(frozen=True)
class Side:
    label: str                      # "A" or "B"
    capture: str
    side_filter: str | None         # --a / --b

    def options(self, opts: TsharkOptions) -> TsharkOptions:
        """tshark's options for this side: -Y and the side's filter, both."""
        both = [f"({f})" for f in (opts.display_filter, self.side_filter) if f]
        return replace(opts, display_filter=" && ".join(both) or None)

    @property
    def name(self) -> str:
        return self.capture + (f" [{self.side_filter}]" if self.side_filter else "")


@dataclass(frozen=True)
class Sent:
    """A message as one side sent it, with the SHA-256 of its uncompressed payload (None when
    the plugin has none: undecoded bytes)."""
    m: Message
    sha256: str | None

    @property
    def key(self) -> tuple:
        return (self.m.proto, self.m.msg_type, self.sha256)


def read_side(ws: Wireshark, side: Side, opts: TsharkOptions) -> tuple[list[Sent], ReadResult, list[Violation]]:
    """The side's messages in record order, each with its payload's digest, and the conformance
    checks that failed in its frames (those its filters match).  The payloads tap prints a P line for the records that
    have a payload, in the records' order: each is the next record of its frame and type.  Its
    length is not the record's raw_len on a compressed stream, whose raw_len is the message's
    share of the decompressed stream, framing and control bytes included (libp2p-compression.md,
    rule 4), so a P line is not matched by length."""
    side_opts = side.options(opts)
    msgs: list[Message] = []
    hits: list[Violation] = []
    payloads: list[tuple] = []
    res = read_records(start_capture(ws, side.capture, ["-z", side_opts.tap("payloads")], side_opts),
                       side.capture, msgs.append, lambda t: None, on_violation=hits.append,
                       on_payload=lambda p: payloads.append(
                           (p.frame, p.proto, p.msg_type, hashlib.sha256(p.raw).hexdigest())))
    digests = iter(payloads)
    nxt = next(digests, None)
    out = []
    for m in msgs:
        if nxt is not None and nxt[:3] == (m.frame, m.proto, m.msg_type):
            out.append(Sent(m, nxt[3]))
            nxt = next(digests, None)
        else:
            out.append(Sent(m, None))
    if not out:
        raise NoP2PTraffic(f"no P2P messages in side {side.label}: {side.name}")
    return out, res, hits


def align(a: list[Sent], b: list[Sent]) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Matched (index in a, index in b) pairs, and the unmatched indexes of each side."""
    waiting: dict = defaultdict(deque)
    for j, s in enumerate(b):
        waiting[s.key].append(j)
    pairs, only_a = [], []
    for i, s in enumerate(a):
        if waiting[s.key]:
            pairs.append((i, waiting[s.key].popleft()))
        else:
            only_a.append(i)
    matched_b = {j for _, j in pairs}
    return pairs, only_a, [j for j in range(len(b)) if j not in matched_b]


def response_times(msgs: list[Sent]) -> dict[int, list]:
    """Per request (its index): [ms to the first response chunk, ms to the last], from frame
    times.  A response belongs to the latest request of its method on its connection, from the
    other end; a request of the same method on the same connection ends the previous one's."""
    latest: dict = {}
    times: dict = {}
    for i, s in enumerate(msgs):
        m = s.m
        method, _, kind = m.msg_type.rpartition(" ")
        if kind == "request":
            latest[(m.stream, m.src, m.srcport, method)] = i
            times[i] = [None, None]
        elif kind == "response":
            req = latest.get((m.stream, m.dst, m.dstport, method))
            if req is not None:
                ms = round(1000 * (m.time - msgs[req].m.time), 3)
                t = times[req]
                t[0] = ms if t[0] is None else t[0]
                t[1] = ms
    return times


def _ratio(a: int, b: int) -> float | None:
    return round(b / a, 4) if a else None


def _message_row(x: Sent, y: Sent, tx: list, ty: list) -> dict:
    row = {"proto": x.m.proto, "msg_type": x.m.msg_type, "a_frame": x.m.frame, "b_frame": y.m.frame}
    for field, col in COMPARED:
        row[f"a_{col}"], row[f"b_{col}"] = getattr(x.m, field), getattr(y.m, field)
    for field, col in FRAMING:
        row[f"a_{col}"], row[f"b_{col}"] = getattr(x.m, field), getattr(y.m, field)
    # The muxed streams' ids, shown and not compared: each side numbers its own streams.
    row["a_stream"], row["b_stream"] = x.m.mux_stream, y.m.mux_stream
    row["payload_ratio"] = _ratio(x.m.payload_len, y.m.payload_len)
    row["a_first_ms"], row["b_first_ms"], row["a_last_ms"], row["b_last_ms"] = tx[0], ty[0], tx[1], ty[1]
    row["differs"] = " ".join(col for field, col in COMPARED + FRAMING if getattr(x.m, field) != getattr(y.m, field))
    row["sha256"] = x.sha256
    return row


def _type_rows(a: list[Sent], b: list[Sent], pairs, only_a, only_b) -> tuple[list[dict], dict]:
    types: dict = {}

    def row(proto: str, mtype: str) -> dict:
        return types.setdefault((proto, mtype), {
            "proto": proto, "msg_type": mtype, "matched": 0, "only_a": 0, "only_b": 0,
            "a_codec": "", "b_codec": "", "a_wire": 0, "b_wire": 0, "a_payload": 0, "b_payload": 0,
            "payload_ratio": None, "a_raw": 0, "b_raw": 0, "a_header": 0, "b_header": 0})
    codecs: dict = defaultdict(lambda: ({}, {}))
    for i, j in pairs:
        x, y = a[i].m, b[j].m
        r = row(x.proto, x.msg_type)
        r["matched"] += 1
        for field, col in COMPARED[1:]:
            r[f"a_{col}"] += getattr(x, field)
            r[f"b_{col}"] += getattr(y, field)
        ca, cb = codecs[(x.proto, x.msg_type)]
        ca[x.codec] = cb[y.codec] = None          # dicts as ordered sets
    for i in only_a:
        row(a[i].m.proto, a[i].m.msg_type)["only_a"] += 1
    for j in only_b:
        row(b[j].m.proto, b[j].m.msg_type)["only_b"] += 1
    rows = [types[k] for k in sorted(types)]
    for r in rows:
        ca, cb = codecs[(r["proto"], r["msg_type"])]
        r["a_codec"], r["b_codec"] = ",".join(ca), ",".join(cb)
        r["payload_ratio"] = _ratio(r["a_payload"], r["b_payload"])
    totals = {"proto": "ALL", "msg_type": "ALL",
              **{k: sum(r[k] for r in rows) for k in rows[0] if k not in
                 ("proto", "msg_type", "a_codec", "b_codec", "payload_ratio")}}
    totals["payload_ratio"] = _ratio(totals["a_payload"], totals["b_payload"])
    return rows, totals


def _unmatched_row(label: str, s: Sent) -> dict:
    m = s.m
    return {"side": label, "proto": m.proto, "msg_type": m.msg_type, "frame": m.frame,
            "src": f"{m.src}:{m.srcport}", "codec": m.codec, "wire": m.wire_len,
            "payload": m.payload_len, "raw": m.raw_len, "header": m.header_len, "sha256": s.sha256}


def _differences(messages: list[dict], only_a: list[dict], only_b: list[dict]) -> list[dict]:
    """One row per kind of difference: how many messages, of which types."""
    out = []
    for what, rows in (("only in A", only_a), ("only in B", only_b)):
        if rows:
            n = Counter(f"{r['proto']} {r['msg_type']}" for r in rows)
            out.append({"difference": what, "messages": len(rows),
                        "types": ", ".join(f"{t} ({c})" for t, c in sorted(n.items()))})
    for _, col in COMPARED + FRAMING:
        rows = [r for r in messages if col in r["differs"].split()]
        if rows:
            n = Counter(f"{r['proto']} {r['msg_type']}" for r in rows)
            out.append({"difference": f"{col} differs", "messages": len(rows),
                        "types": ", ".join(f"{t} ({c})" for t, c in sorted(n.items()))})
    return out


def _not_derived(a: list[Sent], b: list[Sent], ta: dict, tb: dict) -> list[dict]:
    """The response types whose time no request record gives, and the negotiation of
    connections that are not TCP."""
    rows = []
    for label, msgs in (("A", a), ("B", b)):
        if any(s.m.stream < 0 for s in msgs):
            rows.append({"figure": f"{label}: negotiation of its connections that are not TCP (QUIC)",
                         "why": "the negotiation section covers TCP connections (tcp.stream) only"})
    for label, msgs, times in (("A", a, ta), ("B", b, tb)):
        answered = {msgs[i].m.msg_type.rpartition(" ")[0] for i, t in times.items() if t[0] is not None}
        orphans = sorted({s.m.msg_type for s in msgs if s.m.msg_type.endswith(" response")
                          and s.m.msg_type.rpartition(" ")[0] not in answered})
        for t in orphans:
            rows.append({"figure": f"{label}: time to {t}",
                         "why": "no request record of it on the side's connections (an empty "
                                "request has no record; a side filter may leave out the requests)"})
    return rows


def _conformance(va: list[Violation], vb: list[Violation]) -> list[dict]:
    """Per p2pc.spec.* check that failed on either side: A's and B's count and first frame."""
    rows: dict = {}
    for label, hits in (("a", va), ("b", vb)):
        for v in hits:
            r = rows.setdefault(v.check, {"check": v.check, "a_count": 0, "a_first_frame": None,
                                          "b_count": 0, "b_first_frame": None})
            r[f"{label}_count"] += 1
            first = r[f"{label}_first_frame"]
            r[f"{label}_first_frame"] = v.frame if first is None else min(first, v.frame)
    return [rows[k] for k in sorted(rows)]


def diff_report(a: list[Sent], b: list[Sent], sides: tuple[Side, Side], warnings: list[str],
                va: list[Violation] = (), vb: list[Violation] = (), negotiated: list[dict] = ()) -> dict:
    pairs, only_a, only_b = align(a, b)
    ta, tb = response_times(a), response_times(b)
    none = [None, None]
    messages = [_message_row(a[i], b[j], ta.get(i, none), tb.get(j, none)) for i, j in pairs]
    rows, totals = _type_rows(a, b, pairs, only_a, only_b)
    unmatched = [_unmatched_row("A", a[i]) for i in only_a] + [_unmatched_row("B", b[j]) for j in only_b]
    differences = _differences(messages, unmatched[:len(only_a)], unmatched[len(only_a):]) + \
        negotiation.differences(list(negotiated))
    equivalent = not differences
    sizes: dict = defaultdict(list)
    for r in messages:
        sizes[f"{r['proto']} {r['msg_type']}"].append([r["a_payload"], r["b_payload"]])
    return {
        "schema": SCHEMA, "command": "diff",
        "title": "p2pc diff: A and B " + ("are equivalent" if equivalent else "differ"),
        "files": [s.name for s in sides], "warnings": warnings,
        "sides": {s.label.lower(): {"capture": s.capture, "filter": s.side_filter} for s in sides},
        "equivalent": equivalent,
        "columns": list(rows[0]), "rows": rows, "totals": totals,
        "sections": [
            {"name": "differences", "title": "Differences", "columns": ["difference", "messages", "types"],
             "rows": differences},
            {"name": "messages", "title": "Matched messages (A | B)", "columns": list(messages[0]) if messages
             else ["proto", "msg_type"], "rows": messages},
            {"name": "unmatched", "title": "Unmatched messages",
             "columns": ["side", "proto", "msg_type", "frame", "src", "codec", "wire", "payload", "raw",
                         "header", "sha256"], "rows": unmatched},
            {"name": "not_derived", "title": "Not derived from the records", "columns": ["figure", "why"],
             "rows": _not_derived(a, b, ta, tb)},
            {"name": "conformance", "title": "Conformance checks that failed (p2pc.spec.*)",
             "columns": ["check", "a_count", "a_first_frame", "b_count", "b_first_frame"],
             "rows": _conformance(va, vb)},
            {"name": "negotiation", "title": "Negotiation of each connection",
             "columns": negotiation.COLUMNS, "rows": list(negotiated)},
        ],
        "series": {"compressed_size_ab": dict(sizes)},
    }


def run_diff(plugin: str | None, sides: tuple[Side, Side], opts: TsharkOptions) -> dict:
    """`p2pc diff`: read both sides with the plugin and build the diff report."""
    ws = open_wireshark(plugin)
    try:
        read = [read_side(ws, s, opts) for s in sides]
        negotiated = [row for s, (msgs, _, _) in zip(sides, read) for row in negotiation.read_negotiation(
            ws, s.capture, s.label, s.side_filter, opts, {x.m.stream for x in msgs if x.m.stream >= 0})]
    finally:
        ws.cleanup()
    warnings = [res.warning for _, res, _ in read if res.truncated]
    return diff_report(read[0][0], read[1][0], sides, warnings, read[0][2], read[1][2], negotiated)
