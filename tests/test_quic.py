"""libp2p over QUIC (/quic-v1), decrypted by Wireshark's own QUIC from the hosts' key log, on a
capture of real go-libp2p hosts (captures/gen/make_eth2.py eth2-quic).  Expected values come
from the source block files, the generator's truth file and identity seeds, and from
Wireshark's own QUIC fields (frame types, STREAM data), never from p2pc's output."""
from __future__ import annotations

import hashlib
import json
import struct
import subprocess

import pytest

from conftest import CAPTURES, DATA, p2pc_report
from test_libp2p import base58btc, ed25519_public, peer_id

ETH = CAPTURES / "eth2"
NAME = "eth2-quic"
CAP = ETH / f"{NAME}.pcapng"
TRUTH = json.loads((ETH / f"{NAME}.truth.json").read_text())
EXPERT_NO_KEYS = "tls.keylog_file"


def keys(tshark, side: str = "dialer") -> list[str]:
    return ["-o", f"tls.keylog_file:{tshark.ws.readable(ETH / TRUTH['keys'][side])}"]


def source(name: str) -> bytes:
    return (DATA / "ethereum" / name).read_bytes()


def dump(tshark, extra: list[str], two_pass: bool = False) -> list[list[str]]:
    """Every line of -z p2pc,records, split into columns."""
    args = ["-n", "-q", "-r", tshark.ws.readable(CAP), "-z", "p2pc,records", *extra] + (["-2"] if two_pass else [])
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


def test_quic_certificates_name_both_peers(tshark):
    """The libp2p certificate extension, inside QUIC's CRYPTO frames: each host's peer ID, from
    its seed, in the tree and on the records' I lines."""
    want = {TRUTH["link"]["addr_a"]: base58btc(peer_id(ed25519_public(TRUTH["seeds"]["a"]))),
            TRUTH["link"]["addr_b"]: base58btc(peer_id(ed25519_public(TRUTH["seeds"]["b"])))}
    rows = tshark.fields(CAP, ["ip.src", "libp2p_tls.peer_id"], dfilter="libp2p_tls.peer_id", extra=keys(tshark))
    assert {r[0]: r[1] for r in rows} == want
    ids = {r[3]: r[8] for r in dump(tshark, keys(tshark)) if r[0] == "I"}
    assert ids == want


def test_quic_one_pass_equals_two_pass(tshark):
    """Records, trees and bytes tabs: a second pass (-2) shows what one pass does."""
    for extra in (keys(tshark), []):
        one = [r for r in dump(tshark, extra) if r[0] != "#END"]
        two = [r for r in dump(tshark, extra, two_pass=True) if r[0] != "#END"]
        assert one == two and len([r for r in one if r[0] == "M"]) >= 2
    args = ["-n", "-r", tshark.ws.readable(CAP), "-V", "-x", "-Y", "libp2p_quic || eth2 || multistream", *keys(tshark)]
    assert tshark.run(args).stdout == tshark.run(args + ["-2"]).stdout


def quic_packets(tshark, extra: list[str]) -> list[dict]:
    """Per frame of the capture's QUIC connection, from Wireshark's own QUIC fields."""
    rows = tshark.fields(CAP, ["ip.src", "frame.len", "udp.length", "quic.frame_type", "quic.stream_data",
                               "quic.remaining_payload"], dfilter="quic", extra=extra)
    out = []
    for src, flen, ulen, types, data, remaining in rows:
        types = [int(t, 0) for t in types.split("|") if t]      # 4.4 on prints them in hex
        stream = sum(len(bytes.fromhex(d)) for d in data.replace(":", "").split("|") if d)
        out.append({"src": src, "frame": int(flen), "udp_payload": int(ulen) - 8, "stream": stream,
                    "ack_only": not stream and any(t in (2, 3) for t in types) and set(types) <= {0, 2, 3},
                    "encrypted": bool(remaining)})
    return out


def test_quic_packets_counted_as_the_model_needs(tshark):
    """Each direction of the QUIC connection is a T line of stream -1: packets carrying STREAM
    data are its data segments (their STREAM data bytes, the largest as its MSS), packets of ACK
    and PADDING frames only its pure ACKs, the rest control frames."""
    pk = quic_packets(tshark, keys(tshark))
    tl = [r for r in dump(tshark, keys(tshark)) if r[0] == "T"]
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


def test_quic_without_keys_is_one_encrypted_record_per_direction(tshark):
    """No key: each direction is one `quic (encrypted)` record holding the UDP payload bytes of
    its packets Wireshark could not decrypt (all but the Initial packets, whose keys come from
    the connection ID), and each such packet has an expert note naming the key log preference.
    With the key there is none."""
    pk = quic_packets(tshark, [])
    for two_pass in (False, True):
        recs = [r for r in tshark.records(CAP, two_pass=two_pass)]
        assert {r["msg_type"] for r in recs} == {"quic (encrypted)"}
        got = {r["src"]: int(r["wire_len"]) for r in recs}
        assert got == {src: sum(p["udp_payload"] for p in pk if p["src"] == src and p["encrypted"])
                       for src in (TRUTH["link"]["addr_a"], TRUTH["link"]["addr_b"])}
        assert all(int(r["header_len"]) == 0 and r["wire_len"] == r["payload_len"] == r["raw_len"] for r in recs)
    notes = tshark.fields(CAP, ["_ws.expert.message"], dfilter="libp2p_quic.no_keys")
    assert len(notes) == sum(p["encrypted"] for p in pk)
    assert all(EXPERT_NO_KEYS in n[0] for n in notes)
    assert not [r for r in tshark.records(CAP, extra=keys(tshark)) if r["msg_type"] == "quic (encrypted)"]


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
