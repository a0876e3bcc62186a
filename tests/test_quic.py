"""libp2p over QUIC (/quic-v1), decrypted by Wireshark's own QUIC from the hosts' key logs, on
captures of real go-libp2p hosts (captures/gen/make_eth2.py eth2-quic; eth2-tcp-quic, the same
peers over TCP and then QUIC) and of go-libp2p with rust-libp2p (captures/gen/make_interop.py
interop-go-rust-quic, interop-rust-go-quic-lf: the rust peer's key log written by rust-libp2p
itself) and with js-libp2p (interop-go-js-quic, interop-js-go-quic-lf: the go peer's key log
alone, as js-libp2p's QUIC transport cannot write one).  Expected values come from the source block files, the generators' truth files (what
each peer says it sent and received) and identity seeds, and from Wireshark's own QUIC fields
(frame types, STREAM data), never from p2pc's output."""
from __future__ import annotations

import hashlib
import json
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CAPTURES, DATA, REPO, p2pc_report, per_capture_kind
from test_libp2p import OURS, base58btc, ed25519_public, peer_id
from test_live import Live, needs_netns, netns  # noqa: F401  (netns: the fixture live runs in)

ETH = CAPTURES / "eth2"
NAME = "eth2-quic"
CAP = ETH / f"{NAME}.pcapng"
TRUTH = json.loads((ETH / f"{NAME}.truth.json").read_text())
EXPERT_NO_KEYS = "tls.keylog_file"
INTEROP = CAPTURES / "interop"
# Captures of one QUIC connection: name -> (folder, whose key log decrypts it by default: the
# go-rust cells' is the rust peer's, the one rust-libp2p wrote; the go-js cells have the go
# peer's only).
ONE_CONN = {NAME: (ETH, "dialer"), "interop-go-rust-quic": (INTEROP, "rust"),
            "interop-rust-go-quic-lf": (INTEROP, "rust"), "interop-go-js-quic": (INTEROP, "go"),
            "interop-js-go-quic-lf": (INTEROP, "go")}


def capture(name: str) -> Path:
    return ONE_CONN[name][0] / f"{name}.pcapng"


def truth(name: str) -> dict:
    return json.loads((ONE_CONN[name][0] / f"{name}.truth.json").read_text())


def keys(tshark, side: str = "dialer", name: str = NAME) -> list[str]:
    """The TLS key log option: the one `side` wrote (eth2: dialer or listener; interop: go or rust)."""
    return ["-o", f"tls.keylog_file:{tshark.ws.readable(ONE_CONN[name][0] / truth(name)['keys'][side])}"]


def default_keys(tshark, name: str) -> list[str]:
    return keys(tshark, ONE_CONN[name][1], name)


def peer_ids(t: dict) -> dict[str, str]:
    """Address -> the peer ID of that side's identity seed (Ed25519)."""
    return {t["link"][f"addr_{x}"]: base58btc(peer_id(ed25519_public(t["seeds"][x]))) for x in ("a", "b")}


def source(name: str) -> bytes:
    return (DATA / "ethereum" / name).read_bytes()


def dump(tshark, extra: list[str], two_pass: bool = False, cap=CAP) -> list[list[str]]:
    """Every line of -z p2pc,records, split into columns."""
    args = ["-n", "-q", "-r", tshark.ws.readable(cap), "-z", "p2pc,records", *extra] + (["-2"] if two_pass else [])
    return [line.split("\t") for line in tshark.run(args).stdout.splitlines()]


@pytest.mark.parametrize("side", ["dialer", "listener"])
def test_quic_streams_decode_to_the_source_blocks(tshark, side):
    """Either host's key log decrypts; every QUIC stream is a libp2p stream: the blocks of
    beacon_blocks_by_range and the gossiped block are the source files."""
    pl = tshark.payloads(CAP, extra=keys(tshark, side))
    got = [hashlib.sha256(raw).hexdigest() for _, mtype, raw in pl
           if mtype == "beacon_blocks_by_range/2 response" and len(raw) > 1000]
    assert got == [b["sha256"] for b in TRUTH["blocks_by_range"]]
    assert got == [hashlib.sha256(source(b["file"])).hexdigest() for b in TRUTH["blocks_by_range"]]
    gossip = [hashlib.sha256(raw).hexdigest() for _, mtype, raw in pl if mtype == "gossip beacon_block"]
    assert gossip == [hashlib.sha256(source(f)).hexdigest() for f in TRUTH["gossip"]["blocks"]]
    # The error chunk after the last block: its SSZ is the message the generator sent.
    errors = [raw for _, mtype, raw in pl if mtype == "beacon_blocks_by_range/2 response" and len(raw) < 1000]
    assert errors == [TRUTH["error_chunk"]["message"].encode()]
    # Each block's record: its SSZ length uncompressed, as over TCP.
    recs = tshark.records(CAP, extra=keys(tshark, side))
    assert [int(r["raw_len"]) for r in recs if r["msg_type"] == "beacon_blocks_by_range/2 response"][:3] == \
        [len(source(b["file"])) for b in TRUTH["blocks_by_range"]]
    # The ALPN both hosts agreed on: the quic.proto entry p2pc registered.
    alpn = tshark.fields(CAP, ["ip.src", "tls.handshake.extensions_alpn_str"],
                         dfilter="tls.handshake.extensions_alpn_str", extra=keys(tshark, side))
    assert alpn == [[TRUTH["link"]["dialer"], "libp2p"], [TRUTH["link"]["listener"], "libp2p"]]


