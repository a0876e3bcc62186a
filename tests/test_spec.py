"""Conformance checks on the wire (plugin/core/spec.c): each p2pc.spec.* check fires on a crafted
capture that breaks its rule, once, in the frame that breaks it; the committed captures that
conform raise none; and the records dump's S lines are what `p2pc analyze` and `p2pc diff`
count in their conformance section.  The expected values come from the bytes crafted here and
the generators' truth files, never from p2pc's output."""
from __future__ import annotations

import json
import struct
from collections import Counter

import dpkt
import pytest

from conftest import CAPTURES, run_p2pc, tcp_pcap
from test_libp2p import PING, ms, yamux

ETH = CAPTURES / "eth2"
MS = "/multistream/1.0.0"
BY_RANGE = "/eth2/beacon_chain/req/beacon_blocks_by_range/2/ssz_snappy"
MESHSUB = "/meshsub/1.1.0"
TOPIC = "/eth2/bba4da96/beacon_block/ssz_snappy"
ACK, FIN = 2, 4                     # yamux flags
MAX_PAYLOAD_SIZE = 10 * 1024 * 1024  # p2p-interface.md
MAX_REQUEST_BLOCKS = 1024


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC32C = _crc32c_table()


def masked_crc32c(data: bytes) -> int:
    """framing_format.txt 3: CRC-32C, rotated right by 15 bits, plus 0xa282ead8."""
    c = 0xFFFFFFFF
    for b in data:
        c = CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    c ^= 0xFFFFFFFF
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def framed(ssz: bytes) -> bytes:
    import snappy
    return snappy.StreamCompressor().add_chunk(ssz)


def session(path, proto: str, request: bytes, response: bytes | None = None, fin: bool = False) -> None:
    """A yamux connection whose stream 1 carries `request` on `proto` from the dialer and, if
    given, `response` back (with FIN when `fin`: the stream ends there)."""
    segs = [("a", ms(MS) + ms("/yamux/1.0.0")), ("b", ms(MS) + ms("/yamux/1.0.0")),
            ("a", yamux(1, 1, ms(MS) + ms(proto) + request))]
    if response is not None:
        segs.append(("b", yamux(ACK | (FIN if fin else 0), 1, ms(MS) + ms(proto) + response)))
    tcp_pcap(path, segs, syn="a", mss=1448)


def gossip(path, message: bytes) -> None:
    """A yamux connection whose stream 1 carries one gossipsub RPC publishing `message`."""
    rpc = b"\x12" + uvarint(len(message)) + message          # RPC.publish = 2
    session(path, MESHSUB, uvarint(len(rpc)) + rpc)


def pb(number: int, data: bytes) -> bytes:
    return uvarint(number << 3 | 2) + uvarint(len(data)) + data


def hits(tshark, path) -> list[tuple[int, str]]:
    """The S lines of the records dump: (frame, check)."""
    out = tshark.run(["-n", "-q", "-r", tshark.ws.readable(path), "-z", "p2pc,records"]).stdout
    return [(int(f), c) for _, f, c in (l.split("\t") for l in out.splitlines() if l.startswith("S\t"))]


def expert_frames(tshark, path, check: str) -> list[int]:
    return [int(r[0]) for r in tshark.fields(path, ["frame.number"], dfilter=check)]


PING_BODY = struct.pack("<Q", 7)
NO_STREAM_ID = framed(PING_BODY)[10:]           # the stream identifier chunk is 4 + 6 bytes
BAD_CRC = bytearray(framed(PING_BODY))
BAD_CRC[14] ^= 0xFF                             # the first data chunk's CRC (after the identifier)
BIG = bytes(70000)                              # over 65,536 in one uncompressed chunk
BIG_CHUNK = (framed(PING_BODY)[:10] + bytes([0x01]) + (4 + len(BIG)).to_bytes(3, "little") +
             struct.pack("<I", masked_crc32c(BIG)) + BIG)
RANGE_REQUEST = struct.pack("<QQQ", 6507058, MAX_REQUEST_BLOCKS + 1, 1)
ERROR_BODY = b"no"

