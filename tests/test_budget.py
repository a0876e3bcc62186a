"""The byte budget (docs/savings-model.md): per connection direction, the message records' wire
bytes and each layer's own bytes (the B lines, plugin/core/budget.h) add up to the stream bytes
the libp2p engine was handed, on every committed libp2p capture (plaintext, Noise, TLS, QUIC,
with their key files); with the transport's layers (plugin/core/transport.h: link and IP
headers, TCP headers, frames without payload, retransmitted payload) and QUIC's below its
streams (plugin/libp2p/quic-bytes.h: UDP, packet headers and tags, non-stream frames, STREAM
frame headers, STREAM data sent again) to the bytes of the direction's frames, on every
committed Bitcoin, FISCO and libp2p capture, TCP and QUIC.

The stream bytes come from Wireshark's own reading, not p2pc's: a TCP direction's tcp.len of
the segments TCP does not call retransmissions, a QUIC direction's STREAM frame bytes (each
offset of each stream once).  The expected layer values of the plaintext yamux captures come
from the stream itself as Wireshark reassembles it (`-z follow,tcp,raw`), walked by the specs'
framing (multistream-select lines, the /plaintext/2.0.0 Exchange, yamux's 12-byte headers),
never from p2pc's output.  The transport's layers are Wireshark's own fields of each frame
(frame.len, tcp.hdr_len, tcp.len, the TCP flags, tcp.analysis.*retransmission; udp.length and
the lengths of QUIC's items)."""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from xml.etree import ElementTree

import pytest

from conftest import CAPTURES, p2pc_report, parse_record, per_capture_kind
from p2pc import keylog

FAMILIES = ("eth2", "interop", "lodestar", "prysm", "bitswap", "libp2p-compression", "kubo")
LIBP2P = sorted(p for f in FAMILIES for p in (CAPTURES / f).glob("*.pcap*"))
# The layers below the stream (plugin/core/transport.h, plugin/libp2p/quic-bytes.h).
TRANSPORT = {"link_ip", "tcp_header", "udp_header", "ack", "retransmission"}
FRAMED = sorted([*(CAPTURES / "bitcoin").glob("*.pcapng"), *(CAPTURES / "fisco").glob("*.pcapng")])
# libp2p over QUIC only (eth2-tcp-quic has a TCP connection too).
QUIC_ONLY = {p.name for p in LIBP2P if "quic" in p.name and "tcp" not in p.name}


def key_options(ws, capture: Path, work: Path) -> list[str]:
    """tshark's options for every key file the capture's truth names (as tools/records-same.py
    does, but for a name with dots of its own: bitswap-1.2.0-quic)."""
    truth = capture.with_suffix(".truth.json")
    keys = json.loads(truth.read_text()).get("keys") if truth.is_file() else None
    names = keys.values() if isinstance(keys, dict) else keys if isinstance(keys, list) else [keys] if keys else []
    files = sorted({capture.with_name(v) for v in names if isinstance(v, str) and capture.with_name(v).is_file()})
    if not files:
        return []
    folder = work / capture.name
    folder.mkdir()
    joined = folder / "all.keys"
    joined.write_text("".join(f.read_text().rstrip("\n") + "\n" for f in files))
    return keylog.split(joined, folder).options(ws.readable)


def read(tshark, args: list[str]) -> str:
    """tshark's output reading a capture, up to the packet it is cut short in (fisco-truncated:
    tshark says so and exits 2, 14 from 4.6 on) when it is."""
    res = tshark.run(args, check=False)
    assert res.returncode == 0 or res.returncode in (2, 14) and "cut short in the middle of a packet" in res.stderr, \
        f"tshark {args} exited {res.returncode}: {res.stderr}"
    return res.stdout