def test_quic_gossip_message_id_matches_the_spec(tshark):
    topic = TRUTH["gossip"]["topic"].encode()
    want = [hashlib.sha256(b"\x01\x00\x00\x00" + struct.pack("<Q", len(topic)) + topic + source(f)).hexdigest()[:40]
            for f in TRUTH["gossip"]["blocks"]]
    rows = tshark.fields(CAP, ["eth2.gossip.message_id"], dfilter="eth2.gossip.message_id", extra=keys(tshark))
    assert [m for r in rows for m in r[0].split("|")] == want


def test_quic_streams_are_opened_by_the_side_their_id_names(tshark):
    """Each request goes on a stream of its own that the dialer (the QUIC client) opened: a
    client-initiated bidirectional id (0 mod 4), multistream-select first, from the opener; the
    listener answers on the same stream id."""
    rows = tshark.fields(CAP, ["ip.src", "libp2p_quic.stream", "libp2p_quic.from_opener", "multistream.message"],
                         dfilter="multistream", extra=keys(tshark))
    # (sender, stream id, from the opener, protocol): each STREAM frame here carries the
    # multistream header and one protocol ID (a packet may carry several STREAM frames).
    sent = []
    for src, ids, openers, msgs in rows:
        ids, openers, msgs = ids.split("|"), openers.split("|"), msgs.split("|")
        assert len(msgs) == 2 * len(ids) and msgs[::2] == ["/multistream/1.0.0"] * len(ids)
        sent += [(src, int(i), o, m) for i, o, m in zip(ids, openers, msgs[1::2])]
    dialer, listener = TRUTH["link"]["dialer"], TRUTH["link"]["listener"]
    for req in TRUTH["requests"]:
        proto = f"/eth2/beacon_chain/req/{req}/ssz_snappy"
        mine = [s for s in sent if s[3] == proto]
        assert [(s[0], s[2]) for s in mine] == [(dialer, "1"), (listener, "0")], proto
        assert mine[0][1] == mine[1][1] and mine[0][1] % 4 == 0, proto
    # identify both ways: the listener's on a server-initiated id (1 mod 4), from its opener.
    ident = [(s[0], s[1] % 4, s[2]) for s in sent if s[3] == "/ipfs/id/1.0.0"]
    assert sorted(ident) == sorted([(dialer, 0, "1"), (listener, 1, "1"), (listener, 0, "0"), (dialer, 1, "0")])


@pytest.mark.parametrize("name", per_capture_kind(sorted(ONE_CONN)))
def test_quic_certificates_name_both_peers(tshark, name):
    """The libp2p certificate extension, inside QUIC's CRYPTO frames: each host's peer ID, from
    its seed, in the tree and on the records' I lines (go-libp2p's certificates and
    rust-libp2p's and js-libp2p's alike)."""
    cap, extra = capture(name), default_keys(tshark, name)
    want = peer_ids(truth(name))
    rows = tshark.fields(cap, ["ip.src", "libp2p_tls.peer_id"], dfilter="libp2p_tls.peer_id", extra=extra)
    assert {r[0]: r[1] for r in rows} == want
    ids = {r[3]: r[8] for r in dump(tshark, extra, cap=cap) if r[0] == "I"}
    assert ids == want


@pytest.mark.parametrize("name", per_capture_kind(sorted(ONE_CONN)))
def test_quic_one_pass_equals_two_pass(tshark, name):
    """Records, trees and bytes tabs: a second pass (-2) shows what one pass does."""
    cap = capture(name)
    for extra in (default_keys(tshark, name), []):
        one = [r for r in dump(tshark, extra, cap=cap) if r[0] != "#END"]
        two = [r for r in dump(tshark, extra, two_pass=True, cap=cap) if r[0] != "#END"]
        assert one == two and len([r for r in one if r[0] == "M"]) >= 2
    args = ["-n", "-r", tshark.ws.readable(cap), "-V", "-x", "-Y", "libp2p_quic || eth2 || multistream",
            *default_keys(tshark, name)]
    assert tshark.run(args).stdout == tshark.run(args + ["-2"]).stdout


def quic_packets(tshark, extra: list[str], cap: Path = CAP) -> list[dict]:
    """Per frame of the capture's QUIC connection, from Wireshark's own QUIC fields.  Not the QUIC
    packets quoted in ICMP errors (a port unreachable after a peer closed its socket): they are
    no packets of the connection."""
    rows = tshark.fields(cap, ["ip.src", "frame.len", "udp.length", "quic.frame_type", "quic.stream_data",
                               "quic.remaining_payload"], dfilter="quic && !icmp", extra=extra)
    out = []
    for src, flen, ulen, types, data, remaining in rows:
        types = [int(t, 0) for t in types.split("|") if t]      # 4.4 on prints them in hex
        # An empty STREAM frame (a FIN alone) prints its data as <MISSING>: no bytes.
        stream = sum(len(bytes.fromhex(d)) for d in data.replace(":", "").split("|") if d and d != "<MISSING>")
        out.append({"src": src, "frame": int(flen), "udp_payload": int(ulen) - 8, "stream": stream,
                    "ack_only": not stream and any(t in (2, 3) for t in types) and set(types) <= {0, 2, 3},
                    "encrypted": bool(remaining)})
    return out