CRAFTED = [
    # (check, protocol, request, response, fin, frame of the violation)
    ("p2pc.spec.snappy.stream_identifier", PING, uvarint(8) + NO_STREAM_ID, None, False, 6),
    ("p2pc.spec.snappy.crc", PING, uvarint(8) + bytes(BAD_CRC), None, False, 6),
    # Several segments: the violation is in the last frame, which completes the message.
    ("p2pc.spec.snappy.chunk_length", PING, uvarint(len(BIG)) + BIG_CHUNK, None, False, -1),
    ("p2pc.spec.eth2.request_limit", BY_RANGE, uvarint(24) + framed(RANGE_REQUEST), None, False, 6),
    # A success chunk of a method with context bytes, the stream ending after two of them.
    ("p2pc.spec.eth2.context", BY_RANGE, uvarint(24) + framed(struct.pack("<QQQ", 1, 1, 1)),
     b"\x00\xbb\xa4", True, 7),
    # Result 5: in the reserved range [4, 127].
    ("p2pc.spec.eth2.result", PING, uvarint(8) + framed(PING_BODY),
     b"\x05" + uvarint(len(ERROR_BODY)) + framed(ERROR_BODY), False, 7),
]


@pytest.mark.parametrize("check,proto,req,response,fin,frame", CRAFTED, ids=[c[0] for c in CRAFTED])
def test_each_check_fires_on_the_rule_it_breaks(tshark, tmp_path, check, proto, req, response, fin, frame):
    path = tmp_path / "crafted.pcap"
    session(path, proto, req, response, fin)
    if frame == -1:
        frame = len(list(dpkt.pcap.Reader(open(path, "rb"))))
    assert (frame, check) in hits(tshark, path)
    assert Counter(c for _, c in hits(tshark, path))[check] == 1
    assert expert_frames(tshark, path, check) == [frame]


def test_the_same_messages_conforming_raise_nothing(tshark, tmp_path):
    """The crafted sessions with the rule kept: no S line (each check would fail its test above
    only by firing; this one fails when a check fires on what conforms)."""
    for proto, request, response in [
            (PING, uvarint(8) + framed(PING_BODY), b"\x00" + uvarint(8) + framed(PING_BODY)),
            (BY_RANGE, uvarint(24) + framed(struct.pack("<QQQ", 1, MAX_REQUEST_BLOCKS, 1)), None),
            (PING, uvarint(8) + framed(PING_BODY), b"\x03" + uvarint(len(ERROR_BODY)) + framed(ERROR_BODY))]:
        path = tmp_path / "ok.pcap"
        session(path, proto, request, response)
        assert hits(tshark, path) == []


def test_gossip_size_and_strict_no_sign(tshark, tmp_path):
    import snappy
    block = bytes(100)
    ok = pb(2, snappy.compress(block)) + pb(4, TOPIC.encode())
    path = tmp_path / "gossip.pcap"
    gossip(path, ok)
    assert hits(tshark, path) == []
    # from, seqno and signature on an eth2 topic (StrictNoSign).
    gossip(path, pb(1, b"\x00\x25\x08\x02") + ok + pb(3, bytes(8)) + pb(5, bytes(64)))
    assert hits(tshark, path) == [(6, "p2pc.spec.gossip.strict_no_sign")]
    # A Snappy block declaring one byte over MAX_PAYLOAD_SIZE uncompressed.
    gossip(path, pb(2, uvarint(MAX_PAYLOAD_SIZE + 1) + b"\x00" * 8) + pb(4, TOPIC.encode()))
    assert (6, "p2pc.spec.gossip.size") in hits(tshark, path)
    # The same on a topic that is not eth2's: signing is that network's business.
    gossip(path, pb(1, b"\x00") + pb(2, snappy.compress(block)) + pb(4, b"/my/topic"))
    assert hits(tshark, path) == []


# What each of the broken session's ping answers breaks (captures/gen/make_eth2.py
# BROKEN_PINGS); the others break no rule p2pc.spec.* checks (decoding failures, trailing bytes).
BROKEN_CHECKS = {
    "bad_crc": {"p2pc.spec.snappy.crc"},
    "unskippable": {"p2pc.spec.snappy.unskippable"},
    # a declared length of 4 for a ping's 8 bytes: under the type's size, and not what decodes
    "length_mismatch": {"p2pc.spec.eth2.length", "p2pc.spec.eth2.too_short"},
    "too_long": {"p2pc.spec.eth2.too_long", "p2pc.spec.eth2.length"},
    "compressed_too_long": {"p2pc.spec.eth2.compressed_length"},
}