def records(tshark, capture: Path, opts: list[str], two_pass: bool = False) -> list:
    out = read(tshark, ["-n", "-q", "-r", tshark.ws.readable(capture), "-z", "p2pc,records", *opts]
               + (["-2"] if two_pass else []))
    return [parse_record(l) for l in out.splitlines() if l[:2] in ("M\t", "B\t")]


def layer_sums(recs, transport: bool = False) -> Counter:
    """Per direction (stream, src, srcport): the records' wire bytes and the B lines' bytes, those
    of the transport's layers and QUIC's below its streams only if `transport`."""
    got = Counter()
    for r in recs:
        if hasattr(r, "wire_len"):
            got[r.key] += r.wire_len
        elif transport or not (r.layer in TRANSPORT or below_quic_streams(r)):
            got[r.key] += r.bytes
    return got


def flag(v: str) -> bool:
    """A boolean field as -T fields prints it (1/0 in 4.0, True/False from 4.2)."""
    return v in ("1", "True")


def tcp_transport(tshark, capture: Path, opts: list[str]) -> tuple[Counter, dict, Counter]:
    """From Wireshark's own fields of each TCP frame: per direction (stream, src, srcport) the
    frames' bytes; per direction the transport's layers by (layer, kind): a frame with
    payload has link_ip headers (frame.len - tcp.hdr_len - tcp.len), a 20-byte fixed TCP header
    and tcp.hdr_len - 20 bytes of options, and its payload is retransmission when TCP's analysis
    says so; a frame without is ack, syn, fin or rst (its flags, in that order), whole; and per
    direction the stream's bytes TCP handed over: the payload of the frames that are not
    retransmissions."""
    cap = tshark.ws.readable(capture)
    retrans = set(read(tshark, ["-n", "-r", cap, *opts, "-T", "fields", "-e", "frame.number", "-Y",
                                "tcp.analysis.retransmission || tcp.analysis.fast_retransmission"
                                " || tcp.analysis.spurious_retransmission"]).split())
    rows = read(tshark, ["-n", "-r", cap, *opts, "-T", "fields", "-E", "occurrence=f", "-e", "frame.number",
                         "-e", "tcp.stream", "-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport", "-e", "frame.len",
                         "-e", "tcp.hdr_len", "-e", "tcp.len", "-e", "tcp.flags.syn", "-e", "tcp.flags.fin",
                         "-e", "tcp.flags.reset", "-Y", "tcp && !icmp && !icmpv6"])
    frames, layers, handed = Counter(), defaultdict(Counter), Counter()
    for line in rows.splitlines():
        num, stream, a4, a6, port, flen, hlen, tlen, syn, fin, rst = line.split("\t")
        d, flen, hlen, tlen = (int(stream), a4 or a6, int(port)), int(flen), int(hlen), int(tlen)
        frames[d] += flen
        if tlen:
            layers[d]["link_ip", "headers"] += flen - hlen - tlen
            layers[d]["tcp_header", "fixed"] += 20
            layers[d]["tcp_header", "options"] += hlen - 20
            layers[d]["retransmission", "payload"] += tlen if num in retrans else 0
            handed[d] += 0 if num in retrans else tlen
        else:
            layers[d]["ack", "syn" if flag(syn) else "fin" if flag(fin) else "rst" if flag(rst) else "ack"] += flen
    return frames, {d: +c for d, c in layers.items()}, +handed