@pytest.mark.parametrize("name", per_capture_kind(sorted(ONE_CONN)))
def test_quic_packets_counted_as_the_model_needs(tshark, name):
    """Each direction of the QUIC connection is a T line of stream -1: packets carrying STREAM
    data are its data segments (their STREAM data bytes, the largest as its MSS), packets of ACK
    and PADDING frames only its pure ACKs, the rest control frames."""
    cap, extra = capture(name), default_keys(tshark, name)
    pk = quic_packets(tshark, extra, cap)
    tl = [r for r in dump(tshark, extra, cap=cap) if r[0] == "T"]
    assert len(tl) == 2
    for r in tl:
        assert r[1] == "-1"
        mine = [p for p in pk if p["src"] == r[2]]
        data = [p for p in mine if p["stream"]]
        acks = [p for p in mine if p["ack_only"]]
        assert [int(x) for x in r[6:16]] == [
            len(mine), sum(p["frame"] for p in mine), len(data), sum(p["stream"] for p in data),
            sum(p["frame"] for p in data), len(acks), sum(p["frame"] for p in acks),
            len(mine) - len(data) - len(acks), sum(p["frame"] for p in mine) - sum(p["frame"] for p in data + acks),
            max(p["stream"] for p in data)]


@pytest.mark.parametrize("name", per_capture_kind(sorted(ONE_CONN)))
def test_quic_without_keys_is_one_encrypted_record_per_direction(tshark, name):
    """No key: each direction is one `quic (encrypted)` record holding the UDP payload bytes of
    its packets Wireshark could not decrypt (all but the Initial packets, whose keys come from
    the connection ID), and each such packet has an expert note naming the key log preference.
    With the key there is none."""
    cap, t = capture(name), truth(name)
    pk = quic_packets(tshark, [], cap)
    for two_pass in (False, True):
        recs = [r for r in tshark.records(cap, two_pass=two_pass)]
        assert {r["msg_type"] for r in recs} == {"quic (encrypted)"}
        got = {r["src"]: int(r["wire_len"]) for r in recs}
        assert got == {src: sum(p["udp_payload"] for p in pk if p["src"] == src and p["encrypted"])
                       for src in (t["link"]["addr_a"], t["link"]["addr_b"])}
        assert all(int(r["header_len"]) == 0 and r["wire_len"] == r["payload_len"] == r["raw_len"] for r in recs)
    notes = tshark.fields(cap, ["_ws.expert.message"], dfilter="p2pc.tls_no_keys")
    assert len(notes) == sum(p["encrypted"] for p in pk)
    assert all(EXPERT_NO_KEYS in n[0] for n in notes)
    assert not [r for r in tshark.records(cap, extra=default_keys(tshark, name)) if r["msg_type"] == "quic (encrypted)"]


def test_p2pc_analyze_models_quic_headers_and_acks(tshark):
    """`p2pc analyze --keylog` on the QUIC capture: the messages flow through the same tap, and
    the header and ACK savings use the QUIC packet counts (each direction's T line)."""
    rep = p2pc_report("analyze", "--keylog", str(ETH / TRUTH["keys"]["dialer"]), str(CAP))
    rows = {(r["proto"], r["msg_type"]): r for r in rep["rows"]}
    blocks = rows[("eth2", "beacon_blocks_by_range/2 response")]
    assert blocks["messages"] == 4 and blocks["tcp_header_saved"] > 0 and blocks["ack_saved"] > 0
    assert rows[("eth2", "gossip beacon_block")]["raw_bytes"] == len(source(TRUTH["gossip"]["blocks"][0]))


def stream_data_len(tshark, frame: int) -> int:
    rows = tshark.fields(CAP, ["quic.stream_data"], dfilter=f"frame.number == {frame}", extra=keys(tshark))
    return sum(len(bytes.fromhex(d.replace(":", ""))) for d in rows[0][0].split("|"))


def block_frame(tshark) -> int:
    """A frame in the middle of the first block's response (stream 20, the listener's)."""
    rows = tshark.fields(CAP, ["frame.number", "libp2p_quic.stream"], dfilter="libp2p_quic.stream == 20",
                         extra=keys(tshark))
    return int([r for r in rows if r[1] == "20"][200][0])


def test_quic_retransmitted_stream_data_is_fed_once(tshark, tmp_path):
    """A STREAM frame seen twice (the frame duplicated after itself) feeds its bytes once: the
    copy shows libp2p_quic.skipped, and the records are those of the capture as it was."""
    n = block_frame(tshark)
    one, dup = tmp_path / "one.pcapng", tmp_path / "dup.pcapng"
    subprocess.run(["editcap", "-r", str(CAP), str(one), str(n)], check=True)
    subprocess.run(["mergecap", "-w", str(dup), str(CAP), str(one)], check=True)
    rows = tshark.fields(dup, ["frame.number", "libp2p_quic.skipped"], dfilter="libp2p_quic.skipped",
                         extra=keys(tshark))
    assert [n + 1, stream_data_len(tshark, n)] in [[int(r[0]), int(r[1])] for r in rows]
    msgs = lambda cap: [(r["msg_type"], r["wire_len"]) for r in tshark.records(cap, extra=keys(tshark))]  # noqa: E731
    assert msgs(dup) == msgs(CAP)