def test_committed_captures_conform_or_break_what_their_truth_says(tshark):
    for name in ("eth2-yamux", "eth2-mplex", "eth2-noise-yamux"):
        assert hits(tshark, ETH / f"{name}.pcapng") == [], name
    truth = json.loads((ETH / "eth2-broken.truth.json").read_text())
    want = set().union(*(BROKEN_CHECKS.get(p, set()) for p in truth["broken_pings"]))
    got = hits(tshark, ETH / "eth2-broken.pcapng")
    assert {c for _, c in got} == want
    # Each ping answer is its own frame, in the order of broken_pings.
    firsts = {c: min(f for f, c2 in got if c2 == c) for c in want}
    order = [p for p in truth["broken_pings"] if p in BROKEN_CHECKS]
    assert firsts["p2pc.spec.snappy.crc"] < firsts["p2pc.spec.snappy.unskippable"] < \
        firsts["p2pc.spec.eth2.too_short"] < firsts["p2pc.spec.eth2.too_long"] < \
        firsts["p2pc.spec.eth2.compressed_length"], order


# Committed captures whose truth names, per message, the p2pc.spec.* item it raises.
TRUTH_CHECKED = [CAPTURES / "bitcoin" / "btc-not-negotiated", CAPTURES / "bitcoin" / "btc-malformed",
                 CAPTURES / "fisco" / "fisco-malformed"]


@pytest.mark.parametrize("base", TRUTH_CHECKED, ids=[b.name for b in TRUTH_CHECKED])
def test_buip017_and_fisco_checks_are_what_the_truth_says(tshark, base):
    """BUIP017 (compression without the service bit, not smaller) and FISCO (compressed at or
    below the threshold): one S line per message whose truth names a p2pc.spec.* item."""
    truth = json.loads(base.with_suffix(".truth.json").read_text())
    want = Counter(m["expert"] for m in truth["messages"] if m.get("expert", "").startswith("p2pc.spec."))
    assert want and Counter(c for _, c in hits(tshark, base.with_suffix(".pcapng"))) == want


def test_conforming_bitcoin_and_fisco_raise_nothing(tshark):
    for c in (CAPTURES / "bitcoin" / "btc-compressed.pcapng", CAPTURES / "fisco" / "fisco-serial-on.pcapng",
              CAPTURES / "fisco" / "fisco3-on.pcapng"):
        assert hits(tshark, c) == [], c


def test_analyze_and_diff_count_them(tshark):
    broken = str(ETH / "eth2-broken.pcapng")
    want = Counter(c for _, c in hits(tshark, ETH / "eth2-broken.pcapng"))
    res = run_p2pc("analyze", broken, "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = next(s["rows"] for s in json.loads(res.stdout)["sections"] if s["name"] == "conformance")
    assert {r["check"]: r["count"] for r in rows} == want
    assert all(r["file"] == broken for r in rows)
    firsts = {}
    for f, c in hits(tshark, ETH / "eth2-broken.pcapng"):
        firsts[c] = min(firsts.get(c, f), f)
    assert {r["check"]: r["first_frame"] for r in rows} == firsts
    res = run_p2pc("diff", broken, str(ETH / "eth2-yamux.pcapng"), "--format", "json")
    assert res.returncode == 15, res.stderr
    rows = next(s["rows"] for s in json.loads(res.stdout)["sections"] if s["name"] == "conformance")
    assert {r["check"]: (r["a_count"], r["b_count"]) for r in rows} == {c: (n, 0) for c, n in want.items()}


def test_the_undecoded_reason_is_a_column(tshark):
    """A capture budget of 1 MiB stops eth2-yamux's Snappy output inside its second block (each
    of its blocks is over 800 KB uncompressed, the truth's source files): those messages are
    undecoded, reason bound, in the dump as in the tree; no other record has a reason."""
    opts = ["-o", "p2pc.max_capture_decompressed_mib:1"]
    recs = tshark.records(ETH / "eth2-yamux.pcapng", extra=opts)
    bound = [r for r in recs if r["reason"]]
    assert bound and all(r["reason"] == "bound" and r["msg_type"] == "undecoded"
                         and r["raw_len"] == r["payload_len"] for r in bound)
    assert all(r["reason"] == "" for r in recs if r not in bound)
    tree = tshark.fields(ETH / "eth2-yamux.pcapng", ["frame.number"], dfilter='p2pc.undecoded_reason == "bound"',
                         extra=opts)
    assert sorted({int(r[0]) for r in tree}) == sorted({int(r["frame"]) for r in bound})
    assert not any(r["reason"] for r in tshark.records(ETH / "eth2-yamux.pcapng"))