# RFC 9000 19 (table 3): each QUIC frame type's kind (quic-bytes.h), STREAM's (0x08-0x0f) apart.
QUIC_FRAME_KINDS = {0x00: ("security", "quic_padding"), 0x01: ("security", "quic_ping"),
                    0x02: ("security", "quic_ack"), 0x03: ("security", "quic_ack"),
                    0x04: ("muxer", "quic_reset_stream"), 0x05: ("muxer", "quic_stop_sending"),
                    0x06: ("negotiation", "quic_crypto"), 0x07: ("security", "quic_new_token"),
                    0x10: ("muxer", "quic_max_data"), 0x11: ("muxer", "quic_max_stream_data"),
                    0x12: ("muxer", "quic_max_streams"), 0x13: ("muxer", "quic_max_streams"),
                    0x14: ("muxer", "quic_data_blocked"), 0x15: ("muxer", "quic_stream_data_blocked"),
                    0x16: ("muxer", "quic_streams_blocked"), 0x17: ("muxer", "quic_streams_blocked"),
                    0x18: ("security", "quic_new_connection_id"), 0x19: ("security", "quic_retire_connection_id"),
                    0x1a: ("security", "quic_path_challenge"), 0x1b: ("security", "quic_path_response"),
                    0x1c: ("security", "quic_connection_close"), 0x1d: ("security", "quic_connection_close"),
                    0x1e: ("security", "quic_handshake_done")}


def below_quic_streams(r) -> bool:
    """A B line of QUIC's own bytes, below its streams' (plugin/libp2p/quic-bytes.h)."""
    return r.kind.startswith("quic_") or r.kind == "quic (encrypted)" and r.layer == "undecoded"


def quic_view(tshark, capture: Path, opts: list[str]) -> tuple[Counter, dict, Counter]:
    """From Wireshark's own items of each QUIC datagram (-T pdml: each item's length): per
    direction (-1, src, srcport) the frames' bytes; per direction QUIC's layers by (layer,
    kind): link_ip headers (frame.len - udp.length), the 8-byte UDP header, and, in a datagram
    whose packets were all decrypted, each packet's header (quic.packet_length less its
    quic.payload or quic.protected_payload, by quic.header_form), tag (the payload less its
    quic.frame items), its frames by quic.frame_type (a STREAM frame's header: the frame less
    its quic.stream_data), the bytes after its last packet, and the STREAM data repeated
    (retransmission); and per direction the STREAM bytes, each offset of each stream of each
    connection once (a frame without an offset starts at 0)."""
    out = tshark.run(["-n", "-r", tshark.ws.readable(capture), *opts, "-T", "pdml", "-J", "frame ip ipv6 udp quic",
                      "-Y", "quic && !icmp && !icmpv6"]).stdout
    frames, layers, data, have = Counter(), defaultdict(Counter), Counter(), defaultdict(set)
    for pkt in ElementTree.fromstring(out).iter("packet"):
        protos = {p.get("name"): p for p in pkt.iter("proto")}
        ip = protos["ip"] if "ip" in protos else protos.get("ipv6")
        field = lambda name, under=pkt: next(under.iterfind(f".//field[@name='{name}']")).get("show")     # noqa: E731
        d = (-1, field("ip.src" if "ip" in protos else "ipv6.src", ip), int(field("udp.srcport")))
        flen, ulen = int(field("frame.len")), int(field("udp.length"))
        frames[d] += flen
        layers[d]["link_ip", "headers"] += flen - ulen
        layers[d]["udp_header", "fixed"] += 8
        quic = [p for p in pkt.iter("proto") if p.get("name") == "quic"]
        if any(True for p in quic for _ in p.iterfind(".//field[@name='quic.remaining_payload']")):
            continue        # not decrypted: the quic (encrypted) record's
        conn = next((f.get("show") for f in pkt.iterfind(".//field[@name='quic.connection.number']")), None)
        rest = ulen - 8
        for p in quic:
            size = lambda name: sum(int(f.get("size")) for f in p.iterfind(f".//field[@name='{name}']"))    # noqa: E731
            plen, payload = int(field("quic.packet_length", p)), size("quic.payload") + size("quic.protected_payload")
            # A boolean shows as 1/0 up to 4.0 and as True/False from 4.2.
            form = "quic_long_header" if field("quic.header_form", p) in ("1", "True") else "quic_short_header"
            layers[d]["security", form] += plen - payload
            layers[d]["security", "quic_tag"] += payload - size("quic.frame")
            rest -= plen
            for f in p.iterfind(".//field[@name='quic.frame']"):
                # A frame type shows in decimal up to 4.0 and in hex from 4.2.
                ftype, fsize = int(field("quic.frame_type", f), 0), int(f.get("size"))
                if 0x08 <= ftype <= 0x0f:
                    sdata = next(f.iterfind(".//field[@name='quic.stream_data']"), None)
                    n = int(sdata.get("size")) if sdata is not None else 0
                    layers[d]["muxer", "quic_stream_header"] += fsize - n
                    start = int(next((x.get("show") for x in f.iterfind(".//field[@name='quic.stream.offset']")), "0"), 0)
                    data[d] += n
                    have[(d, conn, field("quic.stream.stream_id", f))].update(range(start, start + n))
                else:
                    layers[d][QUIC_FRAME_KINDS.get(ftype, ("security", "quic_other"))] += fsize
        layers[d]["security", "quic_coalesced_padding"] += rest
    stream = Counter()
    for (d, _, _), offsets in have.items():
        stream[d] += len(offsets)
    for d in layers:
        layers[d]["retransmission", "quic_stream_data"] += data[d] - stream[d]
    return frames, {d: +c for d, c in layers.items()}, +stream