def test_quic_missing_stream_data_is_a_hole(tshark, tmp_path):
    """A datagram of the first block's stream removed: the next bytes of that stream direction
    show libp2p_quic.gap with the bytes missing; that stream's rest is undecoded bytes, counted,
    and the other streams (the gossiped block, goodbye) decode as before."""
    n = block_frame(tshark)
    cut = tmp_path / "cut.pcapng"
    subprocess.run(["editcap", str(CAP), str(cut), str(n)], check=True)
    rows = tshark.fields(cut, ["frame.number", "_ws.expert.message"], dfilter="libp2p_quic.gap", extra=keys(tshark))
    assert len(rows) == 1 and rows[0][0] == str(n)
    assert f"{stream_data_len(tshark, n)} bytes of this stream direction are missing" in rows[0][1]
    pl = tshark.payloads(cut, extra=keys(tshark))
    assert [hashlib.sha256(raw).hexdigest() for _, mtype, raw in pl if mtype == "gossip beacon_block"] == \
        [hashlib.sha256(source(f)).hexdigest() for f in TRUTH["gossip"]["blocks"]]
    recs = tshark.records(cut, extra=keys(tshark))
    assert "goodbye/1 request" in [r["msg_type"] for r in recs]
    assert not [r for r in recs if r["msg_type"] == "beacon_blocks_by_range/2 response"]
    assert sum(int(r["wire_len"]) for r in recs if r["msg_type"] == "undecoded") > 3 * 400_000


# ---- eth2-tcp-quic: the same two go-libp2p peers over TCP (/noise, yamux), then over QUIC ----
# (captures/gen/make_eth2.py eth2-tcp-quic, session "dual").  Expected values: what each peer
# wrote it sent and received over which transport (the truth's "peers", from their -truth), the
# source block files, the identity seeds, and Wireshark's own tcp/udp fields.
DUAL = "eth2-tcp-quic"
DUAL_CAP = ETH / f"{DUAL}.pcapng"
DUAL_TRUTH = json.loads((ETH / f"{DUAL}.truth.json").read_text())


def dual_keys(tshark) -> list[str]:
    """One key log with both hosts' kinds of keys: each preference reads its own lines (the
    Noise keys of the TCP connection, the TLS secrets of the QUIC one) and skips the others."""
    path = tshark.ws.readable(ETH / DUAL_TRUTH["keys"]["dialer"])
    return ["-o", f"libp2p_noise.keylog_file:{path}", "-o", f"tls.keylog_file:{path}"]


def frame_transports(tshark) -> dict[int, tuple[str, str]]:
    """Frame -> (transport as the peers' truth names it, tcp.stream or ""), by Wireshark's own
    tcp and udp dissectors."""
    rows = tshark.fields(DUAL_CAP, ["frame.number", "tcp.stream", "udp.stream"], dfilter="tcp || udp")
    return {int(f): ("tcp", t) if t else ("quic-v1", "") for f, t, _ in rows}


def truth_msgs(peer: str, direction: str) -> list[tuple]:
    """(transport, msg_type, SSZ length, SSZ sha256, gossip message-id) of what a peer says it
    sent or received, in its order."""
    out = []
    for m in DUAL_TRUTH["peers"][peer]["messages"]:
        if m["dir"] == direction:
            mtype = m["protocol"] if m["kind"] == "gossip" else f"{m['protocol']} {m['kind']}"
            out.append((m["transport"], mtype, m["ssz_len"], m["ssz_sha256"], m.get("msg_id", "")))
    return out


def test_dual_the_peers_used_both_transports_and_agree():
    """The capture holds what the issue asks for: both transports between the same two peers,
    each peer's account of what it sent the other's of what it received."""
    for a, b in (("dialer", "listener"), ("listener", "dialer")):
        assert truth_msgs(a, "sent") == truth_msgs(b, "received")
    used = {m[0] for m in truth_msgs("dialer", "sent") + truth_msgs("listener", "sent")}
    assert used == {"tcp", "quic-v1"}
    gossip = [m for m in truth_msgs("dialer", "sent") if m[1] == "gossip beacon_block"]
    assert [(m[0], m[3]) for m in gossip] == [("tcp", hashlib.sha256(source(f)).hexdigest())
                                              for f in DUAL_TRUTH["gossip"]["blocks"][:1]] + \
        [("quic-v1", hashlib.sha256(source(f)).hexdigest()) for f in DUAL_TRUTH["gossip"]["blocks"][1:]]


def test_dual_every_message_on_both_transports_decodes_to_the_peers_truth(tshark):
    """Every eth2 message p2pc reports, on either transport, is one its sender says it sent over
    that transport, in the sender's order: its SSZ length, the sha256 of its SSZ and, for gossip,
    the message-id Wireshark's tree shows."""
    frames = frame_transports(tshark)
    recs = tshark.records(DUAL_CAP, extra=dual_keys(tshark))
    pays = tshark.payloads(DUAL_CAP, extra=dual_keys(tshark))
    assert len(recs) == len(pays)
    ids = {int(f): m.split("|") for f, m in tshark.fields(DUAL_CAP, ["frame.number", "eth2.gossip.message_id"],
                                                          dfilter="eth2.gossip.message_id", extra=dual_keys(tshark))}
    dialer, listener = DUAL_TRUTH["link"]["dialer"], DUAL_TRUTH["link"]["listener"]
    got = {dialer: [], listener: []}
    for rec, (frame, mtype, raw) in zip(recs, pays):
        assert (int(rec["frame"]), rec["msg_type"]) == (frame, mtype)
        if rec["proto"] == "eth2":
            mid = ids[frame].pop(0) if mtype == "gossip beacon_block" else ""
            got[rec["src"]].append((frames[frame][0], mtype, int(rec["raw_len"]), hashlib.sha256(raw).hexdigest(), mid))
    assert got[dialer] == truth_msgs("dialer", "sent")
    assert got[listener] == truth_msgs("listener", "sent")
    assert not [r for r in recs if r["msg_type"] in ("undecoded", "quic (encrypted)")]


def test_dual_records_tell_the_transports_apart(tshark):
    """A record over TCP carries its connection's tcp.stream, a record over QUIC stream -1; the
    T lines are one pair per connection; the I lines name the same two peers on each, learnt
    from the Noise handshake over TCP and from the certificate over QUIC."""
    frames = frame_transports(tshark)
    lines = dump(tshark, dual_keys(tshark), cap=DUAL_CAP)
    ms = [r for r in lines if r[0] == "M"]
    assert {frames[int(r[1])][0] for r in ms} == {"tcp", "quic-v1"}
    for r in ms:
        transport, stream = frames[int(r[1])]
        assert r[2] == (stream if transport == "tcp" else "-1"), r
    assert sorted((r[1], r[2]) for r in lines if r[0] == "T") == \
        [("-1", DUAL_TRUTH["link"]["addr_a"]), ("-1", DUAL_TRUTH["link"]["addr_b"]),
         ("0", DUAL_TRUTH["link"]["addr_a"]), ("0", DUAL_TRUTH["link"]["addr_b"])]
    want = peer_ids(DUAL_TRUTH)
    ids = sorted((r[2], r[7], r[3], r[8]) for r in lines if r[0] == "I")
    assert ids == sorted([("0", "noise", a, p) for a, p in want.items()] + [("-1", "tls", a, p) for a, p in want.items()])


def test_dual_by_peer_puts_both_connections_under_one_peer(tshark):
    """`p2pc analyze --by-peer --keylog`: one row per (peer, peer ID, message type), never one
    per connection: a message type each peer sent over both transports is one row counting
    both."""
    rep = p2pc_report("analyze", "--by-peer", "--keylog", str(ETH / DUAL_TRUTH["keys"]["dialer"]), str(DUAL_CAP))
    want = peer_ids(DUAL_TRUTH)
    rows = [r for r in rep["rows"] if r["proto"] == "eth2"]
    keys_ = [(r["peer"], r["msg_type"]) for r in rows]
    assert len(keys_) == len(set(keys_))
    assert all(r["peer_id"] == want[r["peer"]] for r in rep["rows"])
    count: dict = {}
    transports: dict = {}
    for side in ("dialer", "listener"):
        for t, mtype, *_ in truth_msgs(side, "sent"):
            k = (DUAL_TRUTH["link"][side], mtype)
            count[k] = count.get(k, 0) + 1
            transports.setdefault(k, set()).add(t)
    assert {(r["peer"], r["msg_type"]): r["messages"] for r in rows} == count
    both = {k for k, t in transports.items() if t == {"tcp", "quic-v1"}}
    assert {m for _, m in both} == {"status/1 request", "status/1 response", "ping/1 request", "ping/1 response",
                                    "gossip beacon_block"}


def test_dual_one_pass_equals_two_pass(tshark):
    """Records and trees, with the keys and without: a second pass shows what one pass does."""
    for extra in (dual_keys(tshark), []):
        one = [r for r in dump(tshark, extra, cap=DUAL_CAP) if r[0] != "#END"]
        two = [r for r in dump(tshark, extra, two_pass=True, cap=DUAL_CAP) if r[0] != "#END"]
        assert one == two and [r for r in one if r[0] == "M"]
    # p2pc's layers only (-O): TCP's conversation completeness is known in the second pass alone.
    args = ["-n", "-r", tshark.ws.readable(DUAL_CAP), "-O", OURS + ",libp2p_quic,libp2p_tls", "-V", "-x",
            "-Y", "libp2p_quic || eth2 || multistream || libp2p_noise", *dual_keys(tshark)]
    one = tshark.run(args).stdout
    assert "libp2p Noise: transport message" in one and "libp2p QUIC: stream" in one
    assert one == tshark.run(args + ["-2"]).stdout


QUIC_CAPTURES = [capture(n) for n in sorted(ONE_CONN)] + [DUAL_CAP]


def test_the_fuzz_gate_mutates_the_quic_captures_with_their_keys(tshark, tmp_path):
    """The fuzz gate (tools/fuzz.py; its long profile, the short one those fuzz/short-skip.txt
    does not list) mutates every QUIC capture with its key log, split as `p2pc
    analyze --keylog` splits it: the TLS secrets (and, for eth2-tcp-quic, the Noise keys) go to
    the tshark consumers, whose QUIC then decrypts and hands every stream to p2pc."""
    sys.path.insert(0, str(REPO / "tools"))
    import fuzz     # noqa: E402  (tools/fuzz.py)
    gate = fuzz.gate_captures()
    for cap in QUIC_CAPTURES:
        assert cap in gate
        keys = fuzz.Keys.beside(cap, tmp_path / cap.stem)
        prefs = dict(o.split(":", 1) for o in keys.tshark[1::2])
        assert set(prefs) == ({"tls.keylog_file", "libp2p_noise.keylog_file"} if cap == DUAL_CAP else {"tls.keylog_file"})
        if cap.parent == INTEROP:   # the key log beside it: the rust peer's own, or with js the go peer's
            assert Path(prefs["tls.keylog_file"]).read_text() == \
                (INTEROP / truth(cap.stem)["keys"][ONE_CONN[cap.stem][1]]).read_text()
        extra = [x for pref, path in prefs.items() for x in ("-o", f"{pref}:{tshark.ws.readable(Path(path))}")]
        streams = tshark.fields(cap, ["libp2p_quic.stream"], dfilter="libp2p_quic.stream", extra=extra)
        assert len(streams) > 100