@pytest.mark.parametrize("capture", per_capture_kind(LIBP2P + FRAMED), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_layers_add_up_to_the_stream_and_frames_bytes(tshark, tmp_path, capture):
    """Each libp2p direction's records and B lines, but the transport's and QUIC's below its
    streams, sum exactly to the bytes TCP or QUIC handed over; each direction's, those included,
    to the bytes of its frames (frame.len): both directions of every TCP connection with a
    record, and every QUIC direction."""
    opts = key_options(tshark.ws, capture, tmp_path)
    recs = records(tshark, capture, opts)
    frames, _, stream = tcp_transport(tshark, capture, opts)
    # QUIC's view (a -T pdml read) only where p2pc reports a QUIC direction.
    if any(r.key[0] < 0 for r in recs):
        quic_frames, _, quic_stream = quic_view(tshark, capture, opts)
        frames, stream = frames + quic_frames, stream + quic_stream
    if capture in LIBP2P:
        got = layer_sums(recs)
        assert got, "no libp2p record or B line"
        assert {d: got[d] for d in got} == {d: stream[d] for d in got}
    got = layer_sums(recs, transport=True)
    tcp = {d for d in got if d[0] >= 0}
    assert bool(tcp) != (capture.name in QUIC_ONLY), "records over TCP"
    assert {d: got[d] for d in got} == {d: frames[d] for d in got}
    assert {d for d in frames if d[0] in {s for s, _, _ in tcp}} == tcp
    assert {d for d in frames if d[0] < 0} == {d for d in got if d[0] < 0}


@pytest.mark.parametrize("name, keyed", [("bitcoin/btc-small.pcapng", False), ("bitcoin/btc-bip324-v2.pcapng", False),
                                         ("fisco/fisco-serial-on.pcapng", False), ("fisco/fisco3-v3.pcapng", False),
                                         ("prysm/prysm-tcp.pcapng", True), ("lodestar/lodestar.pcapng", False)])
def test_transport_layers_are_wiresharks_fields(tshark, tmp_path, name, keyed):
    """Each transport layer and kind, per direction, as Wireshark's fields of the frames give it
    (lodestar: TCP retransmissions)."""
    capture = CAPTURES / name
    opts = key_options(tshark.ws, capture, tmp_path) if keyed else []
    got = defaultdict(Counter)
    for r in records(tshark, capture, opts):
        if not hasattr(r, "wire_len") and r.layer in TRANSPORT:
            got[r.key][r.layer, r.kind] += r.bytes
    _, want, _ = tcp_transport(tshark, capture, opts)
    got = {d: +c for d, c in got.items()}
    assert got and got == {d: want[d] for d in got}
    assert {s for s, _, _ in want} == {s for s, _, _ in got}


def tls_view(tshark, capture: Path, opts: list[str]) -> dict:
    """From Wireshark's own TLS of each frame: per direction (stream, src, srcport) the TLS layers
    by (layer, kind): every record but application_data (tls.record.content_type 23) the
    handshake's, all its bytes (5 + tls.record.length); an application_data record TLS decrypted
    its framing, its bytes less those of its plaintext, the "Decrypted TLS" tab TLS adds for it
    (tshark -x).  TLS 1.2 (RFC 5246 7.1) protects every record a direction sends after its
    change_cipher_spec: those records are the ones with a tab, in order, when there are keys."""
    cap = tshark.ws.readable(capture)
    rows = read(tshark, ["-n", "-r", cap, *opts, "-T", "fields", "-E", "occurrence=a", "-e", "tcp.stream",
                         "-e", "ip.src", "-e", "tcp.srcport", "-e", "tls.record.content_type",
                         "-e", "tls.record.length", "-Y", "tls"]).splitlines()
    # Each frame's summary line its number alone, then its tabs (-x names them when there are several).
    dump = read(tshark, ["-n", "-r", cap, *opts, "-o", 'gui.column.format:"No.","%m"', "-P", "-x", "-Y", "tls"])
    tabs = [[int(n) for n in re.findall(r"^Decrypted TLS \((\d+) bytes\):", frame, re.M)]
            for frame in re.split(r"^ *\d+$", dump, flags=re.M)[1:]]
    assert len(tabs) == len(rows)
    layers, protected = defaultdict(Counter), set()
    for row, plain in zip(rows, tabs):
        stream, src, port, types, lengths = row.split("\t")
        d = (int(stream), src, int(port))
        records = list(zip(map(int, types.split(",")), map(int, lengths.split(","))))
        after = [d in protected or any(t == 20 for t, _ in records[:i]) for i in range(len(records))]
        assert len(plain) in (0, sum(after)), (row, plain)
        plain = iter(plain)
        for (ctype, length), sealed in zip(records, after):
            size = 5 + length
            text = next(plain, None) if sealed else None
            if ctype != 23:
                layers[d]["negotiation", "tls_handshake"] += size
            elif text is not None:
                layers[d]["security", "tls_framing"] += size - text
        if any(t == 20 for t, _ in records):
            protected.add(d)
    return {d: +c for d, c in layers.items()}


@pytest.mark.parametrize("name, keyed", [("fisco/fisco-tls.pcapng", False), ("fisco/fisco3-tls.pcapng", True),
                                         ("fisco/fisco3-tls.pcapng", False)])
def test_fisco_tls_layers_are_wiresharks_fields(tshark, tmp_path, name, keyed):
    """FISCO over TLS: the TLS layers per direction as Wireshark's TLS gives them, the transport
    layers its TCP fields (fisco-tls: its secrets embedded; fisco3-tls without its key log: the
    handshake only, every application_data record a tls (encrypted) record), all under the proto
    of the connection's records (3.x's once decrypted)."""
    capture = CAPTURES / name
    opts = key_options(tshark.ws, capture, tmp_path) if keyed else []
    recs = records(tshark, capture, opts)
    assert {r.proto for r in recs} == {"fisco3" if keyed else "fisco"}
    tls, transport = defaultdict(Counter), defaultdict(Counter)
    for r in recs:
        if not hasattr(r, "wire_len"):
            (transport if r.layer in TRANSPORT else tls)[r.key][r.layer, r.kind] += r.bytes
    want = tls_view(tshark, capture, opts)
    assert {d: +c for d, c in tls.items()} == want
    assert all(("security", "tls_framing") in c for c in want.values()) != (name == "fisco/fisco3-tls.pcapng"
                                                                             and not keyed)
    assert any(r.msg_type == "tls (encrypted)" for r in recs if hasattr(r, "wire_len")) == \
        (name == "fisco/fisco3-tls.pcapng" and not keyed)
    below = tcp_transport(tshark, capture, opts)[1]
    assert {d: +c for d, c in transport.items()} == {d: c for d, c in below.items() if d[0] in {s for s, _, _ in want}}


@pytest.mark.parametrize("name, keyed", [("eth2/eth2-quic.pcapng", True), ("eth2/eth2-quic.pcapng", False),
                                         ("prysm/prysm-quic.pcapng", True), ("kubo/kubo-quic.pcapng", True),
                                         ("interop/interop-go-rust-quic.pcapng", True)])
def test_quic_layers_are_wiresharks_fields(tshark, tmp_path, name, keyed):
    """Each of QUIC's layers and kinds below its streams, per direction, as Wireshark's items of
    the datagrams give it (prysm: STREAM data sent again; kubo: a ClientHello over two Initial
    packets, ICMP errors quoting datagrams; without keys the Initial packets only, every other
    datagram's UDP payload is the quic (encrypted) records')."""
    capture = CAPTURES / name
    opts = key_options(tshark.ws, capture, tmp_path) if keyed else []
    got = defaultdict(Counter)
    for r in records(tshark, capture, opts):
        if not hasattr(r, "wire_len") and r.key[0] < 0 and (r.layer in TRANSPORT or below_quic_streams(r)):
            got[r.key][r.layer, r.kind] += r.bytes
    _, want, _ = quic_view(tshark, capture, opts)
    got = {d: +c for d, c in got.items()}
    assert got and got == want
    kinds = {k for c in got.values() for k in c}
    assert {("link_ip", "headers"), ("udp_header", "fixed")} <= kinds
    assert (("security", "quic_short_header") in kinds) == keyed     # 1-RTT packets need the keys


@pytest.mark.parametrize("name", ["eth2/eth2-noise-yamux.pcapng", "eth2/eth2-tls-yamux.pcapng",
                                  "interop/interop-go-rust-tls-yamux.pcapng", "prysm/prysm-tcp.pcapng"])
def test_layers_add_up_without_keys(tshark, name):
    """Without keys the Noise and TLS handshakes are still negotiation and every record not
    decrypted an undecoded record: the directions close all the same."""
    capture = CAPTURES / name
    got = layer_sums(records(tshark, capture, []))
    want = tcp_transport(tshark, capture, [])[2]
    assert got and {d: got[d] for d in got} == {d: want[d] for d in got}


@pytest.mark.parametrize("name", ["eth2/eth2-noise-yamux.pcapng", "interop/interop-go-rust-tls-yamux.pcapng",
                                  "libp2p-compression/comp-gzip.pcapng", "eth2/eth2-quic.pcapng"])
def test_two_passes_give_the_same_budget(tshark, tmp_path, name):
    """The B lines of tshark -2 (replayed PDUs) are those of one pass."""
    capture = CAPTURES / name
    opts = key_options(tshark.ws, capture, tmp_path)
    one = sorted(map(repr, (r for r in records(tshark, capture, opts) if not hasattr(r, "wire_len"))))
    two = sorted(map(repr, (r for r in records(tshark, capture, opts, two_pass=True) if not hasattr(r, "wire_len"))))
    assert one and one == two


def test_messages_layers_are_the_main_tables_bytes_and_all_add_up(tshark, tmp_path):
    """analyze's budget: its message layers are the main table's wire bytes, its transport
    layers Wireshark's fields, and all its rows the bytes of the Prysm capture's TCP frames
    (Noise, keys given; its two TCP connections are libp2p's)."""
    capture = CAPTURES / "prysm" / "prysm-tcp.pcapng"
    rep = p2pc_report("analyze", str(capture), "--keylog", str(capture.with_suffix(".keys")))
    rows = next(s for s in rep["sections"] if s["name"] == "budget")["rows"]
    assert {r["layer"] for r in rows} >= {"messages", "negotiation", "muxer", "security", "gossip", "link_ip",
                                          "tcp_header", "ack"}     # no retransmission in this capture
    assert sum(r["bytes"] for r in rows if r["layer"] in ("messages", "libp2p", "undecoded")) == \
        rep["totals"]["wire_bytes"]
    frames, layers, _ = tcp_transport(tshark, capture, key_options(tshark.ws, capture, tmp_path))
    want = sum(layers.values(), Counter())
    assert {(r["layer"], r["kind"]): r["bytes"] for r in rows if r["layer"] in TRANSPORT} == want
    assert sum(r["bytes"] for r in rows) == sum(frames.values())
    # The figures docs/savings-model.md states (the byte budget), Wireshark's as computed above.
    assert sum(frames.values()) == 309_776 and sum(frames.values()) - sum(want.values()) == 251_664
    assert want == {("link_ip", "headers"): 17_714, ("tcp_header", "fixed"): 10_420,
                    ("tcp_header", "options"): 6_252, ("ack", "ack"): 23_232, ("ack", "syn"): 296,
                    ("ack", "fin"): 66, ("ack", "rst"): 132}


def test_analyze_budget_adds_up_to_the_quic_datagrams(tshark, tmp_path):
    """analyze's budget over QUIC: all its rows are the bytes of the Prysm QUIC capture's
    datagrams (keys given), its QUIC kinds below the streams Wireshark's items."""
    capture = CAPTURES / "prysm" / "prysm-quic.pcapng"
    rep = p2pc_report("analyze", str(capture), "--keylog", str(capture.with_suffix(".keys")))
    rows = next(s for s in rep["sections"] if s["name"] == "budget")["rows"]
    frames, layers, _ = quic_view(tshark, capture, key_options(tshark.ws, capture, tmp_path))
    assert sum(r["bytes"] for r in rows) == sum(frames.values())
    below = {(r["layer"], r["kind"]): r["bytes"] for r in rows if r["layer"] in TRANSPORT or r["kind"].startswith("quic_")}
    assert below == sum(layers.values(), Counter())
    # The figures docs/savings-model.md states (the byte budget), Wireshark's as computed above.
    by_layer = Counter()
    for (layer, _), n in below.items():
        by_layer[layer] += n
    assert sum(frames.values()) == 322_659 and by_layer == {"link_ip": 31_416, "udp_header": 7_392, "security": 50_155,
                                                            "negotiation": 8_060, "muxer": 3_206, "retransmission": 390}


def test_analyze_budget_of_a_real_lossy_connection_adds_up_to_its_frames(tshark):
    """nDPI's capture of a real 2011 mainnet Bitcoin connection (captures/noharm), with segments
    the capture lost, retransmitted and out of order: analyze's budget rows (analyze reassembles
    out-of-order segments) add up to the bytes of its TCP frames."""
    capture = CAPTURES / "noharm" / "ndpi-bitcoin.pcap"
    rows = next(s for s in p2pc_report("analyze", str(capture))["sections"] if s["name"] == "budget")["rows"]
    assert {r["proto"] for r in rows} == {"bitcoin"}
    assert {r["layer"] for r in rows} >= {"messages", "undecoded", "retransmission"}
    assert sum(r["bytes"] for r in rows) == sum(int(n) for (n,) in tshark.fields(capture, ["frame.len"], dfilter="tcp"))


# ---- expected values from the stream itself (plaintext, yamux) ----

def follow_tcp(tshark, capture: Path, stream: int) -> dict[int, bytes]:
    """The TCP stream's two directions as Wireshark reassembles them: node index -> bytes, and
    the nodes' (address, port)."""
    out = tshark.run(["-n", "-q", "-r", tshark.ws.readable(capture), "-z", f"follow,tcp,raw,{stream}"]).stdout
    nodes, data = {}, defaultdict(bytearray)
    for line in out.splitlines():
        m = re.match(r"Node (\d): (.*):(\d+)$", line)
        if m:
            nodes[int(m.group(1))] = (m.group(2), int(m.group(3)))
        elif re.fullmatch(r"\t?[0-9a-f]+", line):
            data[nodes[1 if line.startswith("\t") else 0]] += bytes.fromhex(line.strip())
    return {k: bytes(v) for k, v in data.items()}


def uvarint(b: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        n |= (b[i] & 0x7F) << shift
        i += 1
        if b[i - 1] < 0x80:
            return n, i
        shift += 7


def ms_lines(b: bytes, i: int, until: str | None) -> tuple[int, int]:
    """multistream-select 1.0 (libp2p/specs connections/README.md): uvarint-prefixed lines ending
    in a newline, read up to and including `until` (None: while they look like lines).  Their
    bytes and where they end."""
    start = i
    while i < len(b):
        n, j = uvarint(b, i)
        line = b[j:j + n]
        if not (n and line.endswith(b"\n") and (line[:1] == b"/" or line == b"na\n")):
            break
        i = j + n
        if until is not None and line == until.encode() + b"\n":
            break
    return i - start, i


def walk_plaintext_yamux(b: bytes) -> Counter:
    """One direction of a plaintext yamux connection, by the specs: the negotiation's bytes, and
    the yamux frames (hashicorp/yamux spec.md: 12-byte header; a Data frame's length is its
    body's) by what they are, with each stream's own multistream lines."""
    out = Counter()
    n, i = ms_lines(b, 0, "/plaintext/2.0.0")
    ex, j = uvarint(b, i)                   # the Exchange (plaintext/README.md): uvarint-prefixed
    out["plaintext_exchange"] += j - i + ex
    m, i = ms_lines(b, j + ex, "/yamux/1.0.0")
    out["multistream"] += n + m
    streams = defaultdict(bytearray)
    while i + 12 <= len(b):
        ftype, flags, sid, length = b[i + 1], int.from_bytes(b[i + 2:i + 4], "big"), \
            int.from_bytes(b[i + 4:i + 8], "big"), int.from_bytes(b[i + 8:i + 12], "big")
        body = length if ftype == 0 else 0
        if ftype == 0 and body:
            out["data_frames"] += 1
            streams[sid] += b[i + 12:i + 12 + body]
        elif flags & 1:
            out["open"] += 12
        elif flags & 0xC:
            out["close"] += 12
        else:
            out[{0: "empty_data", 1: "window_update", 2: "ping", 3: "go_away"}[ftype]] += 12
        i += 12 + body
    for data in streams.values():
        out["multistream"] += ms_lines(bytes(data), 0, None)[0]
    return out


@pytest.mark.parametrize("name", ["eth2/eth2-yamux.pcapng", "interop/interop-rust-go-plaintext-yamux.pcapng",
                                  "interop/interop-js-go-plaintext-yamux.pcapng"])
def test_negotiation_and_muxer_bytes_are_the_streams(tshark, name):
    """The negotiation and the muxer's own frames, per direction, as the stream holds them; and
    the muxer headers no message carried are at most those of the data frames."""
    capture = CAPTURES / name
    got = defaultdict(Counter)
    for r in records(tshark, capture, []):
        if not hasattr(r, "wire_len"):
            got[(r.src, r.srcport)][r.kind] += r.bytes
    directions = follow_tcp(tshark, capture, 0)
    assert set(directions) == set(got)
    for d, data in directions.items():
        want = walk_plaintext_yamux(data)
        for kind in ("plaintext_exchange", "multistream", "open", "close", "window_update", "ping", "go_away",
                     "empty_data"):
            assert got[d][kind] == want[kind], (d, kind)
        assert 0 <= got[d]["data_header"] <= 12 * want["data_frames"]