# ---- rust-libp2p over QUIC: its key log, written by rust-libp2p 0.57.1 itself ----
# libp2p-tls 0.7.0 (src/lib.rs, make_client_config and make_server_config) sets the rustls
# configs' key_log to rustls::KeyLogFile::new(), which reads $SSLKEYLOGFILE; libp2p-quic 0.14.0's
# Config::new builds its QUIC TLS configs from those two functions.  eth2peer-rs changes nothing.
RUST_CELLS = ["interop-go-rust-quic", "interop-rust-go-quic-lf"]


def sent(t: dict, side: str) -> list[tuple]:
    """(msg_type, SSZ length, SSZ sha256) of what a peer says it sent, in its order."""
    return [(f"{m['protocol']} {m['kind']}", m["ssz_len"], m["ssz_sha256"]) for m in t["peers"][side]["messages"]
            if m["dir"] == "sent"]


def every_stream_is_its_senders(tshark, name: str, who: str, other: str) -> None:
    """With `who`'s key log: every eth2 message is one its sender says it sent, in its order,
    with its SSZ length and sha256; the block is the source file; nothing is left undecoded or
    encrypted; both peers agreed on the ALPN libp2p."""
    t, cap, extra = truth(name), capture(name), keys(tshark, who, name)
    assert {t["dialer"]["stack"], t["listener"]["stack"]} == {"go-libp2p", other}
    assert all(m["transport"] == "quic-v1" for side in ("dialer", "listener") for m in t["peers"][side]["messages"])
    recs = tshark.records(cap, extra=extra)
    pays = tshark.payloads(cap, extra=extra)
    assert len(recs) == len(pays)
    got = {t["link"]["dialer"]: [], t["link"]["listener"]: []}
    for rec, (frame, mtype, raw) in zip(recs, pays):
        assert (int(rec["frame"]), rec["msg_type"]) == (frame, mtype)
        if rec["proto"] == "eth2":
            got[rec["src"]].append((mtype, int(rec["raw_len"]), hashlib.sha256(raw).hexdigest()))
    assert got[t["link"]["dialer"]] == sent(t, "dialer")
    assert got[t["link"]["listener"]] == sent(t, "listener")
    block = [sha for mtype, n, sha in got[t["link"]["listener"]] if mtype == "beacon_blocks_by_range/2 response" and n > 1000]
    assert block == [hashlib.sha256(source(t["block"]["file"])).hexdigest()]
    assert not [r for r in recs if r["msg_type"] in ("undecoded", "quic (encrypted)")]
    alpn = tshark.fields(cap, ["ip.src", "tls.handshake.extensions_alpn_str"],
                         dfilter="tls.handshake.extensions_alpn_str", extra=extra)
    assert alpn == [[t["link"]["dialer"], "libp2p"], [t["link"]["listener"], "libp2p"]]


@pytest.mark.parametrize("who", ["rust", "go"])
@pytest.mark.parametrize("name", RUST_CELLS)
def test_rust_quic_either_peers_key_log_decrypts_every_stream(tshark, name, who):
    """rust-libp2p dialing go-libp2p over QUIC and back: the key log of either peer (rust's from
    rustls's KeyLogFile, go's from KeyLogWriter) decrypts the connection, every stream to its
    sender's truth."""
    every_stream_is_its_senders(tshark, name, who, "rust-libp2p")


# ---- js-libp2p over QUIC (@chainsafe/libp2p-quic 2.1.1): the go peer's key log alone ----
# Its rustls lives in a native module built with libp2p-tls 0.6.2, which sets no key_log
# (docs/libp2p-decryption.md, "js-libp2p over QUIC"); TLS 1.3's traffic secrets are the
# connection's, so the go peer's (quic-go's KeyLogWriter) decrypt both directions.
JS_CELLS = ["interop-go-js-quic", "interop-js-go-quic-lf"]


@pytest.mark.parametrize("name", JS_CELLS)
def test_js_quic_the_go_peers_key_log_decrypts_every_stream(tshark, name):
    """go-libp2p dialing js-libp2p over QUIC and back: the go peer's key log decrypts what both
    peers sent, every stream to its sender's truth."""
    every_stream_is_its_senders(tshark, name, "go", "js-libp2p")


@pytest.mark.parametrize("name", JS_CELLS)
def test_js_quic_cells_keep_the_go_peers_keys_and_the_installed_transport(name):
    """The generator installed @chainsafe/libp2p-quic 2.1.1 with npm install --no-save (it is in
    neither package.json nor the lock), the js peer says it ran that version, its
    $SSLKEYLOGFILE stayed empty, and the only key log kept is the go peer's, beside the capture."""
    t = truth(name)
    js = next(p for p in t["peers"].values() if p["stack"] == "js-libp2p")
    assert t["js_quic"] == {"package": "@chainsafe/libp2p-quic", "version": "2.1.1",
                            "installed": "npm install --no-save", "sslkeylogfile_written": False}
    assert js["packages"]["@chainsafe/libp2p-quic"] == "2.1.1"
    assert [c["transport"] for p in t["peers"].values() for c in p["connections"]] == ["quic-v1", "quic-v1"]
    assert t["keys"] == {"go": f"{name}.keys"}
    js_dir = REPO / "captures/gen/js"
    assert "libp2p-quic" not in (js_dir / "package.json").read_text() + (js_dir / "package-lock.json").read_text()


@needs_netns
def test_live_with_a_udp_port_filter_decodes_tcp_and_quic_as_offline(netns, tmp_path):
    """`p2pc live -f 'tcp port 9000 or udp port 9000' --keylog` (a consensus client whose peers
    use QUIC, and TCP as the fallback): eth2-tcp-quic replayed onto the interface decodes on both
    transports to the messages `p2pc analyze --keylog` finds in the capture, and live's final
    report is the offline analysis of what it captured."""
    keylog = str(ETH / DUAL_TRUTH["keys"]["dialer"])
    want = p2pc_report("analyze", "--keylog", keylog, str(DUAL_CAP))
    live = Live(netns, tmp_path, "-f", "tcp port 9000 or udp port 9000", "--keylog", keylog)
    try:
        live.replay(DUAL_CAP)
        time.sleep(2)
    finally:
        rc, err = live.stop()
    assert rc == 0, err
    got = json.loads(live.report.read_text())
    rows = lambda rep: {(r["proto"], r["msg_type"]): (r["messages"], r["raw_bytes"]) for r in rep["rows"]}  # noqa: E731
    assert rows(got) == rows(want)
    assert {m for p, m in rows(got) if p == "eth2"} >= {"status/1 request", "beacon_blocks_by_range/2 response",
                                                        "gossip beacon_block"}
    assert got["totals"] == p2pc_report("analyze", "--keylog", keylog, str(live.pcap))["totals"]


def test_rust_libp2p_writes_its_quic_key_log_unpatched():
    """What docs/libp2p-decryption.md says of rust-libp2p's key log rests on these versions:
    the peer's Cargo.lock pins libp2p 0.57.1 with libp2p-quic 0.14.0, libp2p-tls 0.7.0 and
    rustls 0.23.46, and eth2peer-rs sets no key log of its own (the key logs of the interop
    QUIC cells, which decrypt them above, are rust-libp2p's)."""
    lock = (REPO / "captures/gen/rust/Cargo.lock").read_text()
    pins = dict(re.findall(r'\[\[package\]\]\nname = "([^"]+)"\nversion = "([^"]+)"', lock))
    assert {k: pins[k] for k in ("libp2p", "libp2p-quic", "libp2p-tls", "rustls")} == \
        {"libp2p": "0.57.1", "libp2p-quic": "0.14.0", "libp2p-tls": "0.7.0", "rustls": "0.23.46"}
    src = (REPO / "captures/gen/rust/src/main.rs").read_text()
    code = "\n".join(line.split("//")[0] for line in src.splitlines())
    assert "key_log" not in code and "KeyLog" not in code and "SSLKEYLOGFILE" not in code
    for name in RUST_CELLS:
        assert truth(name)["keys"]["rust"] == f"{name}.keys"


def test_compare_tcp_against_quic_counts_the_quic_packets(tshark):
    """`p2pc compare` of the eth2 workload over TCP (baseline) and over QUIC: the QUIC side's
    connection figures are its packets as Wireshark's QUIC reads them (datagrams, their bytes,
    those carrying STREAM data and their stream bytes, the ACK-only ones), and its rows are
    those `p2pc analyze` gives the QUIC capture."""
    key = ["--keylog", str(ETH / TRUTH["keys"]["dialer"])]
    rep = p2pc_report("compare", *key, str(ETH / "eth2-yamux.pcapng"), str(CAP))
    conn = {r["measure"]: r["compressed"] for r in next(s for s in rep["sections"] if s["name"] == "connections")["rows"]}
    pk = quic_packets(tshark, keys(tshark))
    data = [p for p in pk if p["stream"]]
    acks = [p for p in pk if p["ack_only"]]
    assert (conn["frames"], conn["bytes"]) == (len(pk), sum(p["frame"] for p in pk))
    assert (conn["data_segments"], conn["tcp_payload_bytes"]) == (len(data), sum(p["stream"] for p in data))
    assert (conn["pure_acks"], conn["pure_ack_bytes"]) == (len(acks), sum(p["frame"] for p in acks))
    analyzed = p2pc_report("analyze", *key, str(CAP))
    assert {(r["proto"], r["family"]): r["compressed_msgs"] for r in rep["rows"] if r["compressed_msgs"]} == \
        {(r["proto"], r["msg_type"]): r["messages"] for r in analyzed["rows"]}


# ---- many streams on one QUIC connection (tools/quic_churn.py: aioquic's client and server) ----
L2P_MAX_STREAMS = int(re.search(r"#define L2P_MAX_STREAMS (\d+)",
                                (REPO / "plugin" / "libp2p" / "engine.h").read_text()).group(1))


def streams_of(recs: list[dict], msg_type: str) -> list[int]:
    """The QUIC stream id of each record of msg_type, sorted."""
    return sorted(int(r["mux_stream"]) for r in recs if r["msg_type"] == msg_type)


def test_quic_streams_that_end_are_freed(tshark, tmp_path):
    """More streams than L2P_MAX_STREAMS on one QUIC connection, 50 open at a time, each ended
    by a FIN both ways (quic.stream.fin): each leaves the connection's table when both ended, so
    the bound is never reached: every stream the generator opened (index i on stream id 4 * i)
    has its ping request and response, nothing is undecoded, and one pass and two give the same
    records."""
    import quic_churn
    n = L2P_MAX_STREAMS + 600
    cap = tmp_path / "churn.pcapng"
    assert quic_churn.generate(cap, n) == n
    recs = tshark.records(cap)
    for mtype in ("ping/1 request", "ping/1 response"):
        assert streams_of(recs, mtype) == [4 * i for i in range(n)]
    assert len(recs) == 2 * n
    assert recs == tshark.records(cap, two_pass=True)


def test_quic_streams_that_are_reset_are_freed_with_their_held_bytes(tshark, tmp_path):
    """More streams than L2P_MAX_STREAMS on one QUIC connection, 50 open at a time, none ended
    by a FIN: the client sends its request short of its last quic_churn.CUT bytes, the server
    answers in full, then the client resets its direction (RESET_STREAM) and stops the server's
    (STOP_SENDING), which aioquic's server answers with RESET_STREAM.  Each reset ends its
    direction as a FIN would: the request's bytes its pipe held are one truncated request
    counted at the client's RESET_STREAM, every byte the client sent of it; and the stream
    leaves the table when both directions are reset, so the bound is never reached: every
    response decodes, nothing is undecoded, no frame has libp2p.streams, two passes agree."""
    import quic_churn
    n = L2P_MAX_STREAMS + 600
    cap = tmp_path / "reset.pcapng"
    assert quic_churn.generate(cap, n, kind="reset") == n
    recs = tshark.records(cap)
    assert streams_of(recs, "ping/1 response") == [4 * i for i in range(n)]
    requests = {int(r["mux_stream"]): r for r in recs if r["msg_type"] == "ping/1 request"}
    assert sorted(requests) == [4 * i for i in range(n)]
    assert {int(r["wire_len"]) for r in requests.values()} == {len(quic_churn.ping(0, False)) - quic_churn.CUT}
    resets = {int(f): {int(s) for s in ids.split("|")} for f, src, ids in
              tshark.fields(cap, ["frame.number", "ip.src", "quic.rsts.stream_id"],
                            dfilter="quic.rsts.stream_id") if src == quic_churn.CLIENT[0]}
    assert all(int(r["mux_stream"]) in resets.get(int(r["frame"]), ()) for r in requests.values())
    assert len(recs) == 2 * n
    assert not tshark.fields(cap, ["frame.number"], dfilter="libp2p.streams")
    assert recs == tshark.records(cap, two_pass=True)


@pytest.mark.once
def test_quic_streams_past_the_cap_are_undecoded_with_their_bytes(tshark, tmp_path):
    """L2P_MAX_STREAMS + 16 streams opened and never ended (no FIN, no answer): the connection
    keeps L2P_MAX_STREAMS of them, the first opened, whose requests decode; the STREAM data of
    the 16 after them is counted as undecoded, every byte of it (the multistream-select messages
    and the request the generator sent), with the expert item libp2p.streams; two passes agree."""
    import quic_churn
    n, past = L2P_MAX_STREAMS + 16, 16
    cap = tmp_path / "open.pcapng"
    assert quic_churn.generate(cap, n, kind="open") == n
    recs = tshark.records(cap)
    assert streams_of(recs, "ping/1 request") == [4 * i for i in range(n - past)]
    undecoded = [r for r in recs if r["msg_type"] == "undecoded"]
    sent = sum(len(quic_churn.HELLO + quic_churn.ping(i, False)) for i in range(n - past, n))
    assert sum(int(r["wire_len"]) for r in undecoded) == sent
    assert len(recs) == n - past + len(undecoded)
    refused = tshark.fields(cap, ["libp2p_quic.stream"], dfilter="libp2p.streams")
    assert {int(s) for r in refused for s in r[0].split("|")} >= {4 * i for i in range(n - past, n)}
    assert recs == tshark.records(cap, two_pass=True)


def test_quic_a_late_copy_of_an_ended_streams_frame_opens_nothing(tshark, tmp_path):
    """The packet carrying the first streams' requests sent again after every stream ended (a
    late retransmission): the streams it names were freed, so its STREAM data is shown as fed
    before (libp2p_quic.skipped, every byte of it) and opens no stream: the records are those of
    the same connection without the copy."""
    import quic_churn
    cap = tmp_path / "late.pcapng"
    assert quic_churn.generate(cap, 100, late_copy=True) == 100
    last = int(tshark.fields(cap, ["frame.number"])[-1][0])
    rows = tshark.fields(cap, ["libp2p_quic.skipped", "quic.stream_data"], dfilter=f"frame.number == {last}")
    fed_before = sum(int(x) for x in rows[0][0].split("|"))
    assert fed_before == sum(len(bytes.fromhex(d.replace(":", ""))) for d in rows[0][1].split("|")) > 0
    recs = tshark.records(cap)
    for mtype in ("ping/1 request", "ping/1 response"):
        assert streams_of(recs, mtype) == [4 * i for i in range(100)]
    assert len(recs) == 200 and not [r for r in recs if r["frame"] == str(last)]
